"""Checkpoints: kill-and-resume reproduces an uninterrupted run exactly; atomic writes (item 5)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from mvpo_train.checkpoint import (
    LATEST,
    capture_rng,
    latest_checkpoint,
    load_checkpoint,
    restore_rng,
    save_checkpoint,
)
from mvpo_train.config import TrainConfig
from mvpo_train.metrics import read_metrics, strip_timing
from mvpo_train.trainer import train


def _cfg(micro: Path, run_dir: Path, **kw) -> TrainConfig:
    base = dict(
        run_dir=str(run_dir), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, num_groups=2, group_size=2, max_steps=4, iterations=4, estimator="mvpo",
        minibatch_size=8, micro_batch_size=4, ppo_epochs=2, lr=5e-3, seed=3,
    )  # fmt: skip
    base.update(kw)
    return TrainConfig(**base)


@pytest.mark.parametrize("action_mode", ["score", "generate"])
def test_kill_and_resume_matches_an_uninterrupted_run(micro, tmp_path, action_mode):
    extra = (
        {}
        if action_mode == "score"
        else {"prompt_style": "seed", "max_new_tokens": 3, "kl_coef": 0.05}
    )
    train(_cfg(micro, tmp_path / "full", action_mode=action_mode, **extra))
    # the same run, "killed" after 2 iterations, then resumed
    first = train(_cfg(micro, tmp_path / "split", action_mode=action_mode, stop_after=2, **extra))
    assert len(first) == 2
    # a half-written later checkpoint and stray metrics lines must not matter
    (tmp_path / "split" / "checkpoints" / "iter-000003.tmp-999").mkdir()
    with open(tmp_path / "split" / "metrics.jsonl", "a") as fh:
        fh.write('{"iteration": 3, "partial": true}\n')
    rest = train(_cfg(micro, tmp_path / "split", action_mode=action_mode, resume=True, **extra))
    assert [r["iteration"] for r in rest] == [3, 4]
    a = [strip_timing(r) for r in read_metrics(tmp_path / "full")]
    b = [strip_timing(r) for r in read_metrics(tmp_path / "split")]
    assert len(a) == len(b) == 4
    assert a == b
    wa = (tmp_path / "full" / "checkpoints" / "iter-000004" / "model.safetensors").read_bytes()
    wb = (tmp_path / "split" / "checkpoints" / "iter-000004" / "model.safetensors").read_bytes()
    assert wa == wb


def test_resume_without_checkpoint_starts_fresh(micro, tmp_path):
    rows = train(_cfg(micro, tmp_path, iterations=1, resume=True))
    assert [r["iteration"] for r in rows] == [1]


def test_checkpoint_holds_everything(micro, tmp_path):
    train(_cfg(micro, tmp_path, iterations=2, keep_checkpoints=1))
    ckpt = latest_checkpoint(tmp_path)
    assert ckpt is not None and ckpt.name == "iter-000002"
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [LATEST, "iter-000002"]
    saved = load_checkpoint(ckpt)
    state = saved["state"]
    assert state["iteration"] == 2 and state["config"]["estimator"] == "mvpo"
    assert "ema_success" in str(state["estimator"]) or state["estimator"]  # MVPO's carried state
    assert set(saved["rng"]["generators"]) == {"tasks", "actions", "minibatch"}
    assert saved["optimizer"]["state"]
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoModelForCausalLM.from_pretrained(ckpt)  # a complete model folder
    AutoTokenizer.from_pretrained(ckpt)


def test_latest_ignores_incomplete_folders(tmp_path):
    root = tmp_path / "checkpoints"
    (root / "iter-000001").mkdir(parents=True)
    (root / "iter-000001" / "COMPLETE").write_text("ok\n")
    (root / "iter-000002").mkdir()  # no COMPLETE marker: a kill mid-save
    (root / "iter-000003.tmp-1").mkdir()
    assert latest_checkpoint(tmp_path).name == "iter-000001"
    (root / LATEST).write_text("iter-000002\n")  # pointer to an incomplete folder: ignored
    assert latest_checkpoint(tmp_path).name == "iter-000001"


def test_save_is_atomic_under_a_failing_writer(micro, tmp_path):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(micro)
    opt = torch.optim.AdamW(model.parameters())
    save_checkpoint(tmp_path, 1, model, opt, capture_rng({}), {"x": 1})

    class Boom(RuntimeError):
        pass

    def fail(*a, **k):
        raise Boom

    orig = torch.save
    torch.save = fail
    try:
        with pytest.raises(Boom):
            save_checkpoint(tmp_path, 2, model, opt, capture_rng({}), {"x": 2})
    finally:
        torch.save = orig
    assert latest_checkpoint(tmp_path).name == "iter-000001"
    assert load_checkpoint(latest_checkpoint(tmp_path))["state"]["x"] == 1
    assert not any(
        p.name.startswith("iter-000002") and "tmp" not in p.name
        for p in (tmp_path / "checkpoints").iterdir()
    )
    assert os.listdir(tmp_path / "checkpoints")  # the old one is intact


def test_rng_roundtrip():
    gens = {"t": torch.Generator().manual_seed(1), "n": np.random.default_rng(2)}
    state = capture_rng(gens)
    a = (
        random.random(),
        np.random.rand(),
        torch.rand(1).item(),
        torch.rand(1, generator=gens["t"]).item(),
        gens["n"].random(),
    )
    restore_rng(state, gens)
    b = (
        random.random(),
        np.random.rand(),
        torch.rand(1).item(),
        torch.rand(1, generator=gens["t"]).item(),
        gens["n"].random(),
    )
    assert a == b
