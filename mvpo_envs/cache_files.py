"""Verified cache folders: a manifest of every file's size and digest, checked at open;
a damaged folder is rebuilt once (docs/environments.md, "Caches").

Every on-disk cache of the envs (WebShop's compact catalog and bm25s index, SearchQA's
compact corpus and its bm25s and faiss indexes) is a folder written by a builder into a
temporary sibling, with :func:`write_manifest` last (``cache-manifest.json``: each file's
relative path, size and SHA-256), and renamed into place: a folder is never written in place.
:func:`open_verified` opens one:

* **at open** the sizes of all files are always checked against the manifest (a truncated,
  extended, missing or extra file is noticed); the digests too when the folder holds at most
  :data:`VERIFY_BYTES` (256 MiB: about a quarter second of hashing), or always with
  ``MVPO_CACHE_VERIFY=1`` (``verify=True``), so a flipped byte or swapped arrays of a small
  cache never give silently different results; a larger cache checks digests at build and on
  that documented path only;
* a mismatch, or any error while opening (a decode error, a short array, a broken sidecar)
  is **one warning line** (logger ``mvpo.cache``), the folder is removed and rebuilt once; a
  second failure is one :class:`CacheError` line naming the file;
* **truncation under a running process**: a folder of at most :data:`VERIFY_BYTES` is read
  into memory at open (:func:`map_mode` is ``None``), so ``cp`` or ``rsync --inplace`` over it
  later cannot touch a running process. A larger folder stays memory-mapped (every process of
  a machine shares one page-cache copy); truncating one of its files under a running process
  ends that process with ``SIGBUS`` (exit 135): replace cache files by renaming, never in
  place (``rsync`` without ``--inplace``), or stop the processes first. A private mapping
  would not help: pages not yet read still come from the file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

MANIFEST = "cache-manifest.json"
#: folders up to this size are digest-checked at every open and read into memory
VERIFY_BYTES = 256 << 20
#: what opening a damaged cache may raise besides :class:`CacheDamaged`
OPEN_ERRORS = (OSError, ValueError, KeyError, IndexError, EOFError, TypeError, RuntimeError)
log = logging.getLogger("mvpo.cache")


class CacheDamaged(Exception):
    """A cache folder does not match its manifest (the message names the file)."""


class CacheError(RuntimeError):
    """A cache folder was damaged again right after its rebuild: one line naming the file."""


def cache_dir() -> Path:
    """The project's cache folder: ``$MVPO_CACHE_DIR``, else ``$XDG_CACHE_HOME/mvpo``, else
    ``~/.cache/mvpo`` (generated ALFWorld splits, indexes, the MiniLM export)."""
    if os.environ.get("MVPO_CACHE_DIR"):
        return Path(os.environ["MVPO_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "mvpo"


def _files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and p.name != MANIFEST
    )


def file_sha256(path: Path) -> str:
    """The SHA-256 of one file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def write_manifest(folder: Path) -> None:
    """Record every file of ``folder`` (recursively): size and SHA-256. Call it last, in the
    temporary folder, before renaming it into place."""
    entries = {
        p.relative_to(folder).as_posix(): {"size": p.stat().st_size, "sha256": file_sha256(p)}
        for p in _files(folder)
    }
    tmp = folder / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps({"version": 1, "files": entries}, indent=1, sort_keys=True))
    os.replace(tmp, folder / MANIFEST)


def total_bytes(folder: Path) -> int:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        return sum(int(e["size"]) for e in manifest["files"].values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return sum(p.stat().st_size for p in _files(folder))


def map_mode(folder: Path) -> str | None:
    """``numpy.load``'s ``mmap_mode`` for the files of ``folder``: ``None`` (read into memory)
    up to :data:`VERIFY_BYTES`, else ``"r"`` (module docstring)."""
    return None if total_bytes(folder) <= VERIFY_BYTES else "r"


def verify_manifest(folder: Path, digests: bool | None = None) -> None:
    """Check ``folder`` against its manifest; :class:`CacheDamaged` naming the first file
    that differs. ``digests``: ``None`` for the default (small folders, or
    ``MVPO_CACHE_VERIFY=1``), ``True``/``False`` to force."""
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
        entries = {str(k): (int(v["size"]), str(v["sha256"])) for k, v in manifest["files"].items()}
    except FileNotFoundError:
        raise CacheDamaged(f"{path} is missing (an unfinished or older cache)") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise CacheDamaged(f"{path} is unreadable ({type(err).__name__})") from None
    present = {p.relative_to(folder).as_posix(): p for p in _files(folder)}
    for rel in sorted(set(present) - set(entries)):
        raise CacheDamaged(f"{folder / rel} is not in {MANIFEST}")
    for rel, (size, _) in sorted(entries.items()):
        if rel not in present:
            raise CacheDamaged(f"{folder / rel} is missing")
        actual = present[rel].stat().st_size
        if actual != size:
            raise CacheDamaged(f"{folder / rel} has {actual} bytes, {MANIFEST} says {size}")
    if digests is None:
        digests = (
            os.environ.get("MVPO_CACHE_VERIFY") == "1"
            or sum(s for s, _ in entries.values()) <= VERIFY_BYTES
        )
    if digests:
        for rel, (_, digest) in sorted(entries.items()):
            if file_sha256(present[rel]) != digest:
                raise CacheDamaged(f"{folder / rel} differs from its SHA-256 in {MANIFEST}")


def build_into(folder: Path, build: Callable[[Path], None]) -> None:
    """``build(tmp)`` in a fresh temporary sibling of ``folder``, the manifest written, then
    renamed into place (a concurrent builder that finished first wins)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        build(tmp)
        write_manifest(tmp)
        try:
            os.rename(tmp, folder)
        except OSError:  # another process finished first (or a stale folder is in the way)
            if not (folder / MANIFEST).is_file():
                remove(folder)
                os.rename(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def remove(folder: Path) -> None:
    """Move ``folder`` aside (atomic) and delete it."""
    if not folder.exists():
        return
    aside = folder.with_name(f".{folder.name}.removed-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.rename(folder, aside)
    except OSError:
        aside = folder
    shutil.rmtree(aside, ignore_errors=True)


def open_verified(
    folder: Path,
    build: Callable[[Path], None],
    open_: Callable[[Path], T],
    what: str,
    verify: bool | None = None,
) -> tuple[T, bool]:
    """Open the cache ``folder`` with ``open_(folder)`` after :func:`verify_manifest`; build
    it first (:func:`build_into`) when missing. A damaged folder is one warning line and
    rebuilt once; damaged again: one :class:`CacheError` line. Returns ``(opened, built)``."""
    built = False
    for attempt in (0, 1):
        if not folder.exists():
            build_into(folder, build)
            built = True
        try:
            verify_manifest(folder, verify)
            return open_(folder), built
        except (CacheDamaged, *OPEN_ERRORS) as err:
            reason = " ".join(str(err).split()) or type(err).__name__
            if attempt or built:
                raise CacheError(
                    f"{what} cache {folder} is damaged right after its rebuild: {reason}"
                ) from None
            log.warning("%s cache %s is damaged (%s); rebuilding it once", what, folder, reason)
            remove(folder)
    raise AssertionError("unreachable")  # pragma: no cover


def read_blob(path: Path, mode: str | None) -> Any:
    """A byte file as a ``uint8`` array: read into memory (``mode=None``) or mapped."""
    import numpy as np

    if path.stat().st_size == 0:
        return np.zeros(0, dtype=np.uint8)
    if mode is None:
        return np.fromfile(path, dtype=np.uint8)
    return np.memmap(path, dtype=np.uint8, mode="r")


def check_bm25s(model: Any, folder: Path) -> None:
    """A loaded ``bm25s.BM25`` index fits together (CSR arrays of matching lengths, a
    vocabulary within them); the full scan (order, range, finite scores) when it is in memory.
    A ``ValueError`` naming ``folder`` otherwise."""
    import numpy as np

    scores = model.scores
    data, indices, indptr = scores["data"], scores["indices"], scores["indptr"]
    n_docs = int(scores["num_docs"])
    if not (len(data) == len(indices) == int(indptr[-1]) and len(indptr) >= 2):
        raise ValueError(f"{folder}: bm25s arrays do not fit together")
    if isinstance(indptr, np.memmap):
        return
    if int(indptr[0]) != 0 or (np.diff(indptr) < 0).any():
        raise ValueError(f"{folder}: bm25s indptr is not a non-decreasing row index")
    if len(indices) and (int(np.min(indices)) < 0 or int(np.max(indices)) >= n_docs):
        raise ValueError(f"{folder}: bm25s document indices outside 0..{n_docs - 1}")
    if not np.isfinite(data).all():
        raise ValueError(f"{folder}: bm25s scores are not finite")


def sources_digest(paths: list[Path]) -> str | None:
    """One SHA-256 over the source files ``paths`` (name and bytes of each, in order), or
    None when they hold more than :data:`VERIFY_BYTES` together (then the caches trust their
    path, size and modification time, and ``MVPO_CACHE_VERIFY=1`` hashes them anyway)."""
    sizes = [p.stat().st_size for p in paths]
    if sum(sizes) > VERIFY_BYTES and os.environ.get("MVPO_CACHE_VERIFY") != "1":
        return None
    h = hashlib.sha256()
    for p in paths:
        h.update(f"{p.name}\n".encode())
        with open(p, "rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def check_sources(folder: Path, recorded: str | None, paths: list[Path]) -> None:
    """:class:`CacheDamaged` when the sources a cache was built from changed since (same path,
    size and time, other bytes: a copy that kept the time); ``recorded``: their
    :func:`sources_digest` at build."""
    if recorded is None:
        return
    now = sources_digest(paths)
    if now is not None and now != recorded:
        raise CacheDamaged(f"{folder}: its source files changed since it was built")
