"""Damaged caches: every file of every env cache x five corruption modes, opened again.

docs/environments.md, "Caches". The matrix is :mod:`mvpo_envs.bench.cache_faults`: each cache built
once from the bundled data, every file damaged in turn (``empty``, ``half``, ``flip``,
``swap``, ``extend``) on a fresh copy, the cache opened by the env's own opener and queried.
Each run is ``rebuilt`` (one warning line, then the answers of the intact cache), ``same``
(opened without notice, same answers), ``one-line`` (a ``CacheError``), ``traceback`` (any
other exception) or ``silently-different`` (no notice, other answers); nothing may be a
traceback or silently different.

    python benchmarks/cache_faults.py --out benchmarks/results/cache_faults.json \\
        --markdown benchmarks/results/cache_faults.md

``--kinds`` and ``--modes`` pick a subset; ``--max-files N`` the first N files of a cache
(the fault suite runs a small version, ``tests/faults/test_cache_faults.py``).
``--analyze-only`` only rebuilds the ``--markdown`` page (default
``benchmarks/results/cache_faults.md``) from the JSON beside it (its command and runs).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
from pathlib import Path

from mvpo_envs.bench.cache_faults import KINDS, MODES, markdown, run_matrix, summary
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).resolve().parent / "results" / "cache_faults.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument("--max-files", type=int, default=None, help="first N files of each cache")
    p.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    p.add_argument("--out", help="JSON: the summary and every run")
    p.add_argument("--markdown", help="Markdown: the table")
    p.add_argument(
        "--analyze-only",
        action="store_true",
        help="only rebuild the --markdown page from the JSON beside it (no runs)",
    )
    args = p.parse_args(argv)
    if args.analyze_only:
        page = Path(args.markdown or RESULTS)
        write_figures_page("cache_faults", page, lambda r: markdown(r["runs"], r["command"]))
        return 0
    logging.getLogger("mvpo.cache").propagate = False  # counted, not printed
    work = Path(args.work or tempfile.mkdtemp(prefix="cache-faults-"))
    rows = run_matrix(args.kinds, args.modes, args.max_files, work)
    command = "python benchmarks/cache_faults.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:])
    )
    result = {"command": command, "summary": summary(rows), "runs": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows, command))
    print(json.dumps(result["summary"], indent=1))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    bad = result["summary"]["outcomes"]
    return 1 if bad.get("traceback") or bad.get("silently-different") else 0


if __name__ == "__main__":
    sys.exit(main())
