"""``benchmarks/embedding_batching.py``: both PyTorch schemes embed every recorded text, count
the passes and padded tokens they compute, and give the vectors SegmentEmbedder gives; on
onnxruntime a fixed-shape padded pass gives a text the same vector, bit for bit, whatever the
other rows hold and wherever the text sits (the claim its runtime table rests on)."""

from __future__ import annotations

import random

import pytest
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


def test_a_fixed_shape_padded_pass_gives_a_text_one_vector_whatever_its_neighbours(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    bench = study_module("embedding_batching")
    emb = SegmentEmbedder()
    session = bench.masked_export(emb.encoder, tmp_path / "masked.onnx")
    rng = random.Random(0)

    def text(n: int) -> tuple[int, ...]:
        return tuple(rng.randrange(1000, 30000) for _ in range(n))

    for multiple, rows in ((16, 4), (8, 2)):
        for n in (3, 13, 30):  # several buckets of each scheme
            length = bench.padded_length(n, multiple)
            same_bucket = [
                k for k in range(1, length) if bench.padded_length(k, multiple) == length
            ]
            seq = text(n)
            alone = bench.padded_encode(session, [seq], emb.cls_id, emb.sep_id, multiple, rows)
            assert alone["passes"] == 1 and alone["tokens"] == rows * length
            want = alone["vectors"][seq]  # its padding rows are repeats of itself
            for pos in range(rows):  # every row position, random neighbours of its bucket
                others = [text(rng.choice(same_bucket)) for _ in range(rows - 1)]
                batch = [*others[:pos], seq, *others[pos:]]
                got = bench.padded_encode(session, batch, emb.cls_id, emb.sep_id, multiple, rows)
                assert got["passes"] == 1
                assert torch.equal(got["vectors"][seq], want), (multiple, rows, n, pos)
            # and the same text as the PyTorch model embeds it unpadded, within the tolerance
            ref = emb.forward(torch.tensor([[emb.cls_id, *seq, emb.sep_id]]))[0]
            assert float((want - ref).abs().max()) <= 1e-5


def test_a_dynamic_pass_gives_a_text_one_vector_whatever_its_row_count(tmp_path):
    """The dynamic variants' claim: at least 2 rows, a text's vector is the same bits at any
    row count (on this machine's onnxruntime; the page's *changed* column re-checks it)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    bench = study_module("embedding_batching")
    emb = SegmentEmbedder()
    session = bench.masked_export(emb.encoder, tmp_path / "masked.onnx")
    rng = random.Random(1)
    texts = [tuple(rng.randrange(1000, 30000) for _ in range(10)) for _ in range(9)]  # 16 tokens
    seq = texts[0]
    seen = []
    for n in (1, 2, 3, 9):  # alone: 2 rows (itself repeated); then 2, 3, 9 rows
        got = bench.padded_encode(session, texts[:n], emb.cls_id, emb.sep_id, 8, 0)
        assert got["passes"] == 1 and got["tokens"] == max(2, n) * 16
        seen.append(got["vectors"][seq])
    capped = bench.padded_encode(session, texts, emb.cls_id, emb.sep_id, 8, 0, cap=4)
    assert capped["passes"] == 3  # 3 + 3 + 3: as even as possible, none of one row
    assert capped["tokens"] == 9 * 16
    for vec in [*seen[1:], capped["vectors"][seq]]:
        assert torch.equal(vec, seen[0])
