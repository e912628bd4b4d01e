""":mod:`mvpo_train.study.progress_sources`: the control task's progress signatures derived
from a batch's own columns equal those of the real abstraction, scripted batches are seeded,
and a run without every record is refused in one line."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_abstraction.registry import make_abstraction
from mvpo_train.study.progress_sources import (
    SourceError,
    milestone_signatures,
    play_scripted,
    run_batches,
)

PROGRESS = "milestone-chain-progress"
ENV = "mvpo/MilestoneChain-v0"


def _abstractions(env):
    return {PROGRESS: make_abstraction(PROGRESS, num_milestones=env.unwrapped.num_milestones)}


def _play(k: int, p: float = 0.3):
    make_env = lambda: gym.make(ENV, difficulty=1, max_episode_steps=50)  # noqa: E731
    return play_scripted(make_env, _abstractions, p, 0, k, (2, 4, 50))


def test_derived_progress_signatures_equal_the_abstractions() -> None:
    for k in range(2):
        b = _play(k)
        assert milestone_signatures(b) == list(b.extras[f"signature:{PROGRESS}"])
        assert any("|m1|" in s for s in milestone_signatures(b))  # milestones were made


def test_scripted_batches_keep_their_tasks_and_differ_by_batch() -> None:
    a, again, other = _play(0), _play(0), _play(1)
    np.testing.assert_array_equal(a.anchor, again.anchor)
    assert set(a.extras["task_index"].tolist()) == set(other.extras["task_index"].tolist())
    assert len(set(a.extras["task_index"].tolist())) == 2
    assert a.anchor.tolist() != other.anchor.tolist()  # batch k: its own random draws


def test_a_run_without_every_record_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="--control-run .*every iteration from 1"):
        run_batches(tmp_path, PROGRESS)
