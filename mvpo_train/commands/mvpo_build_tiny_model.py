"""``mvpo-build-tiny-model``: a tokenizer trained on an env's task texts and a small random
Qwen2 (:func:`mvpo_train.tiny_model.build_tiny_model`), every size flag checked first (at most
:data:`MAX_TINY_PARAMETERS`). Entry point :func:`mvpo_train.cli.build_model_main`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from mvpo_envs.cli_args import int_at_least
from mvpo_train.commands.checks import add_debug, finite_float, non_empty
from mvpo_train.commands.guard import guard
from mvpo_train.config import SEED_MAX, ConfigError, OneLineParser

__all__ = ["MAX_TINY_PARAMETERS", "build_model_main"]

#: the most parameters ``mvpo-build-tiny-model`` builds (a larger request would exhaust memory)
MAX_TINY_PARAMETERS = 1_000_000_000


def _tiny_model_parameters(args: argparse.Namespace) -> int:
    """Parameter count of the Qwen2 that ``args`` describe (tied embeddings)."""
    h, heads, kv = args.hidden_size, args.num_attention_heads, args.num_key_value_heads
    attention = 2 * h * h + 2 * h * (h // max(heads, 1)) * kv
    return args.vocab_size * h + args.num_hidden_layers * (
        attention + 3 * h * args.intermediate_size
    )


def build_model_main(argv: list[str] | None = None) -> int:
    """``mvpo-build-tiny-model [--out data/models/tiny-qwen2]``: tokenizer + tiny Qwen2."""
    return guard("mvpo-build-tiny-model", _build_model, argv)


def _build_model(argv: list[str]) -> int:
    from mvpo_train.tiny_model import (
        DEFAULT_CORPUS_ENV,
        TinyModelSpec,
        build_tiny_model,
        default_model_path,
    )

    spec = TinyModelSpec()
    p = OneLineParser(prog="mvpo-build-tiny-model", description=build_model_main.__doc__)
    p.add_argument("--out", type=non_empty, default=str(default_model_path()), help="output folder")
    p.add_argument(
        "--env-id",
        type=non_empty,
        default=DEFAULT_CORPUS_ENV,
        help="env whose tasks feed the tokenizer corpus",
    )
    p.add_argument(
        "--splits", nargs="+", type=non_empty, default=["train"], help="splits read for the corpus"
    )
    p.add_argument(
        "--preset", type=non_empty, default="mini", help="bundled data preset of the env"
    )
    p.add_argument(
        "--data-dir",
        type=non_empty,
        default=None,
        help="real env data instead of the bundled data",
    )
    p.add_argument(
        "--max-games", type=int_at_least(1), default=None, help="read at most N tasks per split"
    )
    fields = dataclasses.asdict(spec)
    for name, value in fields.items():
        kind: Any = type(value)
        if kind is int:
            kind = int_at_least(0, SEED_MAX) if name == "seed" else int_at_least(1)
        elif kind is float:  # rope_theta > 0; initializer_range (an init std) >= 0
            kind = finite_float(0.0, strict=name != "initializer_range")
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=value,
                       help=f"model/tokenizer {name}")  # fmt: skip
    add_debug(p)
    args = p.parse_args(argv)
    if args.num_attention_heads and args.hidden_size % args.num_attention_heads:
        raise ConfigError(
            f"--hidden-size: must be a multiple of --num-attention-heads "
            f"({args.num_attention_heads}), got {args.hidden_size}"
        )
    if args.num_attention_heads % args.num_key_value_heads:
        raise ConfigError(
            f"--num-key-value-heads: must divide --num-attention-heads "
            f"({args.num_attention_heads}), got {args.num_key_value_heads}"
        )
    params = _tiny_model_parameters(args)
    if params > MAX_TINY_PARAMETERS:
        raise ConfigError(
            f"--hidden-size / --intermediate-size / --num-hidden-layers / --vocab-size: the model "
            f"would have about {params:.3g} parameters (more than {MAX_TINY_PARAMETERS:.0e}); "
            "this builder makes small models"
        )
    if args.max_position_embeddings > 1 << 24:
        raise ConfigError(
            f"--max-position-embeddings: expected at most {1 << 24}, "
            f"got {args.max_position_embeddings}"
        )
    if args.data_dir is not None and not Path(args.data_dir).expanduser().is_dir():
        raise ConfigError(f"--data-dir: {args.data_dir} is not a folder")
    out_path = Path(args.out)
    if out_path.exists() and not out_path.is_dir():
        raise ConfigError(f"--out: {out_path} exists and is not a folder")
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the env ids)

    if args.env_id not in gym.registry:
        ours = sorted(k for k in gym.registry if k.startswith("mvpo/"))
        raise ConfigError(
            f"--env-id: unknown env id {args.env_id!r}; registered: {', '.join(ours)}"
        )
    from mvpo_train.factories import quiet_transformers

    quiet_transformers()
    spec = TinyModelSpec(**{k: getattr(args, k) for k in fields})
    try:
        where = ("env_id", "splits", "preset", "data_dir", "max_games")  # the corpus's source
        out = build_tiny_model(args.out, spec, **{k: getattr(args, k) for k in where})
    except (ValueError, FileNotFoundError) as err:  # the env refused a split, preset or data
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"--splits / --preset / --data-dir: {args.env_id}: {first}") from None
    meta = json.loads((out / "mvpo_tiny_model.json").read_text())
    size = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    print(
        f"{out}: {meta['parameters']:,} parameters, vocab {meta.get('vocab', '?')}, "
        f"{size / 1e6:.1f} MB"
    )
    return 0
