"""Console entry points: ``mvpo-train``, ``mvpo-eval``, ``mvpo-plot``, ``mvpo-build-tiny-model``.

docs/architecture.md (``trainer.py, cli.py (mvpo-train / mvpo-eval / mvpo-play)``); usage in
docs/training.md. Every ``mvpo-train`` flag is a :class:`mvpo_train.config.TrainConfig` field.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["build_model_main", "eval_main", "plot_main", "train_main"]


def train_main(argv: list[str] | None = None) -> int:
    """``mvpo-train [--preset cpu-tiny|gpu-qwen2.5-1.5b] [--config x.yaml] [--field value ...]``."""
    from mvpo_train.config import build_parser, config_from_args

    parser = build_parser("mvpo-train", "Train an LLM agent with PPO + a credit estimator.")
    parser.add_argument(
        "--print-config", action="store_true", help="print the resolved config and exit"
    )
    args = parser.parse_args(argv)
    try:
        cfg = config_from_args(args)
    except (ValueError, KeyError) as err:
        parser.error(str(err))
    if args.print_config:
        import yaml

        print(yaml.safe_dump(cfg.to_dict(), sort_keys=True), end="")
        return 0
    from mvpo_train.trainer import train

    rows = train(cfg)
    if rows:
        last = rows[-1]
        print(
            f"done: iteration {last['iteration']}/{cfg.iterations}, success {last['success']:.3f}, "
            f"metrics in {Path(cfg.run_dir) / 'metrics.jsonl'}"
        )
    return 0


def eval_main(argv: list[str] | None = None) -> int:
    """``mvpo-eval [--run-dir RUN | --model PATH] [--split eval] [--episodes 1] [--sampled]``.

    Success per task type on an evaluation split, with the run's config (``RUN/config.yaml``)
    and its latest checkpoint, or with a model folder / hub id and the ``--preset``.
    """
    from mvpo_train.config import PRESETS, TrainConfig, load_config

    p = argparse.ArgumentParser(prog="mvpo-eval", description=eval_main.__doc__)
    p.add_argument("--run-dir", default=None, help="a training run folder (config + checkpoints)")
    p.add_argument(
        "--model",
        default=None,
        help="model folder or hub id (default: the run's latest checkpoint)",
    )
    p.add_argument(
        "--preset", default="cpu-tiny", choices=sorted(PRESETS), help="config when no run is given"
    )
    p.add_argument("--config", default=None, help="YAML config fields (override the run's)")
    p.add_argument("--env-id", default=None, help="environment id (default: the config's)")
    p.add_argument(
        "--split", default=None, help="evaluation split (default: the config's eval_split)"
    )
    p.add_argument("--episodes", type=int, default=None, help="episodes per task")
    p.add_argument("--max-tasks", type=int, default=None, help="evaluate at most N tasks")
    p.add_argument("--tasks", default=None, help="evaluate these task indices, e.g. 1,8,13,19")
    p.add_argument("--max-steps", type=int, default=None, help="episode step limit")
    p.add_argument("--sampled", action="store_true", help="sample actions instead of greedy")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument("--device", default=None, help="cpu | cuda | auto")
    p.add_argument("--out", default=None, help="write the result as JSON here")
    args = p.parse_args(argv)

    from mvpo_train.checkpoint import latest_checkpoint
    from mvpo_train.trainer import _quiet_transformers, evaluate, load_policy

    _quiet_transformers()
    values: dict[str, Any] = dict(PRESETS[args.preset])
    model = args.model
    if args.run_dir:
        saved = Path(args.run_dir) / "config.yaml"
        if saved.is_file():
            values.update(load_config(saved))
        if model is None:
            ckpt = latest_checkpoint(args.run_dir)
            if ckpt is None:
                p.error(f"no checkpoint in {args.run_dir}")
            model = str(ckpt)
    if args.config:
        values.update(load_config(args.config))
    for flag, field in (("env_id", "env_id"), ("max_steps", "max_steps"), ("device", "device")):
        if getattr(args, flag) is not None:
            values[field] = getattr(args, flag)
    values.update(tensorboard=False, progress=False)
    cfg = TrainConfig(**values)
    import torch

    torch.set_num_threads(cfg.threads)
    policy = load_policy(cfg, model=model)
    result = evaluate(
        policy,
        cfg,
        split=args.split,
        episodes=args.episodes,
        greedy=not args.sampled,
        max_tasks=args.max_tasks,
        tasks=[int(x) for x in args.tasks.split(",")] if args.tasks else None,
        seed=args.seed,
        report_time=True,
    )
    result = {"model": model or cfg.model, "split": args.split or cfg.eval_split,
              "greedy": not args.sampled, **result}  # fmt: skip
    width = max(len(k) for k in result)
    for k, v in result.items():
        print(f"{k:<{width}}  {v:.3f}" if isinstance(v, float) else f"{k:<{width}}  {v}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def plot_main(argv: list[str] | None = None) -> int:
    """``mvpo-plot RUN [RUN ...] [--keys success adv/zero_credit_ratio] [--out curves.png]``."""
    from mvpo_train.metrics import plot_metrics

    p = argparse.ArgumentParser(prog="mvpo-plot", description=plot_main.__doc__)
    p.add_argument("runs", nargs="+", help="run folders or metrics.jsonl files")
    p.add_argument(
        "--keys",
        nargs="+",
        default=[
            "success",
            "eval/success",
            "adv/zero_credit_ratio",
            "adv/kappa",
            "return_mean",
            "time/total",
        ],
        help="metric keys, one panel each",
    )
    p.add_argument("--labels", nargs="+", default=None, help="legend label per run")
    p.add_argument("--x", default="iteration", help="x axis key (iteration, env_steps)")
    p.add_argument("--smooth", type=int, default=1, help="moving-average window")
    p.add_argument("--out", default="curves.png", help="output PNG")
    args = p.parse_args(argv)
    out = plot_metrics(
        args.runs, keys=args.keys, out=args.out, labels=args.labels, x=args.x, smooth=args.smooth
    )
    print(out)
    return 0


def build_model_main(argv: list[str] | None = None) -> int:
    """``mvpo-build-tiny-model [--out data/models/tiny-qwen2]``: tokenizer + tiny Qwen2."""
    from mvpo_train.tiny_model import TinyModelSpec, build_tiny_model, default_model_path

    spec = TinyModelSpec()
    p = argparse.ArgumentParser(prog="mvpo-build-tiny-model", description=build_model_main.__doc__)
    p.add_argument("--out", default=str(default_model_path()), help="output folder")
    p.add_argument(
        "--splits", nargs="+", default=["train"], help="bundled ALFWorld splits read for the corpus"
    )
    p.add_argument("--preset", default="mini", help="bundled ALFWorld preset")
    p.add_argument(
        "--data-dir", default=None, help="real ALFWorld data instead of the bundled games"
    )
    p.add_argument("--max-games", type=int, default=None, help="read at most N games per split")
    fields = dataclasses.asdict(spec)
    for name, value in fields.items():
        p.add_argument(
            "--" + name.replace("_", "-"),
            type=type(value),
            default=value,
            help=f"model/tokenizer {name}",
        )
    args = p.parse_args(argv)
    from mvpo_train.trainer import _quiet_transformers

    _quiet_transformers()
    spec = TinyModelSpec(**{k: getattr(args, k) for k in fields})
    out = build_tiny_model(
        args.out,
        spec,
        splits=args.splits,
        preset=args.preset,
        data_dir=args.data_dir,
        max_games=args.max_games,
    )
    meta = json.loads((out / "mvpo_tiny_model.json").read_text())
    size = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    print(
        f"{out}: {meta['parameters']:,} parameters, vocab {meta.get('vocab', '?')}, "
        f"{size / 1e6:.1f} MB"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(train_main())
