"""The matched ALFWorld study's command (docs/learning_study.md, "The matched study")."""

from __future__ import annotations

import yaml

from mvpo_train.cli import train_main
from mvpo_train.study import learning_runs

from .helpers import study_module


def test_the_matched_study_gives_every_arm_the_same_settings(tmp_path, capsys):
    """docs/learning_study.md, "The matched study": its command (as documented) makes runs that
    differ only in their estimator and its keywords: one lr (3e-4) and KL (0.05) for all."""
    learning = study_module("learning")
    arms = ["grpo", "gigpo", "mvpo-paper", "mvpo-potential", "mvpo-potential-shuffled"]
    argv = ["--arms", *arms, "--seeds", "0", "1", "2", "3", "4", "--iterations", "30",
            "--num-groups", "16", "--group-size", "8", "--lr", "0.0003", "--eval-every", "10",
            "--eval-episodes", "1", "--final-episodes", "4", "2",
            "--env-kwargs", '{"num_games": "full"}', "--warm", "runs/full/encoder-warm",
            "--warm-args=--history-length 2 --history-pool concat --steps 300",
            "--base", str(tmp_path), "--out", str(tmp_path / "m.md"),
            "--more-thresholds", "0.25", "0.3", "--", "--history-length", "2",
            "--kl-coef", "0.05"]  # fmt: skip
    args = learning.parse_args(argv)
    configs = {}
    for arm in arms:
        cmd = learning_runs.train_cmd(tmp_path / f"{arm}-seed0", arm, 0, args)
        assert train_main([*cmd[cmd.index("--preset") :], "--print-config"]) == 0
        configs[arm] = yaml.safe_load(capsys.readouterr().out)
    for cfg in configs.values():
        assert (cfg["lr"], cfg["kl_coef"], cfg["ppo_epochs"], cfg["iterations"]) == (
            3e-4,
            0.05,
            2,
            30,
        )
        assert (cfg["num_groups"], cfg["group_size"], cfg["history_length"]) == (16, 8, 2)
        assert cfg["env_kwargs"] == {"num_games": "full"}
    assert configs["mvpo-potential"]["estimator_kwargs"]["region_stats"] == "pooled"
    assert configs["mvpo-potential-shuffled"]["estimator_kwargs"]["repair_source"] == "shuffled"
    assert configs["mvpo-paper"]["estimator_kwargs"] == {"form": "paper"}
    drop = ("estimator", "estimator_kwargs", "run_dir")
    same = [{k: v for k, v in c.items() if k not in drop} for c in configs.values()]
    assert all(c == same[0] for c in same)
