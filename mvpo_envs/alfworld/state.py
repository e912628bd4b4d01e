"""Structured ALFWorld state read from the engine's facts (docs/environments.md, ``info["state"]``).

The PDDL engine knows exactly where the agent is, what it holds, what is in reach and which
objects are clean, hot, cool, sliced or switched on. This module turns its facts (propositions
over raw ALFRED ids) into a plain dict of demangled names (``"potato 2"``, ``"sinkbasin 1"``)
that abstractions read without parsing text.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

#: engine predicates for object states, and the name each gets in ``state["object_states"]``
OBJECT_STATE_PREDICATES = {
    "isclean": "clean",
    "ishot": "hot",
    "iscool": "cool",
    "issliced": "sliced",
    "istoggled": "on",
}
LAMP_TYPES = ("desklamp", "floorlamp")


def object_kind(name: str) -> str:
    """``"potato 2" -> "potato"``; ``"sinkbasin 1" -> "sinkbasin"``."""
    return name.rsplit(" ", 1)[0] if name[-1:].isdigit() else name


def state_from_facts(
    facts: list[Any],
    names: dict[str, str],
    location: str,
    goal: dict[str, Any],
    observation: str,
) -> dict[str, Any]:
    """Build ``info["state"]`` from the engine's propositions.

    ``names`` maps raw ids to demangled names; ``location`` is the receptacle the agent last
    went to (``"middle of room"`` at the start). Objects "in reach" are those in receptacles at
    the agent's location that are open or not openable — exactly what ``take`` can reach.
    """
    grouped = getattr(facts, "grouped", None)
    if grouped is not None and len(grouped.get("atlocation", ())) <= 1:
        # the native engine's facts come grouped (docs/alfworld_engine.md, "Speed"); with one
        # agent nothing below depends on the facts' order, so the grouping gives the same dict
        by_pred = defaultdict(tuple, grouped)
    else:
        by_pred = defaultdict(list)
        for fact in facts:
            by_pred[fact.name].append(tuple(v.name for v in fact.arguments))

    agent_loc = next((args[1] for args in by_pred["atlocation"]), None)
    receps_here = sorted(
        names.get(r, r) for r, loc in by_pred["receptacleatlocation"] if loc == agent_loc
    )
    openable = {r for (r,) in by_pred["openable"]}
    opened = {r for (r,) in by_pred["opened"]}
    accessible = {
        r
        for r, loc in by_pred["receptacleatlocation"]
        if loc == agent_loc and (r not in openable or r in opened)
    }
    in_recep = [(o, r) for o, r in by_pred["inreceptacle"]]
    visible = sorted({names.get(o, o) for o, r in in_recep if r in accessible})
    holding = sorted(names.get(o, o) for _, o in by_pred["holds"])

    flags: dict[str, list[str]] = defaultdict(list)
    for pred, label in OBJECT_STATE_PREDICATES.items():
        for (o,) in by_pred[pred]:
            flags[names.get(o, o)].append(label)
    object_states = {n: sorted(v) for n, v in sorted(flags.items())}
    lamp_on = any(object_kind(n) in LAMP_TYPES and "on" in v for n, v in object_states.items())

    placed = []
    if goal.get("object"):
        target, target_recep = goal["object"], goal.get("receptacle")
        placed = sorted(
            names.get(o, o)
            for o, r in in_recep
            if object_kind(names.get(o, o)) == target
            and object_kind(names.get(r, r)) == target_recep
        )
    return {
        "observation": observation,
        "location": location,
        "receptacles_here": receps_here,
        "visible_objects": visible,
        "holding": holding,
        "opened": sorted(names.get(r, r) for r in opened),
        "object_states": object_states,
        "lamp_on": lamp_on,
        "goal": dict(goal),
        "target_in_goal_receptacle": placed,
    }
