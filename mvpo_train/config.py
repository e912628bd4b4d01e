"""Training configuration: one dataclass, presets, YAML files and command-line flags.

Every field has a help string (``metadata["help"]``); :func:`build_parser` turns the fields
into ``argparse`` flags (``--num-groups 4``, ``--no-progress``, ``--estimator-kwargs
'{"lambda_L": 0.3}'``). Values are layered: dataclass defaults < ``--preset`` < ``--config
x.yaml`` < explicit flags. Presets:

* ``cpu-tiny`` (default): the tiny bundled Qwen2 model, ``score`` action mode, the bundled
  ALFWorld ``mini`` split, sized so that success visibly rises within ~15 minutes on 2 CPU
  cores (docs/training.md has the measured curve);
* ``gpu-qwen2.5-1.5b``: the seeds' setting (``Qwen/Qwen2.5-1.5B-Instruct``, ``generate``
  mode with ``<think>``/``<action>``, 16 groups x 8 rollouts, lr 1e-6, KL 0.01 (low_var_kl),
  clip 0.2, gamma 0.95, 50 steps per ALFWorld episode, 150 iterations, vLLM rollouts).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PRESETS", "TrainConfig", "build_parser", "config_from_args", "load_config", "preset"]


def _f(default: Any, help: str, **kw: Any) -> Any:
    if isinstance(default, dict | list):
        return field(default_factory=lambda d=default: type(d)(d), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class TrainConfig:
    """All settings of ``mvpo-train`` / ``mvpo-eval`` (see the module docstring)."""

    # -- run ---------------------------------------------------------------------------------
    run_dir: str = _f("runs/mvpo-cpu-tiny", "output folder: metrics.jsonl, checkpoints, plots")
    seed: int = _f(0, "seed of everything random (tasks, sampling, minibatch order)")
    iterations: int = _f(30, "training iterations (one rollout batch + one update each)")
    resume: bool = _f(False, "continue from the latest checkpoint in run_dir (bit-for-bit)")
    save_every: int = _f(1, "save a checkpoint every N iterations (0 = only at the end)")
    keep_checkpoints: int = _f(2, "how many checkpoints to keep")
    stop_after: int = _f(0, "stop this process after N iterations as if killed (0 = never; tests)")
    threads: int = _f(2, "torch CPU threads (torch.set_num_threads)")
    progress: bool = _f(True, "show a tqdm progress bar")
    tensorboard: bool = _f(True, "also log to TensorBoard when it is installed")
    # -- environment -------------------------------------------------------------------------
    env_id: str = _f(
        "mvpo/ALFWorld-v0", "Gymnasium env id (mvpo/ALFWorld-v0, mvpo/WebShop-v0, ...)"
    )
    split: str = _f("train", "training split passed to gym.make(split=...)")
    env_kwargs: dict = _f({}, 'extra gym.make keywords as JSON, e.g. \'{"data_dir": "/data"}\'')
    num_groups: int = _f(4, "task groups per batch (B)")
    group_size: int = _f(8, "rollouts per task (G)")
    max_steps: int = _f(20, "episode step limit (0 = the env's registered limit)")
    tasks: list = _f(
        [1, 8, 13, 19],
        "train only on these task indices of the split (empty = sample all its tasks)",
    )
    vectorization: str = _f("sync", "gymnasium vector mode: sync | async")
    # -- policy ------------------------------------------------------------------------------
    model: str = _f("tiny-qwen2", "model folder or hub id ('tiny-qwen2' = the bundled tiny model)")
    device: str = _f("auto", "cpu | cuda | auto")
    dtype: str = _f("float32", "float32 | bfloat16 | float16 | auto")
    attn_implementation: str = _f(
        "auto", "attention kernel: auto (the model's default) | sdpa | eager | flash_attention_2"
    )
    action_mode: str = _f("score", "score (rank admissible actions) | generate (free text)")
    prompt_style: str = _f("compact", "prompt template style: compact | seed")
    history_length: int = _f(2, "past (observation, action) pairs shown in the prompt")
    temperature: float = _f(1.0, "sampling temperature (also used for every log-prob)")
    score_norm: str = _f("mean", "score mode: candidate score = mean or sum of token log-probs")
    score_logprob: str = _f(
        "choice",
        "score mode policy log-prob for PPO: choice (log-softmax over candidates) | tokens "
        "(the action's token log-probs)",
    )
    score_impl: str = _f("kv", "score mode batching: kv (reuse prompt KV cache) | concat")
    max_new_tokens: int = _f(256, "generate mode: response token limit")
    top_p: float = _f(1.0, "generate mode: nucleus sampling")
    invalid_penalty: float = _f(0.1, "reward penalty for malformed generations (recorded apart)")
    require_think: bool = _f(False, "generate mode: a missing <think> block is malformed")
    backend: str = _f("hf", "generate mode backend: hf | vllm")
    vllm_gpu_memory_utilization: float = _f(0.3, "vllm: share of GPU memory for the engine")
    max_tokens_per_forward: int = _f(16384, "padded tokens per forward pass (memory bound)")
    # -- advantage ---------------------------------------------------------------------------
    estimator: str = _f(
        "mvpo", "credit estimator: grpo gigpo mvpo ecpo progpo beacon rloo reinforce"
    )
    gamma: float = _f(0.95, "discount of step returns (estimators that take it)")
    estimator_kwargs: dict = _f({}, "extra estimator config as JSON (docs/estimators.md fields)")
    # -- optimisation ------------------------------------------------------------------------
    lr: float = _f(3e-3, "AdamW learning rate")
    weight_decay: float = _f(0.0, "AdamW weight decay")
    adam_eps: float = _f(1e-8, "AdamW epsilon")
    clip_ratio: float = _f(0.2, "PPO clip range (both sides unless clip_ratio_high is set)")
    clip_ratio_high: float = _f(0.0, "PPO upper clip (0 = same as clip_ratio)")
    ratio_level: str = _f("token", "PPO ratio per token or per step (sequence)")
    loss_agg: str = _f("token-mean", "token-mean | seq-mean-token-sum | seq-mean-token-mean")
    kl_coef: float = _f(0.0, "weight of low_var_kl (k3) to the frozen reference (0 = no reference)")
    entropy_coef: float = _f(0.0, "entropy bonus weight")
    ppo_epochs: int = _f(4, "passes over each batch")
    minibatch_size: int = _f(128, "steps per optimizer step (0 = whole batch)")
    micro_batch_size: int = _f(64, "steps per forward/backward (gradient accumulation)")
    max_grad_norm: float = _f(1.0, "gradient clipping norm (0 = off)")
    skip_zero_adv: bool = _f(
        True, "skip steps whose advantage is 0 in the update when kl and entropy are off"
    )
    # -- evaluation --------------------------------------------------------------------------
    eval_every: int = _f(0, "evaluate every N iterations (0 = never during training)")
    eval_split: str = _f("eval", "evaluation split")
    eval_episodes: int = _f(1, "episodes per evaluation task")
    eval_max_tasks: int = _f(0, "evaluate on at most N tasks (0 = all)")
    eval_greedy: bool = _f(True, "greedy (argmax) actions in evaluation")

    def __post_init__(self) -> None:
        checks = {
            "action_mode": ("score", "generate"),
            "prompt_style": ("compact", "seed"),
            "score_norm": ("mean", "sum"),
            "score_logprob": ("choice", "tokens"),
            "score_impl": ("kv", "concat"),
            "backend": ("hf", "vllm"),
            "ratio_level": ("token", "sequence"),
            "loss_agg": ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean"),
            "vectorization": ("sync", "async"),
        }
        for name, allowed in checks.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("iterations", "num_groups", "group_size", "micro_batch_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: preset name -> field overrides
PRESETS: dict[str, dict[str, Any]] = {
    "cpu-tiny": {},
    "gpu-qwen2.5-1.5b": {
        "run_dir": "runs/mvpo-qwen2.5-1.5b",
        "model": "Qwen/Qwen2.5-1.5B-Instruct",
        "device": "cuda",
        "dtype": "bfloat16",
        "action_mode": "generate",
        "prompt_style": "seed",
        "history_length": 2,
        "backend": "vllm",
        "num_groups": 16,
        "group_size": 8,
        "max_steps": 50,
        "iterations": 150,
        "tasks": [],
        "ppo_epochs": 1,
        "lr": 1e-6,
        "kl_coef": 0.01,
        "entropy_coef": 0.001,
        "clip_ratio": 0.2,
        "gamma": 0.95,
        "max_new_tokens": 512,
        "invalid_penalty": 0.1,
        "minibatch_size": 256,
        "micro_batch_size": 16,
        "max_tokens_per_forward": 65536,
        "threads": 8,
        "save_every": 10,
        "eval_every": 10,
        "eval_split": "eval",
        "skip_zero_adv": False,
    },
}


def preset(name: str, **overrides: Any) -> TrainConfig:
    """A config from a preset name plus field overrides."""
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; available: {sorted(PRESETS)}")
    return TrainConfig(**{**PRESETS[name], **overrides})


def load_config(path: str | Path) -> dict[str, Any]:
    """Field values from a YAML (or JSON) file; unknown keys are an error."""
    import yaml

    data = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of config fields")
    _check_keys(data, str(path))
    return data


def _check_keys(data: dict[str, Any], where: str) -> None:
    valid = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(data) - valid - {"preset"})
    if unknown:
        raise ValueError(f"{where}: unknown config field(s) {unknown}")


# ------------------------------------------------------------------ argparse from the dataclass


def _base_type(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _base_type(args[0])
    return origin or tp


def _parse_json(kind: type):
    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            if kind is list:  # also accept "1,2,3"
                return [
                    json.loads(x) if x.strip().lstrip("-").isdigit() else x
                    for x in text.split(",")
                    if x
                ]
            raise argparse.ArgumentTypeError(f"expected JSON, got {text!r}") from None
        if not isinstance(value, kind):
            raise argparse.ArgumentTypeError(f"expected a JSON {kind.__name__}, got {text!r}")
        return value

    return parse


def build_parser(
    prog: str = "mvpo-train", description: str | None = None
) -> argparse.ArgumentParser:
    """``argparse`` flags for every :class:`TrainConfig` field (defaults are resolved later)."""
    p = argparse.ArgumentParser(
        prog=prog,
        description=description or __doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--preset",
        default=None,
        choices=sorted(PRESETS),
        help="start from a preset (default cpu-tiny)",
    )
    p.add_argument(
        "--config", default=None, help="YAML file of config fields (applied after the preset)"
    )
    hints = typing.get_type_hints(TrainConfig)
    defaults = TrainConfig()
    for f in dataclasses.fields(TrainConfig):
        kind = _base_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        help_text = f"{f.metadata.get('help', '')} (default: {getattr(defaults, f.name)!r})"
        if kind is bool:
            p.add_argument(
                flag,
                dest=f.name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
        elif kind in (dict, list):
            p.add_argument(flag, dest=f.name, type=_parse_json(kind), default=None, help=help_text)
        else:
            p.add_argument(flag, dest=f.name, type=kind, default=None, help=help_text)
    return p


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """Layer defaults < preset < YAML < flags into a :class:`TrainConfig`."""
    values: dict[str, Any] = {}
    file_values: dict[str, Any] = load_config(args.config) if getattr(args, "config", None) else {}
    preset_name = getattr(args, "preset", None) or file_values.pop("preset", None) or "cpu-tiny"
    if preset_name not in PRESETS:
        raise KeyError(f"unknown preset {preset_name!r}; available: {sorted(PRESETS)}")
    values.update(PRESETS[preset_name])
    values.update(file_values)
    for f in dataclasses.fields(TrainConfig):
        v = getattr(args, f.name, None)
        if v is not None:
            values[f.name] = v
    return TrainConfig(**values)
