"""Load on the retrieval server: requests/s, latency and memory under many concurrent clients.

docs/searchqa.md, "Server"; the page's header says what is measured. Starts
``mvpo-searchqa-server`` (bm25 on the bundled corpus, or on ``--data DIR``: ``corpus.jsonl`` and
its ``test.jsonl``, e.g. a ``mvpo-searchqa-generate --distractors 1000000`` folder, cached in
``--cache_dir``) on a free loopback port; per concurrency level, fresh ``Connection: close``
requests from one asyncio process (:mod:`mvpo_envs.serve.load`) until ``--requests`` were
answered; a last row sends ``--abusers`` 8 MiB nested bodies that must each get a ``400``.

``python benchmarks/searchqa_server_load.py`` writes its corpus's section of
``benchmarks/results/searchqa_server_load.md`` (the other sections kept) and of the figures it
prints, ``searchqa_server_load.json`` beside it; ``--analyze-only`` rebuilds the page from that
JSON alone. Linux only. The measurement and the section are
:mod:`mvpo_envs.bench.retrieval_server_load`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from mvpo_envs.bench.retrieval_server_load import HEADER, run, section, section_figures
from mvpo_train.study.analyze_only import AnalyzeOnlyError, saved_results
from mvpo_train.study.bench import keep_sections
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).resolve().parent / "results" / "searchqa_server_load.md"


def page(figures: dict[str, Any]) -> str:
    """The page: :data:`HEADER`, then each corpus's section (``bundled`` first)."""
    body = ""
    for key, fig in figures["sections"].items():
        body = keep_sections(body, key, section(fig), first="bundled")
    return "\n".join([*HEADER, body])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--levels", default="1,16,256,1000", help="concurrency levels, comma-separated")
    p.add_argument("--requests", type=int, default=2000, help="requests per level")
    p.add_argument("--abusers", type=int, default=8, help="concurrent 8 MiB nested bodies")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=None, help="folder: corpus.jsonl + test.jsonl")
    p.add_argument("--cache_dir", default=None, help="index cache (default: a temporary one)")
    p.add_argument(
        "--query_cache_size", type=int, default=4096, help="the server's query cache (0: off)"
    )
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--analyze-only", action="store_true", help="rebuild --out from its JSON")
    args = p.parse_args(argv)
    if args.analyze_only:
        write_figures_page("searchqa_server_load", args.out, page)
        return 0
    levels = [int(x) for x in args.levels.split(",")]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    got = run(
        levels,
        args.requests,
        args.abusers,
        args.seed,
        args.data,
        args.cache_dir,
        args.query_cache_size,
    )
    fig = section_figures(args, load, got)
    figures = {"sections": {}}
    if args.out.with_suffix(".json").is_file():  # the other corpora's sections
        try:
            figures = saved_results(args.out)
        except AnalyzeOnlyError as err:
            raise SystemExit(f"searchqa_server_load: {err}") from None
    figures["sections"][fig["key"]] = fig
    write_figures_page("searchqa_server_load", args.out, page, figures)
    return 0 if all(r[2] == 0 for r in got["rows"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
