"""Checkpoints: kill-and-resume reproduces an uninterrupted run exactly; atomic, checksummed
writes; pickle-free loading; pruning by iteration number (docs/training.md, "Reliability")."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from mvpo_train.checkpoint import (
    LATEST,
    SUMS,
    CheckpointError,
    capture_rng,
    complete_checkpoints,
    find_intact_checkpoint,
    latest_checkpoint,
    load_checkpoint,
    restore_rng,
    save_checkpoint,
    verify_checkpoint,
)
from mvpo_train.config import ConfigError, TrainConfig
from mvpo_train.metrics import read_metrics, strip_timing
from mvpo_train.trainer import train


def _cfg(micro: Path, run_dir: Path, **kw) -> TrainConfig:
    base = dict(
        run_dir=str(run_dir), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, num_groups=2, group_size=2, max_steps=4, iterations=4, estimator="mvpo",
        minibatch_size=8, micro_batch_size=4, ppo_epochs=2, lr=5e-3, seed=3,
        env_kwargs={"preset": "mini"},
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


def test_resume_without_checkpoint_is_an_error_and_writes_nothing(micro, tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        train(_cfg(micro, tmp_path / "none", iterations=1, resume=True))
    assert not (tmp_path / "none").exists()
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"iteration": 1}\n')
    with pytest.raises(ConfigError, match="no complete checkpoint"):
        train(_cfg(micro, run, iterations=1, resume=True))
    assert (run / "metrics.jsonl").read_text() == '{"iteration": 1}\n'  # not truncated
    assert sorted(p.name for p in run.iterdir()) == ["metrics.jsonl"]


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
    (root / "iter-000001" / SUMS).write_text("")
    (root / "iter-000002").mkdir()  # no SHA256SUMS: a kill mid-save
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


def _model_and_opt(micro: Path):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(micro)
    opt = torch.optim.AdamW(model.parameters())
    model(torch.tensor([[1, 2, 3]])).logits.sum().backward()
    opt.step()
    return model, opt


def test_pruning_is_by_iteration_number_and_keeps_the_newest(micro, tmp_path):
    model, opt = _model_and_opt(micro)
    for it in (999_998, 999_999, 1_000_000):  # by name, iter-1000000 sorts first
        save_checkpoint(tmp_path, it, model, opt, capture_rng({}), {}, keep=2)
    assert [it for it, _ in complete_checkpoints(tmp_path)] == [999_999, 1_000_000]
    assert latest_checkpoint(tmp_path).name == "iter-1000000"
    save_checkpoint(tmp_path, 1_000_001, model, opt, capture_rng({}), {}, keep=1)
    assert [it for it, _ in complete_checkpoints(tmp_path)] == [1_000_001]


def test_checksums_name_the_corrupt_file_and_the_fallback_is_the_newest_intact(micro, tmp_path):
    model, opt = _model_and_opt(micro)
    for it in (1, 2, 3):
        save_checkpoint(tmp_path, it, model, opt, capture_rng({}), {"x": it}, keep=3)
    newest = tmp_path / "checkpoints" / "iter-000003"
    verify_checkpoint(newest)
    sums = (newest / SUMS).read_text()
    assert "model.safetensors" in sums and "optimizer.pt" in sums and "rng.pt" in sums
    blob = bytearray((newest / "model.safetensors").read_bytes())
    blob[-5] ^= 0xFF  # one flipped bit pattern in the tensor bytes
    (newest / "model.safetensors").write_bytes(bytes(blob))
    with pytest.raises(CheckpointError, match=r"iter-000003/model\.safetensors: checksum"):
        verify_checkpoint(newest)
    (tmp_path / "checkpoints" / "iter-000002" / "state.json").write_text("{")
    ckpt, skipped = find_intact_checkpoint(tmp_path)
    assert ckpt.name == "iter-000001"
    assert [p.name for p, _ in skipped] == ["iter-000003", "iter-000002"]
    assert "state.json" in skipped[1][1]
    assert load_checkpoint(ckpt)["state"]["x"] == 1


def test_loading_never_unpickles(micro, tmp_path, monkeypatch):
    """Every torch.load is weights_only; a pickled object in a checkpoint is refused even when
    its checksum was forged to match."""

    model, opt = _model_and_opt(micro)
    gens = {"t": torch.Generator().manual_seed(4), "n": np.random.default_rng(5)}
    ckpt = save_checkpoint(tmp_path, 1, model, opt, capture_rng(gens), {"x": 1})
    calls = []
    real_load = torch.load

    def spy(*a, **k):
        calls.append(k.get("weights_only"))
        return real_load(*a, **k)

    monkeypatch.setattr(torch, "load", spy)
    saved = load_checkpoint(ckpt)
    assert calls == [True, True]
    assert saved["optimizer"]["state"]  # the AdamW moments came back
    torch.save({"state": {}, "param_groups": [], "evil": Path("/")}, ckpt / "optimizer.pt")
    digest = hashlib.sha256((ckpt / "optimizer.pt").read_bytes()).hexdigest()
    lines = [
        f"{digest}  optimizer.pt" if line.endswith("  optimizer.pt") else line
        for line in (ckpt / SUMS).read_text().splitlines()
    ]
    (ckpt / SUMS).write_text("\n".join(lines) + "\n")
    verify_checkpoint(ckpt)  # the forged checksum holds ...
    with pytest.raises(CheckpointError, match=r"optimizer\.pt: unreadable"):
        load_checkpoint(ckpt)  # ... but nothing is unpickled


def test_rng_survives_the_json_and_tensor_files(micro, tmp_path):
    model, opt = _model_and_opt(micro)
    gens = {"t": torch.Generator().manual_seed(1), "n": np.random.default_rng(2)}
    random.seed(7)
    np.random.seed(8)
    np.random.randn()  # a cached gaussian in NumPy's legacy state
    ckpt = save_checkpoint(tmp_path, 1, model, opt, capture_rng(gens), {})

    def draw():
        return (random.random(), np.random.randn(), torch.rand(1).item(),
                torch.rand(1, generator=gens["t"]).item(), gens["n"].random())  # fmt: skip

    a = draw()
    other = {"t": torch.Generator().manual_seed(9), "n": np.random.default_rng(9)}
    restore_rng(load_checkpoint(ckpt)["rng"], other)
    gens.update(other)
    assert draw() == a


def test_stale_temporaries_of_a_killed_writer_are_removed(micro, tmp_path):
    model, opt = _model_and_opt(micro)
    root = tmp_path / "checkpoints"
    root.mkdir()
    (root / f"{LATEST}.tmp-424242").write_text("iter-000009\n")
    (root / "iter-000009.tmp-424242").mkdir()
    save_checkpoint(tmp_path, 1, model, opt, capture_rng({}), {})
    assert sorted(p.name for p in root.iterdir()) == [LATEST, "iter-000001"]


def test_resume_prefers_a_complete_folder_newer_than_latest(micro, tmp_path):
    """A kill between a checkpoint folder's rename and the ``LATEST`` update leaves a complete,
    intact newer folder: its metrics row is written, so the resume starts from it."""
    from transformers import AutoModelForCausalLM

    from mvpo_train.checkpoint import find_intact_checkpoint

    model = AutoModelForCausalLM.from_pretrained(micro)
    opt = torch.optim.AdamW(model.parameters())
    for it in (1, 2):
        save_checkpoint(tmp_path, it, model, opt, capture_rng({}), {"x": it})
    (tmp_path / "checkpoints" / LATEST).write_text("iter-000001\n")  # the update never came
    found, skipped = find_intact_checkpoint(tmp_path)
    assert found is not None and found.name == "iter-000002" and skipped == []
