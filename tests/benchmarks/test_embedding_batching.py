"""``benchmarks/embedding_batching.py``: both schemes embed every recorded text, count the
passes and padded tokens they compute, and give the vectors SegmentEmbedder gives."""

from __future__ import annotations

import torch

from mvpo_train.encoder_policy import SegmentEmbedder

from .helpers import study_module


def test_both_schemes_embed_every_text_and_count_their_padding():
    bench = study_module("embedding_batching")
    emb = SegmentEmbedder()
    short = [tuple(emb.ids(f"go to drawer {i}", 64)) for i in range(3)]
    long_ = [tuple(emb.ids(f"on the shelf {i}, you see a mug, a pen, a key and a cd.", 64))
             for i in range(3)]  # fmt: skip
    assert len({len(s) for s in short}) == 1 and len({len(s) for s in long_}) == 1
    assert len(long_[0]) > emb.SHORT_TOKENS >= len(short[0])
    calls = [short[:2] + long_[:2], [short[2], long_[2]]]
    before = bench.embed_calls(emb, calls, lambda n: 8)
    now = bench.embed_calls(emb, calls, emb.rows_for)
    ns, nl = len(short[0]) + 2, len(long_[0]) + 2
    assert (before["passes"], before["tokens"]) == (4, 2 * 8 * ns + 2 * 8 * nl)
    assert (now["passes"], now["tokens"]) == (5, 2 * 8 * ns + 3 * nl)  # long ones alone
    texts = short + long_
    assert set(now["vectors"]) == set(before["vectors"]) == set(texts)
    ref = emb.embed(texts)  # the policy's own embedder, current scheme
    for k, s in enumerate(texts):
        assert torch.equal(now["vectors"][s], ref[k])
