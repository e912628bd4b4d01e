"""The runs of a compact-result study (:mod:`mvpo_train.study.result_runs`): default pairs,
the settings stamped into each result, the train command and the results read back."""

from __future__ import annotations

import argparse
import json

from mvpo_train.study.arms import parse_arms
from mvpo_train.study.compact import RESULT
from mvpo_train.study.result_runs import default_pairs, load_results, settings, train_cmd

ENV_ID = "toy/Env-v0"


def _args(tmp_path, **over) -> argparse.Namespace:
    kw = dict(difficulty=1, num_milestones=4, num_groups=2, group_size=3, max_steps=7,
              iterations=5, lr=0.01, ppo_epochs=2, eval_episodes=1, eval_max_tasks=0,
              extra=["--kl-coef", "0"], base=str(tmp_path), seeds=[0, 1], fresh=False)  # fmt: skip
    return argparse.Namespace(**{**kw, **over})


def test_default_pairs_compare_each_arm_with_the_baselines_and_its_plain_estimator():
    arms = parse_arms(["grpo", "gigpo", "mvpo", "mvpo-paper=mvpo:form=paper"])
    assert default_pairs(arms) == [
        ("mvpo", "grpo"), ("mvpo", "gigpo"), ("mvpo-paper", "grpo"), ("mvpo-paper", "gigpo"),
        ("gigpo", "grpo"), ("mvpo-paper", "mvpo"),
    ]  # fmt: skip
    assert default_pairs(parse_arms(["mvpo"])) == []


def test_the_command_holds_the_settings_and_the_arm_and_ends_with_the_extra_flags(tmp_path):
    args = _args(tmp_path)
    (arm,) = parse_arms(["p=mvpo:form=paper"])
    cmd = train_cmd(tmp_path / "p-seed0", arm, 0, args, ENV_ID)
    assert cmd[cmd.index("--env-id") + 1] == ENV_ID
    assert json.loads(cmd[cmd.index("--env-kwargs") + 1]) == {"difficulty": 1, "num_milestones": 4}
    assert json.loads(cmd[cmd.index("--estimator-kwargs") + 1]) == {"form": "paper"}
    assert cmd[cmd.index("--eval-every") + 1] == "5" and cmd[-2:] == ["--kl-coef", "0"]
    conf = settings(args, ENV_ID)
    assert conf["env_id"] == ENV_ID and conf["lr"] == 0.01 and conf["extra"] == ["--kl-coef", "0"]


def test_results_without_a_file_are_missing(tmp_path):
    args = _args(tmp_path)
    arms = parse_arms(["grpo"])
    assert load_results(args, arms, ENV_ID) == {"grpo": {}}
    assert not (tmp_path / "grpo-seed0" / RESULT).exists()
