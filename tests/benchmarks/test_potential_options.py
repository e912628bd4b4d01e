"""``benchmarks/potential_options.py`` (docs/alignment.md, "The potential's options"): merged
batches hold one group per task, and a small table on the real control task is written and
rebuilt byte-identically by ``--analyze-only`` (the sources: tests/mvpo_train/study/
test_progress_sources.py)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_abstraction.registry import make_abstraction
from mvpo_train.scripted_batches import merge_batches, noisy_expert_batch

from .helpers import study_module

PROGRESS = "milestone-chain-progress"


@pytest.fixture(scope="module")
def bench():
    return study_module("potential_options")


@pytest.fixture(scope="module")
def batches():
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1, max_episode_steps=50)
    extra = {PROGRESS: make_abstraction(PROGRESS, num_milestones=env.unwrapped.num_milestones)}
    out = [
        noisy_expert_batch(env, [4, 9], 4, 50, 0.3, np.random.default_rng(k), extra).batch
        for k in range(2)
    ]
    env.close()
    return out


def test_merged_batches_group_by_task(bench, batches):
    m = merge_batches(batches)
    assert len(m) == sum(len(b) for b in batches)
    assert sorted(np.unique(m.group).tolist()) == [0, 1]
    for g, task in enumerate([4, 9]):
        rows = m.group == g
        assert set(m.extras["task_index"][rows].tolist()) == {task}
        assert len(np.unique(m.traj[rows])) == 8  # 4 rollouts from each of the 2 batches
    assert m.extras[f"signature:{PROGRESS}"][-1] == batches[1].extras[f"signature:{PROGRESS}"][-1]


def test_a_small_table_and_its_analysis(bench, tmp_path, capsys):
    out = tmp_path / "po"
    argv = ["--sources", "control-uniform", "--batches", "4", "--cache", str(tmp_path / "c"),
            "--out", str(out)]  # fmt: skip
    assert bench.main(argv) == 0
    res = json.loads(out.with_suffix(".json").read_text())
    rows = res["rows"]
    assert list(rows) == [r[0] for r in bench.ROWS]
    for spec in rows.values():
        cell = spec["cells"]["control-uniform"]
        merged = spec["merge"] > 1
        assert len(cell["auc"]) == (1 if merged else 4)
        assert 0.0 <= cell["mean"] <= 1.0 and cell["repaired_per_batch"] > 0
    page = out.with_suffix(".md").read_text()
    assert f"potential_options.py --batches 4 --sources control-uniform --out {out}`" in page
    before = (page, out.with_suffix(".json").read_text())
    assert bench.main([*argv, "--analyze-only"]) == 0
    assert (out.with_suffix(".md").read_text(), out.with_suffix(".json").read_text()) == before
    assert bench.main(["--batches", "0", "--out", str(out)]) == 2
    assert "must be >= 1" in capsys.readouterr().err


def test_a_trained_alfworld_run_is_read_replayed_and_scored(bench, tmp_path, capsys):
    """The ``alfworld-trained`` source on a real (tiny) ALFWorld run with oracle labels: its
    records are replayed on the run's own env settings (anchors checked) for the
    progress-carrying signatures, and every row is scored; a folder without records is one
    line and exit 2."""
    from mvpo_train.cli import train_main

    run = tmp_path / "run"
    kwargs = '{"preset": "mini", "progress_oracle": true}'
    argv = ["--run-dir", str(run), "--env-id", "mvpo/ALFWorld-v0", "--env-kwargs", kwargs,
            "--iterations", "2", "--num-groups", "2", "--group-size", "2", "--max-steps", "6",
            "--threads", "1", "--no-progress"]  # fmt: skip
    assert train_main(argv) == 0
    batches = bench.alfworld_run_batches(run)
    assert len(batches) == 2
    for b in batches:
        sigs = b.extras["signature:alfworld-progress"]
        assert len(sigs) == len(b) and all(isinstance(x, str) and x for x in sigs)
        assert set(np.asarray(b.extras["oracle_progress"]).tolist()) <= {0, 1}
    out = tmp_path / "po"
    args = ["--sources", "alfworld-trained", "--alfworld-run", str(run), "--trained-window",
            "1", "--out", str(out)]  # fmt: skip
    assert bench.main(args) == 0
    res = json.loads(out.with_suffix(".json").read_text())
    assert res["settings"]["alfworld_run_shape"] == "2 x 2 x 6"
    assert res["sources"]["alfworld-trained"]["batches"] == 2
    assert "ALFWorld, trained run, 2 x 2 x 6 (last 1 it.)" in out.with_suffix(".md").read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    capsys.readouterr()
    assert bench.main([*args[:2], "--alfworld-run", str(empty), "--out", str(out)]) == 2
    assert "config.yaml: config file not found" in capsys.readouterr().err
    (empty / "config.yaml").write_text((run / "config.yaml").read_text())
    assert bench.main([*args[:2], "--alfworld-run", str(empty), "--out", str(out)]) == 2
    assert "needs records/iter-*.npz" in capsys.readouterr().err
