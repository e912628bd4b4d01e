"""LoRA adapters on the LM policy through ``peft`` (docs/training.md, "LoRA").

With ``lora_rank > 0`` the causal LM of :class:`~mvpo_train.policy.Policy` is wrapped by
``peft.get_peft_model`` (:func:`apply_lora`): only the adapter matrices train, the base weights
stay frozen. The pieces:

* **Init.** The adapters are created under ``torch.random.fork_rng`` seeded with
  ``TrainConfig.seed``: the same seed gives the same adapters, and the global generators the
  rest of the run draws from are left as they were. peft starts ``lora_B`` at zero, so the
  wrapped model computes exactly the base model at iteration 0.
* **Reference.** :meth:`LoraPolicy.frozen_copy` (the KL reference, ``kl_coef > 0``) is a view
  of the *same* model that runs with the adapters disabled (``PeftModel.disable_adapter()``):
  the base model, i.e. the policy at iteration 0, without a second copy of the weights.
* **Checkpoints** hold the adapters only (:func:`~mvpo_train.checkpoint.save_adapters`:
  ``adapter_model.safetensors`` + ``adapter_config.json``, the files
  ``PeftModel.from_pretrained`` reads); ``state.json``
  records the base model (:func:`lora_state`: its path and the SHA-256 of its weights), and a
  resume on another base is one :class:`~mvpo_train.config.ConfigError` line
  (:func:`check_base`).
* **Serving.** :func:`merge_adapters` writes a full model folder with the adapters merged
  (``AutoModelForCausalLM.from_pretrained`` loads it); :func:`engine_weights` gives the merged
  weights under the base model's names, which the vLLM backend pushes after every update.

``--lora-merge-to DIR`` merges when the run completes; ``mvpo-train --config RUN/config.yaml
--resume --lora-merge-to DIR`` merges a finished run (docs/training.md, "LoRA").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from mvpo_train.checkpoint import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    CheckpointError,
    load_adapters,
    save_adapters,
)
from mvpo_train.errors import ConfigError
from mvpo_train.policy import Policy

__all__ = [
    "ADAPTER_CONFIG",
    "ADAPTER_WEIGHTS",
    "DEFAULT_TARGET_MODULES",
    "LoraPolicy",
    "apply_lora",
    "check_base",
    "check_merge_target",
    "engine_weights",
    "is_adapter_folder",
    "is_lora_model",
    "load_adapter_checkpoint",
    "load_adapters",
    "lora_state",
    "merge_adapters",
    "save_adapters",
    "weights_digest",
]

#: the attention projections of Qwen2 / Llama-style decoders (``TrainConfig.lora_target_modules``)
DEFAULT_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


def _peft() -> Any:
    try:
        import peft
    except ImportError as err:
        raise ImportError(
            "lora_rank > 0 needs peft: pip install 'mvpo[lora]' (or pip install peft)"
        ) from err
    return peft


def is_lora_model(model: Any) -> bool:
    """Whether ``model`` is a peft model (``get_peft_model``'s wrapper)."""
    return hasattr(model, "peft_config") and hasattr(model, "get_base_model")


def is_adapter_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder of adapters only (a LoRA run's checkpoint)."""
    p = Path(path)
    return (p / ADAPTER_CONFIG).is_file() and not (p / "config.json").is_file()


def weights_digest(model: torch.nn.Module) -> str:
    """SHA-256 of a model's weights: every ``state_dict`` entry's name, dtype, shape and bytes,
    in name order (the base model's identity in a LoRA checkpoint)."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


# ================================================================== wrapping the policy


def _linear_names(model: torch.nn.Module) -> list[str]:
    return sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                   if isinstance(m, torch.nn.Linear)})  # fmt: skip


def apply_lora(policy: Policy, cfg: Any) -> LoraPolicy:
    """``policy`` with its model wrapped in LoRA adapters of ``cfg`` (``lora_rank``,
    ``lora_alpha``, ``lora_dropout``, ``lora_target_modules``), initialised from ``cfg.seed``;
    only the adapters require gradients. An unknown target module is one :class:`ConfigError`
    line naming the model's linear layers."""
    peft = _peft()
    model = policy.model
    base = {
        "base_model": str(getattr(model, "name_or_path", "") or cfg.model),
        "base_sha256": weights_digest(model),
        "base_dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
    }
    targets = list(cfg.lora_target_modules)
    config = peft.LoraConfig(
        r=int(cfg.lora_rank),
        lora_alpha=float(cfg.lora_alpha),
        lora_dropout=float(cfg.lora_dropout),
        target_modules="all-linear" if targets == ["all-linear"] else targets,
        bias="none",
        task_type="CAUSAL_LM",
    )
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    try:
        with torch.random.fork_rng(devices=devices), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # transformers' deprecation notes
            torch.manual_seed(int(cfg.seed))
            wrapped = peft.get_peft_model(model, config)
    except ValueError as err:  # peft: "Target modules {...} not found in the base model"
        if "not found" not in str(err) and "Target module" not in str(err):
            raise
        raise ConfigError(
            f"lora_target_modules: {targets} match no layer of {base['base_model']}; its linear "
            f"layers are {', '.join(_linear_names(model))} (or give all-linear)"
        ) from None
    wrapped._mvpo_lora_base = base
    return policy.with_model(wrapped, LoraPolicy)


class LoraPolicy(Policy):
    """A :class:`Policy` whose model is a peft LoRA model; its :meth:`frozen_copy` is the base
    model (adapters disabled), sharing the weights."""

    def frozen_copy(self) -> Policy:
        """The KL reference: this policy's model with the adapters disabled (no copy)."""
        return self.with_model(self.model, _AdaptersOff)


class _AdaptersOff(Policy):
    """The base model of a peft model: every public pass runs inside ``disable_adapter()``."""

    _depth = 0

    @contextlib.contextmanager
    def _off(self) -> Iterator[None]:
        if self._depth:  # nested (the concat scorer calls token_logprobs): already off
            yield
            return
        self._depth += 1
        try:
            with self.model.disable_adapter():
                yield
        finally:
            self._depth -= 1

    def token_logprobs(self, *args: Any, **kwargs: Any) -> Any:
        with self._off():
            return super().token_logprobs(*args, **kwargs)

    def candidate_logprobs(self, *args: Any, **kwargs: Any) -> Any:
        with self._off():
            return super().candidate_logprobs(*args, **kwargs)

    def score_candidates(self, *args: Any, **kwargs: Any) -> Any:
        with self._off():
            return super().score_candidates(*args, **kwargs)

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        with self._off():
            return super().generate(*args, **kwargs)


# ================================================================== checkpoints


def lora_state(model: Any) -> dict[str, Any]:
    """What ``state.json`` records of a LoRA model: the base model's path, weights digest and
    dtype, and the adapter settings."""
    config = model.peft_config["default"]
    targets = config.target_modules
    return {
        **model._mvpo_lora_base,
        "rank": int(config.r),
        "alpha": float(config.lora_alpha),
        "target_modules": sorted(targets) if isinstance(targets, set | list) else targets,
    }


def check_base(model: Any, saved_state: dict[str, Any], where: str | Path) -> None:
    """A checkpoint ``where`` of adapters (``saved_state``: its ``state.json``) fits ``model``:
    both LoRA or both not, and the same base weights; else one :class:`ConfigError` line."""
    saved = saved_state.get("lora")
    name = Path(where).name
    if saved is None and not is_lora_model(model):
        return
    if saved is None:
        raise ConfigError(
            f"lora_rank: checkpoint {name} holds full weights (trained without LoRA); resume "
            "it without --lora-rank"
        )
    if not is_lora_model(model):
        raise ConfigError(
            f"lora_rank: checkpoint {name} holds LoRA adapters only; load it with the run's "
            f"lora_rank ({saved.get('rank')}) and base model {saved.get('base_model')}"
        )
    now = model._mvpo_lora_base
    if now["base_sha256"] != saved.get("base_sha256"):
        raise ConfigError(
            f"model: checkpoint {name} holds LoRA adapters of the base model "
            f"{saved.get('base_model')} (weights sha256 {str(saved.get('base_sha256'))[:12]}), "
            f"but {now['base_model']} has weights sha256 {now['base_sha256'][:12]}; use the "
            "base model the adapters were trained on"
        )


def load_adapter_checkpoint(model: Any, folder: str | Path) -> None:
    """A LoRA checkpoint folder's adapters into the peft ``model`` (``mvpo-eval``): its
    ``state.json``'s base must be ``model``'s (:func:`check_base`)."""
    folder = Path(folder)
    try:
        state = json.loads((folder / "state.json").read_text())
    except (OSError, ValueError) as err:
        raise CheckpointError(
            f"{folder / 'state.json'}: unreadable ({type(err).__name__})"
        ) from None
    check_base(model, state, folder)
    load_adapters(model, folder)


# ================================================================== merged weights


def engine_weights(model: Any) -> list[tuple[str, torch.Tensor]]:
    """The weights a generation engine of the *base* architecture needs (vLLM's
    ``load_weights``): under the base model's ``state_dict`` names, each LoRA layer's weight
    with its adapters merged (``W + scale * B @ A``, peft's ``get_delta_weight``); a plain
    model's ``state_dict`` as it is."""
    if not is_lora_model(model):
        return [(name, t.detach()) for name, t in model.state_dict().items()]
    from peft.tuners.lora import LoraLayer

    inner = model.get_base_model()
    deltas: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        for name, module in inner.named_modules():
            if isinstance(module, LoraLayer) and not module.disable_adapters:
                active = [a for a in module.active_adapters if a in module.lora_A]
                if active:
                    deltas[f"{name}.weight"] = sum(module.get_delta_weight(a) for a in active)
        out = []
        for key, t in inner.state_dict().items():
            if ".lora_" in key:
                continue
            key = key.replace(".base_layer.", ".")
            t = t.detach()
            if key in deltas:
                t = t + deltas[key].to(t.dtype)
            out.append((key, t))
    return out


def _resolve_checkpoint(source: Path) -> Path:
    from mvpo_train.checkpoint import find_intact_checkpoint, verify_checkpoint

    if (source / "SHA256SUMS").is_file():
        verify_checkpoint(source)
        return source
    if not (source / "checkpoints").is_dir():
        raise ConfigError(f"{source}: neither a run folder nor a checkpoint folder")
    ckpt, corrupt = find_intact_checkpoint(source)
    if ckpt is None:
        reason = f": {corrupt[-1][1]}" if corrupt else ""
        raise ConfigError(f"{source}: no intact checkpoint{reason}")
    return ckpt


def merge_adapters(source: str | Path, out: str | Path) -> Path:
    """A full model folder at ``out`` (weights with the adapters merged, config, tokenizer) from
    a LoRA checkpoint folder or a run folder's newest intact checkpoint; loads with
    ``AutoModelForCausalLM.from_pretrained``. The base weights must be the ones the adapters
    were trained on (:func:`check_base`); ``out`` must not exist or be empty. Written to a
    temporary folder first, renamed when complete."""
    peft = _peft()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mvpo_train.checkpoint import load_checkpoint
    from mvpo_train.tiny_model import resolve_model_path

    out = Path(out)
    check_merge_target(out)
    ckpt = _resolve_checkpoint(Path(source))
    state = load_checkpoint(ckpt, verify=False)["state"]
    lora = state.get("lora")
    if lora is None or not is_adapter_folder(ckpt):
        raise ConfigError(f"{ckpt}: not a LoRA checkpoint (it holds full weights already)")
    dtype = getattr(torch, lora.get("base_dtype", "float32"))
    path = resolve_model_path(str(state.get("config", {}).get("model") or lora["base_model"]))
    base = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    digest = weights_digest(base)
    if digest != lora["base_sha256"]:
        raise ConfigError(
            f"model: {ckpt.name} holds adapters of the base model {lora['base_model']} (weights "
            f"sha256 {lora['base_sha256'][:12]}), but {path} has {digest[:12]}"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            merged = peft.PeftModel.from_pretrained(base, str(ckpt)).merge_and_unload()
        except RuntimeError as err:  # peft's many-line "size mismatch for ..." list
            lines = [line.strip() for line in str(err).splitlines() if "size mismatch" in line]
            if not lines:
                raise
            raise CheckpointError(
                f"{ckpt / ADAPTER_WEIGHTS}: adapters of another shape than its "
                f"{ADAPTER_CONFIG} and the base model ({len(lines)} tensors; first: {lines[0]})"
            ) from None
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        merged.save_pretrained(tmp, safe_serialization=True)
        AutoTokenizer.from_pretrained(str(ckpt)).save_pretrained(tmp)
        if out.is_dir():
            out.rmdir()  # empty (checked above)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def check_merge_target(out: str | Path) -> None:
    """``lora_merge_to`` must be a new or empty folder (nothing is overwritten)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"lora_merge_to: {out} exists and is not an empty folder; give a new one")
