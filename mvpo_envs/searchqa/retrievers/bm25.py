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

from mvpo_envs.cache_files import check_bm25s, map_mode
from mvpo_envs.searchqa.data import Corpus
from mvpo_envs.searchqa.retrievers.base import (
    Hit,
    Retriever,
    default_cache_dir,
    hits_from_rows,
    index_key,
    open_index,
)


def _stemmer(name: str | None) -> Any:
    if name is None:
        return None
    try:
        import Stemmer  # PyStemmer
    except ImportError as err:
        raise ImportError("stemmer= needs PyStemmer: pip install PyStemmer") from err
    return Stemmer.Stemmer(name).stemWords


#: ``show_progress=None`` shows progress bars while building an index of this many passages+
PROGRESS_FROM = 50_000


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest positive ``scores``, best first, ties by position.

    The same list as ``np.lexsort((arange, -scores))[:k]`` cut to positive scores; only the
    matching passages are partitioned, and of them only those at or above the k-th score are
    sorted.
    """
    hits = np.flatnonzero(scores > 0)
    if len(hits) > k:
        vals = scores[hits]
        kth = np.partition(vals, len(vals) - k)[len(vals) - k]
        above = hits[vals > kth]
        ties = hits[vals == kth][: k - len(above)]  # lowest positions first (hits are sorted)
        hits = np.concatenate([above, ties])
    return hits[np.lexsort((hits, -scores[hits]))][:k]


def _num_docs(folder: Path) -> int:
    """The passage count an index folder was built for (``docs.json``; older caches kept the
    whole id list in ``doc_ids.json``)."""
    if (folder / "docs.json").is_file():
        return int(json.loads((folder / "docs.json").read_text())["num_docs"])
    return len(json.loads((folder / "doc_ids.json").read_text()))


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
        show_progress: bool | None = None,
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

        show = len(corpus) >= PROGRESS_FROM if show_progress is None else show_progress

        def build(tmp: Path) -> None:
            tokens = bm25s.tokenize(
                [d.contents for d in corpus.docs],
                stopwords=stopwords,
                stemmer=self._stem,
                show_progress=show,
            )
            if not tokens.vocab:  # bm25s fails with "max() arg is an empty sequence"
                raise ValueError(
                    f"corpus {corpus.path or ''}: no passage has a word BM25 can index (words "
                    "of 2+ letters that are not stop words)"
                )
            model = bm25s.BM25(k1=k1, b=b, method=method)
            model.index(tokens, show_progress=show)
            del tokens
            model.save(str(tmp), show_progress=False)
            (tmp / "docs.json").write_text(json.dumps({"num_docs": len(corpus)}))

        def open_(index_dir: Path) -> Any:
            if _num_docs(index_dir) != len(corpus):
                raise ValueError(f"{index_dir / 'docs.json'}: another passage count")
            # small: read into memory; large: memory-mapped, every process shares the pages
            mmap = map_mode(index_dir) is not None
            model = bm25s.BM25.load(str(index_dir), mmap=mmap, show_progress=False, verbosity=0)
            check_bm25s(model, index_dir)
            return model

        self.index_dir = folder
        self._model, self.built_now = open_index(folder, build, open_, "SearchQA BM25")

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
        docs, scores = [], []
        for query_tokens in tokens:
            # bm25s' retrieve() without its thread pool, np.add.at and full-array partition:
            # the same float32 scores; ties in passage order (Lucene's rule too)
            row = self.scores(query_tokens)
            top = top_k(row, k)
            docs.append(top.tolist())
            scores.append(row[top].tolist())
        # Lucene returns matching passages only (top_k keeps positive scores)
        return hits_from_rows(self.corpus, docs, scores, lambda i, sc: sc > 0.0)

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        """BM25 score of every passage for tokenised query ``query_tokens`` (``bm25s``'
        ``get_scores``, with ``scores[docs] += weights`` for its ``np.add.at``: a token's
        postings name each passage once, so the float32 sums are the same, in the same order)."""
        model = self._model
        index = model.scores
        scores = np.zeros(int(index["num_docs"]), dtype=np.dtype(model.dtype))
        ids = model.get_tokens_ids(query_tokens) if query_tokens else []
        data, indices, indptr = index["data"], index["indices"], index["indptr"]
        for t in ids:
            start, end = int(indptr[t]), int(indptr[t + 1])
            docs = np.asarray(indices[start:end]).astype(np.intp, copy=False)
            scores[docs] += np.asarray(data[start:end])
        if model.nonoccurrence_array is not None and ids:  # not for method="lucene"
            scores += model.nonoccurrence_array[np.asarray(ids)].sum()
        return scores

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "num_docs": len(self.corpus), **self.params}
