"""Build (or resume) the embedding shards of a corpus, then optionally its dense index
(docs/searchqa.md, "Large corpora"; the shards: :mod:`~mvpo_envs.searchqa.retrievers.embeddings`).

Command line (a progress bar on stderr; run it again to resume)::

    python -m mvpo_envs.searchqa.retrievers.build_embeddings --corpus_path corpus.jsonl \\
        --cache_dir CACHE [--limit N] [--threads 1] [--part 1/2] [--index flat|ivf]

``--part I/N`` runs one of N processes that share the shards (one torch thread each uses the
cores better than one process with N threads: 106 against 57 passages per CPU second,
docs/searchqa.md "Large corpora").
"""

from __future__ import annotations

import json
import os
import time

from mvpo_envs.cli_args import FlagSpellingParser
from mvpo_envs.searchqa.retrievers.dense import DenseRetriever, embeddings_folder
from mvpo_envs.searchqa.retrievers.embeddings import embed_corpus, rows_done, rows_written
from mvpo_envs.searchqa.store import open_corpus


def _part(text: str) -> tuple[int, int]:
    try:
        which, parts = (int(x) for x in text.split("/"))
    except ValueError:
        raise SystemExit(f"--part: expected I/N such as 1/2, got {text!r}") from None
    if not 1 <= which <= parts:
        raise SystemExit(f"--part: expected 1 <= I <= N, got {text!r}")
    return which - 1, parts


def main(argv: list[str] | None = None) -> int:
    """Build (or resume) a corpus's embedding shards, then optionally its dense index."""
    p = FlagSpellingParser(description=main.__doc__)
    p.add_argument("--corpus_path", required=True)
    p.add_argument("--cache_dir", default=None)
    p.add_argument("--corpus_store", default="auto", choices=["auto", "memory", "compact"])
    p.add_argument("--model_path", default=None)
    p.add_argument("--passage_prefix", default="")
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--limit", type=int, default=None, help="stop after the first N passages")
    p.add_argument(
        "--part",
        default="1/1",
        help="I/N: only every N-th shard, from the I-th (N processes share a build)",
    )
    p.add_argument("--index", choices=["none", "flat", "ivf"], default="none")
    args = p.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    corpus = open_corpus(args.corpus_path, args.corpus_store, args.cache_dir)
    probe = DenseRetriever.__new__(DenseRetriever)  # settings only: no index is opened
    probe.configure(
        corpus, args.model_path, args.cache_dir, "cpu", args.batch_size, "", args.passage_prefix
    )
    folder = embeddings_folder(probe)
    part = _part(args.part)
    # this part's own shards: the other parts write theirs meanwhile (their rate is their own)
    before = rows_written(folder, len(corpus), part=part) if folder.exists() else 0
    t0, c0 = time.perf_counter(), time.process_time()
    complete = embed_corpus(
        corpus,
        probe.encode,
        folder,
        probe.embedding_meta(),
        passage_prefix=args.passage_prefix,
        limit=args.limit,
        show_progress=True,
        part=part,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    after = rows_written(folder, len(corpus), part=part)
    report = {
        "folder": str(folder),
        "passages": len(corpus),
        "part": args.part,
        "rows_done": rows_done(folder, len(corpus)),
        "rows_written": rows_written(folder, len(corpus)),
        "embedded_now": after - before,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "per_s": round((after - before) / wall, 2) if wall and after > before else None,
        "per_cpu_s": round((after - before) / cpu, 2) if cpu and after > before else None,
        "load": os.getloadavg(),
        "complete": complete,
    }
    print(json.dumps(report), flush=True)
    if complete and args.index != "none":
        DenseRetriever(
            corpus,
            model_path=args.model_path,
            cache_dir=args.cache_dir,
            batch_size=args.batch_size,
            passage_prefix=args.passage_prefix,
            index=args.index,
            show_progress=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
