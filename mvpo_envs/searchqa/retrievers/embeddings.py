"""Passage embeddings on disk, in shards, built resumably (docs/searchqa.md, "Large corpora").

The dense indexes (:mod:`~mvpo_envs.searchqa.retrievers.dense`) are built from a folder of
embedding shards: ``shard-000000.npy`` holds the L2-normalised float32 vectors of passages
``[0, SHARD_ROWS)``, the next shard the next ``SHARD_ROWS``, and so on; ``meta.json`` says the
passage count, shard size and model, and ``DONE`` marks a folder whose every shard is written.
Each shard has its SHA-256 beside it (``shard-000000.npy.sha256``), written with it; every
build of an index from the folder checks them all, and a damaged shard, or one without its
digest, is encoded again after one warning line (caches are verified, not trusted).
Each shard is encoded in one call (the same passages in the same batches wherever a build
stopped, so a resumed build writes the same vectors as an uninterrupted one), written to a
temporary file of the process and renamed (processes that build at once only repeat work): an interrupted build loses at most the shard it was encoding and
restarts after the last finished shard. The folder lives beside the indexes in the cache under
``index_key(corpus hash, "embeddings", model, model_fingerprint, passage_prefix)``.

The command line that builds them is
:mod:`~mvpo_envs.searchqa.retrievers.build_embeddings` (it needs the dense retriever's
settings, and the dense retriever needs this module).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_envs.cache_files import file_sha256

#: passages per shard (one ``encode`` call; at most this many are lost by an interruption)
SHARD_ROWS = 4096
META = "meta.json"
DONE = "DONE"

Encode = Callable[[list[str]], np.ndarray]


def shard_path(folder: Path, index: int) -> Path:
    return folder / f"shard-{index:06d}.npy"


def shard_count(num_docs: int, shard_rows: int = SHARD_ROWS) -> int:
    return (num_docs + shard_rows - 1) // shard_rows


def _check_meta(folder: Path, meta: dict[str, Any]) -> None:
    path = folder / META
    if path.is_file():
        found = json.loads(path.read_text())
        if found != meta:
            raise RuntimeError(
                f"embedding folder {folder} holds {found}, not {meta}; delete it to rebuild"
            )
    else:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{META}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(meta, sort_keys=True))
        os.replace(tmp, path)


def digest_path(path: Path) -> Path:
    """The SHA-256 sidecar of shard ``path`` (``shard-000000.npy.sha256``)."""
    return path.with_name(path.name + ".sha256")


def _shard_ok(path: Path, rows: int) -> bool:
    """The shard has ``rows`` float32 rows and the digest recorded when it was written."""
    try:
        arr = np.load(path, mmap_mode="r")
        recorded = digest_path(path).read_text().strip()
    except (OSError, ValueError, EOFError):
        return False
    if not (arr.ndim == 2 and arr.shape[0] == rows and arr.dtype == np.float32):
        return False
    return recorded == file_sha256(path)


def _write_shard(path: Path, emb: np.ndarray) -> None:
    """``emb`` to ``path`` and its digest beside it, each written to a file of this process and
    renamed (builders may race: each has its own file). A shard without its digest counts as
    not written."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        np.save(f, emb)
    dtmp = digest_path(path).with_name(f"{digest_path(path).name}.{os.getpid()}.tmp")
    dtmp.write_text(file_sha256(tmp) + "\n")
    os.replace(tmp, path)
    os.replace(dtmp, digest_path(path))


def rows_done(folder: Path, num_docs: int, shard_rows: int = SHARD_ROWS) -> int:
    """How many leading passages of the corpus have their shard written."""
    done = 0
    for i in range(shard_count(num_docs, shard_rows)):
        rows = min(shard_rows, num_docs - i * shard_rows)
        if not shard_path(folder, i).is_file():
            break
        done += rows
    return done


def rows_written(
    folder: Path, num_docs: int, shard_rows: int = SHARD_ROWS, part: tuple[int, int] = (0, 1)
) -> int:
    """How many passages have their shard written, gaps or not (a build shared by parts);
    ``part=(i, n)``: only the shards of that part (shard ``k`` with ``k % n == i``)."""
    which, parts = part
    return sum(
        min(shard_rows, num_docs - i * shard_rows)
        for i in range(shard_count(num_docs, shard_rows))
        if i % parts == which and shard_path(folder, i).is_file()
    )


def embed_corpus(
    corpus: Any,
    encode: Encode,
    folder: Path,
    meta: dict[str, Any],
    *,
    passage_prefix: str = "",
    limit: int | None = None,
    show_progress: bool = False,
    shard_rows: int = SHARD_ROWS,
    part: tuple[int, int] = (0, 1),
) -> bool:
    """Write the missing shards of ``corpus``'s embeddings into ``folder``; True when complete.

    ``limit`` stops after the shards that cover the first ``limit`` passages (a partial build,
    resumed by a later call). ``part=(i, n)`` writes only the shards whose number is ``i``
    modulo ``n``, so that ``n`` processes (one torch thread each) share a build. ``meta``
    (model identity, prefix) must match a folder's existing ``meta.json``.
    """
    which, parts = part
    if not 0 <= which < parts:
        raise ValueError(f"part must be (i, n) with 0 <= i < n, got {part}")
    n = len(corpus)
    _check_meta(folder, {**meta, "num_docs": n, "shard_rows": shard_rows})
    total = shard_count(n, shard_rows)
    if (folder / DONE).is_file():
        damaged = [
            shard_path(folder, i).name
            for i in range(total)
            if not _shard_ok(shard_path(folder, i), min(shard_rows, n - i * shard_rows))
        ]
        if not damaged:
            return True
        print(
            f"warning: embedding folder {folder}: {len(damaged)} shard(s) damaged or without "
            f"their digest (first {damaged[0]}); encoding them again",
            file=sys.stderr,
        )
        (folder / DONE).unlink()
    wanted = total if limit is None else min(total, shard_count(min(limit, n), shard_rows))
    bar = None
    if show_progress:
        from tqdm import tqdm

        mine = [i for i in range(wanted) if i % parts == which]
        rows = sum(min(n, (i + 1) * shard_rows) - i * shard_rows for i in mine)
        bar = tqdm(total=rows, desc=f"embeddings {which + 1}/{parts}", unit="psg", mininterval=1.0)
    for i in range(which, wanted, parts):
        path = shard_path(folder, i)
        start, stop = i * shard_rows, min(n, (i + 1) * shard_rows)
        if path.is_file() and _shard_ok(path, stop - start):
            if bar is not None:
                bar.update(stop - start)
            continue
        texts = [passage_prefix + _contents(corpus, j) for j in range(start, stop)]
        emb = np.ascontiguousarray(encode(texts), dtype=np.float32)
        if emb.shape[0] != stop - start:
            raise RuntimeError(f"encoder returned {emb.shape[0]} rows for {stop - start} texts")
        _write_shard(path, emb)
        if bar is not None:
            bar.update(stop - start)
    if bar is not None:
        bar.close()
    if wanted < total or rows_done(folder, n, shard_rows) < n:  # the other parts' shards too
        return False
    (folder / DONE).write_text("ok\n")
    return True


def _contents(corpus: Any, i: int) -> str:
    contents = getattr(corpus, "contents", None)  # a compact corpus reads only the text
    return contents(i) if callable(contents) else corpus[i].contents


def iter_shards(folder: Path, num_docs: int | None = None) -> Iterator[np.ndarray]:
    """The first ``num_docs`` rows (default: all) shard by shard, memory-mapped; a missing
    shard is an error."""
    meta = json.loads((folder / META).read_text())
    n = meta["num_docs"] if num_docs is None else num_docs
    size = meta["shard_rows"]
    for i in range(shard_count(n, size)):
        path = shard_path(folder, i)
        if not path.is_file():
            raise FileNotFoundError(f"embedding shard missing: {path} (resume the build)")
        yield np.load(path, mmap_mode="r")[: n - i * size]


def load_rows(folder: Path, rows: np.ndarray) -> np.ndarray:
    """The vectors of the passages ``rows`` (sorted or not), read shard by shard."""
    meta = json.loads((folder / META).read_text())
    size = meta["shard_rows"]
    rows = np.asarray(rows, dtype=np.int64)
    out: np.ndarray | None = None
    for shard in np.unique(rows // size):
        arr = np.load(shard_path(folder, int(shard)), mmap_mode="r")
        if out is None:
            out = np.empty((len(rows), arr.shape[1]), dtype=np.float32)
        mask = rows // size == shard
        out[mask] = arr[rows[mask] - shard * size]
    return out if out is not None else np.empty((0, 0), dtype=np.float32)
