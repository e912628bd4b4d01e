"""Speed of ``mvpo-alfworld-generate`` (the ``alfworld`` preset), in one run.

docs/alfworld_generator.md, "Verification and speed". On train games ``first .. first + n - 1``:
games/s and CPU time (this process and its workers) per worker count on the ``fast`` verifier,
the old ``pddl`` verifier against ``fast`` in one process, a check that every variant writes
byte-identical games, and the CPU time extrapolated to the full train split.

``python benchmarks/alfworld_generate.py`` writes ``benchmarks/results/alfworld_generate.md``;
``--quick`` uses smaller samples.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path

from mvpo_envs.alfworld import generate as gen
from mvpo_envs.alfworld.gen_alfworld import ALFWORLD_SPLIT_SIZES
from mvpo_envs.bench.alfworld_generate_speed import timed_run

RESULTS = Path(__file__).resolve().parent / "results" / "alfworld_generate.md"
FULL_TRAIN = ALFWORLD_SPLIT_SIZES["train"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sample", type=int, default=400, help="games per worker-count run")
    p.add_argument("--pddl-sample", type=int, default=40, help="games of the old-vs-new run")
    p.add_argument("--first", type=int, default=1000, help="index of the sample's first game")
    p.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated")
    p.add_argument("--quick", action="store_true", help="samples of 60 and 8 games")
    p.add_argument(
        "--full", action="store_true", help="also time the whole train split with 2 workers"
    )
    p.add_argument("--markdown", default=str(RESULTS), help="where to write the table")
    args = p.parse_args(argv)
    if args.quick:
        args.sample, args.pddl_sample = 60, 8
    workers = [int(w) for w in args.workers.split(",")]
    load_before = os.getloadavg()

    gen.generate(tempfile.mkdtemp(), {"train": 1}, preset="alfworld", show_progress=False)
    rows = [timed_run(args.sample, args.first, w, "fast") for w in workers]
    # old vs new verifier: same process, same sample, one worker (warm: the imports are done)
    old = timed_run(args.pddl_sample, args.first, 1, "pddl")
    new = timed_run(args.pddl_sample, args.first, 1, "fast")
    full = timed_run(FULL_TRAIN, 0, 2, "fast") if args.full else None
    load_after = os.getloadavg()

    same_workers = len({r["hash"] for r in rows}) == 1
    same_engines = old["hash"] == new["hash"]
    # the larger sample's per-game CPU is the honest rate (start-up shared by more games)
    rate = rows[0]["cpu"] / rows[0]["n"]
    flags = " --full" if args.full else ""
    lines = [
        "# ALFWorld generator speed (`benchmarks/alfworld_generate.py`)",
        "",
        f"Command: `python benchmarks/alfworld_generate.py --sample {args.sample} "
        f"--pddl-sample {args.pddl_sample} --first {args.first} --workers {args.workers}{flags}`; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{load_before[0]:.1f} before / {load_after[0]:.1f} after (a machine shared with other "
        "jobs: the wall clock counts their time too, the CPU time does not). CPU = user + sys "
        "of this process and its worker processes, start-up included.",
        "",
        f"## Games/s per worker count (train games {args.first}..{args.first + args.sample - 1}, "
        "`fast` verifier)",
        "",
        "| workers | games | wall s | games/s (wall) | CPU s | CPU ms/game |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['workers']} | {r['n']} | {r['wall']:.1f} | {r['n'] / r['wall']:.1f} | "
            f"{r['cpu']:.1f} | {1000 * r['cpu'] / r['n']:.1f} |"
        )
    ratio = (old["cpu"] / old["n"]) / (new["cpu"] / new["n"])
    lines += [
        "",
        f"Files identical for every worker count: **{'yes' if same_workers else 'NO'}**.",
        "",
        f"## Old verifier vs new (same process, train games {args.first}.."
        f"{args.first + args.pddl_sample - 1}, 1 worker)",
        "",
        "| verifier | games | CPU s | CPU ms/game | wall s |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, r in (("`pddl` (TextWorld + Fast Downward, before)", old), ("`fast`", new)):
        lines.append(
            f"| {label} | {r['n']} | {r['cpu']:.2f} | {1000 * r['cpu'] / r['n']:.1f} | "
            f"{r['wall']:.2f} |"
        )
    lines += [
        "",
        f"CPU per game, `pddl` / `fast`: **{ratio:.0f}x**. Files identical on both verifiers: "
        f"**{'yes' if same_engines else 'NO'}**.",
        "",
        "## Extrapolation to the full train split",
        "",
        f"{FULL_TRAIN} games x {1000 * rate:.1f} CPU ms/game (the 1-worker row, imports "
        f"already done) = {FULL_TRAIN * rate:.0f} CPU s: about {FULL_TRAIN * rate / 2:.0f} s of "
        "wall time on 2 free cores, plus ~2 s of imports per worker process.",
        "",
    ]
    if full is not None:
        lines += [
            f"Measured (`--full`): the whole train split ({FULL_TRAIN} games, 2 workers) in "
            f"{full['wall']:.0f} s of wall time and {full['cpu']:.0f} s of CPU "
            f"({1000 * full['cpu'] / FULL_TRAIN:.1f} CPU ms/game, start-up included).",
            "",
        ]
    text = "\n".join(lines)
    Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
    Path(args.markdown).write_text(text, encoding="utf-8")
    print(text)
    return 0 if same_workers and same_engines else 1


if __name__ == "__main__":
    raise SystemExit(main())
