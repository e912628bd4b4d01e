"""The abstractions of the control task ``mvpo/MilestoneChain-v0`` (docs/control_task.md).

Two signatures over the same milestones, so that one env tells whether credit built on
signatures sees progress:

``milestone-chain`` (default)   ``place|d{3*floor(t/3)}``, e.g. ``forge|d6``: where the agent
                                is and a depth bin, like ALFWorld's location-based signature.
                                The dwell action that makes a milestone keeps the agent in the
                                same place, so this signature does not change when progress is
                                made (only the depth bin moves on).
``milestone-chain-progress``    ``place|m{done}|d{3*floor(t/3)}``, e.g. ``forge|m2|d6``: the
                                same plus the number of milestones done, i.e. the env's whole
                                Markov state plus the depth bin.

Milestones ``milestone_1`` ... ``milestone_K``: ``milestone_i`` fires when the i-th fixture of
the task has been used in order (``state["milestones_done"] >= i``); ``milestone_K`` is the
win. They fire in order on every episode, one per dwell step. Both read ``info["state"]``
(``location``, ``milestones_done``, ``num_milestones``); an abstraction built for another K
than the env's refuses the state with one line (the env builds its own with the right K when
given these names).
"""

from __future__ import annotations

from functools import partial

from mvpo_abstraction.base import Abstraction, State, depth_bin
from mvpo_abstraction.registry import register_abstraction

#: the registered names; ``mvpo/MilestoneChain-v0`` builds these with its own K
ABSTRACTION_NAMES = ("milestone-chain", "milestone-chain-progress")


def milestone_names(num_milestones: int) -> list[str]:
    """``["milestone_1", ..., "milestone_K"]``."""
    return [f"milestone_{i}" for i in range(1, num_milestones + 1)]


@register_abstraction("milestone-chain")
class MilestoneChainAbstraction(Abstraction):
    """Location-based signature plus depth bin; milestones ``milestone_1..K``."""

    name = "milestone-chain"
    with_progress = False

    def __init__(self, num_milestones: int = 4, depth_width: int = 3):
        if isinstance(num_milestones, bool) or not isinstance(num_milestones, int):
            raise TypeError(f"{self.name}: num_milestones must be an int, got {num_milestones!r}")
        if num_milestones < 1:
            raise ValueError(f"{self.name}: num_milestones must be >= 1, got {num_milestones}")
        depth_bin(0, depth_width)  # a bad width fails here, not on the first step
        super().__init__(
            {
                name: partial(_reached, i + 1)
                for i, name in enumerate(milestone_names(num_milestones))
            }
        )
        self.num_milestones = num_milestones
        self.depth_width = depth_width

    def signature(self, state: State, t: int) -> str:
        if state["num_milestones"] != self.num_milestones:
            raise ValueError(
                f"abstraction {self.name!r} was built for num_milestones={self.num_milestones} "
                f"but the env has {state['num_milestones']}: build it with "
                f"num_milestones={state['num_milestones']}"
            )
        progress = f"|m{state['milestones_done']}" if self.with_progress else ""
        return f"{state['location']}{progress}|{depth_bin(t, self.depth_width)}"


@register_abstraction("milestone-chain-progress")
class MilestoneChainProgressAbstraction(MilestoneChainAbstraction):
    """As ``milestone-chain`` with the number of milestones done in the signature."""

    name = "milestone-chain-progress"
    with_progress = True


def _reached(i: int, prev: State | None, state: State, action: str | None) -> bool:
    """Milestone ``i`` (1-based): the first ``i`` fixtures of the task are used, in order."""
    return int(state["milestones_done"]) >= i
