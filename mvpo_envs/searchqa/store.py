"""Compact on-disk corpus for large SearchQA corpora (docs/searchqa.md, "Large corpora").

A corpus jsonl opened with :func:`load_corpus_compact` is written once into
``<cache_dir>/corpus-<fingerprint>/`` and from then on opened memory-mapped, so a million
passages are not a million Python objects in every env or worker:

* ``contents.bin`` + ``contents.off.npy``: every passage's ``contents`` (UTF-8), ``int64``
  offsets; a :class:`~mvpo_envs.searchqa.data.Doc` is made when a passage is read;
* ``ids.npy`` (file order, fixed-width UTF-8) and ``ids.order.npy`` (the order that sorts them):
  lookup by id with a binary search, no per-process dict;
* ``meta.json``: the passage count, the file's sha256 (``content_hash``, the same as
  :func:`~mvpo_envs.searchqa.data.load_corpus` gives, so the retrievers' index caches are shared
  between the two forms) and the fingerprint;
* ``cache-manifest.json``: every file's size and SHA-256, written last
  (:mod:`mvpo_envs.cache_files`): checked at open (sizes always, digests for folders up to
  256 MiB, which are also read into memory rather than mapped); a damaged folder is one
  warning line and rebuilt once. Opening also checks the offsets (non-decreasing, ending at
  the blob's size) and the id order.

Rows are checked exactly as :func:`~mvpo_envs.searchqa.data.load_corpus` checks them (one
:class:`~mvpo_envs.data_files.DataFileError` line naming the file, the line and the field). The
folder is built in a temporary sibling and renamed into place, so concurrent builders and
readers never see half a corpus; every process of a machine maps the same files (one copy in the
page cache). The fingerprint covers the resolved path, size and modification time of the file
and :data:`STORE_VERSION`; a file rewritten in place with the same size and time is caught by
the file's SHA-256 recorded in ``meta.json`` when it has at most 256 MiB (else with
``MVPO_CACHE_VERIFY=1``; :func:`mvpo_envs.cache_files.check_sources`), and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from mvpo_envs.cache_files import (
    check_sources,
    map_mode,
    open_verified,
    read_blob,
    sources_digest,
)
from mvpo_envs.data_files import DataFileError
from mvpo_envs.searchqa.data import Doc, RowError, passage_from_row, read_rows

STORE_VERSION = 2
META = "meta.json"
_CHUNK = 1 << 16  # passages per write


def fingerprint(path: Path) -> str:
    """A short hash of the file's identity (resolved path, size, mtime) and the store version."""
    st = path.stat()
    key = f"{STORE_VERSION}\0{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}"
    return hashlib.sha256(key.encode()).hexdigest()[:20]


class _Docs(Sequence):
    """The passages of a :class:`CompactCorpus` as a read-only sequence of ``Doc``."""

    def __init__(self, corpus: CompactCorpus):
        self._corpus = corpus

    def __len__(self) -> int:
        return len(self._corpus)

    @overload
    def __getitem__(self, i: int) -> Doc: ...
    @overload
    def __getitem__(self, i: slice) -> list[Doc]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._corpus[j] for j in range(*i.indices(len(self)))]
        return self._corpus[i]

    def __iter__(self) -> Iterator[Doc]:
        return self._corpus.iter_docs()


class CompactCorpus:
    """A corpus opened from its compact folder; the interface of
    :class:`~mvpo_envs.searchqa.data.Corpus` (``len``, ``[i]``, ``get(id)``, ``docs``,
    ``content_hash``, ``path``), read from memory-mapped files."""

    def __init__(self, folder: Path, path: Path | None = None):
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
        if meta.get("version") != STORE_VERSION:
            raise ValueError(f"{folder}: compact corpus version {meta.get('version')!r}")
        self.folder, self.path = folder, path
        self.content_hash = str(meta["content_hash"])
        self.sources_sha256 = meta.get("sources_sha256")
        mode = map_mode(folder)
        self._off = np.load(folder / "contents.off.npy", mmap_mode=mode)
        self._blob = read_blob(folder / "contents.bin", mode)
        self._ids = np.load(folder / "ids.npy", mmap_mode=mode)
        self._order = np.load(folder / "ids.order.npy", mmap_mode=mode)
        if not len(self._off) - 1 == len(self._ids) == len(self._order) == meta["passages"]:
            raise ValueError(f"{folder}: compact corpus counts do not match {META}")
        if mode is None:  # in memory: the structure is cheap to check too
            off = np.asarray(self._off)
            if off[0] != 0 or off[-1] != len(self._blob) or (np.diff(off) < 0).any():
                raise ValueError(f"{folder / 'contents.off.npy'}: offsets do not fit the blob")
            ids = np.asarray(self._ids)[np.asarray(self._order)]
            if len(ids) > 1 and not (ids[1:] > ids[:-1]).all():
                raise ValueError(f"{folder / 'ids.order.npy'}: does not sort the ids")
        self.docs = _Docs(self)

    def __len__(self) -> int:
        return len(self._ids)

    def contents(self, i: int) -> str:
        return bytes(self._blob[int(self._off[i]) : int(self._off[i + 1])]).decode("utf-8")

    def doc_id(self, i: int) -> str:
        return bytes(self._ids[i]).decode("utf-8")

    def __getitem__(self, i: int) -> Doc:
        n = len(self)
        if isinstance(i, bool) or not -n <= int(i) < n:
            raise IndexError(f"passage {i} not in a corpus of {n}")
        i = int(i) % n
        return Doc(self.doc_id(i), self.contents(i))

    def iter_docs(self, chunk: int = _CHUNK) -> Iterator[Doc]:
        """Every passage in file order, read a block of offsets at a time."""
        for start in range(0, len(self), chunk):
            stop = min(start + chunk, len(self))
            off = np.asarray(self._off[start : stop + 1])
            blob = bytes(self._blob[int(off[0]) : int(off[-1])])
            base = int(off[0])
            for j in range(stop - start):
                text = blob[int(off[j]) - base : int(off[j + 1]) - base].decode("utf-8")
                yield Doc(bytes(self._ids[start + j]).decode("utf-8"), text)

    def index_of(self, doc_id: Any) -> int:
        """Position of passage ``doc_id`` in file order, or -1."""
        if not isinstance(doc_id, str):
            return -1
        key = doc_id.encode("utf-8")
        if len(key) > self._ids.dtype.itemsize:
            return -1
        lo, hi = 0, len(self._order)
        while lo < hi:  # binary search through the sorting order (no sorted copy in memory)
            mid = (lo + hi) // 2
            if bytes(self._ids[int(self._order[mid])]) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self._order) and bytes(self._ids[int(self._order[lo])]) == key:
            return int(self._order[lo])
        return -1

    def get(self, doc_id: str) -> Doc | None:
        i = self.index_of(doc_id)
        return None if i < 0 else self[i]


def _progress(iterable, total: int | None, desc: str, show: bool):
    if not show:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="psg", mininterval=1.0)


def build(tmp: Path, path: Path, show_progress: bool = True) -> None:
    """Write the corpus jsonl ``path`` as a compact folder into the new folder ``tmp``
    (deterministic bytes; :func:`mvpo_envs.cache_files.build_into` renames it)."""
    digest = hashlib.sha256()
    offsets, ids, lines = [0], [], []
    pos = 0
    rows = _progress(read_rows(path, "corpus file"), None, "corpus store", show_progress)
    with open(tmp / "contents.bin", "wb") as out:
        pending: list[bytes] = []
        for lineno, row in rows:
            try:
                doc = passage_from_row(row, len(ids))
            except RowError as err:
                raise DataFileError(f"{path}, line {lineno}: {err}") from None
            blob = doc.contents.encode("utf-8")
            pending.append(blob)
            pos += len(blob)
            offsets.append(pos)
            ids.append(doc.id.encode("utf-8"))
            lines.append(lineno)
            if len(pending) >= _CHUNK:
                out.write(b"".join(pending))
                pending.clear()
        out.write(b"".join(pending))
    if not ids:
        raise DataFileError(f"{path}: the corpus holds no passages")
    width = max(len(i) for i in ids)
    id_arr = np.array(ids, dtype=f"S{width}")
    del ids
    order = np.argsort(id_arr, kind="stable")
    sorted_ids = id_arr[order]
    same = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
    if len(same):
        first, dup = int(order[same[0]]), int(order[same[0] + 1])
        raise DataFileError(
            f"{path}, line {lines[dup]}: id: duplicate passage id "
            f"{id_arr[dup].decode('utf-8')!r} (first at line {lines[first]})"
        )
    del sorted_ids
    np.save(tmp / "contents.off.npy", np.array(offsets, dtype=np.int64))
    np.save(tmp / "ids.npy", id_arr)
    np.save(tmp / "ids.order.npy", order.astype(np.int64))
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    meta = {
        "version": STORE_VERSION,
        "passages": len(id_arr),
        "content_hash": digest.hexdigest(),
        "source": str(path.resolve()),
        "fingerprint": fingerprint(path),
        "sources_sha256": sources_digest([path]),
    }
    (tmp / META).write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")


def store_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Where compact corpora live: ``cache_dir``, else the retrievers' cache folder."""
    from mvpo_envs.searchqa.retrievers.base import default_cache_dir

    return Path(cache_dir) if cache_dir is not None else default_cache_dir()


def open_or_build(
    path: str | os.PathLike, cache_dir: str | os.PathLike | None = None, show_progress: bool = True
) -> CompactCorpus:
    """The compact form of corpus ``path``, built first if needed; verified at open, a damaged
    folder rebuilt once (:func:`mvpo_envs.cache_files.open_verified`)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    folder = store_root(cache_dir) / f"corpus-{fingerprint(path)}"

    def open_(f: Path) -> CompactCorpus:
        corpus = CompactCorpus(f, path)
        check_sources(f, corpus.sources_sha256, [path])
        return corpus

    corpus, _ = open_verified(
        folder, lambda tmp: build(tmp, path, show_progress), open_, "SearchQA compact corpus"
    )
    return corpus


_OPEN: dict[tuple[str, str], CompactCorpus] = {}


def load_corpus_compact(
    path: str | os.PathLike, cache_dir: str | os.PathLike | None = None, show_progress: bool = True
) -> CompactCorpus:
    """:func:`open_or_build` once per process, file version and cache folder (every env of a
    process shares the instance)."""
    resolved = Path(path).expanduser().resolve()
    key = (fingerprint(resolved), str(store_root(cache_dir)))
    if key not in _OPEN:
        _OPEN[key] = open_or_build(resolved, cache_dir, show_progress)
    return _OPEN[key]


#: ``corpus_store=``: in memory, compact (memory-mapped), or compact from a size on
CORPUS_STORES = ("auto", "memory", "compact")
#: ``corpus_store="auto"`` opens a corpus file of this size or more as a compact store
COMPACT_AUTO_BYTES = 64 * 2**20


def open_corpus(
    path: str | os.PathLike, store: str = "auto", cache_dir: str | os.PathLike | None = None
) -> Any:
    """Corpus ``path`` shared by the process: in memory (:func:`load_corpus_shared`) or compact
    (:func:`load_corpus_compact`); ``"auto"`` picks compact for files of
    :data:`COMPACT_AUTO_BYTES` or more."""
    from mvpo_envs.searchqa.data import load_corpus_shared

    if store not in CORPUS_STORES:
        raise ValueError(f"corpus_store must be one of {CORPUS_STORES}, got {store!r}")
    path = Path(path).expanduser()
    if store == "auto":
        if not path.is_file():
            raise FileNotFoundError(f"corpus file not found: {path}")
        store = "compact" if path.stat().st_size >= COMPACT_AUTO_BYTES else "memory"
    if store == "memory":
        return load_corpus_shared(path)
    return load_corpus_compact(path, cache_dir)
