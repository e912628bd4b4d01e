"""Damaged caches: every file of every env cache damaged in turn, the cache opened again.

For each cache (WebShop's compact catalog with its bm25s index; SearchQA's compact corpus, its
bm25s index and its faiss index), built once from the bundled data into a scratch folder,
every file is damaged in turn on a fresh copy by one of :data:`MODES`:

* ``empty``: truncated to zero bytes;
* ``half``: truncated to half its size;
* ``flip``: one byte in the middle inverted (same size);
* ``swap``: its bytes exchanged with the next file's of the folder (sizes swap too);
* ``extend``: 64 bytes appended.

and the cache is opened by the env's own opener and queried. Each run (:func:`run_one`) is
one of: ``rebuilt`` (one warning line, then the same answers as the intact cache), ``same``
(opened without notice, same answers), ``one-line`` (a
:class:`~mvpo_envs.cache_files.CacheError`), ``traceback`` (any other exception) or
``silently-different`` (no notice, other answers). Nothing may be a traceback or silently
different. :func:`run_matrix` runs every (file, mode) pair, :func:`summary` counts the
outcomes and :func:`markdown` is the table ``benchmarks/cache_faults.py`` writes
(docs/environments.md, "Caches"); ``tests/faults/test_cache_faults.py`` runs a small matrix.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mvpo_envs.cache_files import MANIFEST, CacheError

__all__ = [
    "KINDS",
    "MODES",
    "Cache",
    "caches",
    "damage",
    "markdown",
    "run_matrix",
    "run_one",
    "summary",
]

MODES = ("empty", "half", "flip", "swap", "extend")
KINDS = ("webshop-catalog", "searchqa-corpus", "searchqa-bm25", "searchqa-faiss")
QUERIES = ["waterproof boots", "red dress size 8", "coffee maker", "river town", "lake"]


def damage(path: Path, mode: str, files: list[Path]) -> None:
    """Damage ``path`` in place by ``mode`` (module docstring); ``files``: its folder's files."""
    data = path.read_bytes()
    if mode == "empty":
        path.write_bytes(b"")
    elif mode == "half":
        path.write_bytes(data[: len(data) // 2])
    elif mode == "flip":
        if not data:
            path.write_bytes(b"\xff")
            return
        i = len(data) // 2
        path.write_bytes(data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :])
    elif mode == "swap":
        other = files[(files.index(path) + 1) % len(files)]
        if other == path:
            path.write_bytes(data + b"\0")
            return
        path.write_bytes(other.read_bytes())
        other.write_bytes(data)
    elif mode == "extend":
        path.write_bytes(data + bytes(range(64)))
    else:
        raise ValueError(f"unknown mode {mode!r}; known: {MODES}")


class Cache:
    """One cache kind: ``build(root)`` makes it under ``root``; ``answers(root)`` opens it
    with the env's opener and returns comparable answers; ``folder(root)`` is the folder."""

    def __init__(
        self,
        name: str,
        build: Callable[[Path], Any],
        answers: Callable[[Path], Any],
        folder: Callable[[Path], Path],
    ):
        self.name, self.build, self.answers, self.folder = name, build, answers, folder


def _webshop() -> Cache:
    from mvpo_envs.webshop.data import load_bundled
    from mvpo_envs.webshop.search import BM25sRetriever
    from mvpo_envs.webshop.store import open_or_build

    def answers(root: Path) -> Any:
        data = open_or_build(root / "catalog", load_bundled, show_progress=False)
        index = BM25sRetriever.from_saved(data.bm25s_dir, data.asins)
        products = [data.products[i] for i in range(0, len(data.products), 7)]
        goals = [data.goals[i] for i in range(0, len(data.goals), 5)]
        prices = [data.prices[a] for a in list(data.asins)[::7]]
        return [index.search(q, 10) for q in QUERIES], products, goals, prices

    return Cache("webshop-catalog", answers, answers, lambda root: root / "catalog")


def _corpus_path() -> Path:
    from mvpo_envs.searchqa.data import bundled_corpus_path

    return bundled_corpus_path()


def _searchqa_corpus() -> Cache:
    from mvpo_envs.searchqa.store import open_or_build

    def answers(root: Path) -> Any:
        corpus = open_or_build(_corpus_path(), root, show_progress=False)
        return list(corpus.docs), [corpus.get(d.id) for d in list(corpus.docs)[::9]]

    def folder(root: Path) -> Path:
        return next(root.glob("corpus-*"))

    return Cache("searchqa-corpus", answers, answers, folder)


def _searchqa_index(kind: str) -> Cache:
    from mvpo_envs.searchqa.data import load_corpus

    def make(root: Path) -> Any:
        corpus = load_corpus(_corpus_path())
        if kind == "bm25":
            from mvpo_envs.searchqa.retrievers.bm25 import BM25Retriever

            return BM25Retriever(corpus, cache_dir=root)
        from mvpo_envs.searchqa.retrievers.dense import DenseRetriever

        return DenseRetriever(corpus, cache_dir=root, show_progress=False)

    def answers(root: Path) -> Any:
        return make(root).search(QUERIES, 5)

    def folder(root: Path) -> Path:
        prefix = "bm25s-" if kind == "bm25" else "faiss-"
        return next(p for p in root.iterdir() if p.name.startswith(prefix) and p.is_dir())

    return Cache(f"searchqa-{'bm25' if kind == 'bm25' else 'faiss'}", answers, answers, folder)


def caches(kinds: list[str]) -> list[Cache]:
    made = {
        "webshop-catalog": _webshop,
        "searchqa-corpus": _searchqa_corpus,
        "searchqa-bm25": lambda: _searchqa_index("bm25"),
        "searchqa-faiss": lambda: _searchqa_index("faiss"),
    }
    return [made[k]() for k in kinds]


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _forget_opened() -> None:
    """Drop the per-process memo of opened caches (each run opens from disk)."""
    from mvpo_envs.searchqa import store

    store._OPEN.clear()


def run_one(cache: Cache, built: Path, reference: Any, rel: str, mode: str) -> dict[str, Any]:
    """Damage file ``rel`` of a fresh copy of the built cache by ``mode``; open and classify."""
    with tempfile.TemporaryDirectory(prefix="cache-fault-") as scratch:
        root = Path(scratch) / "root"
        shutil.copytree(built, root)
        folder = cache.folder(root)
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        damage(folder / rel, mode, files)
        handler = _Warnings()
        logger = logging.getLogger("mvpo.cache")
        logger.addHandler(handler)
        _forget_opened()
        try:
            got = cache.answers(root)
            error = None
        except CacheError as err:
            got, error = None, ("one-line", str(err))
        except Exception as err:  # what the suite must never see
            got, error = None, ("traceback", f"{type(err).__name__}: {err}")
        finally:
            logger.removeHandler(handler)
    if error is not None:
        outcome, detail = error
    elif got == reference:
        outcome, detail = ("rebuilt" if handler.lines else "same"), "; ".join(handler.lines)
    else:
        outcome, detail = "silently-different", "; ".join(handler.lines)
    one_line = all("\n" not in line for line in handler.lines) and len(handler.lines) <= 1
    return {
        "cache": cache.name,
        "file": rel,
        "mode": mode,
        "outcome": outcome,
        "warning_lines": len(handler.lines),
        "one_warning_line": one_line,
        "detail": detail[:300],
    }


def run_matrix(
    kinds: list[str], modes: list[str], max_files: int | None, work: Path
) -> list[dict[str, Any]]:
    rows = []
    for cache in caches(kinds):
        built = work / cache.name
        shutil.rmtree(built, ignore_errors=True)
        built.mkdir(parents=True)
        _forget_opened()
        reference = cache.build(built)
        folder = cache.folder(built)
        files = sorted(
            p.relative_to(folder).as_posix()
            for p in folder.rglob("*")
            if p.is_file() and p.name != MANIFEST
        )
        for rel in files[:max_files]:
            for mode in modes:
                rows.append(run_one(cache, built, reference, rel, mode))
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_cache: dict[str, Counter] = {}
    for r in rows:
        by_cache.setdefault(r["cache"], Counter())[r["outcome"]] += 1
    return {
        "runs": len(rows),
        "files": len({(r["cache"], r["file"]) for r in rows}),
        "outcomes": dict(Counter(r["outcome"] for r in rows)),
        "by_cache": {k: dict(v) for k, v in by_cache.items()},
        "more_than_one_warning_line": sum(not r["one_warning_line"] for r in rows),
    }


def markdown(rows: list[dict[str, Any]], command: str) -> str:
    """The table of ``benchmarks/cache_faults.py``: the outcomes per cache, then every
    traceback or silently different answer (``command``: the one that ran the matrix)."""
    s = summary(rows)
    outcomes = ("rebuilt", "same", "one-line", "traceback", "silently-different")
    lines = [
        "# Damaged caches: every file x five corruption modes",
        "",
        f"`{command}` (benchmarks/cache_faults.py; what each outcome means is in its docstring).",
        "",
        f"{s['runs']} runs over {s['files']} files; runs with more than one warning line: "
        f"{s['more_than_one_warning_line']}.",
        "",
        "| cache | " + " | ".join(outcomes) + " |",
        "|---|" + "---:|" * len(outcomes),
    ]
    for cache, counts in s["by_cache"].items():
        lines.append(f"| {cache} | " + " | ".join(str(counts.get(o, 0)) for o in outcomes) + " |")
    total = s["outcomes"]
    lines.append("| all | " + " | ".join(str(total.get(o, 0)) for o in outcomes) + " |")
    bad = [r for r in rows if r["outcome"] in ("traceback", "silently-different")]
    lines += ["", f"Tracebacks or silently different answers: {len(bad)}."]
    for r in bad:
        lines.append(f"* {r['cache']} {r['file']} {r['mode']}: {r['outcome']} {r['detail']}")
    return "\n".join(lines) + "\n"
