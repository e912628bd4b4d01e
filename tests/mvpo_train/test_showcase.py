"""``mvpo-showcase`` (docs/training.md, "Showcase"): its preset is the ALFWorld study's MVPO
arm, its bundled warm start is the study's, the paired held-out statistics are right, and a
real tiny showcase (``mini`` rooms, a fresh head) evaluates, trains, evaluates, plots, reuses
what is done on a rerun and refuses a changed config in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from mvpo_train import showcase
from mvpo_train.config import PRESETS, ConfigError, preset
from mvpo_train.encoder_policy import SegmentEmbedder, bundled_heads, load_head, resolve_head

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "benchmarks" / "results" / "learning_full_runs"
#: fields a run of the study sets for its own folder, machine share or length, not its training
NOT_TRAINING = {"run_dir", "model", "embedding_cache", "threads", "iterations", "eval_every",
                "save_every", "record_every", "progress", "tensorboard", "resume", "overwrite",
                "report_to"}  # fmt: skip
#: fields that choose how the same function is computed (the study ran before they existed):
#: the factored head scores as the concat one did up to float rounding (docs/policies.md,
#: "The head"); MiniLM's runtime and batching give its vectors within 1e-5 ("Where MiniLM runs")
NOT_TRAINING |= {"encoder_head", "embedding_runtime", "embedding_batching"}


def test_the_preset_is_the_studys_mvpo_arm():
    saved = yaml.safe_load((STUDY / "mvpo-seed0" / "config.yaml").read_text())
    cfg = preset(showcase.PRESET).to_dict()
    differ = {k: (saved.get(k), cfg.get(k)) for k in set(saved) | set(cfg) if k not in NOT_TRAINING
              and saved.get(k) != cfg.get(k)}  # fmt: skip
    assert differ == {}
    # the env-specific fields come from ALFWorld's declaration (train_defaults), not the preset
    assert cfg["model"] == "alfworld-encoder-warm" and cfg["iterations"] == 10
    assert "model" not in PRESETS[showcase.PRESET] and "env_kwargs" not in PRESETS[showcase.PRESET]


def test_the_bundled_warm_start_is_the_studys():
    assert "alfworld-encoder-warm" in bundled_heads()  # found by its config.json's kind
    head = Path(resolve_head("alfworld-encoder-warm"))
    for name in ("model.safetensors", "config.json", "warm_start.json"):
        assert (head / name).read_bytes() == (STUDY / "warm-head" / name).read_bytes()
    settings = json.loads((head / "warm_start.json").read_text())["settings"]
    assert (settings["steps"], settings["history_length"], settings["history_pool"]) == (
        300, 2, "concat")  # fmt: skip
    assert settings["env_kwargs"] == {"num_games": "full"} and settings["split"] == "train"
    assert resolve_head("runs/my-head") == "runs/my-head"  # anything else is a path


def test_a_missing_bundled_head_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("MVPO_DATA", str(tmp_path))
    assert (
        bundled_heads() == [] and resolve_head("alfworld-encoder-warm") == "alfworld-encoder-warm"
    )
    with pytest.raises(ConfigError, match=r"nor a bundled head \(data/models/: none\)"):
        load_head(resolve_head("alfworld-encoder-warm"), SegmentEmbedder())


def test_paired_difference_and_intervals():
    start = {"episode_task": [0, 0, 1, 1, 2, 2, 3, 3],
             "episode_success": [0, 0, 1, 0, 0, 0, 1, 1]}  # fmt: skip
    end = {"episode_task": [3, 3, 2, 2, 1, 1, 0, 0],  # any order: paired by task index
           "episode_success": [1, 1, 1, 1, 1, 1, 0, 1]}  # fmt: skip
    assert showcase.per_game(start) == {0: 0.0, 1: 0.5, 2: 0.0, 3: 1.0}
    d = showcase.paired_difference(start, end)
    assert d["mean"] == pytest.approx((0.5 + 0.5 + 1.0 + 0.0) / 4)
    assert (d["games"], d["up"], d["down"]) == (4, 3, 0)
    assert d["ci"][0] <= d["mean"] <= d["ci"][1] and d["ci"][0] >= 0.0
    lo, hi = showcase.bootstrap_ci(np.array([0.0, 1.0] * 50))
    assert lo < 0.5 < hi and hi - lo < 0.25
    assert showcase.bootstrap_ci(np.ones(7)) == (1.0, 1.0)
    with pytest.raises(ConfigError, match="different games"):
        showcase.paired_difference(start, {"episode_task": [0], "episode_success": [1]})


TINY = ["--env-kwargs", '{"preset": "mini"}', "--model", "fresh", "--num-groups", "2",
        "--group-size", "2", "--max-steps", "6", "--iterations", "2", "--eval-split", "eval",
        "--threads", "1", "--no-progress", "--no-tensorboard"]  # fmt: skip


def test_a_tiny_showcase_runs_reuses_its_work_and_refuses_a_changed_config(tmp_path, capsys):
    run = tmp_path / "showcase"
    argv = [*TINY, "--run-dir", str(run), "--embedding-cache", str(tmp_path / "emb.npz")]
    assert showcase.main(argv) == 0
    out = capsys.readouterr().out
    result = json.loads((run / "showcase.json").read_text())
    assert (run / "showcase.png").stat().st_size > 10_000
    assert result["heldout_games"] == 24 and result["train_games"] == 48
    start = json.loads((run / showcase.START).read_text())
    end = json.loads((run / showcase.END).read_text())
    assert sorted(set(start["episode_task"])) == list(range(24)) == sorted(set(end["episode_task"]))
    assert start["success"] == pytest.approx(np.mean(start["episode_success"]))
    assert result["difference"]["mean"] == pytest.approx(end["success"] - start["success"])
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert result["train_success"] == [r["success"] for r in rows] and len(rows) == 2
    assert result["credit"]["no_signal_grpo"] == pytest.approx(
        np.mean([r["adv/episode_zero_credit_ratio"] for r in rows]))  # fmt: skip
    assert f"before (warm start)  {start['success']:.3f}" in out
    assert "held-out evaluation of the warm start" in out and "repaired by MVPO" in out
    # a rerun evaluates and trains nothing again, and prints the same summary
    metrics = (run / "metrics.jsonl").read_bytes()
    assert showcase.main(argv) == 0
    again = capsys.readouterr().out
    assert "held-out evaluation" not in again
    assert (run / "metrics.jsonl").read_bytes() == metrics
    assert again.splitlines()[:-1] == out.splitlines()[-len(again.splitlines()) : -1]
    # another estimator on that folder: one line, the run untouched; --overwrite starts afresh
    assert showcase.main([*argv, "--estimator", "gigpo"]) == 2
    assert "--overwrite to start afresh" in capsys.readouterr().err
    assert (run / "metrics.jsonl").read_bytes() == metrics
    assert showcase.main([*argv, "--estimator", "gigpo", "--overwrite", "--progress"]) == 0
    assert json.loads((run / "showcase.json").read_text())["config"]["estimator"] == "gigpo"
    err = capsys.readouterr().err  # with --progress both held-out evaluations and the run tick
    assert err.count("eval eval") >= 2 and "/24 [" in err and "rollout" in err, err[-1500:]
    assert (run / showcase.START).is_file() and (tmp_path / "showcase.old-1").is_dir()


def test_a_run_longer_than_asked_is_one_line_not_a_mislabelled_result(tmp_path, capsys):
    """The "after" policy must be the one of these iterations: a folder whose run went further
    (or whose newest intact checkpoint is not the last iteration's) is refused in one line."""
    run = tmp_path / "showcase"
    argv = [*TINY, "--run-dir", str(run), "--embedding-cache", str(tmp_path / "emb.npz")]
    assert showcase.main(argv) == 0
    capsys.readouterr()
    assert showcase.main([*argv, "--iterations", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already at iteration 2" in err and "--overwrite" in err
    assert json.loads((run / "showcase.json").read_text())["train_success"].__len__() == 2
