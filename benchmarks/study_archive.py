"""Compact per-run results of a long sweep, committed as it goes (docs/learning_study.md,
"Budget"): a study that takes several sessions continues on a new machine from them.

A run folder of ``benchmarks/learning.py`` holds checkpoints (megabytes each) and batch
records besides its compact results; ``export`` copies only the compact ones of every run
folder below ``--base`` into ``--to`` (a folder committed with the results):
``metrics.jsonl`` (one line an iteration: what the analysis reads), ``config.yaml`` and the
held-out evaluations ``eval-*.json``, plus the warm start's own evaluations
(``warm-start/``). ``import`` copies them back into an empty or missing run folder, so that
learning.py skips every finished run and evaluation; an unfinished run (fewer iterations
than the study's, no checkpoint) starts over there, as learning.py does with any run folder
without a checkpoint.

    python benchmarks/study_archive.py export --base runs/full/learning \\
        --to benchmarks/results/learning_full_runs
    python benchmarks/study_archive.py import --from benchmarks/results/learning_full_runs \\
        --base runs/full/learning

Nothing is overwritten on import: a run folder that already has a ``metrics.jsonl`` is kept
as it is (it is at least as far as the archive, or it is another study: the line says so).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

COMPACT = ("metrics.jsonl", "config.yaml")
EVALS = "eval-*.json"


def compact_files(run: Path) -> list[Path]:
    """The compact results of one run folder (those that exist)."""
    files = [run / name for name in COMPACT if (run / name).is_file()]
    return files + sorted(run.glob(EVALS))


def _runs(base: Path) -> list[Path]:
    return sorted(p for p in base.iterdir() if p.is_dir() and compact_files(p))


def export(base: Path, to: Path) -> int:
    """Copy the compact results of every run below ``base`` into ``to/<run>/``; the count."""
    if not base.is_dir():
        raise SystemExit(f"study_archive: no run folder {base}")
    n = 0
    for run in _runs(base):
        dest = to / run.name
        dest.mkdir(parents=True, exist_ok=True)
        for f in compact_files(run):
            shutil.copy2(f, dest / f.name)
        n += 1
    return n


def import_(src: Path, base: Path) -> tuple[int, list[str]]:
    """Copy archived runs into ``base`` where the run has no metrics yet; (copied, kept)."""
    if not src.is_dir():
        raise SystemExit(f"study_archive: no archive {src}")
    copied, kept = 0, []
    for run in _runs(src):
        dest = base / run.name
        if (dest / "metrics.jsonl").is_file():
            kept.append(run.name)
            continue
        dest.mkdir(parents=True, exist_ok=True)
        for f in compact_files(run):
            shutil.copy2(f, dest / f.name)
        copied += 1
    return copied, kept


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="run folders -> compact archive")
    e.add_argument("--base", required=True, help="the sweep's --base")
    e.add_argument("--to", required=True, help="archive folder (committed)")
    i = sub.add_parser("import", help="compact archive -> run folders")
    i.add_argument("--from", dest="src", required=True, help="archive folder")
    i.add_argument("--base", required=True, help="the sweep's --base")
    args = p.parse_args(argv)
    if args.cmd == "export":
        print(f"exported {export(Path(args.base), Path(args.to))} runs to {args.to}")
    else:
        copied, kept = import_(Path(args.src), Path(args.base))
        print(f"imported {copied} runs into {args.base}")
        if kept:
            print(f"kept {len(kept)} run folders that already have metrics: {', '.join(kept)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
