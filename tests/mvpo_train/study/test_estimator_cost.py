""":mod:`mvpo_train.study.estimator_cost`: one estimator per arm on the same batches, and the
page section against the paper's form."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mvpo_train.study.estimator_cost import cost_lines, time_arms, uniform_batches
from mvpo_train.study.synthetic import synthetic_batch


def test_every_arm_is_timed_on_every_batch_and_compared_with_the_paper_form(tmp_path: Path):
    batches = [synthetic_batch(2, group_size=2, horizon=6, seed=k) for k in range(6)]
    arms = {"mvpo": ("mvpo", {}), "split": ("mvpo", {"potential_split": "milestones"})}
    rows = time_arms(batches, arms)
    assert list(rows) == ["mvpo", "split"]
    for r in rows.values():
        assert len(r["ms"]) == 6 and all(ms > 0 for ms in r["ms"])
        assert r["first5"] == np.mean(r["ms"][:5]) and r["last5"] == np.mean(r["ms"][1:])
    path = tmp_path / "cost.json"
    path.write_text(json.dumps({"batches": 6, "command": "cmd", "arms": rows}))
    lines = cost_lines(path)
    assert "## Estimator cost" in lines and lines[-2].startswith("| mvpo |")
    assert lines[-2].endswith(" | 1.0x |")
    assert cost_lines(tmp_path / "none.json") == []


def test_uniform_batches_are_seeded_and_draw_distinct_tasks() -> None:
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the env ids)

    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1)
    a, b = uniform_batches(env, 2, 3, 2, 50), uniform_batches(env, 2, 3, 2, 50)
    env.close()
    assert len(a) == 2 and all(len(set(x.group.tolist())) == 3 for x in a)
    assert [x.action.tolist() for x in a] == [x.action.tolist() for x in b]
