"""Damaged embedding shards of the dense retriever (docs/searchqa.md, "Large corpora"): a shard
flipped, truncated, swapped with another or left without its digest is encoded again after one
warning line, so an index built from the folder holds the vectors of a clean build. Real MiniLM
on 20 passages of the bundled corpus."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mvpo_envs.searchqa.data import Corpus, bundled_corpus_path, load_corpus
from mvpo_envs.searchqa.retrievers.dense import DenseRetriever
from mvpo_envs.searchqa.retrievers.embeddings import (
    digest_path,
    embed_corpus,
    iter_shards,
    shard_path,
)

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "searchqa-tests"


@pytest.fixture(scope="module")
def encoder() -> DenseRetriever:
    return DenseRetriever(load_corpus(bundled_corpus_path()), cache_dir=CACHE)


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF  # a byte of the last vector, after the .npy header
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-64])


def _swap(path: Path) -> None:  # shard 0 <-> shard 1 (same shape: 8 rows each)
    other = shard_path(path.parent, 1)
    a, b = path.read_bytes(), other.read_bytes()
    path.write_bytes(b)
    other.write_bytes(a)


def _no_digest(path: Path) -> None:
    digest_path(path).unlink()


@pytest.mark.parametrize("damage", [_flip, _truncate, _swap, _no_digest])
def test_a_damaged_shard_is_encoded_again_with_one_warning(encoder, damage, tmp_path, capsys):
    small = Corpus.from_docs(encoder.corpus.docs[:20])
    meta = encoder.embedding_meta()
    folder = tmp_path / "emb"
    assert embed_corpus(small, encoder.encode, folder, meta, shard_rows=8)
    clean = np.concatenate(list(iter_shards(folder)))
    capsys.readouterr()
    damage(shard_path(folder, 0))
    assert embed_corpus(small, encoder.encode, folder, meta, shard_rows=8)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "damaged" in err[0] and "shard-000000.npy" in err[0], err
    np.testing.assert_allclose(np.concatenate(list(iter_shards(folder))), clean, atol=1e-6)
    assert embed_corpus(small, encoder.encode, folder, meta, shard_rows=8)  # now quiet
    assert capsys.readouterr().err == ""
