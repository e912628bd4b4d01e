"""Checkpoints that a killed run resumes from bit for bit.

docs/architecture.md ("Everything that is random takes a seed; the same seed gives the same
trajectories"). A checkpoint is a folder ``run_dir/checkpoints/iter-000012/`` holding

* ``model.safetensors`` (+ ``config.json`` + the tokenizer files): the policy
  (``save_pretrained``; the folder loads with ``AutoModelForCausalLM.from_pretrained``);
* ``optimizer.pt``: the optimizer state;
* ``rng.pt``: the RNG states: Python ``random``, NumPy's global state, torch's CPU (and CUDA)
  state, and the trainer's own generators (task sampler, action sampler, minibatch order);
* ``state.json``: iteration, estimator state (MVPO's EMA + AMP weights), the config, and the
  number of metrics lines written.

Writes are atomic: everything goes to ``iter-000012.tmp-<pid>/`` first, which is renamed to
``iter-000012/`` only when complete; then the ``LATEST`` pointer file is replaced with
``os.replace``. A kill at any moment leaves the previous checkpoint intact and ``LATEST``
pointing at a complete folder.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["capture_rng", "latest_checkpoint", "load_checkpoint", "restore_rng", "save_checkpoint"]

LATEST = "LATEST"
_DONE = "COMPLETE"


def capture_rng(generators: dict[str, Any]) -> dict[str, Any]:
    """Global RNG states plus named ``torch.Generator`` / ``np.random.Generator`` objects."""
    out: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "generators": {},
    }
    for name, g in generators.items():
        if isinstance(g, torch.Generator):
            out["generators"][name] = ("torch", g.get_state())
        else:
            out["generators"][name] = ("numpy", g.bit_generator.state)
    return out


def restore_rng(state: dict[str, Any], generators: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for name, g in generators.items():
        kind, value = state["generators"][name]
        if kind == "torch":
            g.set_state(value)
        else:
            g.bit_generator.state = value


def _write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def save_checkpoint(
    run_dir: str | Path,
    iteration: int,
    model: Any,
    optimizer: torch.optim.Optimizer,
    rng: dict[str, Any],
    state: dict[str, Any],
    keep: int = 2,
    tokenizer: Any = None,
) -> Path:
    """Write checkpoint ``iteration`` atomically; keep the newest ``keep`` ones.

    With ``tokenizer`` the folder is also a complete model folder for ``from_pretrained``.
    """
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    name = f"iter-{iteration:06d}"
    final = root / name
    tmp = root / f"{name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    model.save_pretrained(tmp, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(tmp)
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(rng, tmp / "rng.pt")
    (tmp / "state.json").write_text(
        json.dumps({"iteration": iteration, **state}, indent=1, sort_keys=True)
    )
    (tmp / _DONE).write_text("ok\n")
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    _write_text_atomic(root / LATEST, name + "\n")
    done = sorted(p for p in root.glob("iter-??????") if (p / _DONE).is_file())
    for old in done[: max(len(done) - max(keep, 1), 0)]:
        shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob("iter-*.tmp-*"):
        if stale != tmp:
            shutil.rmtree(stale, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The folder ``LATEST`` points at, else the newest complete one, else None."""
    root = Path(run_dir) / "checkpoints"
    pointer = root / LATEST
    if pointer.is_file():
        cand = root / pointer.read_text().strip()
        if (cand / _DONE).is_file():
            return cand
    done = sorted(p for p in root.glob("iter-??????") if (p / _DONE).is_file())
    return done[-1] if done else None


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """``{"state": ..., "rng": ..., "optimizer": ..., "model_dir": path}``."""
    path = Path(path)
    return {
        "state": json.loads((path / "state.json").read_text()),
        "rng": torch.load(path / "rng.pt", weights_only=False),
        "optimizer": torch.load(path / "optimizer.pt", weights_only=False),
        "model_dir": path,
    }


def load_model_weights(model: Any, path: str | Path) -> None:
    """Load ``model.safetensors`` of a checkpoint into ``model`` (strict)."""
    from safetensors.torch import load_file

    path = Path(path)
    device = str(next(model.parameters()).device)
    index = path / "model.safetensors.index.json"
    files = (
        sorted(set(json.loads(index.read_text())["weight_map"].values()))
        if index.is_file()
        else ["model.safetensors"]
    )
    state: dict[str, Any] = {}
    for f in files:
        state.update(load_file(str(path / f), device=device))
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = {"lm_head.weight"} if getattr(model.config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"checkpoint mismatch: missing {missing}, unexpected {unexpected}")
