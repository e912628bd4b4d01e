"""An exact progress oracle for ALFWorld: the length of the shortest plan to the goal.

docs/alignment.md, "The progress oracle". :class:`ProgressOracle` answers, for the current state
of a game played on the fast engine (:class:`~mvpo_envs.alfworld.fast.engine.FastEngine`):

* :meth:`ProgressOracle.distance`: ``d(s)``, the number of steps of the shortest command
  sequence from ``s`` to a state where the goal holds (``0`` once it holds; ``-1`` if no plan
  exists);
* :meth:`ProgressOracle.optimal_actions`: the admissible commands ``a`` with
  ``d(step(s, a)) == d(s) - 1``, i.e. the first steps of the optimal plans.

A step's *progress label* is ``1`` if ``d(s_{t+1}) < d(s_t)`` else ``0``; as one step changes
``d`` by at most one, that is "the action is one of :meth:`optimal_actions`".

How it stays exact and fast. The search runs on a *reduced* state that keeps what can matter
for the goal: the agent's location, the set of opened receptacles, the held object, and the
receptacle and status facts (clean / hot / cool / sliced / toggled / on) of the *relevant*
objects: those that can bind an object variable of the goal (by its ``objectType`` constraint),
plus the knives when the goal reads ``isSliced``. Everything else (the other objects'
places, ``checked``) is dropped, and breadth-first search only tries commands that can start
or continue an optimal plan. Each cut is justified by the rules of ALFWorld's ``alfred.pddl``
(:mod:`mvpo_envs.alfworld.fast.actions`); the goal itself is evaluated with the engine's own
:class:`~mvpo_envs.alfworld.fast.goal.Goal` on the reduced facts:

* ``look``, ``inventory``, ``help``, ``examine`` only add ``checked`` facts, which no
  precondition and no goal reads: never in an optimal plan;
* ``close`` only makes a later ``open`` necessary: never in an optimal plan;
* taking, cleaning, heating, cooling, slicing or toggling an object that is not relevant
  changes no fact the goal or a relevant action reads, except that the hands are full: a plan
  without the ``take`` (and its ``move``) is valid and shorter. The object the agent holds at
  the query may have to be put down first, so the held object is always part of the state;
* a device command (``clean``/``heat``/``cool``/``slice``/``use``) is tried only when it adds a
  status fact the goal reads (the goal is positive in the fluents: anything else can only
  delete what the goal needs);
* ``open r`` is tried only when it is followed by ``take`` from ``r`` or ``move ... to r``: in
  any optimal plan an ``open`` can be moved to just before the first use of ``r``;
* ``go to X`` is tried only when a command of this list applies at ``X`` (or the goal holds
  there): two ``go to`` in a row can be replaced by one.

So some optimal plan uses only the commands tried, and the breadth-first depth is ``d(s)``.
``tests/mvpo_envs/alfworld/test_oracle.py`` checks it against a plain breadth-first search over
the engine's full states on small games.

A goal that reads a fluent not modelled here (``checked``, ``objectAtLocation``), negates a
fluent, or a game with several agents raises :class:`OracleUnsupportedError` at build time,
never a silently wrong distance.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mvpo_envs.alfworld.fast.actions import FLUENTS, Grounding
from mvpo_envs.alfworld.fast.engine import FastEngine, Game
from mvpo_envs.alfworld.fast.errors import UnsupportedGameError
from mvpo_envs.alfworld.fast.facts import FactStore
from mvpo_envs.alfworld.fast.pddl import typed_list

__all__ = [
    "UNREACHABLE",
    "OracleUnsupportedError",
    "ProgressOracle",
    "clone_engine",
    "oracle_for",
    "OracleTracker",
    "progress_label",
    "walkthrough_labels",
]

#: ``distance`` of a state from which no plan reaches the goal
UNREACHABLE = -1

# status bits of a relevant object
_CLEAN, _HOT, _COOL, _SLICED, _TOGGLED, _ON = 1, 2, 4, 8, 16, 32
_STATUS = {
    "isclean": _CLEAN, "ishot": _HOT, "iscool": _COOL,
    "issliced": _SLICED, "istoggled": _TOGGLED, "ison": _ON,
}  # fmt: skip
#: fluents the reduced state models (the goal may read these)
_MODELLED = {"atlocation", "opened", "inreceptacle", "holds", "holdsany", *_STATUS}
#: device actions: (property of the object, receptacle type, status set, status cleared if ...)
_DEVICES = {
    "cleanobject": ("cleanable", "sinkbasintype", "isclean"),
    "heatobject": ("heatable", "microwavetype", "ishot"),
    "coolobject": ("coolable", "fridgetype", "iscool"),
}
_KNIVES = ("knifetype", "butterknifetype")
_HELD = -1
#: constant properties of an object that the rules read
_PROPERTIES = (
    "pickupable", "toggleable", "sliceable", "cleanable", "heatable", "coolable", "openable",
)  # fmt: skip
_MAX_MEMO = 100_000


class OracleUnsupportedError(UnsupportedGameError):
    """The game's goal or setup is outside what the oracle models exactly (the message says
    what); no distance is given rather than a wrong one."""


def progress_label(d_before: int, d_after: int) -> int:
    """``1`` if the step shortened the shortest plan (``d_after < d_before``), else ``0``.

    ``-1`` (unknown) when ``d_before`` is unreachable or unknown (``< 0``)."""
    if d_before < 0:
        return -1
    return 1 if 0 <= d_after < d_before else 0


def clone_engine(engine: FastEngine) -> FastEngine:
    """An independent copy of a fast engine in its current state (the game data is shared)."""
    new = copy.copy(engine)
    if engine._store is not None:
        new._store = engine._store.copy()
    return new


# a reduced state: (location, opened bitmask, held irrelevant object (-1 none),
#                   receptacle per relevant object (_HELD when held), status per relevant object)
State = tuple[int, int, int, tuple[int, ...], tuple[int, ...]]


@dataclass(frozen=True)
class _Move:
    """The reduced effect of one grounded command (for :meth:`ProgressOracle.successor`)."""

    kind: str
    args: tuple


class _GoalView:
    """The facts the goal may read, for :class:`Goal` (``in``, ``args_of``, ``args_with``):
    the game's constant facts plus the reduced state's fluents."""

    __slots__ = ("_const", "_fluent", "_by_arg")

    def __init__(self, const: FactStore, fluent: dict[str, set[tuple[str, ...]]]):
        self._const = const
        self._fluent = fluent
        self._by_arg: dict[tuple[str, int, str], set[tuple[str, ...]]] = {}
        for pred, facts in fluent.items():
            for args in facts:
                for i, a in enumerate(args):
                    self._by_arg.setdefault((pred, i, a), set()).add(args)

    def __contains__(self, key: tuple[str, ...]) -> bool:
        facts = self._fluent.get(key[0])
        if facts is not None:
            return key[1:] in facts
        return key in self._const

    def args_of(self, pred: str) -> set[tuple[str, ...]]:
        facts = self._fluent.get(pred)
        return facts if facts is not None else self._const.args_of(pred)

    def args_with(self, pred: str, pos: int, value: str) -> set[tuple[str, ...]]:
        if pred in self._fluent:
            return self._by_arg.get((pred, pos, value), set())
        return self._const.args_with(pred, pos, value)


class ProgressOracle:
    """Shortest-plan distances on one game (see the module docstring).

    Build it from a parsed :class:`Game` (``FastEngine.game``); query it with a
    :class:`FactStore` (``FastEngine._store``) or a reduced state. Distances are memoised per
    reduced state (``_MAX_MEMO`` entries, then cleared).
    """

    def __init__(self, game: Game):
        self.game = game
        init = game.initial
        types = game.model.types
        self._const = init
        agents = [n for n, t in types.items() if t == "agent"]
        if len(agents) != 1:
            raise OracleUnsupportedError(f"progress oracle: {len(agents)} agents (one supported)")
        self.agent = agents[0]
        self.goal = game.goal
        preds = set(game.goal.predicates)
        fluents_read = {p for p in preds if p in FLUENTS}
        unsupported = sorted(fluents_read - _MODELLED)
        if unsupported:
            raise OracleUnsupportedError(
                f"progress oracle: the goal reads {unsupported}, which the oracle does not model"
            )
        _check_positive(game.goal.formula)
        self.goal_reads = preds
        # -- entities
        recs = sorted(n for n, t in types.items() if t == "receptacle")
        self.recs = recs
        self.rec_index = {r: i for i, r in enumerate(recs)}
        rec_loc = dict(init.args_of("receptacleatlocation"))
        locs = sorted(
            {rec_loc[r] for r in recs if r in rec_loc and types[rec_loc[r]] == "location"}
        )
        self.locs = locs
        self.loc_index = {x: i for i, x in enumerate(locs)}
        self.rec_loc = [self.loc_index.get(rec_loc.get(r, ""), -2) for r in recs]
        self.recs_at: list[list[int]] = [[] for _ in locs]
        for i, li in enumerate(self.rec_loc):
            if li >= 0:
                self.recs_at[li].append(i)
        self.openable = [("openable", r) in init for r in recs]
        self.relevant = self._relevant_objects()
        self.rel_index = {o: i for i, o in enumerate(self.relevant)}
        objects = sorted(n for n, t in types.items() if t == "object")
        self.objects = objects
        self.obj_index = {o: i for i, o in enumerate(objects)}
        # -- per object constants (every object: the held one may be irrelevant)
        self.can_contain = [frozenset(self._containers(o)) for o in objects]
        self.put_locs = [frozenset(self.rec_loc[r] for r in cs) for cs in self.can_contain]
        self.pickupable = [("pickupable", o) in init for o in objects]
        self.toggleable = [("toggleable", o) in init for o in objects]
        self.sliceable = [("sliceable", o) in init for o in objects]
        self.knife = [any(("objecttype", o, k) in init for k in _KNIVES) for o in objects]
        self.devices: list[dict[int, list[tuple[str, int, int]]]] = []
        for o in objects:
            table: dict[int, list[tuple[str, int, int]]] = {}
            for action, (prop, rtype, pred) in _DEVICES.items():
                if action not in game.model.present or (prop, o) not in init:
                    continue
                clear = 0
                if action == "heatobject" and o in game.model.can_become["iscool"]:
                    clear = _COOL
                if action == "coolobject" and o in game.model.can_become["ishot"]:
                    clear = _HOT
                for r, _ in init.args_with("receptacletype", 1, rtype):
                    if r in self.rec_index:
                        table.setdefault(self.rec_index[r], []).append(
                            (action, _STATUS[pred], clear)
                        )
            self.devices.append(table)
        self.rel_obj = [self.obj_index[o] for o in self.relevant]
        # which status changes can help: the goal is positive in the fluents
        self.useful_status = 0
        for pred, bit in _STATUS.items():
            if pred in preds and pred != "ison":  # "use" always ends with ison removed
                self.useful_status |= bit
        self.useful_devices = [
            {r: [e for e in ops if e[1] & self.useful_status] for r, ops in table.items()}
            for table in self.devices
        ]
        self.useful_devices = [{r: ops for r, ops in t.items() if ops} for t in self.useful_devices]
        self.reads_location = "atlocation" in preds
        self.reads_opened = "opened" in preds
        self.reads_holdsany = "holdsany" in preds
        self.classes = self._symmetry_classes()
        self._memo: dict[State, int] = {}
        self._goal_memo: dict[State, bool] = {}

    # -- setup ----------------------------------------------------------------------------------
    def _relevant_objects(self) -> list[str]:
        """Objects that can bind an object variable of the goal, plus knives for slicing."""
        init = self._const
        types = self.game.model.types
        objects = sorted(n for n, t in types.items() if t == "object")
        out: set[str] = set()
        everything = False
        for var_type, constraint in _object_variables(self.game.goal.formula):
            if var_type != "object":
                continue
            if constraint is None:
                everything = True
                break
            out |= {o for o, _ in init.args_with("objecttype", 1, constraint)}
        out |= {a for a in _constants(self.game.goal.formula) if types.get(a) == "object"}
        if everything:
            out = set(objects)
        if "issliced" in self.game.goal.predicates:
            out |= {o for o in objects if any(("objecttype", o, k) in init for k in _KNIVES)}
        return sorted(o for o in out if types.get(o) == "object")

    def _symmetry_classes(self) -> list[list[int]]:
        """Groups (2+) of relevant objects that no rule tells apart: same types, properties,
        containers and devices, not named by the goal. Their (place, status) pairs are sorted in
        the search's states, which changes no distance."""
        init = self._const
        named = _constants(self.game.goal.formula)
        can_become = self.game.model.can_become
        groups: dict[tuple, list[int]] = {}
        for k, o in enumerate(self.relevant):
            if o in named:
                continue
            oi = self.obj_index[o]
            sig = (
                tuple(sorted(t for _, t in init.args_with("objecttype", 0, o))),
                tuple(sorted(p for p in _PROPERTIES if (p, o) in init)),
                self.can_contain[oi],
                tuple(sorted((r, tuple(v)) for r, v in self.devices[oi].items())),
                tuple(o in can_become[p] for p in sorted(can_become)),
            )
            groups.setdefault(sig, []).append(k)
        return [g for g in groups.values() if len(g) > 1]

    def canonical(self, state: State) -> State:
        """``state`` with the objects of each symmetry class in sorted order (``state`` itself
        when it is in that order already)."""
        if not self.classes:
            return state
        loc, opened, held_irr, pos, status = state
        pos_l: list[int] | None = None
        status_l: list[int] = []
        for group in self.classes:
            pairs = [(pos[k], status[k]) for k in group]
            ordered = sorted(pairs)
            if ordered == pairs:
                continue
            if pos_l is None:
                pos_l, status_l = list(pos), list(status)
            for k, (p, st) in zip(group, ordered, strict=True):
                pos_l[k], status_l[k] = p, st
        if pos_l is None:
            return state
        return (loc, opened, held_irr, tuple(pos_l), tuple(status_l))

    def _containers(self, o: str) -> list[int]:
        """Receptacles ``putobject`` accepts ``o`` in (``canContain`` of their types)."""
        init = self._const
        types = self.game.model.types
        otypes = [ot for _, ot in init.args_with("objecttype", 0, o) if types[ot] == "otype"]
        out = []
        for r in self.recs:
            rts = [rt for _, rt in init.args_with("receptacletype", 0, r) if types[rt] == "rtype"]
            if any(("cancontain", rt, ot) in init for rt in rts for ot in otypes):
                if self.rec_loc[self.rec_index[r]] >= 0:
                    out.append(self.rec_index[r])
        return out

    # -- reduced state -------------------------------------------------------------------------
    def state_of(self, store: FactStore) -> State:
        """The reduced state of the engine's facts."""
        loc = -1
        for a, x in store.args_of("atlocation"):
            if a == self.agent:
                loc = self.loc_index.get(x, -1)
        opened = 0
        for (r,) in store.args_of("opened"):
            i = self.rec_index.get(r)
            if i is not None:
                opened |= 1 << i
        held_irr = -1
        held_rel = None
        for a, o in store.args_of("holds"):
            if a != self.agent:
                continue
            if o in self.rel_index:
                held_rel = o
            else:
                held_irr = self.obj_index[o]
        pos = []
        status = []
        for o in self.relevant:
            if o == held_rel:
                pos.append(_HELD)
            else:
                where = [r for _, r in store.args_with("inreceptacle", 0, o)]
                if len(where) != 1 or where[0] not in self.rec_index:
                    raise OracleUnsupportedError(
                        f"progress oracle: object {o!r} is in {where} (one receptacle expected)"
                    )
                pos.append(self.rec_index[where[0]])
            bits = 0
            for pred, bit in _STATUS.items():
                if (pred, o) in store:
                    bits |= bit
            status.append(bits)
        return (loc, opened, held_irr, tuple(pos), tuple(status))

    def successor(self, state: State, grounding: Grounding) -> State:
        """The reduced state after the engine applies ``grounding`` (the engine's command table
        entry) in ``state``."""
        loc, opened, held_irr, pos, status = state
        name, args = grounding
        if name == "gotolocation":
            return (self.loc_index.get(args[2], -1), opened, held_irr, pos, status)
        if name == "openobject":
            return (loc, opened | (1 << self.rec_index[args[2]]), held_irr, pos, status)
        if name == "closeobject":
            return (loc, opened & ~(1 << self.rec_index[args[2]]), held_irr, pos, status)
        if name in ("pickupobject", "putobject"):
            o = args[2]
            k = self.rel_index.get(o)
            if name == "pickupobject":
                if k is None:
                    return (loc, opened, self.obj_index[o], pos, status)
                return (loc, opened, held_irr, _set(pos, k, _HELD), status)
            if k is None:
                return (loc, opened, -1, pos, status)
            return (loc, opened, held_irr, _set(pos, k, self.rec_index[args[3]]), status)
        if name in _DEVICES:
            o = args[3]
            k = self.rel_index.get(o)
            if k is None:
                return state
            oi = self.obj_index[o]
            for action, bit, clear in self.devices[oi].get(self.rec_index[args[2]], ()):
                if action == name:
                    return (loc, opened, held_irr, pos, _set(status, k, (status[k] | bit) & ~clear))
            return state
        if name == "toggleobject":
            k = self.rel_index.get(args[2])
            if k is None:
                return state
            return (loc, opened, held_irr, pos, _set(status, k, (status[k] | _TOGGLED) & ~_ON))
        if name == "sliceobject":
            k = self.rel_index.get(args[2])
            if k is None:
                return state
            return (loc, opened, held_irr, pos, _set(status, k, status[k] | _SLICED))
        return state  # look, inventory, help, examine: only "checked" changes

    # -- goal ------------------------------------------------------------------------------------
    def goal_holds(self, state: State) -> bool:
        """The game's goal on the reduced state (the engine's :class:`Goal`)."""
        # the goal reads the location / opened set only when it names them; never what an
        # irrelevant object does (the held one included: it cannot bind a goal variable)
        loc, opened, held_irr, pos, status = state
        key = (
            loc if self.reads_location else 0,
            opened if self.reads_opened else 0,
            held_irr >= 0 if self.reads_holdsany else False,
            pos,
            status,
        )
        won = self._goal_memo.get(key)
        if won is None:
            won = self.goal.holds(_GoalView(self._const, self._fluents(state)))
            if len(self._goal_memo) > _MAX_MEMO:
                self._goal_memo.clear()
            self._goal_memo[key] = won
        return won

    def _fluents(self, state: State) -> dict[str, set[tuple[str, ...]]]:
        loc, opened, held_irr, pos, status = state
        a = self.agent
        fl: dict[str, set[tuple[str, ...]]] = {p: set() for p in _MODELLED}
        if loc >= 0:
            fl["atlocation"].add((a, self.locs[loc]))
        for i, r in enumerate(self.recs):
            if opened >> i & 1:
                fl["opened"].add((r,))
        if held_irr >= 0:
            fl["holds"].add((a, self.objects[held_irr]))
        for k, o in enumerate(self.relevant):
            if pos[k] == _HELD:
                fl["holds"].add((a, o))
            else:
                fl["inreceptacle"].add((o, self.recs[pos[k]]))
            for pred, bit in _STATUS.items():
                if status[k] & bit:
                    fl[pred].add((o,))
        if fl["holds"]:
            fl["holdsany"].add((a,))
        return fl

    # -- search ----------------------------------------------------------------------------------
    def _held(self, state: State) -> int:
        """Object index of what the agent holds, or -1."""
        if state[2] >= 0:
            return state[2]
        for k, p in enumerate(state[3]):
            if p == _HELD:
                return self.rel_obj[k]
        return -1

    def _local(self, state: State, held: int) -> list[State]:
        """The successors by the commands at the agent's location that may be in an optimal
        plan (module docstring)."""
        loc, opened, held_irr, pos, status = state
        out: list[State] = []
        if loc < 0:
            return out
        here = self.recs_at[loc]
        here_set = set(here)
        useful = self.useful_status
        contain = self.can_contain[held] if held >= 0 else frozenset()
        for r in here:
            if self.openable[r] and not opened >> r & 1:
                wanted = (
                    held < 0
                    and any(p == r and self.pickupable[self.rel_obj[k]] for k, p in enumerate(pos))
                ) or r in contain
                if wanted:
                    out.append((loc, opened | 1 << r, held_irr, pos, status))
        if held < 0:
            for k, p in enumerate(pos):
                if p in here_set and self.pickupable[self.rel_obj[k]]:
                    if not self.openable[p] or opened >> p & 1:
                        out.append((loc, opened, held_irr, _set(pos, k, _HELD), status))
        else:
            for r in here:
                if r in contain and (not self.openable[r] or opened >> r & 1):
                    if held_irr >= 0:
                        out.append((loc, opened, -1, pos, status))
                    else:
                        k = pos.index(_HELD)
                        out.append((loc, opened, held_irr, _set(pos, k, r), status))
            if held_irr < 0:
                k = pos.index(_HELD)
                for r in here:
                    for _, bit, clear in self.useful_devices[held].get(r, ()):
                        new = (status[k] | bit) & ~clear
                        if new != status[k]:
                            out.append((loc, opened, held_irr, pos, _set(status, k, new)))
        if useful & _TOGGLED:
            for k, p in enumerate(pos):
                if p in here_set and self.toggleable[self.rel_obj[k]]:
                    new = (status[k] | _TOGGLED) & ~_ON
                    if new != status[k]:
                        out.append((loc, opened, held_irr, pos, _set(status, k, new)))
        if useful & _SLICED and held >= 0 and self.knife[held]:
            for k, p in enumerate(pos):
                if p in here_set and self.sliceable[self.rel_obj[k]] and not status[k] & _SLICED:
                    out.append((loc, opened, held_irr, pos, _set(status, k, status[k] | _SLICED)))
        return out

    def _targets(self, state: State, held: int) -> set[int]:
        """Locations where a command of :meth:`_local` could apply after ``go to``."""
        loc, _, _, pos, status = state
        targets: set[int] = set()
        rel_obj = self.rel_obj
        if held < 0:
            for k, p in enumerate(pos):
                if p >= 0 and self.pickupable[rel_obj[k]]:
                    targets.add(self.rec_loc[p])
        else:
            targets |= self.put_locs[held]
            if state[2] < 0:
                for r in self.useful_devices[held]:
                    targets.add(self.rec_loc[r])
        useful = self.useful_status
        if useful & _TOGGLED:
            for k, p in enumerate(pos):
                if p >= 0 and self.toggleable[rel_obj[k]] and not status[k] & _TOGGLED:
                    targets.add(self.rec_loc[p])
        if useful & _SLICED and held >= 0 and self.knife[held]:
            for k, p in enumerate(pos):
                if p >= 0 and self.sliceable[rel_obj[k]] and not status[k] & _SLICED:
                    targets.add(self.rec_loc[p])
        if self.reads_location:
            targets |= set(range(len(self.locs)))  # checked below: only where the goal holds
        targets.discard(loc)
        targets.discard(-2)
        return targets

    def _successors(self, state: State) -> list[State]:
        held = self._held(state)
        out = self._local(state, held)
        loc, opened, held_irr, pos, status = state
        for x in self._targets(state, held):
            nxt = (x, opened, held_irr, pos, status)
            if self.reads_location and not self._acts_at(nxt, held) and not self.goal_holds(nxt):
                continue
            out.append(nxt)
        return out

    def _acts_at(self, state: State, held: int) -> bool:
        return bool(self._local(state, held))

    def distance_of(self, state: State) -> int:
        """``d(state)``: length of the shortest plan to the goal; :data:`UNREACHABLE` if none."""
        state = self.canonical(state)
        d = self._memo.get(state)
        if d is not None:
            return d
        if self.goal_holds(state):
            d = 0
        else:
            d = self._bfs(state)
        if len(self._memo) > _MAX_MEMO:
            self._memo.clear()
        self._memo[state] = d
        return d

    def _bfs(self, start: State, limit: int | None = None) -> int:
        """Breadth-first depth of the goal from ``start`` (not itself a goal state); with
        ``limit``, ``limit + 1`` as soon as the goal is known to be farther."""
        seen = {start}
        frontier = [start]
        depth = 0
        memo = self._memo
        canon = self.canonical
        goal_reads_moves = self.reads_location or self.reads_opened or self.reads_holdsany
        best = None  # an upper bound from a memoised node: depth + its distance
        while frontier:
            depth += 1
            if best is not None and depth >= best:
                return best
            if limit is not None and depth > limit:
                return limit + 1
            nxt = []
            for s in frontier:
                pos, status = s[3], s[4]
                for t in self._successors(s):
                    # ``s`` is canonical and no goal, and a successor that changed no object
                    # (go to, open, dropping the irrelevant object) is canonical too, and no
                    # goal either unless the goal reads the location, the opened set or the
                    # hands: only the others need the symmetry order and the goal checked
                    moved_only = t[3] is pos and t[4] is status
                    if not moved_only:
                        t = canon(t)
                    n_seen = len(seen)
                    seen.add(t)
                    if len(seen) == n_seen:  # seen before (one hash, not two)
                        continue
                    if (not moved_only or goal_reads_moves) and self.goal_holds(t):
                        return depth if best is None else min(best, depth)
                    known = memo.get(t)
                    if known is not None:
                        if known >= 0 and (best is None or depth + known < best):
                            best = depth + known
                        continue
                    nxt.append(t)
            frontier = nxt
        return UNREACHABLE if best is None else best

    def distance(self, store: FactStore) -> int:
        """``d(s)`` of the engine's facts (see :meth:`distance_of`)."""
        return self.distance_of(self.state_of(store))

    def optimal_actions(self, engine: FastEngine) -> list[str]:
        """The admissible commands of ``engine``'s current state that start an optimal plan
        (``d`` drops by one), sorted; ``[]`` when the goal holds or cannot be reached."""
        state = self.state_of(engine._store)
        d = self.distance_of(state)
        if d <= 0:
            return []
        # one (bounded) search per distinct successor: d - 1 or not
        verdict: dict[State, bool] = {self.canonical(state): False}  # no-ops: look, examine...
        out = []
        for text, grounding in engine._commands.items():
            nxt = self.canonical(self.successor(state, grounding))
            ok = verdict.get(nxt)
            if ok is None:
                known = self._memo.get(nxt)
                if known is not None:
                    ok = known == d - 1
                elif self.goal_holds(nxt):
                    ok = d == 1
                else:
                    ok = self._bfs(nxt, limit=d - 1) == d - 1
                verdict[nxt] = ok
            if ok:
                out.append(text)
        return sorted(out)


def _set(values: tuple[int, ...], k: int, v: int) -> tuple[int, ...]:
    return values[:k] + (v,) + values[k + 1 :]


def _check_positive(f) -> None:
    """Refuse a goal that negates anything but an equality (it would not be monotone)."""
    if not isinstance(f, list) or not f:
        return
    head = f[0]
    if head == "not":
        inner = f[1]
        if not (isinstance(inner, list) and inner and inner[0] == "="):
            raise OracleUnsupportedError(f"progress oracle: the goal negates {inner!r}")
        return
    if head == "forall":
        raise OracleUnsupportedError("progress oracle: the goal uses 'forall'")
    if head in ("and", "or"):
        for sub in f[1:]:
            _check_positive(sub)
    elif head == "exists":
        _check_positive(f[2])


def _object_variables(f) -> Iterable[tuple[str, str | None]]:
    """Each variable the goal binds, with its type and the ``objectType`` constant it is
    constrained to in the conjunction of its scope (``None``: unconstrained)."""
    if not isinstance(f, list) or not f or not isinstance(f[0], str):
        return
    head = f[0]
    if head in ("and", "or", "not"):
        for sub in f[1:]:
            yield from _object_variables(sub)
    elif head == "exists":
        conj = _conjuncts(f[2])
        for var, ty in typed_list(f[1]):
            types = {
                g[2]
                for g in conj
                if g[0] == "objecttype" and len(g) == 3 and g[1] == var and not g[2].startswith("?")
            }
            yield ty, (next(iter(types)) if len(types) == 1 else None)
        yield from _object_variables(f[2])


def _conjuncts(f) -> list[list]:
    """The atoms that must all hold for ``f`` (through ``and`` and nested ``exists``)."""
    out: list[list] = []
    todo = [f]
    while todo:
        g = todo.pop()
        if not isinstance(g, list) or not g:
            continue
        if g[0] == "and":
            todo.extend(g[1:])
        elif g[0] == "exists":
            todo.append(g[2])
        elif g[0] not in ("or", "not", "forall"):
            out.append(g)
    return out


def _constants(f) -> set[str]:
    out: set[str] = set()
    if isinstance(f, list) and f and isinstance(f[0], str):
        if f[0] in ("exists", "forall"):
            return _constants(f[2])
        for sub in f[1:]:
            if isinstance(sub, str):
                if not sub.startswith("?"):
                    out.add(sub)
            else:
                out |= _constants(sub)
    return out


#: oracles of the process, by parsed game (the fast engine caches a game per content)
_ORACLES: OrderedDict[int, ProgressOracle] = OrderedDict()
MAX_CACHED_ORACLES = 64


def oracle_for(game: Game) -> ProgressOracle:
    """The process's oracle of ``game`` (built on first use, at most
    :data:`MAX_CACHED_ORACLES` kept)."""
    oracle = _ORACLES.get(id(game))
    if oracle is None or oracle.game is not game:
        oracle = _ORACLES[id(game)] = ProgressOracle(game)
        while len(_ORACLES) > MAX_CACHED_ORACLES:
            _ORACLES.popitem(last=False)
    else:
        _ORACLES.move_to_end(id(game))
    return oracle


class OracleTracker:
    """Follows one env's episodes and labels each step (``info["oracle_progress"]``).

    ``engine``: the env's engine. A :class:`FastEngine` is read directly; any other engine (the
    ``pddl`` reference) is shadowed by a fast engine that receives the same commands (the two
    are identical step for step, docs/alfworld_engine.md). The oracle of a game (and so its
    memo) is shared by every tracker of the process (:func:`oracle_for`).
    """

    def __init__(self, engine: object):
        self._shadow = not isinstance(engine, FastEngine)
        self.engine: FastEngine = FastEngine() if self._shadow else engine  # type: ignore[assignment]
        self.oracle: ProgressOracle | None = None
        self.d = UNREACHABLE

    def reset(self, game_file: str) -> int:
        """After the env's reset of ``game_file``: compute ``d(s_0)``; the label is ``-1``."""
        if self._shadow:
            self.engine.load(game_file)
            self.engine.reset()
        oracle = self.oracle = oracle_for(self.engine.game)
        self.d = oracle.distance(self.engine._store)
        return -1

    def step(self, command: str) -> int:
        """After the env passed ``command`` to its engine: the step's label (1 / 0)."""
        if self.oracle is None:
            raise RuntimeError("OracleTracker: reset first")
        if self._shadow:
            self.engine.step(command)
        d = self.oracle.distance(self.engine._store)
        label = progress_label(self.d, d)
        self.d = d
        return label

    def optimal_actions(self) -> list[str]:
        """:meth:`ProgressOracle.optimal_actions` of the current state."""
        if self.oracle is None:
            raise RuntimeError("OracleTracker: reset first")
        return self.oracle.optimal_actions(self.engine)


def walkthrough_labels(
    oracle: ProgressOracle, engine: FastEngine, actions: Sequence[str]
) -> list[int]:
    """The progress label of each command of ``actions`` played from ``engine``'s current
    state (the engine is stepped)."""
    labels = []
    d = oracle.distance(engine._store)
    for a in actions:
        engine.step(a)
        d2 = oracle.distance(engine._store)
        labels.append(progress_label(d, d2))
        d = d2
    return labels
