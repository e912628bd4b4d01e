"""The learning study's analysis (``benchmarks/learning.py``) on synthetic runs: moving
averages, iterations to threshold, bootstrap CIs and paired differences."""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mvpo_train import stats
from mvpo_train.study import curves, learning_runs, runs

from .helpers import study_module

learning_env = study_module("learning_env")

ROOT = Path(__file__).resolve().parents[2]


def _learning():
    return study_module("learning")


def test_moving_average_and_first_reach():

    x = np.array([0.0, 0.0, 0.5, 0.5, 0.5, 1.0, 1.0])
    ma = stats.moving_average(x, 2)
    assert np.allclose(ma, [0.0, 0.0, 0.25, 0.5, 0.5, 0.75, 1.0])
    assert stats.first_reach(x, 0.5, window=2) == 4  # first full window whose mean >= 0.5
    assert stats.first_reach(x, 0.5, window=5) == 6  # (0.5 * 3 + 1) / 5 = 0.5
    assert stats.first_reach(x, 1.1, window=2) is None
    assert stats.first_reach(np.array([1.0, 1.0]), 0.5, window=3) is None  # window never full


def test_bootstrap_ci_brackets_the_mean_and_is_seeded():

    m, lo, hi = stats.bootstrap_ci([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5 and 1.0 <= lo < m < hi <= 4.0
    assert stats.bootstrap_ci([1.0, 2.0, 3.0, 4.0]) == (m, lo, hi)
    assert stats.bootstrap_ci([2.0, 2.0]) == (2.0, 2.0, 2.0)


def _write_run(path: Path, success: list[float], held: float) -> None:
    path.mkdir(parents=True)
    rows = [
        {"iteration": i + 1, "success": s, "adv/zero_adv_ratio": 0.5, "time/total": 6.0}
        for i, s in enumerate(success)
    ]
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "eval-valid_unseen.json").write_text(json.dumps({"success": held}))


def test_summary_and_paired_differences(tmp_path):
    lm = _learning()
    n = 6
    for seed in (0, 1, 2):
        _write_run(tmp_path / f"grpo-seed{seed}", [0.1] * n, 0.1)
        # mvpo: 0.1 better every iteration, reaches 0.2 at the 5th iteration (window 5)
        _write_run(tmp_path / f"mvpo-seed{seed}", [0.2] * n, 0.1 + 0.05 * seed)
    _write_run(tmp_path / "mvpo-seed3", [0.2] * (n - 1), 0.3)  # unfinished: left out
    runs = lm.load_runs(tmp_path, ["grpo", "mvpo"], [0, 1, 2, 3], n)
    assert sorted(runs["mvpo"]) == [0, 1, 2]
    table = lm.summarize(runs, tmp_path, threshold=0.2, iterations=n, env=learning_env.ALFWORLD)
    g, m = table["arms"]["grpo"], table["arms"]["mvpo"]
    assert np.isclose(g["auc"][0], 0.1) and np.isclose(m["final"][0], 0.2)
    assert m["reached"] == 3 and g["reached"] == 0
    assert m["reach"][0] == 5 and g["reach"][0] == n + 1  # never reached = run length + 1
    assert np.isclose(m["valid_unseen"][0], 0.15)
    pair = table["pairs"]["mvpo - grpo"]
    assert pair["seeds"] == [0, 1, 2]
    assert np.isclose(pair["auc"][0], 0.1) and np.isclose(pair["reach"][0], 5 - (n + 1))
    assert np.isclose(pair["valid_unseen"][0], 0.05)
    assert "mvpo - gigpo" not in table["pairs"]  # an arm that did not run


def test_iterations_to_further_thresholds(tmp_path):
    """``--more-thresholds``: iterations to each further threshold per seed, censored at the
    run length + 1 when never reached, paired per seed, and in their own markdown table."""

    lm = _learning()
    n = 8
    _write_run(tmp_path / "grpo-seed0", [0.3] * n, 0.1)  # moving average 0.3 from iteration 5
    _write_run(tmp_path / "grpo-seed1", [0.0] * 4 + [0.5] * 4, 0.1)  # 0.3 at 7, 0.4 at 8
    for seed in (0, 1):
        _write_run(tmp_path / f"mvpo-seed{seed}", [0.5] * n, 0.2)
    runs = lm.load_runs(tmp_path, ["grpo", "mvpo"], [0, 1], n)
    table = lm.summarize(runs, tmp_path, 0.2, n, learning_env.ALFWORLD, more_thresholds=(0.3, 0.45))
    g, m = table["arms"]["grpo"], table["arms"]["mvpo"]
    assert [g["per_seed"][s]["reach_at"]["0.3"] for s in "01"] == [5, 7]
    assert [g["per_seed"][s]["reach_at"]["0.45"] for s in "01"] == [None, None]
    assert g["reach_at"]["0.3"] == {"ci": stats.bootstrap_ci([5, 7]), "reached": 2}
    assert g["reach_at"]["0.45"]["ci"][0] == n + 1 and g["reach_at"]["0.45"]["reached"] == 0
    assert m["reach_at"]["0.45"]["ci"][0] == 5
    pair = table["pairs"]["mvpo - grpo"]["reach_at"]
    assert pair["0.3"][0] == -1.0 and pair["0.45"][0] == 5 - (n + 1)
    text = "\n".join(curves.more_thresholds_lines(table, [0.3, 0.45], n))
    assert "| to 30% | to 45% |" in text
    assert "(5, 7; 2/2 reached)" in text and "(>8, >8; 0/2 reached)" in text
    assert curves.more_thresholds_lines(table, [], n) == []


def test_heldout_during_training_per_arm_and_paired(tmp_path):
    """The periodic held-out evaluations (``eval/success`` rows) per iteration: bootstrap CI over
    seeds per arm, paired per seed, and their markdown table."""

    lm = _learning()
    n = 4
    for arm, held in (("grpo", [0.1, 0.2]), ("mvpo", [0.3, 0.3])):
        for seed in (0, 1):
            _write_run(tmp_path / f"{arm}-seed{seed}", [0.1] * n, 0.1)
            rows = [json.loads(x) for x in (tmp_path / f"{arm}-seed{seed}" / "metrics.jsonl")
                    .read_text().splitlines()]  # fmt: skip
            rows[1]["eval/success"] = held[0] + 0.1 * seed  # iteration 2
            rows[3]["eval/success"] = held[1]  # iteration 4
            (tmp_path / f"{arm}-seed{seed}" / "metrics.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows)
            )
    runs = lm.load_runs(tmp_path, ["grpo", "mvpo"], [0, 1], n)
    table = lm.summarize(runs, tmp_path, 0.2, n, learning_env.ALFWORLD)
    g = table["arms"]["grpo"]
    assert g["inline_eval_ci"]["2"] == stats.bootstrap_ci([0.1, 0.2])
    assert np.isclose(g["inline_eval_ci"]["4"][0], 0.2)
    pair = table["pairs"]["mvpo - grpo"]["inline_eval"]
    assert sorted(pair) == ["2", "4"]
    assert np.allclose(pair["2"], 0.2) and np.allclose(pair["4"], 0.1)
    text = "\n".join(curves.inline_eval_lines(table, "valid_unseen", 2, 1))
    assert "| arm | seeds | it. 2 | it. 4 |" in text
    assert "| mvpo - grpo (paired) | 2 | 0.200 [0.200, 0.200] | 0.100 [0.100, 0.100] |" in text
    no_eval = {"arms": {"grpo": {"seeds": [0]}}, "pairs": {}}
    assert curves.inline_eval_lines(no_eval, "valid_unseen", 2, 1) == []


def test_a_refused_run_fails_its_script():
    """A run's command exits with the entry's code, so a refused config is FAILED, not ok."""
    import subprocess

    proc = subprocess.run(
        [*runs.python_entry("train_main"), "--lr", "-1"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "lr" in proc.stderr


def test_runs_share_the_embedding_cache_given_or_the_base_one(tmp_path):
    """``--embedding-cache`` names one file for every run (sweeps over the same games share it);
    without it each sweep keeps ``BASE/embeddings.npz``."""
    ns = dict(iterations=2, study=True, num_groups=2, group_size=2, lr=1e-3, eval_every=0,
              eval_episodes=1, env_kwargs="{}", warm="w", extra=[], base=str(tmp_path),
              study_env=learning_env.ALFWORLD)  # fmt: skip
    own = learning_runs.train_cmd(
        tmp_path / "a", "grpo", 0, argparse.Namespace(**ns, embedding_cache=None)
    )
    assert own[own.index("--embedding-cache") + 1] == str(tmp_path / "embeddings.npz")
    shared = tmp_path / "shared.npz"
    cmd = learning_runs.train_cmd(
        tmp_path / "a", "grpo", 0, argparse.Namespace(**ns, embedding_cache=shared)
    )
    assert cmd[cmd.index("--embedding-cache") + 1] == str(shared)


def test_the_warm_start_is_checked_once_per_sweep(tmp_path, monkeypatch):
    """Checking the warm start replays every expert plan (minutes on the full split): a sweep
    does it once, before its runs, not again after them; ``--warm-checked`` replaces it by the
    settings-only check when the folder holds a warm start, and still makes one that is
    missing; a failed check stops the sweep in one line."""
    lm = _learning()
    calls: list[list[str]] = []
    rc = {"value": 0}

    def fake_run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, rc["value"])

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(lm, "run_all", lambda args, base, root: None)
    monkeypatch.setattr(lm, "load_runs", lambda *a, **k: {})
    monkeypatch.setattr(lm, "summarize", lambda *a, **k: {"arms": {}, "pairs": {}})
    monkeypatch.setattr(lm, "save_page", lambda *a, **k: None)
    warm = tmp_path / "warm"
    base = ["--base", str(tmp_path / "b"), "--warm", str(warm), "--no-eval", "--seeds", "0"]

    def warm_builds(*flags: str) -> tuple[int, int]:
        calls.clear()
        assert lm.main([*base, *flags]) == 0
        warm_calls = [c for c in calls if "mvpo_train.encoder_policy" in c]
        quick = sum("--settings-only" in c for c in warm_calls)
        return len(warm_calls) - quick, quick

    assert warm_builds() == (1, 0)
    assert warm_builds("--warm-checked") == (1, 0)  # nothing there yet: made
    warm.mkdir()
    (warm / "warm_start.json").write_text("{}")
    assert warm_builds("--warm-checked") == (0, 1)
    assert warm_builds() == (1, 0)
    rc["value"] = 2  # the folder holds another warm start: stop, do not train on it
    with pytest.raises(SystemExit, match="warm start .*failed \\(exit 2"):
        lm.main([*base, "--warm-checked"])


def test_arm_flags_reach_only_their_arm_and_come_last(tmp_path):
    """The tuning grid's choice per arm: ``--arm-flags ARM='FLAGS'`` ends that arm's train
    command (its ``--lr`` wins over the study's), leaves the other arms alone, and is recorded."""
    lm = _learning()
    args = lm.parse_args(["--base", str(tmp_path), "--arms", "grpo", "gigpo", "--lr", "3e-4",
                          "--arm-flags", "grpo=--lr 0.001 --kl-coef 0.05"])  # fmt: skip
    grpo = learning_runs.train_cmd(tmp_path / "a", "grpo", 0, args)
    gigpo = learning_runs.train_cmd(tmp_path / "b", "gigpo", 0, args)
    assert grpo[-4:] == ["--lr", "0.001", "--kl-coef", "0.05"]
    assert "--kl-coef" not in gigpo and gigpo[gigpo.index("--lr") + 1] == "0.0003"
    assert learning_env.arm_flags(args) == {"grpo": ["--lr", "0.001", "--kl-coef", "0.05"]}
    bad = lm.parse_args(["--base", str(tmp_path), "--arms", "grpo", "--arm-flags", "mvpo=--lr 1"])
    with pytest.raises(SystemExit, match="--arm-flags: expected ARM='FLAGS'"):
        learning_env.arm_flags(bad)


def test_one_process_evaluates_the_warm_start(tmp_path, monkeypatch, capsys):
    """The study as one process per arm on one ``--base``: the warm start's held-out
    evaluation (minutes) is run by whichever process takes ``BASE/warm-start/.lock`` first;
    another finds it taken and goes on without evaluating; once free, it is evaluated."""
    import fcntl

    lm = _learning()
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    args = lm.parse_args(["--base", str(tmp_path), "--arms", "gigpo", "--seeds", "0"])
    first = runs.run_dir(tmp_path, "gigpo", 0)
    first.mkdir()
    (first / "config.yaml").write_text("seed: 0\n")
    (tmp_path / "warm-start").mkdir()
    with open(tmp_path / "warm-start" / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lm.warm_start_and_eval(args, tmp_path, ROOT, build=False)
        assert calls == []
        assert "another process of this study is evaluating it" in capsys.readouterr().out
    lm.warm_start_and_eval(args, tmp_path, ROOT, build=False)
    assert [c[c.index("--split") + 1] for c in calls] == [
        s for s, _ in learning_env.final_evals(args)
    ]
