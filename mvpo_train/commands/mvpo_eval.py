"""``mvpo-eval``: success per task type on an evaluation split, with a run's config and its
newest intact checkpoint, or with a model folder / hub id and a preset (docs/training.md).
Entry point :func:`mvpo_train.cli.eval_main` (this module's :func:`eval_main`).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mvpo_envs.cli_args import int_at_least
from mvpo_train.commands.checks import (
    add_debug,
    check_device,
    check_output_file,
    non_empty,
    short_path,
    task_list,
)
from mvpo_train.commands.guard import guard
from mvpo_train.config import SEED_MAX, ConfigError, OneLineParser

if TYPE_CHECKING:
    from mvpo_train.batch import StepBatch

__all__ = ["eval_main", "intact_checkpoint"]


def eval_main(
    argv: list[str] | None = None, *, on_batch: Callable[[StepBatch], None] | None = None
) -> int:
    """``mvpo-eval [--run-dir RUN | --model PATH] [--split eval] [--episodes 1] [--sampled]``.

    Success per task type on an evaluation split, with the run's config (``RUN/config.yaml``)
    and its newest intact checkpoint, or with a model folder / hub id and the ``--preset``.
    """
    return guard("mvpo-eval", functools.partial(_eval, on_batch=on_batch), argv)


def _eval(argv: list[str], on_batch: Callable[[StepBatch], None] | None = None) -> int:
    """:func:`eval_main`'s work; ``on_batch``: :func:`~mvpo_train.evaluation.evaluate`'s."""
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
        type=non_empty,
        default=None,
        help="a training run folder (config + checkpoints)",
    )
    p.add_argument(
        "--model",
        type=non_empty,
        default=None,
        help="model folder or hub id (default: the run's newest intact checkpoint)",
    )
    p.add_argument(
        "--preset", default="cpu-tiny", choices=sorted(PRESETS), help="config when no run is given"
    )
    p.add_argument(
        "--config", type=non_empty, default=None, help="YAML config fields (override the run's)"
    )
    p.add_argument(
        "--env-id", type=non_empty, default=None, help="environment id (default: the config's)"
    )
    p.add_argument(
        "--split",
        type=non_empty,
        default=None,
        help="evaluation split (default: the config's eval_split)",
    )
    p.add_argument("--episodes", type=int_at_least(1, 4096), default=None, help="episodes per task")
    p.add_argument(
        "--max-tasks", type=int_at_least(0), default=None, help="evaluate at most N tasks"
    )
    p.add_argument(
        "--tasks", type=task_list, default=None, help="evaluate these task indices, e.g. 1,8,13"
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
    p.add_argument("--out", type=non_empty, default=None, help="write the result as JSON here")
    add_debug(p)
    args = p.parse_args(argv)
    if (
        args.out
    ):  # its folder is made (as mvpo-plot and mvpo-inspect do) before, not after, the eval
        check_output_file("--out", args.out)
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
            raise ConfigError(f"--run-dir: {short_path(run)}: {err.strerror}") from None
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
        model = str(intact_checkpoint(Path(args.run_dir)))
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
        on_batch=on_batch,
    )
    result = {"model": model or cfg.model, "split": args.split or cfg.eval_split,
              "greedy": not args.sampled, **result}  # fmt: skip
    width = max(len(k) for k in result)
    for k, v in result.items():
        print(f"{k:<{width}}  {v:.3f}" if isinstance(v, float) else f"{k:<{width}}  {v}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def intact_checkpoint(run: Path) -> Path:
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
