"""Shared test fixtures: where the real third-party samples are (``MVPO_REALDATA``, else the
workplace's ``../shared/realdata`` beside the checkout when it exists; skip when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The real third-party samples' folder: ``MVPO_REALDATA``, else ``../shared/realdata``
    beside the checkout (the samples' own README lets tests read them there when it exists; a
    user's clone has none, and the tests that need them skip)."""
    from mvpo_envs.realdata import ENV_VAR, realdata_dir

    folder = realdata_dir() or Path(__file__).resolve().parents[2] / "shared" / "realdata"
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
