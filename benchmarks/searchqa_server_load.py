"""Load on the retrieval server: requests/s, latency and memory under many concurrent clients.

docs/searchqa.md, "Server"; the page's header says what is measured. Starts
``mvpo-searchqa-server`` (bm25 on the bundled corpus, or on ``--data DIR``: ``corpus.jsonl`` and
its ``test.jsonl``, e.g. a ``mvpo-searchqa-generate --distractors 1000000`` folder, cached in
``--cache_dir``) on a free loopback port; per concurrency level, fresh ``Connection: close``
requests from one asyncio process (:mod:`mvpo_envs.serve.load`) until ``--requests`` were
answered; a last row sends ``--abusers`` 8 MiB nested bodies that must each get a ``400``.

``python benchmarks/searchqa_server_load.py`` writes its corpus's section of
``benchmarks/results/searchqa_server_load.md`` (the other sections kept). Linux only. The
measurement and the section are :mod:`mvpo_envs.bench.retrieval_server_load`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from mvpo_envs.bench.retrieval_server_load import HEADER, run, section
from mvpo_train.study.bench import keep_sections, write_page

RESULTS = Path(__file__).resolve().parent / "results" / "searchqa_server_load.md"


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
    args = p.parse_args(argv)
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
    key, lines = section(args, load, got)
    old = args.out.read_text() if args.out.is_file() else ""
    write_page(args.out, [*HEADER, keep_sections(old, key, lines, first="bundled")])
    return 0 if all(r[2] == 0 for r in got["rows"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
