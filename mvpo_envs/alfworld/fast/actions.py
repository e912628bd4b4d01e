"""ALFWorld's ``alfred.pddl`` actions, natively (docs/alfworld_engine.md, "How the fast engine
works").

Each action of the domain is implemented here with the preconditions and effects of its PDDL
text; the game's domain must contain exactly these action texts (checked by fingerprint at
load, :data:`KNOWN_ACTIONS`), so a changed or new action is refused by name instead of being
played wrongly. Effects are listed as Fast Downward lists them to TextWorld, which applies
every effect atom of the operator in order, conditional ones included (``ToggleObject``).
"""

from __future__ import annotations

from collections.abc import Iterator

from mvpo_envs.alfworld.fast.errors import UnsupportedGameError
from mvpo_envs.alfworld.fast.facts import FactStore

#: action name -> fingerprint of its text in ALFWorld's alfred.pddl (see ``pddl.domain_actions``)
KNOWN_ACTIONS = {
    "look": "af35305d0073105f",
    "inventory": "707bf5a9f559863f",
    "examinereceptacle": "b3bf49299bab5205",
    "examineobject": "30dc940e6061553d",
    "gotolocation": "1a17e26de38fab24",
    "openobject": "21956169b15d8546",
    "closeobject": "11ebd46815bc0c79",
    "pickupobject": "67566d33029bd651",
    "putobject": "6ebc84b6bfd5a339",
    "cleanobject": "60439a4fefecb24d",
    "heatobject": "913128a2295ae62c",
    "coolobject": "e5584ea482950e09",
    "toggleobject": "add36a6e826ee01c",
    "sliceobject": "d10bfbed9ccc451d",
    "help": "805c8dba41981b5e",
}

#: predicates some action changes (the rest are constant during a game)
FLUENTS = {
    "checked", "atlocation", "opened", "inreceptacle", "holds", "holdsany", "objectatlocation",
    "isclean", "ishot", "iscool", "ison", "istoggled", "issliced",
}  # fmt: skip

#: ``not_<p>`` facts the fast engine reproduces exactly (a grammar may read only these)
EXACT_NEGATIONS = {"not_inreceptacle", "not_istoggled", "not_opened", "not_holds", "not_holdsany"}

Effect = tuple[tuple[str, ...], bool]
#: a grounded action: (name, arguments in the domain's parameter order)
Grounding = tuple[str, tuple[str, ...]]

_OPERATE = {
    "cleanobject": ("cleanable", "sinkbasintype"),
    "heatobject": ("heatable", "microwavetype"),
    "coolobject": ("coolable", "fridgetype"),
}


def check_domain(actions: dict[str, tuple[str, list[tuple[str, str]]]]) -> None:
    """Raise :class:`UnsupportedGameError` naming any action that is not ALFWorld's."""
    for name, (fingerprint, _) in actions.items():
        known = KNOWN_ACTIONS.get(name)
        if known is None:
            raise UnsupportedGameError(f"PDDL action {name!r} is not one of ALFWorld's actions")
        if known != fingerprint:
            raise UnsupportedGameError(
                f"PDDL action {name!r} differs from ALFWorld's alfred.pddl (fingerprint "
                f"{fingerprint}, expected {known})"
            )


class ActionModel:
    """Applicable groundings and their effects on a :class:`FactStore`."""

    def __init__(self, types: dict[str, str], domain_names: set[str], initial: FactStore):
        self.types = types
        self.present = domain_names
        self.agents = sorted(n for n, t in types.items() if t == "agent")
        # Fast Downward keeps an atom only if it can ever be true (relaxed reachability) and
        # drops deletes of the others, so no ``not_ishot(o)`` appears for an object that can
        # never be hot: which objects can become hot / cool
        self.can_become: dict[str, set[str]] = {}
        for action, pred in (("heatobject", "ishot"), ("coolobject", "iscool")):
            prop, rtype = _OPERATE[action]
            device = action in domain_names and any(
                initial.args_with("receptacleatlocation", 0, r)
                for r, _ in initial.args_with("receptacletype", 1, rtype)
            )
            objs = {o for (o,) in initial.args_of(pred)}
            if device:
                objs |= {o for (o,) in initial.args_of(prop)}
            self.can_become[pred] = objs

    def _accessible(self, s: FactStore, r: str) -> bool:
        return ("openable", r) not in s or ("opened", r) in s

    def gotos(self, s: FactStore, a: str, loc: str) -> Iterator[Grounding]:
        """The ``gotolocation`` groundings of agent ``a`` at ``loc`` (constant facts only)."""
        if "gotolocation" not in self.present:
            return
        types = self.types
        for r, le in s.args_of("receptacleatlocation"):
            # Fast Downward drops the operator whose start and end coincide (its delete and
            # add of atLocation cancel out): no "go to" where one stands
            if le != loc and types[r] == "receptacle" and types[le] == "location":
                yield "gotolocation", (a, loc, le, r)

    def agent_locations(self, s: FactStore) -> list[tuple[str, str]]:
        types = self.types
        return [
            (a, loc)
            for a, loc in sorted(s.args_of("atlocation"))
            if types.get(a) == "agent" and types.get(loc) == "location"
        ]

    def applicable(self, s: FactStore, with_goto: bool = True) -> Iterator[Grounding]:
        """Every applicable grounding (in no particular order; the admissible list is sorted);
        ``with_goto=False`` leaves out ``gotolocation`` (see :meth:`gotos`)."""
        types = self.types
        has = self.present
        for a in self.agents:
            if "inventory" in has:
                yield "inventory", (a,)
            if "help" in has:
                yield "help", (a,)
        for a, loc in self.agent_locations(s):
            if "look" in has:
                yield "look", (a, loc)
            here = [
                r
                for r, _ in s.args_with("receptacleatlocation", 1, loc)
                if types[r] == "receptacle"
            ]
            if with_goto:
                yield from self.gotos(s, a, loc)
            holds_any = ("holdsany", a) in s
            held = [o for _, o in s.args_with("holds", 0, a)]
            for r in here:
                if "examinereceptacle" in has:
                    yield "examinereceptacle", (a, r)
                openable = ("openable", r) in s
                opened = ("opened", r) in s
                if openable and not opened and "openobject" in has:
                    yield "openobject", (a, loc, r)
                if openable and opened and "closeobject" in has:
                    yield "closeobject", (a, loc, r)
                accessible = not openable or opened
                for o, _ in s.args_with("inreceptacle", 1, r):
                    if accessible:
                        if not holds_any and ("pickupable", o) in s and "pickupobject" in has:
                            yield "pickupobject", (a, loc, o, r)
                    if ("toggleable", o) in s and "toggleobject" in has:
                        yield "toggleobject", (a, loc, o, r)
                for o in held:
                    if accessible and "putobject" in has:
                        for _, ot in s.args_with("objecttype", 0, o):
                            if types[ot] != "otype":
                                continue
                            for _, rt in s.args_with("receptacletype", 0, r):
                                if types[rt] == "rtype" and ("cancontain", rt, ot) in s:
                                    yield "putobject", (a, loc, o, r, ot, rt)
                    for action, (prop, rtype) in _OPERATE.items():
                        if action in has and (prop, o) in s and ("receptacletype", r, rtype) in s:
                            yield action, (a, loc, r, o)
            if "examineobject" in has:
                # Fast Downward's translation keeps only the (holds ?a ?o) disjunct of the
                # precondition: ALFWorld offers "examine <object>" for held objects only
                for o in held:
                    yield "examineobject", (a, o)
            if "sliceobject" in has:
                knives = [
                    k
                    for k in held
                    if ("objecttype", k, "knifetype") in s
                    or ("objecttype", k, "butterknifetype") in s
                ]
                for k in knives:
                    for co, _ in s.args_with("objectatlocation", 1, loc):
                        if ("sliceable", co) in s:
                            yield "sliceobject", (a, loc, co, k)

    def effects(self, name: str, args: tuple[str, ...]) -> list[Effect]:
        """The operator's effect atoms in Fast Downward's order, as TextWorld applies them."""
        if name in ("look", "inventory", "help"):
            return [(("checked", args[-1]), True)]
        if name in ("examinereceptacle", "examineobject"):
            return [(("checked", args[1]), True)]
        if name == "gotolocation":
            a, ls, le, _ = args
            return [(("atlocation", a, ls), False), (("atlocation", a, le), True)]
        if name == "openobject":
            return [(("opened", args[2]), True), (("checked", args[2]), True)]
        if name == "closeobject":
            return [(("opened", args[2]), False)]
        if name == "pickupobject":
            a, loc, o, r = args
            return [
                (("inreceptacle", o, r), False),
                (("holds", a, o), True),
                (("holdsany", a), True),
                (("objectatlocation", o, loc), False),
            ]
        if name == "putobject":
            a, loc, o, r = args[:4]
            return [
                (("inreceptacle", o, r), True),
                (("objectatlocation", o, loc), True),
                (("holds", a, o), False),
                (("holdsany", a), False),
            ]
        if name == "cleanobject":
            return [(("isclean", args[3]), True)]
        if name == "heatobject":
            o = args[3]
            if o not in self.can_become["iscool"]:
                return [(("ishot", o), True)]
            return [(("ishot", o), True), (("iscool", o), False)]
        if name == "coolobject":
            o = args[3]
            if o not in self.can_become["ishot"]:
                return [(("iscool", o), True)]
            return [(("iscool", o), True), (("ishot", o), False)]
        if name == "toggleobject":
            o = args[2]
            return [(("ison", o), True), (("ison", o), False), (("istoggled", o), True)]
        if name == "sliceobject":
            return [(("issliced", args[2]), True)]
        raise UnsupportedGameError(f"PDDL action {name!r} has no native implementation")
