"""Overhead of the scale-out paths on this machine (docs/scaling.md, "Measured overhead").

Env steps/s of one ``GroupedVectorEnv`` played with seeded random admissible actions per
vectorization backend (``sync``, ``async``, ``ray`` with 1 and ``--envs-per-actor`` sub-envs
per actor), every observation and reward checked equal to the sync run's; with ``--ddp`` the
wall time of one PPO update of the micro model on 1 and 2 gloo processes
(:mod:`mvpo_train.study.ddp_update`).

``.venv-verl/bin/python benchmarks/scaling.py`` (needs ``ray``) writes
``benchmarks/results/scaling.md`` and the page's figures as the ``.json`` beside it;
``--analyze-only`` only rebuilds the page from that JSON (no ``ray`` needed). The env part is
:mod:`mvpo_envs.bench.vector_backends`.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

from mvpo_envs.bench.vector_backends import env_lines, measure_envs
from mvpo_train.study.ddp_update import update_lines, update_times
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).parent / "results" / "scaling.md"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="mvpo/ALFWorld-v0")
    p.add_argument("--groups", type=int, default=2)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--envs-per-actor", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3, help="timed runs per backend (median)")
    p.add_argument("--ddp", action="store_true", help="also time the data-parallel update")
    p.add_argument("--ddp-repeats", type=int, default=3)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--analyze-only", action="store_true", help="only rebuild --out from its JSON")
    args = p.parse_args(argv)
    figures = None
    if not args.analyze_only:
        given = sys.argv[1:] if argv is None else argv
        figures = {
            "command": " ".join(["python", "benchmarks/scaling.py", *given]),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
            "envs": measure_envs(args),
            "ddp": update_times(args.ddp_repeats) if args.ddp else None,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
    write_figures_page("scaling", args.out, report, figures)


def report(f: dict) -> str:
    """The page of a run's figures: where it ran, the env workers' and the update's sections."""
    lines = [
        "# Scale-out overhead",
        "",
        f"Written by `benchmarks/scaling.py` (`{f['command']}`) on {f['machine']} "
        "(shared with other jobs: expect noise).",
        "",
        *env_lines(f["envs"]),
    ]
    if f["ddp"] is not None:
        lines += ["", *update_lines(f["ddp"]["one"], f["ddp"]["two"])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
