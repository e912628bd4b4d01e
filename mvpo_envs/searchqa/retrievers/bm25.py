"""BM25 with ``bm25s`` (the default backend): pure Python, index cached on disk.

docs/environments.md, "mvpo/SearchQA-v0". Search-R1's BM25 baseline is Pyserini's Lucene BM25 with
its defaults ``k1=0.9, b=0.4``; this backend uses the same parameters and the same Lucene scoring
variant (``method="lucene"``), English stop words, no stemmer (pass ``stemmer="english"`` when
PyStemmer is installed). The whole ``contents`` (title line + text) is indexed, as Pyserini's
``JsonCollection`` does. Like Lucene, passages matching no query term are not returned, so a
query may get fewer than ``topk`` hits (or none).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_envs.searchqa.data import Corpus
from mvpo_envs.searchqa.retrievers.base import (
    Hit,
    Retriever,
    cached_build,
    default_cache_dir,
    hits_from_rows,
    index_key,
)


def _stemmer(name: str | None) -> Any:
    if name is None:
        return None
    try:
        import Stemmer  # PyStemmer
    except ImportError as err:
        raise ImportError("stemmer= needs PyStemmer: pip install PyStemmer") from err
    return Stemmer.Stemmer(name).stemWords


class BM25Retriever(Retriever):
    """``bm25s`` BM25 over a :class:`~mvpo_envs.searchqa.data.Corpus`."""

    name = "bm25"
    thread_safe = True  # read-only index; each call is independent

    def __init__(
        self,
        corpus: Corpus,
        cache_dir: str | Path | None = None,
        k1: float = 0.9,
        b: float = 0.4,
        method: str = "lucene",
        stopwords: str | None = "en",
        stemmer: str | None = None,
    ):
        import bm25s

        self.corpus = corpus
        self.params = {
            "k1": k1,
            "b": b,
            "method": method,
            "stopwords": stopwords,
            "stemmer": stemmer,
        }
        self._stem = _stemmer(stemmer)
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        folder = root / index_key(corpus.content_hash, "bm25s", **self.params)

        def build(tmp: Path) -> None:
            tokens = bm25s.tokenize(
                [d.contents for d in corpus.docs],
                stopwords=stopwords,
                stemmer=self._stem,
                show_progress=False,
            )
            if not tokens.vocab:  # bm25s fails with "max() arg is an empty sequence"
                raise ValueError(
                    f"corpus {corpus.path or ''}: no passage has a word BM25 can index (words "
                    "of 2+ letters that are not stop words)"
                )
            model = bm25s.BM25(k1=k1, b=b, method=method)
            model.index(tokens, show_progress=False)
            model.save(str(tmp), show_progress=False)
            (tmp / "doc_ids.json").write_text(json.dumps([d.id for d in corpus.docs]))

        self.index_dir, self.built_now = cached_build(folder, build)
        ids = json.loads((self.index_dir / "doc_ids.json").read_text())
        if len(ids) != len(corpus):
            raise RuntimeError(f"BM25 cache {self.index_dir} does not match the corpus; delete it")
        self._model = bm25s.BM25.load(str(self.index_dir), show_progress=False, verbosity=0)

    def _search(self, queries: list[str], topk: int) -> list[list[Hit]]:
        import bm25s

        tokens = bm25s.tokenize(
            queries,
            stopwords=self.params["stopwords"],
            stemmer=self._stem,
            return_ids=False,
            show_progress=False,
        )
        k = min(topk, len(self.corpus))
        docs, scores = self._model.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        # Lucene returns matching passages only: drop zero scores
        return hits_from_rows(
            self.corpus,
            np.asarray(docs).tolist(),
            np.asarray(scores).tolist(),
            lambda i, sc: sc > 0.0,
        )

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "num_docs": len(self.corpus), **self.params}
