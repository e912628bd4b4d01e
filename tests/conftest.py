"""Shared test fixtures: where the real third-party samples are (skip when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
REALDATA = Path(os.environ.get("MVPO_REALDATA", REPO.parent / "shared" / "realdata"))


@pytest.fixture(scope="session")
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.skip(f"real benchmark samples not present at {REALDATA}")
    return REALDATA


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
