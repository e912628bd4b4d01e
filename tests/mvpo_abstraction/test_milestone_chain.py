"""The control task's abstractions (docs/control_task.md, "Abstractions")."""

from __future__ import annotations

import pytest

from mvpo_abstraction import available_abstractions
from mvpo_abstraction.base import AbstractionTracker
from mvpo_abstraction.milestone_chain import ABSTRACTION_NAMES, milestone_names
from mvpo_abstraction.registry import make_abstraction


def _state(location: str, done: int, k: int = 3) -> dict:
    return {"location": location, "milestones_done": done, "num_milestones": k}


def test_registered_by_name() -> None:
    assert set(ABSTRACTION_NAMES) <= set(available_abstractions())


def test_signatures_see_progress_only_in_the_progress_variant() -> None:
    plain = make_abstraction("milestone-chain", num_milestones=3)
    progress = make_abstraction("milestone-chain-progress", num_milestones=3)
    before, after = _state("forge", 1), _state("forge", 2)  # a dwell step: same place
    assert plain.signature(before, 4) == plain.signature(after, 4) == "forge|d3"
    assert progress.signature(before, 4) == "forge|m1|d3"
    assert progress.signature(after, 4) == "forge|m2|d3"
    wide = make_abstraction("milestone-chain", num_milestones=3, depth_width=5)
    assert wide.signature(before, 4) == "forge|d0"


def test_milestones_fire_once_in_order() -> None:
    tracker = AbstractionTracker(make_abstraction("milestone-chain", num_milestones=3))
    out = tracker.reset(_state("entrance hall", 0))
    assert out["progress"] == dict.fromkeys(milestone_names(3), False)
    fired = []
    for done, place in [(0, "forge"), (1, "forge"), (1, "crypt"), (2, "crypt"), (3, "crypt")]:
        out = tracker.step(_state(place, done), "x")
        fired.append(out["milestones"])
    assert fired == [[], ["milestone_1"], [], ["milestone_2"], ["milestone_3"]]
    assert all(out["progress"].values())


def test_bad_arguments_and_a_k_mismatch() -> None:
    with pytest.raises(TypeError, match="num_milestones must be an int"):
        make_abstraction("milestone-chain", num_milestones="4")
    with pytest.raises(ValueError, match="num_milestones must be >= 1"):
        make_abstraction("milestone-chain", num_milestones=0)
    with pytest.raises(ValueError, match="depth bin width must be positive"):
        make_abstraction("milestone-chain", depth_width=0)
    four = make_abstraction("milestone-chain-progress")
    assert four.milestone_names == milestone_names(4)
    with pytest.raises(ValueError, match="built for num_milestones=4 but the env has 3"):
        four.signature(_state("forge", 0, k=3), 0)
