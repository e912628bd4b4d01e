"""Compact on-disk catalog for large WebShop data sets (docs/webshop.md, "Large catalogs").

A catalog loaded by :func:`mvpo_envs.webshop.data.load_data_dir` is written once into a cache
folder ``<cache_dir>/catalog-<fingerprint>/`` and from then on opened memory-mapped:

* ``products.bin`` + ``products.off.npy``: every processed product as one UTF-8 JSON record
  (key order kept), ``int64`` offsets into the blob; a product is decoded when it is read;
* ``asins.npy`` (product order) and ``asins.sorted.npy`` + ``asins.order.npy``: lookup by asin
  with a binary search, no per-process dict;
* ``prices.npy``: the seeded price of every product (product order);
* ``goals.bin`` + ``goals.off.npy``: the shuffled goals, decoded when read;
* ``bm25s-<key>/``: the search index (:class:`~mvpo_envs.webshop.search.BM25sRetriever`),
  loaded with ``mmap=True``;
* ``meta.json``: counts and the fingerprint;
* ``cache-manifest.json``: every file's size and SHA-256 (the index's too), written last
  (:mod:`mvpo_envs.cache_files`): checked at open (sizes always, digests for folders up to
  256 MiB, which are also read into memory rather than mapped), with the offsets and the asin
  order; a damaged or unfinished folder is one warning line and rebuilt once.

The folder is built in a temporary sibling and renamed into place, so concurrent builders and
readers never see half a catalog. Every process (and every env of a process, through the
caches of :mod:`mvpo_envs.webshop.env`) maps the same files, so the OS page cache holds one copy
per machine. Reads give the same dicts as the in-memory loader (JSON round trip of JSON-loaded
data), so pages, rewards and rankings are unchanged.

The fingerprint covers the resolved source files (path, size, modification time), the loader
arguments and :data:`STORE_VERSION`; a file rewritten in place with the same size and time is
caught by the source files' SHA-256 recorded in ``meta.json`` when they hold at most 256 MiB
(else with ``MVPO_CACHE_VERIFY=1``; :func:`mvpo_envs.cache_files.check_sources`), and rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from mvpo_envs.cache_files import (
    MANIFEST,
    build_into,
    check_sources,
    map_mode,
    open_verified,
    read_blob,
    sources_digest,
)

STORE_VERSION = 2
META = "meta.json"


def _progress(iterable, total: int, desc: str, show: bool):
    if not show:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="rec", mininterval=1.0)


def fingerprint(files: Sequence[Path | None], params: dict[str, Any]) -> str:
    """A short hash of the source files' identity (path, size, mtime) and the load parameters."""
    h = hashlib.sha256(json.dumps({"v": STORE_VERSION, **params}, sort_keys=True).encode())
    for f in files:
        if f is None:
            h.update(b"-\0")
            continue
        st = Path(f).stat()
        h.update(f"{Path(f).resolve()}\0{st.st_size}\0{st.st_mtime_ns}\1".encode())
    return h.hexdigest()[:20]


def _write_records(folder: Path, name: str, records, total: int, show: bool) -> None:
    offsets = np.zeros(total + 1, dtype=np.int64)
    pos = 0
    with open(folder / f"{name}.bin", "wb") as f:
        for i, rec in enumerate(_progress(records, total, f"store {name}", show)):
            blob = json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            f.write(blob)
            pos += len(blob)
            offsets[i + 1] = pos
    np.save(folder / f"{name}.off.npy", offsets)


class Records(Sequence):
    """A read-only sequence of JSON records in one blob (``<name>.bin`` + ``<name>.off.npy``)."""

    def __init__(self, folder: Path, name: str, index: range | None = None):
        self._folder, self._name = folder, name
        mode = map_mode(folder)
        self._off = np.load(folder / f"{name}.off.npy", mmap_mode=mode)
        self._blob = read_blob(folder / f"{name}.bin", mode)
        if mode is None:  # in memory: the structure is cheap to check too
            off = np.asarray(self._off)
            if off[0] != 0 or off[-1] != len(self._blob) or (np.diff(off) < 0).any():
                raise ValueError(f"{folder / (name + '.off.npy')}: offsets do not fit the blob")
        elif int(self._off[-1]) != len(self._blob):
            raise ValueError(f"{folder / (name + '.off.npy')}: offsets do not fit the blob")
        self._index = index  # a view: positions into the full record list

    def __len__(self) -> int:
        return len(self._index) if self._index is not None else len(self._off) - 1

    def position(self, i: int) -> int:
        """Where the ``i``-th record of this (possibly sliced) sequence is in the full list."""
        return int(self._index[i]) if self._index is not None else int(i)

    def raw(self, i: int) -> bytes:
        j = int(self._index[i]) if self._index is not None else i
        return bytes(self._blob[int(self._off[j]) : int(self._off[j + 1])])

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> Records: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            base = self._index if self._index is not None else range(len(self))
            view = Records.__new__(Records)
            view._folder, view._name, view._off, view._blob = (
                self._folder,
                self._name,
                self._off,
                self._blob,
            )
            view._index = base[i]
            return view
        n = len(self)
        if isinstance(i, bool) or not -n <= int(i) < n:
            raise IndexError(f"record {i} not in a list of {n}")
        return json.loads(self.raw(int(i) % n))

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield json.loads(self.raw(i))


class Asins(Sequence):
    """The asins in product order, memory-mapped (``asins.npy``, fixed-width UTF-8)."""

    def __init__(self, folder: Path):
        mode = map_mode(folder)
        self._a = np.load(folder / "asins.npy", mmap_mode=mode)
        self._sorted = np.load(folder / "asins.sorted.npy", mmap_mode=mode)
        self._order = np.load(folder / "asins.order.npy", mmap_mode=mode)
        if not len(self._a) == len(self._sorted) == len(self._order):
            raise ValueError(f"{folder}: asin arrays of different lengths")
        if mode is None and len(self._a) and not (self._a[self._order] == self._sorted).all():
            raise ValueError(f"{folder / 'asins.order.npy'}: does not sort asins.npy")

    def __len__(self) -> int:
        return len(self._a)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return bytes(self._a[i]).decode("utf-8")

    def index_of(self, asin: Any) -> int:
        """Position of ``asin`` in product order, or -1."""
        if not isinstance(asin, str):
            return -1
        key = asin.encode("utf-8")
        if len(key) > self._sorted.dtype.itemsize:
            return -1
        pos = int(np.searchsorted(self._sorted, key))
        if pos < len(self._sorted) and bytes(self._sorted[pos]) == key:
            return int(self._order[pos])
        return -1


class _ByAsin(Mapping):
    """A ``Mapping`` keyed by the asins of an :class:`Asins`, in product order."""

    asins: Asins

    def _index(self, asin: str) -> int:
        i = self.asins.index_of(asin)
        if i < 0:
            raise KeyError(asin)
        return i

    def __contains__(self, asin: object) -> bool:
        return self.asins.index_of(asin) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self.asins)

    def __len__(self) -> int:
        return len(self.asins)


class ProductStore(_ByAsin):
    """asin -> processed product, decoded from the blob on each read (a ``Mapping``)."""

    def __init__(self, asins: Asins, records: Records, recent: int = 1024):
        self.asins, self.records = asins, records
        # a page reads the same few products several times; the in-memory catalog hands out
        # one shared dict per product too, so a cached decode is the same contract
        self._read = functools.lru_cache(maxsize=recent)(self._decode)

    def _decode(self, asin: str) -> dict[str, Any]:
        return self.records[self._index(asin)]

    def __getitem__(self, asin: str) -> dict[str, Any]:
        return self._read(asin)

    def values(self):  # type: ignore[override]
        return self.records


class PriceStore(_ByAsin):
    """asin -> price (``prices.npy``), the same floats the in-memory loader draws."""

    def __init__(self, asins: Asins, prices: np.ndarray):
        self.asins, self._p = asins, prices

    def __getitem__(self, asin: str) -> float:
        return float(self._p[self._index(asin)])


def _source_paths(files: Mapping[str, Any]) -> list[Path]:
    """The source files of a catalog that exist (``WebShopData.files``), in a fixed order."""
    paths = [Path(str(files[k])) for k in sorted(files) if files[k]]
    return [p for p in paths if p.is_file()]


def _finished(folder: Path) -> bool:
    return (folder / MANIFEST).exists()


def build(folder: Path, data: Any, show_progress: bool = True, release: bool = False) -> None:
    """Write ``data`` (a :class:`~mvpo_envs.webshop.data.WebShopData`) as a compact catalog.

    Deterministic: the same data gives byte-identical files. Builds in a temporary sibling and
    renames it into place (:func:`mvpo_envs.cache_files.build_into`, the manifest last); when
    another process finished first, its folder is kept. ``release=True`` empties ``data``'s
    lists once written (lower peak memory for a throw-away load).
    """
    if _finished(folder):
        return
    build_into(folder, lambda tmp: _write(tmp, data, show_progress, release))


def _write(tmp: Path, data: Any, show_progress: bool, release: bool) -> None:
    """Every file of a compact catalog into the new folder ``tmp``."""
    from mvpo_envs.webshop.search import BM25sRetriever, product_document

    products = data.products
    n = len(products)
    _write_records(tmp, "products", products, n, show_progress)
    _write_records(tmp, "goals", data.goals, len(data.goals), show_progress)
    goal_asins = [g["asin"].encode("utf-8") for g in data.goals]
    gwidth = max((len(a) for a in goal_asins), default=1) or 1
    np.save(tmp / "goals.asins.npy", np.array(goal_asins, dtype=f"S{gwidth}"))
    encoded = [p["asin"].encode("utf-8") for p in products]
    width = max((len(a) for a in encoded), default=1) or 1
    asins = np.array(encoded, dtype=f"S{width}")
    order = np.argsort(asins, kind="stable")
    np.save(tmp / "asins.npy", asins)
    np.save(tmp / "asins.sorted.npy", asins[order])
    np.save(tmp / "asins.order.npy", order.astype(np.int64))
    np.save(tmp / "prices.npy", np.array([data.prices[p["asin"]] for p in products]))
    num_goals = len(data.goals)
    if release:
        data.goals.clear()
        data.prices.clear()
    docs = [product_document(p) for p in _progress(products, n, "store documents", show_progress)]
    ids = [p["asin"] for p in products]
    if release:
        products.clear()
        data.by_asin.clear()
    retriever = BM25sRetriever(ids, docs, cache_dir=tmp, show_progress=show_progress)
    meta = {
        "version": STORE_VERSION,
        "products": n,
        "goals": num_goals,
        "bm25s": retriever.cache_path.name if retriever.cache_path else None,
        "source": data.source,
        "files": data.files,
        "sources_sha256": sources_digest(_source_paths(data.files)),
    }
    (tmp / META).write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")


class CompactData:
    """A compact catalog opened from its folder; the attributes of ``WebShopData``.

    ``products`` (a sequence, decoded on read), ``by_asin`` (a mapping), ``prices``, ``goals``,
    ``source``, ``files``, ``split()``; ``folder`` and ``bm25s_dir`` locate the files.
    """

    def __init__(self, folder: Path):
        from mvpo_envs.data_files import load_json

        meta = load_json(folder / META, "WebShop compact catalog metadata")
        if meta.get("version") != STORE_VERSION:
            raise ValueError(f"{folder}: compact catalog version {meta.get('version')!r}")
        self.folder = folder
        self.asins = Asins(folder)
        self.products = Records(folder, "products")
        self.by_asin = ProductStore(self.asins, self.products)
        self.prices = PriceStore(self.asins, np.load(folder / "prices.npy", mmap_mode="r"))
        self.goals = Records(folder, "goals")
        self.goal_asins = np.load(folder / "goals.asins.npy", mmap_mode="r")
        self.source = str(meta["source"])
        self.files = dict(meta.get("files") or {})
        self.sources_sha256 = meta.get("sources_sha256")
        self.bm25s_dir = folder / meta["bm25s"] if meta.get("bm25s") else None
        if len(self.products) != meta["products"] or len(self.goals) != meta["goals"]:
            raise ValueError(f"{folder}: compact catalog counts do not match {META}")

    def split(self, split: str, num_test: int | None = None):
        from mvpo_envs.webshop.data import NUM_TEST_GOALS, SPLITS

        num_test = NUM_TEST_GOALS if num_test is None else num_test
        if split == "test":
            return self.goals[:num_test]
        if split == "train":
            return self.goals[num_test:]
        if split == "all":
            return self.goals[:]
        raise ValueError(f"unknown WebShop split {split!r}; use one of {SPLITS}")


class TaskIds(Sequence):
    """``f"{prefix}-{i:05d}-{asin}"`` for every goal of a split, computed on read (no list)."""

    def __init__(self, prefix: str, goals: Records, goal_asins: np.ndarray):
        self._prefix, self._goals, self._asins = prefix, goals, goal_asins

    def __len__(self) -> int:
        return len(self._goals)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if isinstance(i, bool) or not -n <= int(i) < n:
            raise IndexError(f"task {i} not in a split of {n}")
        i = int(i) % n
        asin = bytes(self._asins[self._goals.position(i)]).decode("utf-8")
        return f"{self._prefix}-{i:05d}-{asin}"

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        """Position of a task id, read from its ``-<index>-`` part (then checked)."""
        if isinstance(value, str) and value.startswith(self._prefix + "-"):
            number = value[len(self._prefix) + 1 :].split("-", 1)[0]
            if number.isdigit() and int(number) < len(self) and self[int(number)] == value:
                return int(number)
        raise ValueError(f"{value!r} is not a task id of this split")


def open_or_build(folder: Path, load, show_progress: bool = True) -> CompactData:
    """Open the compact catalog at ``folder``, building it first from ``load()`` if needed.

    Verified at open (:func:`mvpo_envs.cache_files.open_verified`): a folder that does not match
    its manifest or cannot be opened (an older version, damaged files, a broken index) is one
    warning line and rebuilt once; damaged again, one ``CacheError`` line.
    """

    def open_(f: Path) -> CompactData:
        data = CompactData(f)
        check_sources(f, data.sources_sha256, _source_paths(data.files))
        if data.bm25s_dir is not None:
            from mvpo_envs.webshop.search import BM25sRetriever

            BM25sRetriever.from_saved(data.bm25s_dir, data.asins)  # opens and checks it
        return data

    opened, _ = open_verified(
        folder,
        lambda tmp: _write(tmp, load(), show_progress, True),
        open_,
        "WebShop compact catalog",
    )
    return opened
