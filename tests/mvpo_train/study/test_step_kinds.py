""":mod:`mvpo_train.study.step_kinds`: the pool's keys per task and one task pool's table."""

from __future__ import annotations

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_train.scripted_batches import uniform_batch
from mvpo_train.study.step_kinds import keys_per_task, measure, pool_lines


@pytest.fixture(scope="module")
def batches():
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1, num_milestones=4)
    out = [uniform_batch(env, [0, 1], 4, 0, i) for i in range(2)]
    env.close()
    return out


def test_keys_per_task_count_places_with_milestones_done(batches) -> None:
    counts = keys_per_task(batches[0])
    assert len(counts) == 2  # one count per task of the batch
    places = {str(s).rsplit("|", 1)[0] for s in batches[0].signature}
    assert all(1 <= c for c in counts) and max(counts) >= min(len(places), 2)


def test_one_pool_table_row_per_option(batches) -> None:
    res = {
        "paper (default)": measure(batches, {}, 1),
        "split": measure(batches, {"potential_split": "milestones"}, 1),
    }
    lines = pool_lines(8, res, 1)
    assert lines[1] == "## Tasks drawn from N = 8 layouts"
    assert "| mean after batch 1 |" in lines[5]
    rows = [x for x in lines if x.startswith("| paper") or x.startswith("| split")]
    assert len(rows) == 2 and rows[0].endswith("(1.0x) |")
    assert '`{"potential_split": "milestones"}`' in rows[1]
