"""Control-task study: does MVPO learn on ``mvpo/MilestoneChain-v0`` where GRPO and GiGPO do not?

Arms differ only in the credit estimator: ``--arm [NAME=]ESTIMATOR[:KEY=VALUE,...]``
(repeatable; values are JSON when they parse as JSON, else strings), each passed to
``mvpo-train`` as ``--estimator`` + ``--estimator-kwargs``. Every run trains the encoder policy
from a fresh head; a run is finished when its compact ``result.json`` is written, and one made
with other settings or another spec is refused. The settings, what is reported and the reading:
docs/control_task.md, "Results". From the repository root::

    nice -n 19 python benchmarks/control_study.py --arm grpo --arm gigpo --arm mvpo
    python benchmarks/control_study.py --arm grpo --arm gigpo --arm mvpo --analyze-only  # (or JSON)
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from mvpo_train.study.analyze_only import AnalyzeOnlyError
from mvpo_train.study.arms import StudyError, parse_arms, parse_pair
from mvpo_train.study.compact import RESULT, credit_code_sha256
from mvpo_train.study.page_command import with_page_command
from mvpo_train.study.result_report import plot, write_markdown
from mvpo_train.study.result_runs import default_pairs, load_results, pending_runs, settings
from mvpo_train.study.result_summary import summarize
from mvpo_train.study.runs import run_local
from mvpo_train.study.saved_page import save_page, saved_table
from mvpo_train.study.tables import command_line

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV_ID = "mvpo/MilestoneChain-v0"
SCRIPT = "benchmarks/control_study.py"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--arm", action="append", default=None, metavar="SPEC",
                   help="[NAME=]ESTIMATOR[:KEY=VALUE,...] (repeatable; default grpo gigpo mvpo)")  # fmt: skip
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--difficulty", type=int, default=1)
    p.add_argument("--num-milestones", type=int, default=4)
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument("--num-groups", type=int, default=8, help="layouts per iteration")
    p.add_argument("--group-size", type=int, default=8, help="rollouts per layout")
    p.add_argument("--max-steps", type=int, default=50, help="episode step limit")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--ppo-epochs", type=int, default=2)
    p.add_argument("--eval-episodes", type=int, default=2, help="held-out episodes per layout")
    p.add_argument("--eval-max-tasks", type=int, default=0, help="held-out layouts (0 = all 64)")
    p.add_argument("--threshold", type=float, default=0.05, help="success threshold (table only)")
    p.add_argument("--pair", action="append", default=None, metavar="A:B",
                   help="a paired difference A - B to report (default: see the docs)")  # fmt: skip
    p.add_argument("--jobs", type=int, default=1, help="runs at a time (1 thread each)")
    p.add_argument("--base", default=str(ROOT / "runs" / "control-study"))
    p.add_argument("--out", default=str(RESULTS / "control_study.md"))
    p.add_argument("--note", default=None, help="a markdown file appended to the results")
    p.add_argument("--fresh", action="store_true", help="retrain even if runs exist")
    p.add_argument("--analyze-only", action="store_true",
                   help="only rebuild the table and plot; alone (or with --out): with the "
                   "arguments of the command the page at --out names")  # fmt: skip
    p.add_argument("extra", nargs="*", help="extra mvpo-train flags after --")
    args = p.parse_args(argv)
    args.argv = [a for a in argv if a != "--analyze-only"]
    for name in ("iterations", "num_groups", "group_size", "max_steps", "eval_episodes", "jobs"):
        if getattr(args, name) < 1:
            raise StudyError(
                f"--{name.replace('_', '-')}: expected >= 1, got {getattr(args, name)}"
            )
    if args.note and not Path(args.note).is_file():
        raise StudyError(f"--note: {args.note} is not a file")
    return args


#: flags that do not change what a rebuilt page shows (where it is read and written; its
#: Machine line, with the runs at a time, is kept as it is)
NEUTRAL = ("analyze_only", "argv", "base", "fresh", "jobs", "out")


def check_rebuild(args: argparse.Namespace, table: dict) -> None:
    """A page rebuilt from its JSON (``table``) must be asked for with the flags of the command
    that made it (``table["command"]``) but for :data:`NEUTRAL` ones; else a
    :class:`StudyError` line names the flags that differ (the page would show settings, arms or
    notes its runs did not have)."""
    made = parse_args(shlex.split(table["command"])[2:])
    if differ := [k for k, v in vars(made).items() if k not in NEUTRAL and getattr(args, k) != v]:
        raise StudyError(
            f"--analyze-only: {Path(args.out).with_suffix('.json')} was made by `{table['command']}`"
            f"; {', '.join('--' + k.replace('_', '-') for k in differ)} differ, nothing written "
            f"(`python {SCRIPT} --analyze-only` alone rebuilds the page with its own command)"
        )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = with_page_command(argv, Path(parse_args(argv).out), SCRIPT, "control_study")
        args = parse_args(argv)
        arms = parse_arms(args.arm or ["grpo", "gigpo", "mvpo"])
        pairs = [parse_pair(p) for p in args.pair] if args.pair else default_pairs(arms)
        failed: list[str] = []
        if not args.analyze_only:
            pending = pending_runs(args, arms, ENV_ID)
            run_local(pending, args.jobs, ROOT)
            failed = [f"{name} (see {path}/train.log)" for name, path, _ in pending
                      if not (path / RESULT).is_file()]  # fmt: skip
        table = saved_table(Path(args.out), args.analyze_only, Path(args.base))  # no runs here
        if table is not None:
            check_rebuild(args, table)
        results = load_results(args, arms, ENV_ID) if table is None else {}
    except (StudyError, AnalyzeOnlyError) as err:
        print(f"control_study: {err}", file=sys.stderr)
        return 2
    if table is None:
        table = summarize(results, args.threshold, args.iterations, pairs)
        now = credit_code_sha256()
        table["stale"] = [f"{arm}-seed{seed}" for arm, runs in results.items()
                          for seed, r in sorted(runs.items()) if r.get("credit_code_sha256") != now]  # fmt: skip
        table["settings"] = settings(args, ENV_ID)
        table["command"] = command_line("benchmarks/control_study.py", args.argv)
    save_page(
        table,
        Path(args.out),
        lambda t, png: plot(t, png, args.threshold),
        lambda t, out, png: write_markdown(t, args, arms, out, png, ENV_ID, t["command"]),
        args.analyze_only,
    )
    if failed:  # the table is written without them; the command's status says so
        print(f"control_study: {len(failed)} run(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
