"""The built-in policies of :mod:`mvpo_train.policies.registry`: ``lm`` and ``encoder``.

* ``lm`` (default): :class:`mvpo_train.policy.Policy`, a Hugging Face causal LM from a model
  folder or hub id (``model``), both action modes, optionally with LoRA adapters
  (docs/training.md, "LoRA"); its check finds the model folder before anything loads.
* ``encoder``: :class:`mvpo_train.encoder_policy.EncoderPolicy`, a frozen sentence encoder and
  a small trainable action scorer (docs/policies.md), ``score`` mode only; ``model`` is a head
  folder, a bundled head's name, or ``fresh``.

Every heavy import happens inside the loaders, so importing this module (which the package
does) costs nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mvpo_train.errors import ConfigError
from mvpo_train.policies.registry import register_policy

__all__ = ["check_lm", "load_encoder", "load_lm", "model_path"]


def model_path(name: str) -> str:
    """``resolve_model_path`` with one-line errors: a local path must be a model folder."""
    from mvpo_train.tiny_model import resolve_model_path

    try:
        path = resolve_model_path(name)
    except FileNotFoundError as err:
        raise ConfigError(f"model: {err}") from None
    looks_local = path.startswith(("/", ".", "~")) or path.count("/") > 1 or "\\" in path
    local = Path(path).expanduser()
    if local.exists() or looks_local:
        if not local.is_dir():
            raise ConfigError(f"model: {path} is not a model folder (it does not exist)")
        if not (local / "config.json").is_file():
            raise ConfigError(f"model: {path} is not a model folder (no config.json in it)")
    elif not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", path):
        raise ConfigError(f"model: {path!r} is neither a model folder nor a hub id (org/name)")
    return path


def check_lm(cfg: Any) -> None:
    """The LM's model folder or hub id is well formed and, when local, present."""
    model_path(cfg.model)


def _adapter_checkpoint(cfg: Any, model: str | None) -> str | None:
    """``model`` when it is a folder of LoRA adapters (a LoRA run's checkpoint), else None;
    such a folder without ``lora_rank`` is one line."""
    from mvpo_train.lora import is_adapter_folder

    if model is None or not is_adapter_folder(model):
        return None
    if not cfg.lora_rank:
        raise ConfigError(
            f"model: {model} holds LoRA adapters only; evaluate it with --run-dir of its run, "
            "or merge them into a full model first (--lora-merge-to; docs/training.md, 'LoRA')"
        )
    return model


@register_policy("lm", check=check_lm, action_modes=("score", "generate"))
def load_lm(cfg: Any, model: str | None = None) -> Any:
    """The Hugging Face policy of ``cfg`` (``model``: a checkpoint folder, or a LoRA run's
    adapters, loaded over ``cfg.model``)."""
    from mvpo_train.policy import Policy

    adapters = _adapter_checkpoint(cfg, model)  # a LoRA run's checkpoint: base + adapters
    path = model_path(cfg.model if adapters else model or cfg.model)
    try:
        policy = Policy.from_pretrained(
            path,
            device=cfg.device,
            dtype=cfg.dtype,
            temperature=cfg.temperature,
            max_tokens_per_forward=cfg.max_tokens_per_forward,
            score_impl=cfg.score_impl,
            attn_implementation=(
                None if cfg.attn_implementation == "auto" else cfg.attn_implementation
            ),
        )
    except OSError as err:  # transformers: not a model folder, not in the offline cache
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"model: cannot load {path!r}: {first}") from None
    if getattr(policy.model, "generation_config", None) is not None:
        policy.model.generation_config.do_sample = True
    if cfg.lora_rank:  # docs/training.md, "LoRA"
        from mvpo_train.lora import apply_lora, load_adapter_checkpoint

        policy = apply_lora(policy, cfg)
        if adapters is not None:
            load_adapter_checkpoint(policy.model, adapters)
    return policy


def _resolve_head(name: str) -> str:
    from mvpo_train.encoder_policy import resolve_head

    return resolve_head(name)


@register_policy("encoder", resolve_model=_resolve_head)
def load_encoder(cfg: Any, model: str | None = None) -> Any:
    """The encoder policy of ``cfg`` (:func:`mvpo_train.encoder_policy.load_encoder_policy`;
    it checks its head folder when it loads)."""
    from mvpo_train.encoder_policy import load_encoder_policy

    return load_encoder_policy(cfg, model)
