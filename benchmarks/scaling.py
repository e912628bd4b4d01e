"""Overhead of the scale-out paths on this machine (docs/scaling.md, "Measured overhead").

Env steps/s of one ``GroupedVectorEnv`` played with seeded random admissible actions per
vectorization backend (``sync``, ``async``, ``ray`` with 1 and ``--envs-per-actor`` sub-envs
per actor), every observation and reward checked equal to the sync run's; with ``--ddp`` the
wall time of one PPO update of the micro model on 1 and 2 gloo processes
(:mod:`mvpo_train.study.ddp_update`).

``.venv-verl/bin/python benchmarks/scaling.py`` (needs ``ray``) writes
``benchmarks/results/scaling.md``; the env part is :mod:`mvpo_envs.bench.vector_backends`.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

from mvpo_envs.bench.vector_backends import bench_envs
from mvpo_train.study.ddp_update import update_section

RESULTS = Path(__file__).parent / "results" / "scaling.md"


def main() -> None:
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
    args = p.parse_args()
    lines = [
        "# Scale-out overhead",
        "",
        "Written by `benchmarks/scaling.py` "
        f"(`{' '.join(['python', 'benchmarks/scaling.py', *sys.argv[1:]])}`) on "
        f"{platform.platform()}, {os.cpu_count()} CPUs (shared with other jobs: expect noise).",
        "",
    ]
    lines += bench_envs(args)
    if args.ddp:
        lines += ["", *update_section(args.ddp_repeats)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
