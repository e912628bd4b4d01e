"""Speed of ``mvpo-alfworld-generate`` (the ``alfworld`` preset), in one run.

docs/alfworld_generator.md, "Verification and speed". On train games ``first .. first + n - 1``:
games/s and CPU time (this process and its workers) per worker count on the ``fast`` verifier,
the old ``pddl`` verifier against ``fast`` in one process, a check that every variant writes
byte-identical games, and the CPU time extrapolated to the full train split.

``python benchmarks/alfworld_generate.py`` writes ``benchmarks/results/alfworld_generate.md``
and the page's figures as the ``.json`` beside it; ``--quick`` uses smaller samples;
``--analyze-only`` only rebuilds the page from that JSON. The runs and the page are
:mod:`mvpo_envs.bench.alfworld_generate_speed`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mvpo_envs.bench.alfworld_generate_speed import measure_all, page_figures, report
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).resolve().parent / "results" / "alfworld_generate.md"


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
    p.add_argument(
        "--analyze-only", action="store_true", help="only rebuild --markdown from its JSON"
    )
    args = p.parse_args(argv)
    out = Path(args.markdown)
    if args.analyze_only:
        write_figures_page("alfworld_generate", out, report)
        return 0
    if args.quick:
        args.sample, args.pddl_sample = 60, 8
    workers = [int(w) for w in args.workers.split(",")]
    m = measure_all(args.sample, args.pddl_sample, args.first, workers, args.full)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_figures_page("alfworld_generate", out, report, page_figures(m, args))
    return 0 if m["same_workers"] and m["same_engines"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
