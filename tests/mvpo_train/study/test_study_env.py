"""A learning study's env (:mod:`mvpo_train.study.study_env`): its arms, the page's words for
the env, the final evaluations and each arm's own flags."""

from __future__ import annotations

import argparse

import pytest

from mvpo_train.study.study_env import StudyEnv, arm_flags, embedding_cache, final_evals

TOY = StudyEnv(
    name="toy", env_id="toy/Env-v0", title="t", flags=(), final_evals=(("a", 4), ("b", 2)),
    arms=("x",), pairs=(), warm="w", base="runs/toy", out="toy.md",
    base_arms={"x": ["--estimator", "x"], "y": ["--estimator", "y"]},
    arm_flags={"y": ["--estimator", "y", "--lr", "1"]},
)  # fmt: skip


def test_an_env_arm_wins_over_the_shared_table():
    assert TOY.arm("x") == ["--estimator", "x"] and TOY.arm("y")[-2:] == ["--lr", "1"]
    assert TOY.arm_names() == ["x", "y"]
    TOY.arm("x").append("changed")  # a copy: the table is never mutated
    assert TOY.arm("x") == ["--estimator", "x"]


def test_the_page_names_the_env_with_its_keywords_or_its_defaults():
    assert TOY.sentence("{}") == "`toy/Env-v0` with `--env-kwargs '{}'`"
    named = TOY._replace(defaults_sentence="the defaults", setting="a reward")
    assert named.sentence(" {} ") == "the defaults"
    assert named.sentence('{"k": 1}') == (
        "`toy/Env-v0` with `--env-kwargs '{\"k\": 1}'`, all train tasks, a reward"
    )


def test_final_evaluations_and_arm_flags_from_the_arguments():
    assert final_evals(TOY, None) == (("a", 4), ("b", 2))
    assert final_evals(TOY, [1, 3]) == (("a", 1), ("b", 3))
    with pytest.raises(ValueError):
        final_evals(TOY, [1])  # one count per split
    args = argparse.Namespace(arms=["x"], arm_flags=["x=--lr 0.1", "x=--kl-coef 0"], base="B")
    assert arm_flags(args) == {"x": ["--lr", "0.1", "--kl-coef", "0"]}
    assert embedding_cache(args) == "B/embeddings.npz"
    with pytest.raises(SystemExit, match="--arm-flags: expected ARM='FLAGS'"):
        arm_flags(argparse.Namespace(arms=["x"], arm_flags=["z=--lr 1"]))
