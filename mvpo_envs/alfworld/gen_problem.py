"""Sample one ALFWorld task in an ALFRED scene, write its PDDL problem, construct its solution.

A problem keeps only what the task needs plus the distractors the knobs ask for: a few
receptacle instances of the scene (with their real ids and poses), the target object(s), a
desk lamp for ``look_at_obj_in_light``, and distractor objects of types the scene really has,
each inside a receptacle that ALFRED allows to hold it. Facts mirror ALFWorld's game files
(``atLocation``, ``receptacleType``, ``objectType``, ``canContain``, ``openable``, the object
classes, ``inReceptacle``, ``receptacleAtLocation``, ``objectAtLocation``); the goal is
``alfworld.gen.goal_library``'s PDDL for the task type.

Everything is drawn from one ``random.Random`` over sorted sequences, so a seed fixes the game.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import alfworld.gen.constants as constants
import alfworld.gen.goal_library as goal_library

from mvpo_envs.alfworld.gen_scene import (
    CLASS_PREDICATES,
    DOMAIN_OTYPES,
    DOMAIN_RTYPES,
    LAMP,
    LAMP_HOLDERS,
    Receptacle,
    Scene,
    can_contain,
    load_scene,
    location_name,
    mangle,
    object_classes,
)

#: receptacle type the state-change tasks need, and the verb of the command that uses it
TOOLS = {
    "pick_clean_then_place_in_recep": ("SinkBasin", "clean", "Cleanable"),
    "pick_heat_then_place_in_recep": ("Microwave", "heat", "Heatable"),
    "pick_cool_then_place_in_recep": ("Fridge", "cool", "Coolable"),
}
AGENT = "agent1"
AGENT_HORIZON = 30


@dataclass(frozen=True)
class Knobs:
    """Difficulty knobs of one generated game (ranges are inclusive)."""

    receptacles: tuple[int, int]  # receptacle instances in the problem (capped by the scene)
    distractors: tuple[int, int]  # objects of other types than the target
    openable_share: float | None  # share of filler receptacles of openable types; None: scene mix
    extra_targets: tuple[int, int]  # copies of the target type beyond what the task needs
    max_walkthrough: int  # longer solutions are rejected (the game is drawn again)
    world: str = "sampled"  # "sampled": a few receptacles (the knobs); "room": the whole room
    planner_check: bool = True  # also ask the engine's planner for a plan at reset

    def as_meta(self) -> dict:
        """The knobs as written to files: new fields only when they differ from the default.

        A ``room`` world uses neither the receptacle nor the object knobs; they are left out.
        """
        out = dataclasses.asdict(self)
        if self.world == "room":
            return {k: out[k] for k in ("max_walkthrough", "planner_check", "world")}
        for name in ("world", "planner_check"):
            if out[name] == Knobs.__dataclass_fields__[name].default:
                del out[name]
        return out


@dataclass(frozen=True)
class Goal:
    """ALFRED's ``pddl_params`` of a task."""

    task_type: str
    object_target: str
    parent_target: str  # "" for look_at_obj_in_light
    toggle_target: str  # "" unless look_at_obj_in_light

    def pddl_params(self) -> dict:
        return {
            "object_target": self.object_target,
            "parent_target": self.parent_target,
            "toggle_target": self.toggle_target,
            "mrecep_target": "",
            "object_sliced": False,
        }

    def folder_name(self, scene_number: int) -> str:
        """ALFWorld's task folder: ``<task>-<Object>-<Mrecep or None>-<Recep>-<scene>``."""
        recep = self.parent_target or self.toggle_target
        return f"{self.task_type}-{self.object_target}-None-{recep}-{scene_number}"

    def pddl(self) -> str:
        """The goal section (it also closes the problem's ``define``)."""
        text = goal_library.gdict[self.task_type]["pddl"].format(
            obj=self.object_target, recep=self.parent_target, toggle=self.toggle_target, mrecep=""
        )
        return text.replace("#", "-")


@dataclass(frozen=True)
class Thing:
    """An object instance placed in a receptacle."""

    alfred_id: str
    otype: str
    receptacle: Receptacle

    @property
    def name(self) -> str:
        return mangle(self.alfred_id)


@dataclass(frozen=True)
class Step:
    """One abstract command of a solution; rendered once the engine has named the entities."""

    verb: str  # goto, open, take, move, heat, cool, clean, use
    obj: str = ""  # PDDL name
    rec: str = ""  # PDDL name

    def render(self, names: dict[str, str]) -> str:
        o = names[self.obj.lower()] if self.obj else ""
        r = names[self.rec.lower()] if self.rec else ""
        if self.verb == "goto":
            return f"go to {r}"
        if self.verb == "open":
            return f"open {r}"
        if self.verb == "take":
            return f"take {o} from {r}"
        if self.verb == "move":
            return f"move {o} to {r}"
        if self.verb in ("heat", "cool", "clean"):
            return f"{self.verb} {o} with {r}"
        if self.verb == "use":
            return f"use {o}"
        raise ValueError(f"unknown step verb {self.verb!r}")


@dataclass
class Problem:
    """A sampled task: scene, goal, entities, agent start and a constructed solution."""

    scene: Scene
    goal: Goal
    receptacles: list[Receptacle]
    things: list[Thing]
    agent_location: str
    agent_pose: tuple[float, float, int]  # x, z, rotation in degrees
    plan: list[Step] = field(default_factory=list)

    def pddl(self, problem_name: str) -> str:
        return render_problem(self, problem_name)


# --------------------------------------------------------------------------------------
# Choosing the task


def task_objects(scene: Scene, task_type: str) -> list[str]:
    """Object types of the scene the task may target."""
    if task_type in TOOLS:
        allowed = constants.VAL_ACTION_OBJECTS[TOOLS[task_type][2]]
        return [t for t in scene.object_types if t in allowed]
    return list(scene.object_types)


def candidate_goals(scene: Scene, task_type: str) -> list[Goal]:
    """Every goal of this task type the scene supports, in a fixed order."""
    if scene.room not in constants.GOALS_VALID[task_type]:
        return []
    rtypes = scene.receptacle_types()
    if task_type == "look_at_obj_in_light":
        if not scene.has_lamp or not any(t in LAMP_HOLDERS for t in rtypes):
            return []
        return [
            Goal(task_type, o, "", LAMP)
            for o in task_objects(scene, task_type)
            if any(can_contain(t, o) for t in rtypes)
        ]
    return placement_goals(scene, task_type, rtypes)


def placement_goals(scene: Scene, task_type: str, rtypes: Sequence[str]) -> list[Goal]:
    """The goals of a task that places an object (every type but ``look_at_obj_in_light``)
    among the receptacle types ``rtypes``, in a fixed order: each target object and parent
    the task allows where some other type can hold the object first (the scenes of the small
    presets and the whole rooms of ``alfworld`` alike)."""
    tool = TOOLS.get(task_type, ("", "", ""))[0]
    if tool and tool not in rtypes:
        return []
    goals = []
    for obj in task_objects(scene, task_type):
        for parent in rtypes:
            if parent == tool or not can_contain(parent, obj):
                continue
            if any(can_contain(t, obj) for t in rtypes if t != parent):
                goals.append(Goal(task_type, obj, parent, ""))
    return goals


@functools.cache
def scene_goals(number: int, task_type: str) -> tuple[Goal, ...]:
    """:func:`candidate_goals` of a floor plan, cached."""
    return tuple(candidate_goals(load_scene(number), task_type))


def _sample_scene_and_goal(
    rng: random.Random, task_type: str, pool: tuple[int, ...]
) -> tuple[Scene, Goal]:
    scenes = [n for n in pool if scene_goals(n, task_type)]
    if not scenes:
        raise ValueError(f"no scene in the pool supports {task_type}")
    number = rng.choice(scenes)
    return load_scene(number), rng.choice(scene_goals(number, task_type))


# --------------------------------------------------------------------------------------
# Choosing receptacles and objects


def _sources(scene: Scene, goal: Goal, among: list[Receptacle] | None = None) -> list[Receptacle]:
    """Receptacles where a target may start: they hold it and are not of the goal type."""
    recs = scene.receptacles if among is None else among
    return [
        r
        for r in recs
        if can_contain(r.rtype, goal.object_target) and r.rtype != goal.parent_target
    ]


def _fill(
    rng: random.Random, scene: Scene, chosen: list[Receptacle], total: int, share: float | None
) -> list[Receptacle]:
    """Add filler receptacles until ``total``, a ``share`` of them of openable types."""
    rest = [r for r in scene.receptacles if r not in chosen]
    room = max(0, min(total, len(scene.receptacles)) - len(chosen))
    if share is None:
        return chosen + rng.sample(rest, room)
    openable = [r for r in rest if r.openable]
    plain = [r for r in rest if not r.openable]
    n_open = min(round(share * room), len(openable))
    n_plain = min(room - n_open, len(plain))
    n_open = min(room - n_plain, len(openable))  # top up from openables if plain ran out
    return chosen + rng.sample(openable, n_open) + rng.sample(plain, n_plain)


def _object_id(rng: random.Random, otype: str, rec: Receptacle, used: set[str]) -> str:
    """ALFRED-style id ``Type|+x.xx|+y.yy|+z.zz`` near the receptacle, unique in the game."""
    x0, y0, z0 = rec.position
    while True:
        x = round(x0 + rng.uniform(-0.3, 0.3), 2) + 0.0
        y = round(y0 + rng.uniform(0.0, 0.3), 2) + 0.0
        z = round(z0 + rng.uniform(-0.3, 0.3), 2) + 0.0
        oid = f"{otype}|{x:+06.2f}|{y:+06.2f}|{z:+06.2f}"
        if oid not in used:
            used.add(oid)
            return oid


def _place(rng: random.Random, otype: str, rec: Receptacle, used: set[str]) -> Thing:
    return Thing(_object_id(rng, otype, rec, used), otype, rec)


def _agent_start(
    rng: random.Random, scene: Scene, taken: set[str]
) -> tuple[str, tuple[float, float, int]]:
    """A reachable floor point, facing a random way, away from every receptacle's pose."""
    points = list(scene.floor_points) or [(0.0, 0.0)]
    for _ in range(1000):
        x, z = rng.choice(points)
        heading = rng.randrange(4)
        loc = location_name(x, z, heading, AGENT_HORIZON)
        if loc not in taken:
            return loc, (x, z, heading * 90)
    raise ValueError(f"no free start pose in {scene.floor_plan}")


def sample_problem(
    rng: random.Random, task_type: str, pool: tuple[int, ...], knobs: Knobs
) -> Problem:
    """Draw a scene, a goal, the entities and the agent's start; construct the solution."""
    scene, goal = _sample_scene_and_goal(rng, task_type, pool)
    used: set[str] = set()
    required: list[Receptacle] = []

    def need(rec: Receptacle) -> Receptacle:
        if rec not in required:
            required.append(rec)
        return rec

    goal_rec = need(rng.choice(scene.instances(goal.parent_target))) if goal.parent_target else None
    tool_rec = None
    if task_type in TOOLS:
        tool_rec = need(rng.choice(scene.instances(TOOLS[task_type][0])))
    lamp_rec = None
    if task_type == "look_at_obj_in_light":
        lamp_rec = need(rng.choice([r for r in scene.receptacles if r.rtype in LAMP_HOLDERS]))
    n_targets = 2 if task_type == "pick_two_obj_and_place" else 1
    sources = [need(rng.choice(_sources(scene, goal))) for _ in range(n_targets)]

    receptacles = _fill(rng, scene, required, rng.randint(*knobs.receptacles), knobs.openable_share)
    targets = [_place(rng, goal.object_target, src, used) for src in sources]
    spots = _sources(scene, goal, receptacles)
    extras = [
        _place(rng, goal.object_target, rng.choice(spots), used)
        for _ in range(rng.randint(*knobs.extra_targets))
    ]
    things = targets + extras
    lamp = None
    if lamp_rec is not None:
        lamp = _place(rng, LAMP, lamp_rec, used)
        things.append(lamp)
    things += _distractors(rng, scene, goal, receptacles, rng.randint(*knobs.distractors), used)

    taken = {r.location for r in receptacles}
    agent_loc, agent_pose = _agent_start(rng, scene, taken)
    problem = Problem(
        scene=scene,
        goal=goal,
        receptacles=sorted(receptacles, key=lambda r: r.alfred_id),
        things=sorted(things, key=lambda t: t.alfred_id),
        agent_location=agent_loc,
        agent_pose=agent_pose,
    )
    problem.plan = construct_plan(problem, targets, goal_rec, tool_rec, lamp)
    return problem


def _distractors(
    rng: random.Random,
    scene: Scene,
    goal: Goal,
    receptacles: list[Receptacle],
    count: int,
    used: set[str],
) -> list[Thing]:
    """Objects of the scene's other types, each in a receptacle that may hold it."""
    types = [
        t
        for t in scene.object_types
        if t != goal.object_target and any(can_contain(r.rtype, t) for r in receptacles)
    ]
    out = []
    for _ in range(count if types else 0):
        otype = rng.choice(types)
        rec = rng.choice([r for r in receptacles if can_contain(r.rtype, otype)])
        out.append(_place(rng, otype, rec, used))
    return out


# --------------------------------------------------------------------------------------
# The constructed solution


class _Walker:
    """Tracks where the agent is and what is open while writing a solution."""

    def __init__(self, start: str) -> None:
        self.location = start
        self.opened: set[str] = set()
        self.steps: list[Step] = []

    def visit(self, rec: Receptacle) -> None:
        if self.location != rec.location:  # co-located receptacles need no move
            self.steps.append(Step("goto", rec=rec.name))
            self.location = rec.location

    def open(self, rec: Receptacle) -> None:
        if rec.openable and rec.name not in self.opened:
            self.steps.append(Step("open", rec=rec.name))
            self.opened.add(rec.name)

    def take(self, thing: Thing) -> None:
        self.visit(thing.receptacle)
        self.open(thing.receptacle)
        self.steps.append(Step("take", obj=thing.name, rec=thing.receptacle.name))

    def put(self, thing: Thing, rec: Receptacle) -> None:
        self.visit(rec)
        self.open(rec)
        self.steps.append(Step("move", obj=thing.name, rec=rec.name))

    def use_tool(self, verb: str, thing: Thing, rec: Receptacle) -> None:
        self.visit(rec)
        self.steps.append(Step(verb, obj=thing.name, rec=rec.name))


def construct_plan(
    problem: Problem,
    targets: list[Thing],
    goal_rec: Receptacle | None,
    tool_rec: Receptacle | None,
    lamp: Thing | None,
) -> list[Step]:
    """The straightforward solution: fetch, transform if asked, deliver (or look under lamp)."""
    task = problem.goal.task_type
    walker = _Walker(problem.agent_location)
    if task == "look_at_obj_in_light":
        assert lamp is not None
        walker.take(targets[0])
        walker.visit(lamp.receptacle)
        walker.steps.append(Step("use", obj=lamp.name))
        return walker.steps
    assert goal_rec is not None
    for target in targets:
        walker.take(target)
        if task in TOOLS:
            assert tool_rec is not None
            walker.use_tool(TOOLS[task][1], target, tool_rec)
        walker.put(target, goal_rec)
    return walker.steps


# --------------------------------------------------------------------------------------
# PDDL text

_INDENT = "        "


def _block(lines: list[str]) -> str:
    return "".join(f"{_INDENT}{line}\n" for line in lines)


def init_facts(problem: Problem) -> list[str]:
    """The ``:init`` facts, grouped by predicate like ALFWorld's files, sorted in each group."""
    recs, things = problem.receptacles, problem.things
    otypes = sorted({t.otype for t in things})
    rtypes = sorted({r.rtype for r in recs})
    facts = [f"(atLocation {AGENT} {problem.agent_location})"]
    facts += [f"(receptacleType {r.name} {r.rtype}Type)" for r in recs]
    facts += [f"(objectType {t.name} {t.otype}Type)" for t in things]
    facts += [
        f"(canContain {rt}Type {ot}Type)" for rt in rtypes for ot in otypes if can_contain(rt, ot)
    ]
    facts += [f"(openable {r.name})" for r in recs if r.openable]
    for pred in CLASS_PREDICATES:
        facts += [f"({pred} {t.name})" for t in things if pred in object_classes(t.otype)]
    facts += [f"(inReceptacle {t.name} {t.receptacle.name})" for t in things]
    facts += [f"(receptacleAtLocation {r.name} {r.location})" for r in recs]
    facts += [f"(objectAtLocation {t.name} {t.receptacle.location})" for t in things]
    return facts


def declarations(problem: Problem) -> list[str]:
    """The ``:objects`` lines; every type a fact or the domain's actions name is declared."""
    otypes = sorted({f"{t.otype}Type" for t in problem.things} | set(DOMAIN_OTYPES))
    rtypes = sorted({f"{r.rtype}Type" for r in problem.receptacles} | set(DOMAIN_RTYPES))
    locations = sorted({r.location for r in problem.receptacles} | {problem.agent_location})
    lines = [f"{t} - otype" for t in otypes] + [f"{t} - rtype" for t in rtypes]
    lines += [f"{t.name} - object" for t in problem.things]
    lines += [f"{r.name} - receptacle" for r in problem.receptacles]
    lines += [f"{loc} - location" for loc in locations]
    return lines


def render_problem(problem: Problem, problem_name: str) -> str:
    """The full ``pddl_problem`` text, laid out like ALFWorld's game files."""
    return (
        f"\n(define (problem {problem_name})\n(:domain alfred)\n(:objects\n{AGENT} - agent\n"
        + _block(declarations(problem))
        + f"{_INDENT})\n\n(:init\n"
        + _block(init_facts(problem))
        + f"{_INDENT})\n\n"
        + problem.goal.pddl()
    )
