"""``info["oracle_plan_length"]`` of ``mvpo/ALFWorld-v0`` with ``progress_oracle=True`` and MVPO's
oracle repair on real ALFWorld batches (docs/alignment.md, "The oracle repair")."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.info_contract import contract_errors
from mvpo_train.batch import ORACLE_PLAN_DECREASE, ORACLE_PROGRESS
from mvpo_train.cli import train_main
from mvpo_train.metrics import read_metrics
from mvpo_train.records import find_records, read_batch_record

ENV = "mvpo/ALFWorld-v0"
ORACLE_KEYS = ("oracle_progress", "oracle_plan_length")
INVALID = "jump around"  # no ALFWorld command: "Nothing happens.", the state unchanged


def _without_oracle(info: dict) -> dict:
    return {k: v for k, v in info.items() if k not in ORACLE_KEYS}


def test_the_option_adds_its_keys_and_changes_nothing_else():
    """Off (the default) no info carries the plan length; on, every info is the default one
    plus the oracle's keys, on random play with inadmissible commands, a win and ALFWorld's
    repeated step after it."""
    off = gym.make(ENV, preset="mini")
    on = gym.make(ENV, preset="mini", progress_oracle=True)
    rng = random.Random(0)
    for seed in (0, 5):
        obs_off, info_off = off.reset(seed=seed)
        obs_on, info_on = on.reset(seed=seed)
        for k in range(60):
            assert obs_on == obs_off and _without_oracle(info_on) == _without_oracle(info_off)
            assert "oracle_plan_length" not in info_off and info_off["oracle_progress"] == -1
            assert type(info_on["oracle_plan_length"]) is int
            assert contract_errors(info_off, ENV) == [] == contract_errors(info_on, ENV)
            if seed == 0:  # random play, an inadmissible command every fifth step
                action = INVALID if k % 5 == 4 else rng.choice(info_off["admissible_actions"])
            else:  # to the goal, then past it
                optimal = on.unwrapped.optimal_actions()
                action = optimal[0] if optimal else "look"
            obs_off, r_off, term_off, trunc_off, info_off = off.step(action)
            obs_on, r_on, term_on, trunc_on, info_on = on.step(action)
            assert (r_on, term_on, trunc_on) == (r_off, term_off, trunc_off)
            if trunc_off or (term_off and k > 40):
                break
        if seed == 5:
            assert term_on and info_on["oracle_plan_length"] == 0  # won, and stays 0 after


def test_the_plan_length_falls_by_one_along_an_optimal_plan():
    env = gym.make(ENV, preset="mini", progress_oracle=True)
    _, info = env.reset(seed=3)
    d0 = info["oracle_plan_length"]
    assert d0 > 1 and info["oracle_progress"] == -1
    _, _, _, _, info = env.step(INVALID)
    assert info["invalid_action"] and info["oracle_plan_length"] == d0  # the state is unchanged
    assert info["oracle_progress"] == 0
    for k in range(1, d0 + 1):
        _, reward, term, _, info = env.step(env.unwrapped.optimal_actions()[0])
        assert info["oracle_plan_length"] == d0 - k and info["oracle_progress"] == 1
        assert term == (k == d0)
    assert reward == 1.0 and env.unwrapped.optimal_actions() == []
    _, _, term, _, again = env.step("look")  # ALFWorld repeats the final step after a win
    assert term and again["oracle_plan_length"] == 0 and again["oracle_progress"] == 0


@pytest.mark.parametrize(("preset", "episodes"), [("mini", 12), ("alfworld", 4)])
def test_a_step_moves_the_plan_length_by_at_most_one_and_its_fall_is_the_label(preset, episodes):
    """Seeded random play (every tenth command inadmissible): the decrease across a step is
    -1, 0 or 1, 1 exactly where ``oracle_progress`` is 1; a plan always exists."""
    env = gym.make(ENV, preset=preset, progress_oracle=True, max_episode_steps=30)
    rng = random.Random(1)
    seen = set()
    for ep in range(episodes):
        _, before = env.reset(seed=ep)
        done, k = False, 0
        while not done:
            action = INVALID if k % 10 == 9 else rng.choice(before["admissible_actions"])
            _, _, term, trunc, after = env.step(action)
            b, a = before["oracle_plan_length"], after["oracle_plan_length"]
            assert b >= 0 and a >= 0
            decrease = b - a
            assert decrease in (-1, 0, 1) and (decrease == 1) == (after["oracle_progress"] == 1)
            assert (a == 0) == term
            seen.add(decrease)
            before, done, k = after, term or trunc, k + 1
    assert seen == {-1, 0, 1}  # the sample holds each kind of step


def test_mvpo_train_repairs_alfworld_batches_with_the_oracle(tmp_path):
    """One iteration of ``mvpo-train`` (encoder policy, fresh head, the ``mini`` rooms) with
    ``repair_source="oracle"`` at ``rho = 1``: the batch carries the plan decrease, consistent
    with the labels, and the repair ranks the progress steps first (``align/auc`` 1)."""
    run = tmp_path / "run"
    argv = [
        "--policy", "encoder", "--model", "fresh", "--env-kwargs",
        '{"preset": "mini", "progress_oracle": true}', "--estimator", "mvpo",
        "--estimator-kwargs", '{"repair_source": "oracle", "oracle_rho": 1.0}',
        "--num-groups", "2", "--group-size", "4", "--max-steps", "15", "--iterations", "1",
        "--seed", "0", "--run-dir", str(run), "--threads", "1", "--no-progress",
        "--no-tensorboard", "--embedding-cache", str(tmp_path / "emb.npz"), "--record-every", "1",
    ]  # fmt: skip
    assert train_main(argv) == 0
    (row,) = read_metrics(run)
    assert row["align/positives"] >= 5 and row["align/negatives"] >= 20
    assert row["align/auc"] >= 0.99
    (record,) = find_records(run).values()
    extras = read_batch_record(record).extras
    d, y = np.asarray(extras[ORACLE_PLAN_DECREASE]), np.asarray(extras[ORACLE_PROGRESS])
    assert len(d) == row["env_steps"] == len(y) and np.all(np.isfinite(d))
    np.testing.assert_array_equal(y, (d == 1).astype(y.dtype))
    assert set(np.unique(d)) <= {-1.0, 0.0, 1.0}
