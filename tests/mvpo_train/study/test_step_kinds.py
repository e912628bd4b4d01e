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


def test_the_decay_and_fold_section_names_every_setting(batches) -> None:
    from mvpo_train.study.step_kinds import decay_fold_lines

    pooled = measure(batches, {"region_stats": "pooled"}, 1)
    out = {
        "settings": {"groups": 8, "burn_in": 1},
        "decays": {"0.5": 0.61, "1.0": 0.64},
        "folds": {8: {"4": 0.6, "8": 0.62}},
        "folds_ms": {8: {"4": 10.0, "8": 19.0}},
        "pools": {8: {"pooled": pooled, "paper": measure(batches, {}, 1)}},
    }
    text = "\n".join(decay_fold_lines(out, {"region_stats": "pooled"}))
    assert "mean AUC after batch 1: 0.5: 0.610, 1.0: 0.640 (default" in text
    assert "N = 8: 4 folds 0.600 (10 ms), 8 folds 0.620 (19 ms)." in text
    assert f"pooled, N = 8: {pooled['pool_entries']} (" in text and "paper, N = 8" not in text
