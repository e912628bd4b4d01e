"""Seeded layouts of ``mvpo/MilestoneChain-v0``: places, exits, fixtures, milestones.

docs/control_task.md, "Layouts". A layout is one task: a start place (``entrance hall``), K
milestone places whose fixtures must be used in a given order, and distractor places: corridor
places in the tree of core places (they lengthen paths or end in dead ends) and loop places,
rings of three attached to a core place that lead around in circles back to where they were
entered. Every other place holds one fixture; using a distractor fixture does nothing. The
difficulty knob sets how many distractor places and do-nothing actions there are
(:data:`DIFFICULTIES`).

A layout is a pure function of ``(split, index, difficulty, num_milestones, max_plan_length)``:
Python's ``random.Random`` seeded with a string of those values (SHA-512 of the string, the
same on every machine and Python process). Layouts whose shortest plan is longer than
``max_plan_length`` are redrawn from the same generator, so the answer stays deterministic.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

#: the place every episode starts in; it has no fixture
START_PLACE = "entrance hall"

PLACE_NAMES = (
    "armory", "attic", "bakery", "ballroom", "barracks", "bathhouse", "bell tower", "boathouse",
    "cellar", "chapel", "cistern", "cloister", "courtyard", "crypt", "dungeon", "forge",
    "gallery", "gatehouse", "granary", "greenhouse", "guardroom", "herb garden", "kennel",
    "kitchen", "larder", "laundry", "library", "map room", "mill", "music room", "observatory",
    "orchard", "pantry", "parlor", "pottery", "scriptorium", "shrine", "stable", "storeroom",
    "study", "tannery", "throne room", "treasury", "vault", "vineyard", "watchtower",
    "well house", "workshop",
)  # fmt: skip

#: (verb, noun): the fixture's command is ``"{verb} {noun}"``; every noun is distinct
FIXTURES = (
    ("pull", "lever"), ("ring", "bell"), ("light", "brazier"), ("turn", "crank"),
    ("open", "chest"), ("read", "scroll"), ("wind", "clock"), ("raise", "flag"),
    ("polish", "mirror"), ("strike", "gong"), ("beat", "drum"), ("close", "valve"),
    ("climb", "rope"), ("spin", "wheel"), ("push", "statue"), ("stoke", "furnace"),
    ("light", "lantern"), ("play", "harp"), ("work", "loom"), ("hammer", "anvil"),
    ("boil", "kettle"), ("play", "organ"), ("aim", "telescope"), ("unroll", "map"),
    ("spin", "globe"), ("bless", "altar"), ("pump", "bellows"), ("flip", "hourglass"),
    ("wind", "music box"), ("straighten", "painting"), ("tap", "chime"), ("feed", "fish"),
    ("water", "plant"), ("press", "button"), ("stir", "cauldron"), ("sweep", "hearth"),
    ("oil", "hinge"), ("sharpen", "blade"), ("tune", "lute"), ("fill", "lamp"),
)  # fmt: skip

#: do-nothing actions and their feedback; ``look`` is in every place, the rest by difficulty
NOOP_ACTIONS = (
    ("wait", "Time passes."),
    ("listen", "You hear nothing unusual."),
    ("sit down", "You sit for a moment, then get up again."),
    ("search the floor", "You find nothing of interest."),
    ("whistle", "You whistle a tune. Nothing happens."),
)


@dataclass(frozen=True)
class Difficulty:
    """What one value of the ``difficulty`` knob means (docs/control_task.md, "Difficulty")."""

    corridor_places: int  # distractor places in the tree of core places
    loop_places: int  # distractor places in rings of three (a leftover one or two: a dead end)
    noop_actions: int  # do-nothing actions per place besides ``look``


#: ``difficulty`` -> its sizes; uniform-policy success of each: benchmarks/results/control_uniform.md
DIFFICULTIES: dict[int, Difficulty] = {
    0: Difficulty(corridor_places=0, loop_places=0, noop_actions=0),
    1: Difficulty(corridor_places=2, loop_places=3, noop_actions=0),
    2: Difficulty(corridor_places=4, loop_places=6, noop_actions=1),
    3: Difficulty(corridor_places=6, loop_places=9, noop_actions=2),
    4: Difficulty(corridor_places=8, loop_places=12, noop_actions=3),
}
DEFAULT_DIFFICULTY = 2
DEFAULT_NUM_MILESTONES = 4
MAX_MILESTONES = 8
#: the longest shortest plan a layout may have (the registered horizon is 50 steps)
DEFAULT_MAX_PLAN_LENGTH = 36
#: how many layouts one task index may draw before giving up (with a clear error)
MAX_DRAWS = 200


@dataclass(frozen=True)
class Layout:
    """One task: a graph of places, one fixture per place but the start, the milestone order.

    Place 0 is :data:`START_PLACE`. ``exits[p]`` are the neighbours of ``p`` sorted by name;
    ``fixtures[p]`` is the fixture command there (``""`` at the start);
    ``milestone_places[i]`` is where milestone ``i`` (0-based) is made;
    ``distances[p][q]`` is the number of moves from ``p`` to ``q``.
    """

    task_id: str
    places: tuple[str, ...]
    exits: tuple[tuple[int, ...], ...]
    fixtures: tuple[str, ...]
    milestone_places: tuple[int, ...]
    noops: tuple[tuple[str, str], ...]
    distances: tuple[tuple[int, ...], ...]

    @property
    def num_milestones(self) -> int:
        return len(self.milestone_places)

    @property
    def milestone_fixtures(self) -> tuple[str, ...]:
        return tuple(self.fixtures[p] for p in self.milestone_places)


def task_id(split: str, index: int, difficulty: int, num_milestones: int) -> str:
    """``chain-train-d2-k4-0007``: sorted ids sort by index (zero-padded)."""
    return f"chain-{split}-d{difficulty}-k{num_milestones}-{index:04d}"


def make_layout(
    split: str,
    index: int,
    difficulty: int = DEFAULT_DIFFICULTY,
    num_milestones: int = DEFAULT_NUM_MILESTONES,
    max_plan_length: int = DEFAULT_MAX_PLAN_LENGTH,
) -> Layout:
    """The layout of task ``index`` of ``split`` (deterministic; see the module docstring)."""
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {sorted(DIFFICULTIES)}, got {difficulty!r}")
    if not 1 <= num_milestones <= MAX_MILESTONES:
        raise ValueError(
            f"num_milestones must be an int in [1, {MAX_MILESTONES}], got {num_milestones!r}"
        )
    seed = f"milestone-chain|{split}|{index}|d{difficulty}|k{num_milestones}|p{max_plan_length}"
    rng = random.Random(seed)
    for _ in range(MAX_DRAWS):
        layout = _draw(rng, task_id(split, index, difficulty, num_milestones), difficulty,
                       num_milestones)  # fmt: skip
        if plan_length_from_start(layout) <= max_plan_length:
            return layout
    raise ValueError(
        f"no layout with a plan of at most max_plan_length={max_plan_length} steps in "
        f"{MAX_DRAWS} draws (difficulty={difficulty}, num_milestones={num_milestones}): raise "
        "max_plan_length or lower num_milestones"
    )


def plan_length_from_start(layout: Layout) -> int:
    """Moves plus fixture uses of the shortest plan from the start to the goal."""
    route = (0, *layout.milestone_places)
    d = layout.distances
    return sum(d[a][b] for a, b in zip(route, route[1:], strict=False)) + layout.num_milestones


def _draw(rng: random.Random, tid: str, difficulty: int, k: int) -> Layout:
    sizes = DIFFICULTIES[difficulty]
    n_core = 1 + k + sizes.corridor_places
    n = n_core + sizes.loop_places
    names = [START_PLACE, *rng.sample(PLACE_NAMES, n - 1)]
    edges: set[tuple[int, int]] = set()
    # core places: a random recursive tree rooted at the start
    order = [0, *rng.sample(range(1, n_core), n_core - 1)]
    for j in range(1, n_core):
        edges.add(_edge(order[j], order[rng.randrange(j)]))
    # loop places: rings of three entered from one core place; leftovers: a dead-end chain
    loop = list(range(n_core, n))
    for start in range(0, len(loop), 3):
        ring = loop[start : start + 3]
        edges.add(_edge(ring[0], rng.randrange(n_core)))
        for a, b in zip(ring, ring[1:], strict=False):
            edges.add(_edge(a, b))
        if len(ring) == 3:
            edges.add(_edge(ring[2], ring[0]))
    milestone_places = tuple(rng.sample(range(1, n_core), k))
    fixture_pairs = rng.sample(FIXTURES, n - 1)
    fixtures = ("", *(f"{verb} {noun}" for verb, noun in fixture_pairs))
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        neighbours[a].append(b)
        neighbours[b].append(a)
    exits = tuple(tuple(sorted(nb, key=lambda q: names[q])) for nb in neighbours)
    noops = tuple(rng.sample(NOOP_ACTIONS, sizes.noop_actions))
    return Layout(
        task_id=tid,
        places=tuple(names),
        exits=exits,
        fixtures=fixtures,
        milestone_places=milestone_places,
        noops=noops,
        distances=_all_distances(exits),
    )


def _edge(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def _all_distances(exits: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    """Breadth-first search from every place (the graph is connected by construction)."""
    out = []
    for source in range(len(exits)):
        dist = [-1] * len(exits)
        dist[source] = 0
        queue = deque([source])
        while queue:
            p = queue.popleft()
            for q in exits[p]:
                if dist[q] < 0:
                    dist[q] = dist[p] + 1
                    queue.append(q)
        out.append(tuple(dist))
    return tuple(out)
