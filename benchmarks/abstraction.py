"""Benchmark: Union-Find viability regions and region potential (docs/estimators.md §3.1-§3.3).

Times each stage MVPO runs on top of GiGPO (:mod:`mvpo_train.study.potential_stages`) on the
batches of ``benchmarks/credit.py`` (:mod:`mvpo_train.study.synthetic`; the figures and page:
:mod:`mvpo_train.study.stage_page`). ``python benchmarks/abstraction.py`` (from the repository
root) writes ``benchmarks/results/abstraction.md`` and the figures it prints as
``abstraction.json`` beside it; ``--analyze-only`` rebuilds the page from that JSON alone.
"""

from __future__ import annotations

from pathlib import Path

from mvpo_train.study.figures_page import figures_main
from mvpo_train.study.stage_page import measure, page

RESULTS = Path(__file__).resolve().parent / "results" / "abstraction.md"


def main(argv: list[str] | None = None) -> int:
    """Measure and write the page and its JSON, or (``--analyze-only``) rebuild the page."""
    return figures_main("abstraction", argv, __doc__, RESULTS, page, measure)


if __name__ == "__main__":
    raise SystemExit(main())
