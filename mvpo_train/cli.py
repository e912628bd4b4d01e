"""Console entry points: ``mvpo-train``, ``mvpo-eval``, ``mvpo-plot``, ``mvpo-build-tiny-model``.

Usage in docs/training.md. Every ``mvpo-train`` flag is a :class:`mvpo_train.config.TrainConfig`
field. A user error (a bad flag or config value, a YAML syntax error, a missing file or run
folder, an unusable checkpoint) prints ONE line ``<prog>: error: <field or file>: <what is
allowed>`` to stderr and exits with code 2, without a traceback; ``--debug`` shows the
traceback instead (docs/training.md, "Reliability"). Every flag is checked before anything is
read or written: integers within their range (seeds ``0 <= seed < 2**32``), finite floats, no
empty paths or names (``""`` would silently mean the current folder or the default), output
files that are not folders, inputs that are regular files or folders (a FIFO would block).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mvpo_envs.cli_args import int_at_least
from mvpo_train.config import INT_MAX, SEED_MAX, ConfigError, OneLineParser

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_USER_ERROR",
    "build_model_main",
    "on_interrupt",
    "eval_main",
    "plot_main",
    "resume_command",
    "train_main",
]

#: exit code of every user error (argparse's own code for usage errors)
EXIT_USER_ERROR = 2


def _is_user_error(err: BaseException) -> bool:
    if isinstance(err, ConfigError):
        return True
    if isinstance(err, ImportError) and "pip install" in str(err):  # an optional extra
        return True
    checkpoint = sys.modules.get("mvpo_train.checkpoint")  # imported only by commands using it
    return checkpoint is not None and isinstance(err, checkpoint.CheckpointError)


#: exit code after Ctrl-C (128 + SIGINT, what a shell reports)
EXIT_INTERRUPTED = 130

#: the command that continues an interrupted run, set by a command once it knows its run folder
_resume_hint: Callable[[], str] | None = None


def resume_command(prog: str, argv: list[str], run_dir: str | Path) -> str:
    """The exact command that continues a run of ``prog argv`` in ``run_dir`` after it was
    stopped: the same flags plus ``--resume`` when the folder holds a checkpoint; plus
    ``--overwrite`` when it holds a run without one (nothing to resume); as typed otherwise."""
    import shlex

    from mvpo_train.checkpoint import latest_checkpoint

    run = Path(run_dir)
    rest = [a for a in argv if a not in ("--resume", "--overwrite", "--no-resume")]
    if latest_checkpoint(run) is not None:
        rest.append("--resume")
    elif (run / "config.yaml").is_file():
        rest.append("--overwrite")
    return shlex.join([prog, *rest])


def on_interrupt(prog: str, argv: list[str], run_dir: str | Path) -> None:
    """After Ctrl-C, :func:`_guard` names :func:`resume_command` for this run folder."""
    global _resume_hint
    _resume_hint = lambda: resume_command(prog, argv, run_dir)  # noqa: E731


def _close_progress_bars() -> None:
    """Close the open tqdm bars (an interrupted run leaves them open; closed later, at exit,
    they would be drawn after the last line)."""
    std = sys.modules.get("tqdm.std")
    for bar in list(getattr(getattr(std, "tqdm", None), "_instances", ()) or ()):
        try:
            bar.close()
        except Exception:  # a bar that cannot draw: nothing to tidy
            pass


def _guard(prog: str, main: Callable[[list[str]], int], argv: list[str] | None) -> int:
    """Run ``main``; a user error becomes one stderr line and exit code 2 (``--debug``:
    re-raised with its traceback); Ctrl-C one line with the command that resumes, exit 130.

    OpenMP's waiting threads are made to sleep rather than spin before torch is imported
    (:func:`mvpo_train.threads.passive_openmp`)."""
    from mvpo_train.threads import passive_openmp

    global _resume_hint
    passive_openmp()
    _resume_hint = None
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return main(argv)
    except KeyboardInterrupt:
        if "--debug" in argv:
            raise
        hint = ""
        if _resume_hint is not None:
            try:
                hint = f"; continue with: {_resume_hint()}"
            except Exception:  # the hint is a courtesy; never a traceback after Ctrl-C
                hint = ""
        _close_progress_bars()  # drawn now, so that the hint is the last line
        print(f"{prog}: interrupted{hint}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
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


def _short_path(path: Path, width: int = 80) -> str:
    """``path`` for a one-line message (a 300-character name is cut in the middle)."""
    text = str(path)
    return text if len(text) <= width else f"{text[: width // 2]}...{text[-width // 2 :]}"


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


def _cut(text: str, width: int = 60) -> str:
    """``repr(text)`` cut to ``width`` characters (the one line stays short)."""
    r = repr(text)
    return r if len(r) <= width else r[: width - 3] + "..."


def _finite_float(low: float, strict: bool) -> Callable[[str], float]:
    """``type=`` of a float flag: finite and ``> low`` (strict) or ``>= low``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {_cut(text)}") from None
        if not math.isfinite(value) or (value <= low if strict else value < low):
            raise argparse.ArgumentTypeError(
                f"expected a finite number {'>' if strict else '>='} {low:g}, got {_cut(text)}"
            )
        return value

    parse.__name__ = "number"
    return parse


def _non_empty(text: str) -> str:
    """``type=`` of a path or name flag: ``""`` would silently mean the current folder or the
    default, so it is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; give a value")
    if "\x00" in text:
        raise argparse.ArgumentTypeError(f"contains a NUL character, got {_cut(text)}")
    return text


def _check_output_file(flag: str, path: str) -> None:
    """An output file that exists must be a regular file (not a folder, FIFO or device)."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{flag}: {path} is a folder; give a file name")
    if p.exists() and not p.is_file():
        raise ConfigError(f"{flag}: {path} exists and is not a regular file")


def _check_input_path(flag: str, path: str) -> None:
    """An input that exists must be a regular file or a folder (reading a FIFO would block)."""
    p = Path(path)
    try:
        odd = p.exists() and not p.is_file() and not p.is_dir()
    except OSError as err:  # e.g. a name longer than the file system allows
        raise ConfigError(f"{flag}: {_short_path(p)}: {err.strerror or err}") from None
    if odd:
        raise ConfigError(f"{flag}: {path} is not a regular file or folder")


def _task_list(text: str) -> list[int]:
    try:
        tasks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated task indices such as 1,8,13, got {_cut(text)}"
        ) from None
    if not tasks or min(tasks) < 0 or max(tasks) > INT_MAX:
        raise argparse.ArgumentTypeError(f"expected task indices >= 0, got {_cut(text)}")
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
        type=int_at_least(1, 1024),
        default=1,
        help="data-parallel processes on this machine (torchrun on loopback; docs/scaling.md)",
    )
    _add_debug(parser)
    args = parser.parse_args(argv)
    cfg = config_from_args(args)  # estimator name and kwargs checked here
    if args.print_config:
        import yaml

        print(yaml.safe_dump(cfg.to_dict(), sort_keys=True), end="")
        return 0
    if args.run_dir is None:  # a folder chosen here: named now, to the ranks, in the hint
        argv = [*argv, "--run-dir", cfg.run_dir]
        if os.environ.get("RANK", "0") == "0":
            print(f"mvpo-train: run folder {cfg.run_dir}", file=sys.stderr, flush=True)
    on_interrupt("mvpo-train", argv, cfg.run_dir)
    if args.nproc > 1:
        from mvpo_train.distributed import launch

        rest, skip = [], False
        for a in argv:  # the same flags without --nproc, for every rank
            if skip or a == "--nproc" or a.startswith("--nproc="):
                skip = a == "--nproc"
                continue
            rest.append(a)
        return launch(args.nproc, rest, run_dir=cfg.run_dir, resume=cfg.resume)
    from mvpo_train.factories import make_venv
    from mvpo_train.trainer import train

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
    from mvpo_train.config import (
        PRESETS,
        SHRINK_ENV,
        SHRUNK,
        TrainConfig,
        load_config,
        shrunk,
        with_preset_env_kwargs,
    )

    p = OneLineParser(prog="mvpo-eval", description=eval_main.__doc__)
    p.add_argument(
        "--run-dir",
        type=_non_empty,
        default=None,
        help="a training run folder (config + checkpoints)",
    )
    p.add_argument(
        "--model",
        type=_non_empty,
        default=None,
        help="model folder or hub id (default: the run's newest intact checkpoint)",
    )
    p.add_argument(
        "--preset", default="cpu-tiny", choices=sorted(PRESETS), help="config when no run is given"
    )
    p.add_argument(
        "--config", type=_non_empty, default=None, help="YAML config fields (override the run's)"
    )
    p.add_argument(
        "--env-id", type=_non_empty, default=None, help="environment id (default: the config's)"
    )
    p.add_argument(
        "--split",
        type=_non_empty,
        default=None,
        help="evaluation split (default: the config's eval_split)",
    )
    p.add_argument("--episodes", type=int_at_least(1, 4096), default=None, help="episodes per task")
    p.add_argument(
        "--max-tasks", type=int_at_least(0), default=None, help="evaluate at most N tasks"
    )
    p.add_argument(
        "--tasks", type=_task_list, default=None, help="evaluate these task indices, e.g. 1,8,13"
    )
    p.add_argument("--max-steps", type=int_at_least(0), default=None, help="episode step limit")
    p.add_argument("--sampled", action="store_true", help="sample actions instead of greedy")
    p.add_argument(
        "--seed",
        type=int_at_least(0, SEED_MAX),
        default=0,
        help=f"sampling seed (0 <= seed <= {SEED_MAX})",
    )
    p.add_argument("--device", default=None, help="cpu | cuda | auto")
    p.add_argument(
        "--threads",
        type=int_at_least(0, 4096),
        default=0,
        help="torch CPU threads (default 0 = auto: the CPUs free now, not the run's count)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show progress (episodes played) on stderr",
    )
    p.add_argument("--out", type=_non_empty, default=None, help="write the result as JSON here")
    _add_debug(p)
    args = p.parse_args(argv)
    if (
        args.out
    ):  # its folder is made (as mvpo-plot and mvpo-inspect do) before, not after, the eval
        _check_output_file("--out", args.out)
        try:
            Path(args.out).resolve().parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(f"--out: cannot create the folder of {args.out}: {err}") from err

    values: dict[str, Any] = dict(PRESETS[args.preset])
    model = args.model
    if args.run_dir:
        run = Path(args.run_dir)
        try:
            is_run = run.is_dir()
        except OSError as err:  # e.g. a name longer than the file system allows
            raise ConfigError(f"--run-dir: {_short_path(run)}: {err.strerror}") from None
        if not is_run:
            raise ConfigError(f"--run-dir: {run} is not a folder (no such run)")
        saved = run / "config.yaml"
        if not saved.is_file():
            raise ConfigError(f"--run-dir: {run} has no config.yaml (not a training run folder)")
        values.update(load_config(saved))
        values.pop("preset", None)
    if args.config:
        values.update(load_config(args.config))
        values.pop("preset", None)
    for name in ("env_id", "max_steps", "device"):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    values["threads"] = args.threads or 0  # an evaluation is not a resume: the CPUs free now
    if shrunk():  # a smoke test: 3 steps, one episode of at most 2 tasks
        values["max_steps"] = SHRUNK["max_steps"]
        args.episodes, args.max_tasks = 1, SHRUNK["eval_max_tasks"]
        args.tasks = args.tasks[: SHRUNK["eval_max_tasks"]] if args.tasks else None
        print(f"mvpo-eval: {SHRINK_ENV} is set: 1 episode, 2 tasks, 3 steps", file=sys.stderr)
    values.update(
        tensorboard=False, report_to=[], progress=args.progress, resume=False, overwrite=False
    )
    cfg = TrainConfig(**with_preset_env_kwargs(args.preset, values))

    from mvpo_train.evaluation import evaluate
    from mvpo_train.factories import check_runtime, load_policy, quiet_transformers

    check_runtime(cfg)
    check_device(cfg.device)
    if args.run_dir and model is None:
        model = str(_intact_checkpoint(Path(args.run_dir)))
    elif model is not None and (Path(model) / "SHA256SUMS").is_file():
        from mvpo_train.checkpoint import verify_checkpoint

        verify_checkpoint(model)  # a checkpoint folder given as --model: checked too
    quiet_transformers()
    from mvpo_train.threads import set_torch_threads

    set_torch_threads(cfg.threads)
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
    p.add_argument("runs", nargs="+", type=_non_empty, help="run folders or metrics.jsonl files")
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
    p.add_argument("--smooth", type=int_at_least(1), default=1, help="moving-average window")
    p.add_argument("--out", type=_non_empty, default="curves.png", help="output PNG")
    _add_debug(p)
    args = p.parse_args(argv)
    for run in args.runs:
        _check_input_path("runs", run)
        if Path(run).is_dir():
            _check_input_path("runs", str(Path(run) / "metrics.jsonl"))
    _check_output_file("--out", args.out)
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
    p.add_argument(
        "--out", type=_non_empty, default=str(default_model_path()), help="output folder"
    )
    p.add_argument(
        "--env-id",
        type=_non_empty,
        default=DEFAULT_CORPUS_ENV,
        help="env whose tasks feed the tokenizer corpus",
    )
    p.add_argument(
        "--splits", nargs="+", type=_non_empty, default=["train"], help="splits read for the corpus"
    )
    p.add_argument(
        "--preset", type=_non_empty, default="mini", help="bundled data preset of the env"
    )
    p.add_argument(
        "--data-dir",
        type=_non_empty,
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
            kind = _finite_float(0.0, strict=name != "initializer_range")
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


# ================================================================== torchrun's ranks


def rank_main(argv: list[str] | None = None) -> int:
    """``python -m mvpo_train.cli <mvpo-train flags>``: what ``torchrun`` (and so
    ``mvpo-train --nproc N``) runs in every rank; without torchrun, :func:`train_main`.

    A rank dies with its torchrun, which dies with the ``--nproc`` launcher
    (:func:`mvpo_train.distributed.launch`), and ends through
    :func:`~mvpo_train.distributed.exit_rank` once its files are closed.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return train_main(argv)
    from mvpo_train.distributed import LAUNCHER_ENV, exit_rank
    from mvpo_train.run_lock import die_with_parent

    launcher = os.environ.get(LAUNCHER_ENV, "")
    die_with_parent(grandparent=int(launcher) if launcher.isdigit() else None)
    code = train_main(argv)
    # Every file the run writes is closed and atomic by now (metrics, checkpoints, records) and
    # the process group is destroyed. Leaving through the interpreter's teardown can still
    # abort a rank ("terminate called without an active exception": a C++ thread of the
    # gloo/store stack destroyed while joinable), which torchrun reports as a failed run.
    exit_rank(code)
    return code  # pragma: no cover (exit_rank does not return)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(rank_main(sys.argv[1:]))
