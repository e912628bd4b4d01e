"""Console entry points: ``mvpo-train``, ``mvpo-eval``, ``mvpo-plot``, ``mvpo-build-tiny-model``.

Usage in docs/training.md. Every ``mvpo-train`` flag is a :class:`mvpo_train.config.TrainConfig`
field. A user error (a bad flag or config value, a YAML syntax error, a missing file or run
folder, an unusable checkpoint) prints ONE line ``<prog>: error: <field or file>: <what is
allowed>`` to stderr and exits with code 2, without a traceback; ``--debug`` shows the
traceback instead (docs/training.md, "Reliability").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mvpo_train.config import ConfigError, OneLineParser

__all__ = ["EXIT_USER_ERROR", "build_model_main", "eval_main", "plot_main", "train_main"]

#: exit code of every user error (argparse's own code for usage errors)
EXIT_USER_ERROR = 2


def _is_user_error(err: BaseException) -> bool:
    if isinstance(err, ConfigError):
        return True
    if isinstance(err, ImportError) and "pip install" in str(err):  # an optional extra
        return True
    checkpoint = sys.modules.get("mvpo_train.checkpoint")  # imported only by commands using it
    return checkpoint is not None and isinstance(err, checkpoint.CheckpointError)


def _guard(prog: str, main: Callable[[list[str]], int], argv: list[str] | None) -> int:
    """Run ``main``; a user error becomes one stderr line and exit code 2 (``--debug``:
    re-raised with its traceback)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return main(argv)
    except Exception as err:
        if "--debug" in argv:
            raise
        message = " ".join(str(err).split("\n")).strip() or type(err).__name__
        if _is_worker_crash(err):  # a fault, not a user error: checkpoints are atomic
            print(
                f"{prog}: error: {message}; the newest checkpoint is intact: rerun with --resume",
                file=sys.stderr,
                flush=True,
            )
            return 1
        if isinstance(err, ConnectionError):  # e.g. SearchQA's retrieval server is down
            print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
            return 1
        if not _is_user_error(err):
            raise
        print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
        return EXIT_USER_ERROR


def check_device(device: str) -> None:
    """A ``cuda``/``cuda:N``/``mps`` device this torch can use, else one line (it was torch's
    ``AssertionError: Torch not compiled with CUDA enabled`` after the model loaded)."""
    if device in ("auto", "cpu"):
        return
    import torch

    if device.startswith("cuda"):
        index = int(device.split(":")[1]) if ":" in device else 0
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if index >= count:
            raise ConfigError(
                f"device: {device} is not available (torch {torch.__version__} sees {count} "
                "CUDA device(s)); use --device cpu or auto"
            )
    elif device == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("device: mps is not available here; use --device cpu or auto")


def _is_worker_crash(err: BaseException) -> bool:
    vector = sys.modules.get("mvpo_envs.vector")
    return vector is not None and isinstance(err, vector.WorkerCrashedError)


def _add_debug(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")


def _int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def _task_list(text: str) -> list[int]:
    try:
        tasks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated task indices such as 1,8,13, got {text!r}"
        ) from None
    if not tasks or min(tasks) < 0:
        raise argparse.ArgumentTypeError(f"expected task indices >= 0, got {text!r}")
    return tasks


# ================================================================== mvpo-train


def train_main(argv: list[str] | None = None) -> int:
    """``mvpo-train [--preset cpu-tiny|gpu-qwen2.5-1.5b] [--config x.yaml] [--field value ...]``."""
    return _guard("mvpo-train", _train, argv)


def _train(argv: list[str]) -> int:
    from mvpo_train.config import build_parser, config_from_args

    parser = build_parser("mvpo-train", "Train an LLM agent with PPO + a credit estimator.")
    parser.add_argument(
        "--print-config", action="store_true", help="print the resolved config and exit"
    )
    parser.add_argument(
        "--nproc",
        type=int,
        default=1,
        help="data-parallel processes on this machine (torchrun on loopback; docs/scaling.md)",
    )
    _add_debug(parser)
    args = parser.parse_args(argv)
    cfg = config_from_args(args)  # estimator name and kwargs checked here
    if args.nproc > 1 and not args.print_config:
        from mvpo_train.distributed import launch

        rest, skip = [], False
        for a in argv:  # the same flags without --nproc, for every rank
            if skip or a == "--nproc" or a.startswith("--nproc="):
                skip = a == "--nproc"
                continue
            rest.append(a)
        return launch(args.nproc, rest)
    if args.print_config:
        import yaml

        print(yaml.safe_dump(cfg.to_dict(), sort_keys=True), end="")
        return 0
    from mvpo_train.trainer import make_venv, train

    check_device(cfg.device)
    if cfg.eval_every:  # an eval split the env refuses fails now, not after an iteration
        make_venv(cfg, cfg.eval_split, 1, 1).close()
    rows = train(cfg)
    if rows and os.environ.get("RANK", "0") == "0":  # one line, not one per rank
        last = rows[-1]
        print(
            f"done: iteration {last['iteration']}/{cfg.iterations}, success {last['success']:.3f}, "
            f"metrics in {Path(cfg.run_dir) / 'metrics.jsonl'}"
        )
    return 0


# ================================================================== mvpo-eval


def eval_main(argv: list[str] | None = None) -> int:
    """``mvpo-eval [--run-dir RUN | --model PATH] [--split eval] [--episodes 1] [--sampled]``.

    Success per task type on an evaluation split, with the run's config (``RUN/config.yaml``)
    and its newest intact checkpoint, or with a model folder / hub id and the ``--preset``.
    """
    return _guard("mvpo-eval", _eval, argv)


def _eval(argv: list[str]) -> int:
    from mvpo_train.config import PRESETS, TrainConfig, load_config, with_preset_env_kwargs

    p = OneLineParser(prog="mvpo-eval", description=eval_main.__doc__)
    p.add_argument("--run-dir", default=None, help="a training run folder (config + checkpoints)")
    p.add_argument(
        "--model",
        default=None,
        help="model folder or hub id (default: the run's newest intact checkpoint)",
    )
    p.add_argument(
        "--preset", default="cpu-tiny", choices=sorted(PRESETS), help="config when no run is given"
    )
    p.add_argument("--config", default=None, help="YAML config fields (override the run's)")
    p.add_argument("--env-id", default=None, help="environment id (default: the config's)")
    p.add_argument(
        "--split", default=None, help="evaluation split (default: the config's eval_split)"
    )
    p.add_argument("--episodes", type=_int_at_least(1), default=None, help="episodes per task")
    p.add_argument(
        "--max-tasks", type=_int_at_least(0), default=None, help="evaluate at most N tasks"
    )
    p.add_argument(
        "--tasks", type=_task_list, default=None, help="evaluate these task indices, e.g. 1,8,13"
    )
    p.add_argument("--max-steps", type=_int_at_least(0), default=None, help="episode step limit")
    p.add_argument("--sampled", action="store_true", help="sample actions instead of greedy")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument("--device", default=None, help="cpu | cuda | auto")
    p.add_argument("--out", default=None, help="write the result as JSON here")
    _add_debug(p)
    args = p.parse_args(argv)
    if (
        args.out
    ):  # its folder is made (as mvpo-plot and mvpo-inspect do) before, not after, the eval
        try:
            Path(args.out).resolve().parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(f"--out: cannot create the folder of {args.out}: {err}") from err
    if args.seed < 0:
        raise ConfigError(f"--seed: expected an int >= 0, got {args.seed}")

    values: dict[str, Any] = dict(PRESETS[args.preset])
    model = args.model
    if args.run_dir:
        run = Path(args.run_dir)
        if not run.is_dir():
            raise ConfigError(f"--run-dir: {run} is not a folder (no such run)")
        saved = run / "config.yaml"
        if not saved.is_file():
            raise ConfigError(f"--run-dir: {run} has no config.yaml (not a training run folder)")
        values.update(load_config(saved))
        values.pop("preset", None)
    if args.config:
        values.update(load_config(args.config))
        values.pop("preset", None)
    for flag, name in (("env_id", "env_id"), ("max_steps", "max_steps"), ("device", "device")):
        if getattr(args, flag) is not None:
            values[name] = getattr(args, flag)
    values.update(tensorboard=False, progress=False, resume=False, overwrite=False)
    cfg = TrainConfig(**with_preset_env_kwargs(args.preset, values))

    from mvpo_train.trainer import _quiet_transformers, check_runtime, evaluate, load_policy

    check_runtime(cfg)
    check_device(cfg.device)
    if args.run_dir and model is None:
        model = str(_intact_checkpoint(Path(args.run_dir)))
    elif model is not None and (Path(model) / "SHA256SUMS").is_file():
        from mvpo_train.checkpoint import verify_checkpoint

        verify_checkpoint(model)  # a checkpoint folder given as --model: checked too
    _quiet_transformers()
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
        tasks=args.tasks,
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


def _intact_checkpoint(run: Path) -> Path:
    """The run's newest checkpoint whose checksums hold; says which newer ones it skipped."""
    from mvpo_train.checkpoint import find_intact_checkpoint, verify_checkpoint

    ckpt, corrupt = find_intact_checkpoint(run)
    for _path, reason in corrupt:
        print(f"mvpo-eval: skipped a corrupt checkpoint ({reason})", file=sys.stderr)
    if ckpt is None:
        if corrupt:
            raise ConfigError(f"--run-dir: no intact checkpoint in {run}: {corrupt[-1][1]}")
        raise ConfigError(f"--run-dir: {run} has no complete checkpoint (give --model instead)")
    verify_checkpoint(ckpt)
    if corrupt:
        print(f"mvpo-eval: evaluating {ckpt.name}", file=sys.stderr)
    return ckpt


# ================================================================== mvpo-plot


def plot_main(argv: list[str] | None = None) -> int:
    """``mvpo-plot RUN [RUN ...] [--keys success adv/zero_credit_ratio] [--out curves.png]``."""
    return _guard("mvpo-plot", _plot, argv)


def _plot(argv: list[str]) -> int:
    from mvpo_train.metrics import plot_metrics

    p = OneLineParser(prog="mvpo-plot", description=plot_main.__doc__)
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
    p.add_argument("--smooth", type=_int_at_least(1), default=1, help="moving-average window")
    p.add_argument("--out", default="curves.png", help="output PNG")
    _add_debug(p)
    args = p.parse_args(argv)
    if args.labels is not None and len(args.labels) != len(args.runs):
        raise ConfigError(
            f"--labels: expected one label per run ({len(args.runs)}), got {len(args.labels)}"
        )
    out = plot_metrics(
        args.runs, keys=args.keys, out=args.out, labels=args.labels, x=args.x, smooth=args.smooth
    )
    print(out)
    return 0


# ================================================================== mvpo-build-tiny-model


def build_model_main(argv: list[str] | None = None) -> int:
    """``mvpo-build-tiny-model [--out data/models/tiny-qwen2]``: tokenizer + tiny Qwen2."""
    return _guard("mvpo-build-tiny-model", _build_model, argv)


def _build_model(argv: list[str]) -> int:
    from mvpo_train.tiny_model import (
        DEFAULT_CORPUS_ENV,
        TinyModelSpec,
        build_tiny_model,
        default_model_path,
    )

    spec = TinyModelSpec()
    p = OneLineParser(prog="mvpo-build-tiny-model", description=build_model_main.__doc__)
    p.add_argument("--out", default=str(default_model_path()), help="output folder")
    p.add_argument(
        "--env-id", default=DEFAULT_CORPUS_ENV, help="env whose tasks feed the tokenizer corpus"
    )
    p.add_argument("--splits", nargs="+", default=["train"], help="splits read for the corpus")
    p.add_argument("--preset", default="mini", help="bundled data preset of the env")
    p.add_argument("--data-dir", default=None, help="real env data instead of the bundled data")
    p.add_argument(
        "--max-games", type=_int_at_least(1), default=None, help="read at most N tasks per split"
    )
    fields = dataclasses.asdict(spec)
    for name, value in fields.items():
        kind: Any = type(value)
        if kind is int and name != "seed":
            kind = _int_at_least(1)
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=value,
                       help=f"model/tokenizer {name}")  # fmt: skip
    _add_debug(p)
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
    from mvpo_train.trainer import _quiet_transformers

    _quiet_transformers()
    spec = TinyModelSpec(**{k: getattr(args, k) for k in fields})
    out = build_tiny_model(
        args.out,
        spec,
        env_id=args.env_id,
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
