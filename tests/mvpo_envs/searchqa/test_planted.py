"""``mvpo_envs.searchqa.retrievers.planted``: a planted index is the folder the dense retriever
opens for the corpus (nothing embedded), one row per passage, the real vectors repeated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")

from mvpo_envs.searchqa.data import bundled_corpus_path, load_corpus  # noqa: E402
from mvpo_envs.searchqa.retrievers.dense import DenseRetriever, ivf_settings  # noqa: E402
from mvpo_envs.searchqa.retrievers.planted import plant, settings_probe  # noqa: E402


def test_the_retriever_opens_the_planted_flat_and_ivf_indexes(tmp_path: Path) -> None:
    corpus = load_corpus(bundled_corpus_path())
    probe = settings_probe(corpus, tmp_path)
    real = np.random.default_rng(0).standard_normal((50, 384)).astype(np.float32)
    real /= np.linalg.norm(real, axis=1, keepdims=True)
    folder, took = plant(probe, real)
    assert set(took) == {"train_s", "add_s"} and (folder / "PLANTED").is_file()
    flat = DenseRetriever(corpus, cache_dir=tmp_path)
    assert not flat.built_now and flat.index_dir == folder
    assert flat._index.ntotal == len(corpus)
    row = np.empty(384, dtype=np.float32)
    flat._index.reconstruct(50 + 7, row)  # row i is real vector i mod 50
    assert np.array_equal(row, real[7])
    assert plant(probe, real) == (folder, {})  # a complete folder is kept
    settings = ivf_settings(len(corpus), None, 0, None, 0)
    ivf_folder, _ = plant(probe, real, settings)
    ivf = DenseRetriever(corpus, cache_dir=tmp_path, index="ivf")
    assert not ivf.built_now and ivf.index_dir == ivf_folder != folder
    assert ivf._index.ntotal == len(corpus)
