"""``mvpo_train.study.batch_cache`` and ``analyze_only``: a played batch is recorded once and
read back with the extras the measurements read; a rebuilt page keeps its machine line."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_train.batch import ORACLE_PROGRESS
from mvpo_train.scripted_batches import uniform_batch
from mvpo_train.study.analyze_only import AnalyzeOnlyError, kept_machine_line, saved_results
from mvpo_train.study.batch_cache import cached_batch


def test_a_batch_is_played_once_then_read_back_with_its_measured_extras(tmp_path):
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1, num_milestones=4)
    plays = []

    def play():
        plays.append(1)
        return uniform_batch(env, [3, 5], 2, 0, 0), {"tasks": [3, 5]}

    path = tmp_path / "c" / "b.npz"
    first, meta, from_cache = cached_batch(path, play)
    assert not from_cache and meta["tasks"] == [3, 5] and meta["play_cpu_s"] >= 0.0
    again, meta2, from_cache = cached_batch(path, play)
    assert from_cache and len(plays) == 1 and meta2 == meta
    np.testing.assert_array_equal(again.reward, first.reward)
    assert list(again.signature) == list(first.signature)
    assert again.extras[ORACLE_PROGRESS].dtype == np.int64
    np.testing.assert_array_equal(again.extras[ORACLE_PROGRESS], first.extras[ORACLE_PROGRESS])
    np.testing.assert_array_equal(again.extras["task_index"], first.extras["task_index"])
    path.write_bytes(b"not a record")  # a broken entry is played again
    cached_batch(path, play)
    assert len(plays) == 2
    env.close()


def test_analyze_only_reads_the_json_and_keeps_the_machine_line(tmp_path):
    out = tmp_path / "r"
    with pytest.raises(AnalyzeOnlyError, match="r.json not found"):
        saved_results(out)
    out.with_suffix(".json").write_text('{"a": 1}')
    assert saved_results(out) == {"a": 1}
    page = out.with_suffix(".md")
    assert kept_machine_line(page, True, "Machine: here.") == "Machine: here."  # no page yet
    page.write_text("# t\n\nMachine: there.\n")
    assert kept_machine_line(page, True, "Machine: here.") == "Machine: there."
    assert kept_machine_line(page, False, "Machine: here.") == "Machine: here."
