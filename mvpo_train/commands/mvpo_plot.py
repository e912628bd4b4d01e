"""``mvpo-plot``: one panel per metric key, one line per run, from runs' ``metrics.jsonl``
(:func:`mvpo_train.metrics.plot_metrics`). Entry point :func:`mvpo_train.cli.plot_main`.
"""

from __future__ import annotations

from pathlib import Path

from mvpo_envs.cli_args import int_at_least
from mvpo_train.commands.checks import add_debug, check_input_path, check_output_file, non_empty
from mvpo_train.commands.guard import guard
from mvpo_train.config import ConfigError, OneLineParser

__all__ = ["plot_main"]


def plot_main(argv: list[str] | None = None) -> int:
    """``mvpo-plot RUN [RUN ...] [--keys success adv/zero_credit_ratio] [--out curves.png]``."""
    return guard("mvpo-plot", _plot, argv)


def _plot(argv: list[str]) -> int:
    from mvpo_train.metrics import plot_metrics

    p = OneLineParser(prog="mvpo-plot", description=plot_main.__doc__)
    p.add_argument("runs", nargs="+", type=non_empty, help="run folders or metrics.jsonl files")
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
    p.add_argument("--out", type=non_empty, default="curves.png", help="output PNG")
    add_debug(p)
    args = p.parse_args(argv)
    for run in args.runs:
        check_input_path("runs", run)
        if Path(run).is_dir():
            check_input_path("runs", str(Path(run) / "metrics.jsonl"))
    check_output_file("--out", args.out)
    if args.labels is not None and len(args.labels) != len(args.runs):
        raise ConfigError(
            f"--labels: expected one label per run ({len(args.runs)}), got {len(args.labels)}"
        )
    out = plot_metrics(
        args.runs, keys=args.keys, out=args.out, labels=args.labels, x=args.x, smooth=args.smooth
    )
    print(out)
    return 0
