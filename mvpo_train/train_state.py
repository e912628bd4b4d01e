"""Everything a checkpoint holds, in one object (docs/training.md, "Checkpoints and resume";
docs/architecture.md, "Determinism and checkpoints").

:class:`TrainState` is what the next iteration depends on: the policy's weights, the optimizer
state, the estimator state (MVPO's EMA and AMP weights), the learned abstraction's refit state,
every RNG (Python, NumPy, torch and the trainer's own generators: task sampler, action sampler,
mini-batch order), the iteration, the env steps and the number of metric lines written.
:meth:`TrainState.save` writes it as one atomic, checksummed checkpoint
(:func:`mvpo_train.checkpoint.save_checkpoint`; rank 0 only, then a barrier) and
:meth:`TrainState.restore` reads it back, so one process and ``torchrun``'s ranks resume the
same way. Under FSDP the weights and optimizer state are saved and loaded as one full,
unsharded copy, so a checkpoint resumes with or without FSDP and on any number of ranks. A LoRA
policy (:mod:`mvpo_train.lora`) saves its adapters only, and ``state.json`` records the base
model (path and weights SHA-256); :meth:`TrainState.check_compatible` refuses another base.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from mvpo_train.checkpoint import (
    capture_rng,
    load_checkpoint,
    load_model_weights,
    restore_rng,
    save_checkpoint,
)
from mvpo_train.distributed import (
    DistContext,
    full_optimizer_state_dict,
    full_state_dict,
    is_fsdp,
    load_full_optimizer_state_dict,
    load_full_state_dict,
)

__all__ = ["TrainState", "load_checkpoint_into"]


@dataclass
class TrainState:
    """The training run's state between two iterations (what a checkpoint holds).

    ``policy`` is any policy with ``model`` and ``tokenizer`` (the LM or the encoder policy);
    ``generators`` are the trainer's named ``torch.Generator`` / ``np.random.Generator``
    objects; ``refit`` the learned abstraction's refit (``None`` without one).
    """

    policy: Any
    optimizer: torch.optim.Optimizer
    estimator: Any
    generators: dict[str, Any] = field(default_factory=dict)
    refit: Any = None
    iteration: int = 0  #: iterations completed
    env_steps: int = 0  #: environment steps played so far
    metrics_rows: int = 0  #: lines of metrics.jsonl written so far

    def state_dict(self, config: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON part of the checkpoint (``state.json``, without the iteration)."""
        out: dict[str, Any] = {"estimator": self.estimator.state_dict()}
        if self.refit is not None:
            out["abstraction_refit"] = self.refit.state_dict()
        out.update(env_steps=self.env_steps, metrics_rows=self.metrics_rows)
        if _is_lora(self.policy.model):
            from mvpo_train.lora import lora_state

            out["lora"] = lora_state(self.policy.model)
        if config is not None:
            out["config"] = config
        return out

    def save(
        self,
        run_dir: str | Path,
        *,
        config: dict[str, Any] | None = None,
        keep: int = 2,
        ctx: DistContext | None = None,
    ) -> Path | None:
        """Checkpoint ``run_dir/checkpoints/iter-<iteration>`` (atomic, checksummed; the newest
        ``keep`` are kept), with ``config`` (the run's :meth:`TrainConfig.to_dict`) for
        ``--resume``'s comparison. Rank 0 writes, then every rank meets at a barrier; under
        FSDP every rank must call it (gathering the full copy is a collective). Returns the
        folder on rank 0, ``None`` elsewhere."""
        ctx = DistContext() if ctx is None else ctx
        model, optimizer = self.policy.model, self.optimizer
        if is_fsdp(model):
            model = optimizer = _Saved(
                model, full_state_dict(model), full_optimizer_state_dict(model, self.optimizer)
            )
        path = None
        if ctx.is_main:
            path = save_checkpoint(
                run_dir,
                self.iteration,
                model,
                optimizer,
                capture_rng(self.generators),
                self.state_dict(config),
                keep=keep,
                tokenizer=self.policy.tokenizer,
            )
        ctx.barrier()
        if ctx.is_main and hasattr(self.policy, "persist_cache"):
            self.policy.persist_cache()  # encoder policy: the shared embedding cache
        return path

    def restore(self, path: str | Path, saved: dict[str, Any] | None = None) -> None:
        """Load checkpoint ``path`` into this state (``saved``: its
        :func:`~mvpo_train.checkpoint.load_checkpoint` contents, if already read and
        verified; else it is read and verified here). Weights, optimizer, estimator, refit,
        every RNG and the counters are then exactly as when it was saved."""
        saved = load_checkpoint(path) if saved is None else saved
        state = saved["state"]
        self.check_compatible(saved, path)
        load_checkpoint_into(self.policy.model, self.optimizer, path, saved["optimizer"])
        self.estimator.load_state_dict(state["estimator"])
        if self.refit is not None and "abstraction_refit" in state:
            self.refit.load_state_dict(state["abstraction_refit"])
        restore_rng(saved["rng"], self.generators)
        self.iteration = int(state["iteration"])
        self.env_steps = int(state["env_steps"])
        self.metrics_rows = int(state["metrics_rows"])

    def check_compatible(self, saved: dict[str, Any], path: str | Path) -> None:
        """Checkpoint ``path`` (``saved``: its loaded contents) fits this state's policy: a LoRA
        checkpoint needs a LoRA policy on the same base weights, a full one a plain policy; else
        one :class:`~mvpo_train.config.ConfigError` line (before anything is loaded)."""
        if _is_lora(self.policy.model) or "lora" in saved["state"]:
            from mvpo_train.lora import check_base

            check_base(self.policy.model, saved["state"], path)


def _is_lora(model: Any) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "get_base_model")


def load_checkpoint_into(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, path: Any, optim_state: dict
) -> None:
    """Resume: checkpoint ``path``'s weights and ``optim_state`` into ``model``/``optimizer``,
    sharded (FSDP: every rank reads the full files and keeps its shard) or not."""
    if not is_fsdp(model):
        load_model_weights(model, path)
        optimizer.load_state_dict(optim_state)
        return
    capture = _Capture(model)
    load_model_weights(capture, path)  # the same files, checks and errors as unsharded
    load_full_state_dict(model, capture.state)
    load_full_optimizer_state_dict(model, optimizer, optim_state)


class _Capture:
    """Stands for a sharded model in :func:`~mvpo_train.checkpoint.load_model_weights`: keeps
    the full state it is given (on CPU) and reports missing/unexpected names."""

    def __init__(self, model: torch.nn.Module):
        self.config = model.config
        self._names = set(model.state_dict())
        self.state: dict[str, torch.Tensor] = {}

    def parameters(self) -> Iterator[torch.Tensor]:
        yield torch.empty(0)  # load on CPU

    def load_state_dict(self, state: dict, strict: bool = True) -> tuple[list, list]:
        self.state = dict(state)
        return sorted(self._names - set(state)), sorted(set(state) - self._names)


class _Saved:
    """What :func:`mvpo_train.checkpoint.save_checkpoint` needs of a model and an optimizer,
    from full state dicts (FSDP: rank 0 writes what every rank gathered)."""

    def __init__(self, model: torch.nn.Module, model_state: dict, optim_state: dict):
        self._model, self._model_state, self._optim_state = model, model_state, optim_state

    def save_pretrained(self, path: Any, **kwargs: Any) -> None:
        self._model.save_pretrained(path, state_dict=self._model_state, **kwargs)

    def state_dict(self) -> dict:
        return self._optim_state
