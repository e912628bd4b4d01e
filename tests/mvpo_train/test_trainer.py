"""The training loop: exact reproducibility, every estimator trains exactly its non-zero rows,
evaluation leaves the training stream alone, learning on one task, KL/reference path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from mvpo_train.config import TrainConfig
from mvpo_train.credit import available_estimators
from mvpo_train.metrics import read_metrics, strip_timing
from mvpo_train.trainer import train


def _cfg(micro: Path, run_dir: Path, **kw) -> TrainConfig:
    base = dict(
        run_dir=str(run_dir), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, num_groups=1, group_size=2, max_steps=3, iterations=1,
        micro_batch_size=16, save_every=0, tasks=[13], env_kwargs={"preset": "mini"},
    )  # fmt: skip
    base.update(kw)
    return TrainConfig(**base)


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


def _final(run: Path, iteration: int) -> Path:
    return run / "checkpoints" / f"iter-{iteration:06d}"


@pytest.mark.parametrize("estimator", available_estimators())
def test_every_estimator_trains_exactly_its_nonzero_rows(micro, tmp_path, estimator):
    """One iteration: the update forwards each row with a non-zero advantage once per PPO
    epoch and no other row; the weights move if and only if some advantage is non-zero."""
    cfg = _cfg(micro, tmp_path, estimator=estimator, group_size=4, max_steps=4, ppo_epochs=2)
    rows = train(cfg)
    assert len(rows) == 1
    row = rows[0]
    for key in ("success", "return_mean", "adv/zero_adv_ratio", "loss/grad_norm", "time/rollout",
                "time/logp_ref", "time/advantage", "time/update"):  # fmt: skip
        assert key in row, key
    assert [r["iteration"] for r in read_metrics(tmp_path)] == [1]
    nonzero = round(row["steps"] * (1.0 - row["adv/zero_adv_ratio"]))
    assert row["loss/trained_rows"] == cfg.ppo_epochs * nonzero
    assert row["episodes"] == cfg.num_groups * cfg.group_size
    before, after = _weights(micro), _weights(_final(tmp_path, 1))
    moved = any(not torch.equal(before[k], after[k]) for k in after)
    assert moved == (nonzero > 0), (estimator, nonzero)
    assert np.isfinite(row["adv/mean"]) and np.isfinite(row["loss/grad_norm"])


def test_same_seed_same_run_other_seed_other_run(micro, tmp_path):
    """Everything random takes the seed: two runs with seed 5 agree on every metric (apart
    from time) and every weight bit; seed 6 samples other trajectories."""
    kw = dict(group_size=3, max_steps=5, iterations=2, save_every=1, tasks=[1, 13], num_groups=2)
    runs = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        train(_cfg(micro, tmp_path / name, seed=seed, **kw))
        runs[name] = [strip_timing(r) for r in read_metrics(tmp_path / name)]
    assert runs["a"] == runs["b"]
    wa, wb = _weights(_final(tmp_path / "a", 2)), _weights(_final(tmp_path / "b", 2))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert runs["a"] != runs["c"]
    assert [r["iteration"] for r in runs["c"]] == [1, 2]


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
             max_new_tokens=8, max_steps=2, tasks=[], estimator="gigpo", env_kwargs={})
    )  # fmt: skip
    assert rows[0]["steps"] >= 2 and rows[0]["format_error_ratio"] == 1.0


def test_eval_during_training_leaves_the_training_stream_alone(micro, tmp_path):
    """Evaluation runs on its own generator: the training metrics and weights are those of
    the same run without evaluation."""
    kw = dict(iterations=2, save_every=1, group_size=3, max_steps=4)
    train(_cfg(micro, tmp_path / "e", eval_every=1, eval_max_tasks=2, **kw))
    train(_cfg(micro, tmp_path / "p", **kw))
    with_eval, plain = read_metrics(tmp_path / "e"), read_metrics(tmp_path / "p")  # NaN -> None
    assert [r["eval/episodes"] for r in with_eval] == [2, 2]
    assert all(r["eval/success"] in (0.0, 0.5, 1.0) for r in with_eval)
    assert all("time/eval" in r for r in with_eval)

    def training_part(r):
        return {k: v for k, v in strip_timing(r).items() if not k.startswith("eval/")}

    assert [training_part(r) for r in with_eval] == [training_part(r) for r in plain]
    we, wp = _weights(_final(tmp_path / "e", 2)), _weights(_final(tmp_path / "p", 2))
    assert all(torch.equal(we[k], wp[k]) for k in we)


@pytest.mark.slow
def test_short_run_on_one_task_learns(micro, tmp_path):
    """A fixed easy task (mini preset task 13, put the remote control on the coffee table, 4
    steps): success rises.

    Random play wins it a few percent of the time within 12 steps; 16 iterations of MVPO + PPO
    on the micro model (fixed seed, one thread: deterministic) raise the batch success by at
    least 0.2 (about 3 minutes on 2 busy cores, hence ``slow``).
    """
    cfg = _cfg(
        micro, tmp_path, estimator="mvpo", num_groups=2, group_size=8, max_steps=12,
        iterations=16, lr=1e-2, ppo_epochs=4, minibatch_size=64, micro_batch_size=128, seed=0,
        history_length=1,
    )  # fmt: skip
    rows = train(cfg)
    succ = np.array([r["success"] for r in rows])
    assert succ[:3].mean() < 0.15, succ.round(2).tolist()
    assert succ[-4:].mean() >= succ[:3].mean() + 0.2, succ.round(2).tolist()


def test_progress_ticks_inside_an_iteration_and_is_quiet_without(micro, tmp_path, capsys):
    """With progress the rollout ticks per step, the update per mini-batch and the evaluation
    per episode (tqdm on stderr); progress=False writes none of it."""
    kw = dict(eval_every=1, eval_split="train", eval_max_tasks=1, minibatch_size=2)
    train(_cfg(micro, tmp_path / "a", progress=True, **kw))
    err = capsys.readouterr().err
    for text in ("mvpo-train [mvpo]", "rollout", "step 1", "update", "mb", "eval train", "ep"):
        assert text in err, (text, err[-2000:])
    train(_cfg(micro, tmp_path / "b", progress=False, **kw))
    err = capsys.readouterr().err
    assert not any(t in err for t in ("rollout", "update", "eval train", "mvpo-train [")), err


def test_auto_threads_are_recorded_and_kept_on_resume(micro, tmp_path):
    """threads=0 resolves to the free CPUs (at least 1) and config.yaml records the count; a
    resumed auto run keeps the recorded count (another could change float sums)."""
    import os

    import yaml

    from mvpo_train.threads import resolve_threads, saved_threads

    run = tmp_path / "run"
    train(_cfg(micro, run, threads=0, iterations=2, stop_after=1, save_every=1))
    used = yaml.safe_load((run / "config.yaml").read_text())["threads"]
    assert 1 <= used <= len(os.sched_getaffinity(0))
    assert saved_threads(run) == used and saved_threads(tmp_path / "none") == 0
    assert resolve_threads(3) == 3 and resolve_threads(0, resume_from=run) == used
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**cfg, "threads": used + 7}))
    assert resolve_threads(0, resume_from=run) == used + 7  # the recorded count, not a guess
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    rows = train(_cfg(micro, run, threads=0, iterations=2, resume=True, save_every=1))
    assert [r["iteration"] for r in rows] == [2]
    assert torch.get_num_threads() == used
