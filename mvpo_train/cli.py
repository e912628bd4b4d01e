"""Console entry points: ``mvpo-train``, ``mvpo-eval``, ``mvpo-plot``, ``mvpo-build-tiny-model``.

Usage in docs/training.md. This module holds ``mvpo-train`` (and :func:`rank_main`, what
``torchrun`` runs in every rank) and is the entry point ``pyproject.toml`` names for these four
commands; the code of the other three, and what the commands share, is in
:mod:`mvpo_train.commands`, one job per module.

Every ``mvpo-train`` flag is a :class:`mvpo_train.config.TrainConfig` field. A user error (a bad
flag or config value, a YAML syntax error, a missing file or run folder, an unusable checkpoint)
prints ONE line ``<prog>: error: <field or file>: <what is allowed>`` to stderr and exits with
code 2, without a traceback; ``--debug`` shows the traceback instead (docs/training.md,
"Reliability"; :func:`mvpo_train.commands.guard.guard`). Every flag is checked before anything
is read or written (:mod:`mvpo_train.commands.checks`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mvpo_envs.cli_args import int_at_least
from mvpo_train.commands.checks import add_debug, check_device
from mvpo_train.commands.guard import (
    EXIT_INTERRUPTED,
    EXIT_USER_ERROR,
    guard,
    on_interrupt,
    resume_command,
)
from mvpo_train.commands.mvpo_build_tiny_model import (
    MAX_TINY_PARAMETERS,
    build_model_main,
)
from mvpo_train.commands.mvpo_eval import eval_main, intact_checkpoint
from mvpo_train.commands.mvpo_plot import plot_main

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_USER_ERROR",
    "MAX_TINY_PARAMETERS",
    "build_model_main",
    "check_device",
    "eval_main",
    "on_interrupt",
    "plot_main",
    "rank_main",
    "resume_command",
    "train_main",
]

# the names these parts had when they lived here (mvpo_train.showcase and tests import them)
_guard = guard
_add_debug = add_debug
_intact_checkpoint = intact_checkpoint

# ================================================================== mvpo-train


def train_main(argv: list[str] | None = None) -> int:
    """``mvpo-train [--preset cpu-tiny|cpu-showcase|gpu-qwen2.5-1.5b] [--config x.yaml]
    [--field value ...]``."""
    return guard("mvpo-train", _train, argv)


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
    add_debug(parser)
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
