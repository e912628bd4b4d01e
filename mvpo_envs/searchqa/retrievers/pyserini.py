"""Pyserini (Lucene) BM25, the backend Search-R1's own BM25 server uses (optional extra).

docs/environments.md, "mvpo/SearchQA-v0". Needs ``pip install 'mvpo[pyserini]'`` and Java 21; the
import is lazy, so the rest of the environment works without it. Give ``index_dir=`` for a
prebuilt Lucene index (e.g. Search-R1's wiki-18 BM25 index), or let it build one from the corpus
with Pyserini's ``JsonCollection`` indexer (``--storeRaw``), cached like the other backends.
``k1=0.9, b=0.4`` are Pyserini's defaults.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from mvpo_envs.searchqa.data import Corpus
from mvpo_envs.searchqa.retrievers.base import (
    Hit,
    Retriever,
    cached_build,
    default_cache_dir,
    index_key,
)

INSTALL_HINT = (
    "the 'pyserini' retriever needs Pyserini and a Java 21 runtime: "
    "pip install 'mvpo[pyserini]' (or pip install pyserini) and install a JDK 21; "
    "retriever='bm25' (bm25s) needs neither"
)


def _lucene_searcher() -> Any:
    try:
        from pyserini.search.lucene import LuceneSearcher
    except ImportError as err:
        raise ImportError(INSTALL_HINT) from err
    return LuceneSearcher


class PyseriniRetriever(Retriever):
    """Lucene BM25 through Pyserini's ``LuceneSearcher``."""

    name = "pyserini"

    def __init__(
        self,
        corpus: Corpus | None = None,
        index_dir: str | Path | None = None,
        cache_dir: str | Path | None = None,
        k1: float = 0.9,
        b: float = 0.4,
        threads: int = 1,
    ):
        searcher_cls = _lucene_searcher()
        if index_dir is None:
            if corpus is None or corpus.path is None:
                raise ValueError(
                    "PyseriniRetriever needs index_dir= or a corpus loaded from a file"
                )
            root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
            folder = root / index_key(corpus.content_hash, "pyserini")
            index_dir, _ = cached_build(folder, lambda tmp: _build_index(corpus, tmp, threads))
            index_dir = Path(index_dir) / "lucene"
        self.corpus, self.index_dir, self.threads = corpus, Path(index_dir), threads
        self._searcher = searcher_cls(str(self.index_dir))
        self._searcher.set_bm25(k1, b)
        self.params = {"k1": k1, "b": b}

    def _contents(self, docid: str) -> str:
        doc = self._searcher.doc(docid)
        raw = doc.raw() if doc is not None else None
        if raw:
            return str(json.loads(raw)["contents"])
        found = self.corpus.get(docid) if self.corpus is not None else None
        if found is None:
            raise KeyError(
                f"passage {docid!r}: the index stores no raw text and no corpus was given"
            )
        return found.contents

    def _search(self, queries: list[str], topk: int) -> list[list[Hit]]:
        results = []
        for query in queries:
            hits = self._searcher.search(query, topk)
            results.append(
                [
                    Hit(
                        id=str(h.docid), contents=self._contents(str(h.docid)), score=float(h.score)
                    )
                    for h in hits[:topk]
                ]
            )
        return results

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "index_dir": str(self.index_dir), **self.params}


def _build_index(corpus: Corpus, tmp: Path, threads: int) -> None:
    """Pyserini's indexer over a folder holding the corpus jsonl (``JsonCollection``)."""
    source = tmp / "input"
    source.mkdir()
    with open(source / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for doc in corpus.docs:
            fh.write(
                json.dumps({"id": doc.id, "contents": doc.contents}, ensure_ascii=False) + "\n"
            )
    cmd = [
        sys.executable,
        "-m",
        "pyserini.index.lucene",
        "--collection",
        "JsonCollection",
        "--input",
        str(source),
        "--index",
        str(tmp / "lucene"),
        "--generator",
        "DefaultLuceneDocumentGenerator",
        "--threads",
        str(threads),
        "--storePositions",
        "--storeDocvectors",
        "--storeRaw",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"Pyserini indexing failed ({done.returncode}): {done.stderr[-2000:]}")
    shutil.rmtree(source)
