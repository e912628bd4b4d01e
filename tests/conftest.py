"""Shared test fixtures: where the real third-party samples are (``MVPO_REALDATA``; skip when
unset)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The real third-party samples' folder (``MVPO_REALDATA``, opt-in: no default)."""
    from mvpo_envs.realdata import ENV_VAR, realdata_dir

    folder = realdata_dir()
    if folder is None:
        pytest.skip(f"real samples: set {ENV_VAR} to their folder")
    if not folder.is_dir():
        pytest.skip(f"real samples: {ENV_VAR}={folder} is not a folder")
    return folder


@pytest.fixture(scope="module")
def bm25(tmp_path_factory):
    """SearchQA's BM25 retriever over the bundled corpus, its index in a fresh cache folder
    (one per test module)."""
    from mvpo_envs.searchqa.data import bundled_corpus_path, load_corpus
    from mvpo_envs.searchqa.retrievers.bm25 import BM25Retriever

    return BM25Retriever(
        load_corpus(bundled_corpus_path()), cache_dir=tmp_path_factory.mktemp("bm25")
    )


@pytest.fixture(scope="module")
def forget_shared_retrievers():
    """SearchQA envs share one retriever per process: leave none behind for later tests. A
    module that makes SearchQA envs asks for it with
    ``pytestmark = pytest.mark.usefixtures("forget_shared_retrievers")``."""
    yield
    from mvpo_envs.searchqa.retrievers import clear_shared

    clear_shared()
