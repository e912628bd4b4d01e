"""ALFWorld's paper abstraction, in two variants (docs/estimators.md §3.1, docs/environments.md).

Signature ``location|obj1+obj2|d{3*floor(t/3)}``: where the agent is, up to two task-relevant
object keywords in view now (sorted; ``none`` when there are none) and a depth bin of three
steps, e.g. ``countertop 1|apple+knife|d6``. Task-relevant keywords are the goal object, the
goal receptacle's *movable* container (``mrecep``), the lamp of a look task and the knife of a
slice task.

Five milestones of object and task-operation progress. Each fires once, the first time its
condition holds; the conditions are defined per task type so that on every expert
walkthrough they fire in this order (two may fire on the same step, never a later one
before an earlier one; docs/fidelity.md, "ALFWorld milestones", has the table):

``target_seen``         an object of the goal type is in reach (or held)
``target_in_hand``      the agent holds an object of the goal type
``operation_done``      the target is ready for the final step: clean / hot / cool
                        (clean, heat, cool tasks: a target with that state, held or not); one
                        target already in a goal receptacle (pick-two); tasks without an
                        operation (pick-and-place-simple, look: the lamp is the final step)
                        fire it with ``target_in_hand``
``at_goal_with_target`` holding a *ready* target at the goal: at a goal receptacle holding a
                        clean / hot / cool target (clean, heat, cool), holding the target (simple),
                        holding the second target with the first already placed (pick-two);
                        holding the target with a lamp in reach (look)
``goal_reached``        the engine says the goal holds (``won``)

``alfworld`` (default, exact) reads the engine-derived ``state`` fields; ``alfworld-text``
reads only what the observation text says, with the paper's deterministic string rules
(``You arrive at X.``, ``you see a, b, and c``, ``You pick up the X``, ``You heat the X``...).
The text variant keeps what it has read in ``state["text_view"]``, which the environment
updates from feedback strings alone (see :mod:`mvpo_envs.alfworld.text_view`). Where the two
differ (tested in ``tests/mvpo_abstraction/test_alfworld.py``): objects on a
co-located receptacle are in reach but not named in the text; the text cannot see that a
lamp turned on elsewhere or an object already clean at the start.

``alfworld-progress`` (opt-in; the default stays ``alfworld``) keeps the milestones and carries
the progress the paper's signature leaves out: ``location|h:HELD|v:OBJS|m{k}|d{3*floor(t/3)}``,
e.g. ``countertop 1|h:apple|v:knife|m3|d6``. ``HELD`` is the task-relevant kinds in hand (sorted,
``+``-joined; ``other`` when the hand holds only irrelevant objects, ``none`` when empty),
``OBJS`` the task-relevant kinds in reach and not held (up to two, as the paper's signature),
and ``k`` the milestones done as the current state shows them: the position (1-5) of the
furthest milestone of the chain whose condition holds in this state, 0 when none does. It is
a function of the state, not of the episode's history (a signature is a pure function of the
latest state and ``t``, :meth:`Abstraction.signature`): a target seen and then left behind
counts 0, a target cleaned and then put down counts 3 (``operation_done`` still holds). On
expert walkthroughs ``k`` equals the number of milestones fired so far
(``tests/mvpo_abstraction/test_alfworld_progress.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mvpo_abstraction.base import Abstraction, State, depth_bin
from mvpo_abstraction.registry import register_abstraction

MILESTONES = (
    "target_seen",
    "target_in_hand",
    "operation_done",
    "at_goal_with_target",
    "goal_reached",
)
_OPERATION_FLAG = {
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "hot",
    "pick_cool_then_place_in_recep": "cool",
}


def kind(name: str) -> str:
    """``"potato 2" -> "potato"``."""
    head, _, tail = name.rpartition(" ")
    return head if head and tail.isdigit() else name


def relevant_kinds(goal: dict[str, Any]) -> set[str]:
    kinds = {goal.get("object", ""), goal.get("mrecep", ""), goal.get("toggle", "")}
    if goal.get("sliced"):
        kinds.add("knife")
    return {k for k in kinds if k}


def objects_signature(names: Iterable[str], goal: dict[str, Any]) -> str:
    keys = sorted({kind(n) for n in names} & relevant_kinds(goal))[:2]
    return "+".join(keys) if keys else "none"


class _AlfworldAbstraction(Abstraction):
    """Shared logic; subclasses say where the facts come from (engine state or text)."""

    depth_width = 3

    def __init__(self, depth_width: int = 3):
        super().__init__({name: getattr(self, f"_ms_{name}") for name in MILESTONES})
        self.depth_width = depth_width

    # views a subclass provides
    def view(self, state: State) -> dict[str, Any]:
        raise NotImplementedError

    def signature(self, state: State, t: int) -> str:
        v = self.view(state)
        objs = objects_signature([*v["visible"], *v["holding"]], state["goal"])
        return f"{v['location']}|{objs}|{depth_bin(t, self.depth_width)}"

    # milestone extractors: (prev_state, state, action) -> bool
    def _ms_target_seen(self, prev: State | None, state: State, action: str | None) -> bool:
        v, target = self.view(state), state["goal"]["object"]
        return any(kind(n) == target for n in [*v["visible"], *v["holding"]])

    def _ms_target_in_hand(self, prev: State | None, state: State, action: str | None) -> bool:
        target = state["goal"]["object"]
        return any(kind(n) == target for n in self.view(state)["holding"])

    def _ready_targets(self, state: State) -> list[str]:
        """Held targets that need nothing more before the final step (operation done)."""
        goal, v = state["goal"], self.view(state)
        held = [n for n in v["holding"] if kind(n) == goal["object"]]
        flag = _OPERATION_FLAG.get(goal["task_type"])
        if flag is None:
            return held
        return [n for n in held if flag in v["object_states"].get(n, [])]

    def _ms_operation_done(self, prev: State | None, state: State, action: str | None) -> bool:
        goal, v = state["goal"], self.view(state)
        task = goal["task_type"]
        if task in _OPERATION_FLAG:
            flag = _OPERATION_FLAG[task]
            return any(
                kind(n) == goal["object"] and flag in f for n, f in v["object_states"].items()
            )
        if task == "pick_two_obj_and_place":
            return len(v["placed"]) >= 1
        return self._ms_target_in_hand(prev, state, action)

    def _ms_at_goal_with_target(self, prev: State | None, state: State, action: str | None) -> bool:
        goal, v = state["goal"], self.view(state)
        if not self._ready_targets(state):
            return False
        if goal["task_type"] == "look_at_obj_in_light":
            return any(kind(n) == goal["toggle"] for n in v["visible"])
        if goal["task_type"] == "pick_two_obj_and_place" and not v["placed"]:
            return False
        return kind(v["location"]) == goal["receptacle"]

    def _ms_goal_reached(self, prev: State | None, state: State, action: str | None) -> bool:
        return bool(state.get("won", False))


@register_abstraction("alfworld")
class AlfworldStateAbstraction(_AlfworldAbstraction):
    """Exact variant: reads the structured state the engine's facts give."""

    name = "alfworld"

    def view(self, state: State) -> dict[str, Any]:
        return {
            "location": state["location"],
            "visible": state["visible_objects"],
            "holding": state["holding"],
            "object_states": state["object_states"],
            "lamp_on": state["lamp_on"],
            "placed": state["target_in_goal_receptacle"],
        }


@register_abstraction("alfworld-text")
class AlfworldTextAbstraction(_AlfworldAbstraction):
    """String-rule variant: reads only ``state["text_view"]`` (parsed feedback text)."""

    name = "alfworld-text"

    def view(self, state: State) -> dict[str, Any]:
        tv = state["text_view"]
        goal = state["goal"]
        placed = [
            o
            for o, r in tv["placed"]
            if kind(o) == goal["object"] and kind(r) == goal["receptacle"]
        ]
        return {
            "location": tv["location"],
            "visible": tv["visible"],
            "holding": tv["holding"],
            "object_states": tv["object_states"],
            "lamp_on": tv["lamp_on"],
            "placed": placed,
        }


@register_abstraction("alfworld-progress")
class AlfworldProgressAbstraction(AlfworldStateAbstraction):
    """``alfworld`` plus what is held and the milestones done (module docstring); opt-in."""

    name = "alfworld-progress"

    def signature(self, state: State, t: int) -> str:
        v, goal = self.view(state), state["goal"]
        relevant = relevant_kinds(goal)
        held_kinds = {kind(n) for n in v["holding"]}
        held = "+".join(sorted(held_kinds & relevant)) or ("other" if held_kinds else "none")
        in_view = objects_signature(v["visible"], goal)
        return (
            f"{v['location']}|h:{held}|v:{in_view}|m{self.milestones_done(state)}|"
            f"{depth_bin(t, self.depth_width)}"
        )

    def milestones_done(self, state: State) -> int:
        """The position (1-5) of the furthest milestone whose condition holds in ``state``;
        0 when none does."""
        done = [i for i, fn in enumerate(self.milestones.values(), 1) if fn(None, state, None)]
        return max(done, default=0)
