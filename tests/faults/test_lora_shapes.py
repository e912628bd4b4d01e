"""A LoRA checkpoint whose adapters have other shapes than the model's (another rank), with
checksums that match (rewritten after the change): loading it to resume, evaluate or merge is
one line naming the file and the tensor, never peft's ``size mismatch`` traceback
(docs/training.md, "LoRA")."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

pytest.importorskip("peft")

from safetensors.torch import load_file, save_file  # noqa: E402

from mvpo_train.checkpoint import CheckpointError, latest_checkpoint, load_adapters  # noqa: E402
from mvpo_train.config import ConfigError, TrainConfig  # noqa: E402
from mvpo_train.factories import load_policy  # noqa: E402
from mvpo_train.lora import ADAPTER_WEIGHTS, merge_adapters  # noqa: E402
from mvpo_train.trainer import train  # noqa: E402


def _cfg(micro: Path, run_dir: Path) -> TrainConfig:
    return TrainConfig(
        run_dir=str(run_dir), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, num_groups=2, group_size=2, max_steps=2, iterations=1,
        estimator="mvpo", minibatch_size=8, micro_batch_size=4, ppo_epochs=1, lr=5e-2, seed=3,
        env_kwargs={"preset": "mini"}, lora_rank=4, lora_alpha=8.0,
    )  # fmt: skip


def _reshape_adapters(ckpt: Path, rank: int) -> None:
    """Replace every adapter tensor by one of ``rank`` and rewrite ``SHA256SUMS`` to match."""
    path = ckpt / ADAPTER_WEIGHTS
    state = load_file(path)
    out = {}
    for key, t in state.items():
        shape = list(t.shape)
        if ".lora_A." in key:
            shape[0] = rank
        elif ".lora_B." in key:
            shape[1] = rank
        out[key] = torch.zeros(shape, dtype=t.dtype)
    save_file(out, path)
    sums = ckpt / "SHA256SUMS"
    lines = []
    for line in sums.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        name = name.lstrip("*")
        if name == ADAPTER_WEIGHTS:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {name}")
    sums.write_text("\n".join(lines) + "\n")


def test_adapters_of_other_shapes_with_matching_checksums_are_one_line(micro, tmp_path):
    cfg = _cfg(micro, tmp_path / "run")
    train(cfg)
    ckpt = latest_checkpoint(tmp_path / "run")
    _reshape_adapters(ckpt, rank=2)
    policy = load_policy(cfg)
    with pytest.raises(CheckpointError) as err:
        load_adapters(policy.model, ckpt)
    message = str(err.value)
    assert "\n" not in message and ADAPTER_WEIGHTS in message
    assert "shape" in message and "lora_A" in message
    with pytest.raises((CheckpointError, ConfigError)) as err:
        merge_adapters(tmp_path / "run", tmp_path / "merged")
    message = str(err.value)
    assert "\n" not in message and "shape" in message
    assert not (tmp_path / "merged").exists()
