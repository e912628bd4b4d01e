""":mod:`mvpo_train.study.option_alignment`: rows scored on a source's batches, merged batches
only where the tasks stay, cells over a window, and batches played once then read back."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_train.study.option_alignment import (
    cached_batches,
    score_row,
    score_rows,
    source_summary,
    summarise,
)
from mvpo_train.study.progress_sources import play_scripted

ENV = "mvpo/MilestoneChain-v0"


def _play(k: int):
    make_env = lambda: gym.make(ENV, difficulty=1, max_episode_steps=30)  # noqa: E731
    return play_scripted(make_env, lambda env: {}, 0.3, 0, k, (2, 4, 30))


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> tuple[list, Path]:
    folder = tmp_path_factory.mktemp("cache") / "control"
    batches, _ = cached_batches(folder, 0, 4, _play)
    return batches, folder


def test_batches_are_played_once_and_read_back(played) -> None:
    batches, folder = played
    assert sorted(p.name for p in folder.iterdir()) == [f"seed0-b0{k}.npz" for k in range(4)]
    again, spent = cached_batches(folder, 0, 6, lambda k: pytest.fail("played"), cached_only=True)
    assert len(again) == 4 and spent > 0
    np.testing.assert_array_equal(again[3].anchor, batches[3].anchor)
    src = source_summary(again, 0, spent)
    assert src["batches"] == 4 and 0.0 <= src["progress_rate"] <= 1.0


def test_rows_merge_only_where_the_tasks_stay(played) -> None:
    batches, _ = played
    one = score_row("mvpo", None, 1, batches)
    assert len(one["auc"]) == 4 and len(score_row("mvpo", None, 2, batches)["auc"]) == 2
    assert score_row("mvpo", None, 2, batches, same_tasks=False) == {}
    assert score_row("mvpo", None, 8, batches) == {}
    cell = summarise(one, 2)
    known = [a for a in one["auc"][-2:] if not np.isnan(a)]
    assert cell["scored"] == len(known) and cell["repaired_per_batch"] == np.mean(
        one["repaired_rows"][-2:]
    )
    rows = [("paper", "mvpo", "env", 1), ("merged", "mvpo", "env", 4)]
    cells = score_rows(rows, batches, 0, "unused", False, "control")
    assert cells["merged"] == {} and cells["paper"]["auc"] == one["auc"]
