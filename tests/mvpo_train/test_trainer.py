"""The training loop: every estimator runs, learning on one task, KL/reference path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mvpo_train.config import TrainConfig
from mvpo_train.credit import available_estimators
from mvpo_train.metrics import read_metrics
from mvpo_train.trainer import train


def _cfg(micro: Path, run_dir: Path, **kw) -> TrainConfig:
    base = dict(
        run_dir=str(run_dir), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, num_groups=1, group_size=2, max_steps=3, iterations=1,
        micro_batch_size=16, save_every=0, tasks=[13],
    )  # fmt: skip
    base.update(kw)
    return TrainConfig(**base)


@pytest.mark.parametrize("estimator", available_estimators())
def test_every_estimator_runs_one_iteration(micro, tmp_path, estimator):
    rows = train(_cfg(micro, tmp_path, estimator=estimator))
    assert len(rows) == 1
    row = rows[0]
    for key in ("success", "return_mean", "adv/zero_adv_ratio", "loss/grad_norm", "time/rollout",
                "time/logp_ref", "time/advantage", "time/update"):  # fmt: skip
        assert key in row, key
    assert read_metrics(tmp_path)[0]["iteration"] == 1
    assert (tmp_path / "checkpoints" / "LATEST").is_file()


def test_mvpo_metrics_carry_kappa_amp_and_grouping(micro, tmp_path):
    row = train(_cfg(micro, tmp_path, estimator="mvpo", max_steps=5, group_size=3))[0]
    assert row["adv/kappa"] == pytest.approx(1.0, abs=0.1)
    assert 0.0 <= row["adv/grouping_ratio"] <= 1.0
    assert 0.0 <= row["adv/zero_credit_ratio"] <= 1.0
    assert any(k.startswith("adv/amp_weights") for k in row)


def test_kl_reference_entropy_and_generate_mode(micro, tmp_path):
    rows = train(
        _cfg(micro, tmp_path, action_mode="generate", prompt_style="seed", max_new_tokens=4,
             kl_coef=0.01, entropy_coef=0.001, estimator="grpo", iterations=2)
    )  # fmt: skip
    assert len(rows) == 2
    assert rows[0]["format_error_ratio"] == 1.0  # the untrained model writes no tags
    assert rows[0]["shaped_return_mean"] < rows[0]["return_mean"]  # the format penalty
    assert "loss/kl" in rows[1] and "loss/entropy" in rows[1]
    assert rows[0]["time/logp_ref"] > 0


@pytest.mark.parametrize("env_id", ["mvpo/WebShop-v0", "mvpo/SearchQA-v0"])
def test_other_envs_train_through_the_info_contract(micro, tmp_path, env_id):
    """The trainer knows no env: the prompt template is chosen by env id, nothing else."""
    rows = train(
        _cfg(micro, tmp_path, env_id=env_id, action_mode="generate", prompt_style="seed",
             max_new_tokens=8, max_steps=2, tasks=[], estimator="gigpo")
    )  # fmt: skip
    assert rows[0]["steps"] >= 2 and rows[0]["format_error_ratio"] == 1.0


def test_eval_during_training(micro, tmp_path):
    row = train(_cfg(micro, tmp_path, eval_every=1, eval_max_tasks=2, eval_split="eval"))[0]
    assert row["eval/episodes"] == 2
    assert 0.0 <= row["eval/success"] <= 1.0
    assert "time/eval" in row


def test_short_run_on_one_task_learns(micro, tmp_path):
    """A fixed easy task (put the remote control on the coffee table, 4 steps): success rises.

    Random play wins it about 5% of the time within 12 steps; 16 iterations of MVPO + PPO on
    the micro model (fixed seed, one thread: deterministic) take it above 50%.
    """
    cfg = _cfg(
        micro, tmp_path, estimator="mvpo", num_groups=2, group_size=8, max_steps=12,
        iterations=16, lr=1e-2, ppo_epochs=4, minibatch_size=64, micro_batch_size=128, seed=0,
        history_length=1,
    )  # fmt: skip
    rows = train(cfg)
    succ = np.array([r["success"] for r in rows])
    assert succ[:3].mean() < 0.15, succ.round(2).tolist()
    assert succ[-4:].mean() >= 0.5, succ.round(2).tolist()
