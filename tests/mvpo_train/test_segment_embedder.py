"""MiniLM on its two runtimes (mvpo_train.segment_embedder, mvpo_train.minilm_onnx): both ONNX
exports' vectors (``rows1``: the ids export; ``pad8xdyn``: the masked one, dynamic padded
passes) equal PyTorch's within the tolerance on real texts, a ``pad8xdyn`` text's vector is the
same bits whatever its neighbours and row count, a damaged export is rebuilt (never used) and
one that differs too much or fails the row-count check is refused (``auto`` batching then falls
back to ``rows1``), ``auto`` falls back to PyTorch where onnxruntime does not import, the
runtimes' and batchings' vectors never mix in a cache file, and the trainer's
``embedding_runtime``, ``embedding_batching`` and ``threads`` reach the embedder."""

from __future__ import annotations

import functools
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from mvpo_envs.cache_files import MANIFEST
from mvpo_train import minilm_onnx
from mvpo_train.minilm_onnx import (
    CHECK_TEXTS,
    TOLERANCE,
    OnnxExportError,
    chunk_sizes,
    export_folder,
    padded_encode,
    padded_length,
)
from mvpo_train.segment_embedder import SegmentEmbedder, resolve_runtime

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

#: texts the policies embed that the export's build check does not use
TEXTS = [
    "Your task is to: heat some egg and put it in garbagecan.",
    "You open the fridge 1. The fridge 1 is open. In it, you see a bowl 1, a cup 2, a egg 1, "
    "a lettuce 2, a potato 3, and a tomato 1.",
    "heat egg 1 with microwave 1",
    "inventory",
    "You are facing the shelf 2. Next to it, you see nothing. " * 12,
    "click[ buy now ]",
]


@pytest.fixture(scope="module")
def onnx_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture(scope="module")
def torch_embedder() -> SegmentEmbedder:
    return SegmentEmbedder()


@pytest.fixture(scope="module")
def onnx_embedder(onnx_root: Path) -> SegmentEmbedder:
    """The ``rows1`` batching (the ids export)."""
    return SegmentEmbedder(runtime="onnx", onnx_root=onnx_root, batching="rows1")


@pytest.fixture(scope="module")
def padded_embedder(onnx_root: Path) -> SegmentEmbedder:
    """The default batching on onnxruntime: ``pad8xdyn`` (the masked export)."""
    emb = SegmentEmbedder(runtime="onnx", onnx_root=onnx_root)
    assert emb.batching == "pad8xdyn"
    return emb


def _seqs(embedder: SegmentEmbedder, texts: list[str]) -> list[tuple[int, ...]]:
    return [tuple(embedder.ids(t, 128)) for t in texts]


def test_onnx_vectors_equal_torch_within_tolerance(torch_embedder, onnx_embedder, onnx_root):
    seqs = _seqs(torch_embedder, TEXTS + list(CHECK_TEXTS))
    assert {len(s) <= SegmentEmbedder.SHORT_TOKENS for s in seqs} == {True, False}
    a, b = torch_embedder.embed(seqs), onnx_embedder.embed(seqs)
    assert a.shape == b.shape == (len(seqs), torch_embedder.dim)
    diff = float((a - b).abs().max())
    assert diff <= TOLERANCE
    assert not torch.equal(a, b)  # a different runtime indeed (the keys below must differ)
    record = json.loads((export_folder(onnx_embedder.fingerprint, onnx_root) / "export.json")
                        .read_text())  # fmt: skip
    assert record["encoder_sha256"] == onnx_embedder.fingerprint
    assert 0 < record["max_abs_diff"] <= TOLERANCE


def test_padded_vectors_equal_torch_within_tolerance(torch_embedder, padded_embedder, onnx_root):
    seqs = _seqs(torch_embedder, TEXTS + list(CHECK_TEXTS))
    a, b = torch_embedder.embed(seqs), padded_embedder.embed(seqs)
    assert float((a - b).abs().max()) <= TOLERANCE
    assert padded_embedder.cache_key == f"{padded_embedder.fingerprint}+pad8xdyn+onnx"
    folder = export_folder(padded_embedder.fingerprint, onnx_root, masked=True)
    assert folder.name.endswith("-masked-v1") and folder != export_folder(
        padded_embedder.fingerprint, onnx_root
    )
    record = json.loads((folder / "export.json").read_text())
    assert record["kind"] == "masked" and 0 < record["max_abs_diff"] <= TOLERANCE
    assert record["row_counts"] == [2, 3, 5, 8, 16, 33, 64] and record["row_checked_texts"] >= 4


def test_onnx_vector_depends_on_its_text_only(onnx_root):
    fresh = SegmentEmbedder(runtime="onnx", onnx_root=onnx_root, batching="rows1")
    seg, other = _seqs(fresh, ["go to countertop 1", "go to countertop 2"])  # same length
    assert len(seg) == len(other)
    alone = fresh.embed([seg])[0]
    again = SegmentEmbedder(runtime="onnx", onnx_root=onnx_root, batching="rows1")
    assert torch.equal(alone, again.embed([other, seg])[1])


def test_a_padded_vector_is_the_same_bits_whatever_its_neighbours_and_row_count(
    padded_embedder, torch_embedder
):
    """pad8xdyn: a text alone (its pass doubles it) and among 2, 3, 9 and 64 other texts of
    its padded length (65 texts: passes of 33 + 32 rows), at several row positions, gets the
    same vector bit for bit, within the tolerance of PyTorch's."""
    import random

    emb, rng = padded_embedder, random.Random(3)
    for seq in _seqs(torch_embedder, ["heat egg 1 with microwave 1", TEXTS[1]]):
        length = padded_length(len(seq))
        bucket = [n for n in range(1, length) if padded_length(n) == length]
        others = list(dict.fromkeys(tuple(rng.randrange(1000, 30000)
                                          for _ in range(rng.choice(bucket)))
                                    for _ in range(64)))  # fmt: skip
        assert len(others) == 64
        want = emb.encode([seq])[seq]
        for n in (2, 3, 9, 64):
            for pos in (0, n // 2, n):
                got = emb.encode([*others[:pos], seq, *others[pos:n]])
                assert torch.equal(got[seq], want), (len(seq), n, pos)
        ref = torch_embedder.embed([seq])[0]
        assert float((want - ref).abs().max()) <= TOLERANCE
        # the 65 texts' passes: two, of 33 and 32 rows (none of one row)
        got = padded_encode(emb.onnx_encoder, [seq, *others], emb.cls_id, emb.sep_id)
        assert got["passes"] == 2 and got["tokens"] == 65 * length
        assert padded_encode(emb.onnx_encoder, [seq], emb.cls_id, emb.sep_id)["tokens"] == (
            2 * length  # alone: doubled
        )


def test_dynamic_passes_never_hold_one_row_unless_the_call_has_one_text():
    assert chunk_sizes(0) == [] and chunk_sizes(1) == [1] and chunk_sizes(64) == [64]
    assert chunk_sizes(65) == [33, 32] and chunk_sizes(129) == [43, 43, 43]
    assert chunk_sizes(9, 4) == [3, 3, 3] and chunk_sizes(5, 4) == [3, 2]
    for m in range(2, 300):
        sizes = chunk_sizes(m)
        assert sum(sizes) == m and min(sizes) >= 2 and max(sizes) <= 64
        assert max(sizes) - min(sizes) <= 1
    assert [padded_length(n) for n in (1, 6, 7, 14, 15)] == [8, 8, 16, 16, 24]


def test_the_row_count_check_finds_a_vector_that_moves_with_the_row_count():
    from mvpo_train.minilm_onnx import check_row_counts

    def steady(ids, mask):
        return torch.nn.functional.normalize(ids.float() * mask + 1.0, dim=-1)

    def moving(ids, mask):  # a row count other than 2 shifts every vector a little
        return steady(ids, mask) + 1e-7 * (len(ids) != 2)

    seqs = [[2000, 2001, 2002], [3000] * 20]
    assert check_row_counts(steady, seqs, 101, 102) == ""
    assert check_row_counts(moving, seqs, 101, 102) == (
        "check text 0 (3 word pieces) in a pass of 3 rows"
    )


def test_damaged_export_is_rebuilt_not_used(onnx_embedder, onnx_root, tmp_path, caplog):
    root = tmp_path / "copy"
    folder = export_folder(onnx_embedder.fingerprint, root)
    folder.parent.mkdir(parents=True)
    import shutil

    shutil.copytree(export_folder(onnx_embedder.fingerprint, onnx_root), folder)
    model = folder / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte inside the weights: same size
    model.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="mvpo.cache"):
        emb = SegmentEmbedder(runtime="onnx", onnx_root=root, batching="rows1")
        vec = emb.embed(_seqs(emb, TEXTS[:2]))
    assert any("damaged" in r.getMessage() and "SHA-256" in r.getMessage() for r in caplog.records)
    assert model.read_bytes() != bytes(data)  # rebuilt
    assert torch.equal(vec, onnx_embedder.embed(_seqs(emb, TEXTS[:2])))
    manifest = json.loads((folder / MANIFEST).read_text())
    assert set(manifest["files"]) == {"model.onnx", "export.json"}


def test_export_beyond_tolerance_is_refused(torch_embedder, tmp_path, monkeypatch):
    monkeypatch.setattr(minilm_onnx, "TOLERANCE", 0.0)  # every real export differs a little
    emb = SegmentEmbedder(runtime="onnx", onnx_root=tmp_path, batching="rows1")
    with pytest.raises(OnnxExportError, match=r"differs from PyTorch by .* \(> 0\)") as err:
        emb.embed(_seqs(torch_embedder, TEXTS[:1]))
    assert "\n" not in str(err.value)
    assert not export_folder(emb.fingerprint, tmp_path).exists()  # nothing cached


def test_auto_falls_back_to_torch_without_onnxruntime(monkeypatch, torch_embedder, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    assert resolve_runtime("auto") == "torch"
    with pytest.raises(ValueError, match="onnxruntime is not installed") as err:
        resolve_runtime("onnx")
    assert "\n" not in str(err.value)
    emb = SegmentEmbedder(runtime="auto")
    assert emb.runtime == "torch"
    seqs = _seqs(emb, TEXTS[:3])
    assert torch.equal(emb.embed(seqs), torch_embedder.embed(seqs))
    with pytest.raises(ValueError, match="expected one of"):
        resolve_runtime("tensorrt")


def test_a_failed_masked_export_is_rows1_for_auto_and_one_line_for_pad8xdyn(
    onnx_embedder, onnx_root, torch_embedder, tmp_path, monkeypatch, caplog
):
    """The row-count check failing (as on an onnxruntime whose kernels split by row count):
    nothing is cached, ``auto`` runs ``rows1`` (one log line), ``pad8xdyn`` is one error line."""
    import shutil

    root = tmp_path / "exports"  # the ids export as built, no masked one
    folder = export_folder(onnx_embedder.fingerprint, root)
    folder.parent.mkdir(parents=True)
    shutil.copytree(export_folder(onnx_embedder.fingerprint, onnx_root), folder)
    monkeypatch.setattr(minilm_onnx, "check_row_counts",
                        lambda *a, **k: "check text 0 (13 word pieces) in a pass of 3 rows")  # fmt: skip
    asked = SegmentEmbedder(runtime="onnx", onnx_root=root, batching="pad8xdyn")
    with pytest.raises(OnnxExportError, match="other bits at another row count") as err:
        asked.embed(_seqs(torch_embedder, TEXTS[:1]))
    assert "\n" not in str(err.value) and "--embedding-batching rows1" in str(err.value)
    assert not export_folder(asked.fingerprint, root, masked=True).exists()  # nothing cached
    with caplog.at_level(logging.INFO, logger="mvpo.embedder"):
        auto = SegmentEmbedder(runtime="onnx", onnx_root=root)
        assert auto.batching == "rows1" and auto.cache_key.endswith("+rows1+onnx")
    lines = [r.getMessage() for r in caplog.records if r.name == "mvpo.embedder"]
    assert len(lines) == 1 and "embedding batching auto" in lines[0] and "rows1" in lines[0]
    seqs = _seqs(torch_embedder, TEXTS[:3])
    assert torch.equal(auto.embed(seqs), onnx_embedder.embed(seqs))


def test_a_session_of_several_threads_is_checked_when_it_opens(
    padded_embedder, onnx_root, monkeypatch
):
    """The build checks one thread; a two-thread session is checked again as it opens: here it
    passes (the same bits as one thread), and a check that fails is one error line."""
    open_ = functools.partial(
        minilm_onnx.open_masked_export, padded_embedder.fingerprint,
        lambda: padded_embedder.encoder, lambda: minilm_onnx.check_seqs(padded_embedder._check_ids),
        padded_embedder.cls_id, padded_embedder.sep_id, root=onnx_root,
    )  # fmt: skip
    two, one = open_(threads=2), open_(threads=1)
    seqs = _seqs(padded_embedder, TEXTS)
    assert torch.equal(
        padded_encode(two, seqs, padded_embedder.cls_id, padded_embedder.sep_id)["vectors"][
            seqs[0]
        ],
        padded_encode(one, seqs, padded_embedder.cls_id, padded_embedder.sep_id)["vectors"][
            seqs[0]
        ],
    )
    calls = []
    monkeypatch.setattr(minilm_onnx, "check_row_counts",
                        lambda *a, **k: calls.append(a[4] if len(a) > 4 else k) or "a text")  # fmt: skip
    open_(threads=1)
    assert calls == []  # one thread: the build's check holds
    with pytest.raises(OnnxExportError, match="with 2 threads") as err:
        open_(threads=2)
    assert "\n" not in str(err.value) and calls == [minilm_onnx.THREAD_CHECK_ROWS]


def test_a_batching_that_cannot_run_is_one_line(torch_embedder):
    with pytest.raises(ValueError, match="expected one of") as err:
        SegmentEmbedder(batching="rows64")
    with pytest.raises(ValueError, match="runs on onnxruntime, not PyTorch") as err:
        SegmentEmbedder(batching="pad8xdyn")
    assert "\n" not in str(err.value)
    for batching in ("auto", "rows1"):  # PyTorch's own scheme, as before the setting
        emb = SegmentEmbedder(batching=batching)
        assert (
            emb.batching == SegmentEmbedder.BATCHING and emb.cache_key == torch_embedder.cache_key
        )
        assert emb.section == "" and emb.pass_rows(3) == 8


def test_cache_file_keeps_runtimes_apart(torch_embedder, onnx_root, tmp_path):
    path = tmp_path / "emb.npz"
    seqs = _seqs(torch_embedder, TEXTS)
    t = SegmentEmbedder()
    o = SegmentEmbedder(runtime="onnx", onnx_root=onnx_root, batching="rows1")
    assert t.cache_key != o.cache_key and o.cache_key.endswith("+rows1+onnx")
    tv, ov = t.embed(seqs), o.embed(seqs)
    assert t.save_cache(path) == len(seqs)
    # a file by PyTorch only: ONNX adds nothing from it ...
    assert (
        SegmentEmbedder(runtime="onnx", onnx_root=onnx_root, batching="rows1").load_cache(path) == 0
    )
    assert o.save_cache(path) == len(seqs)
    with np.load(path) as z:  # ... and writes its own section beside PyTorch's
        assert str(z["fingerprint"]) == t.cache_key
        assert str(z["onnx_fingerprint"]) == o.cache_key
    for runtime, want in (("torch", tv), ("onnx", ov)):
        fresh = SegmentEmbedder(runtime=runtime, onnx_root=onnx_root, batching="rows1")
        assert fresh.load_cache(path) == len(seqs)
        got = torch.stack([fresh._cache[s] for s in seqs])
        assert torch.equal(got, want)  # each runtime reads back its own vectors, bit for bit


def test_one_cache_file_holds_a_section_per_runtime_and_batching(
    torch_embedder, onnx_root, tmp_path
):
    """A file extended by PyTorch, ``rows1`` (the section ``onnx_``, as every file written
    before ``pad8xdyn`` has) and ``pad8xdyn`` in turn: each adds its own section, never
    refuses another's, and reads back its own vectors only, bit for bit."""
    path = tmp_path / "emb.npz"
    seqs = _seqs(torch_embedder, TEXTS)
    kinds = {"torch": {}, "rows1": {"runtime": "onnx", "batching": "rows1"},
             "pad8xdyn": {"runtime": "onnx", "batching": "pad8xdyn"}}  # fmt: skip
    made = {k: SegmentEmbedder(onnx_root=onnx_root, **kw) for k, kw in kinds.items()}
    vectors = {k: e.embed(seqs) for k, e in made.items()}
    assert not torch.equal(vectors["rows1"], vectors["pad8xdyn"])  # the keys must differ
    sections = {k: e.section for k, e in made.items()}
    assert sections == {"torch": "", "rows1": "onnx_", "pad8xdyn": "onnx-pad8xdyn_"}
    for e in made.values():  # in turn: the file holds the earlier kinds' sections
        assert e.save_cache(path) == len(seqs)
    with np.load(path) as z:
        for k, e in made.items():
            assert str(z[f"{sections[k]}fingerprint"]) == e.cache_key
        assert len(z.files) == 12
    keys = {e.cache_key.removeprefix(e.fingerprint) for e in made.values()}
    assert keys == {f"+{SegmentEmbedder.BATCHING}", "+rows1+onnx", "+pad8xdyn+onnx"}
    for k, kw in kinds.items():
        fresh = SegmentEmbedder(onnx_root=onnx_root, **kw)
        assert fresh.load_cache(path) == len(seqs)
        got = torch.stack([fresh._cache[s] for s in seqs])
        assert torch.equal(got, vectors[k]), k
    # a pad8xdyn run on a file that holds a rows1 section only adds its own beside it
    old = tmp_path / "old.npz"
    made["rows1"].save_cache(old)
    fresh = SegmentEmbedder(runtime="onnx", onnx_root=onnx_root)
    assert fresh.load_cache(old) == 0 and fresh.embed(seqs).shape == (len(seqs), fresh.dim)
    assert fresh.save_cache(old) == len(seqs)
    assert SegmentEmbedder(runtime="onnx", onnx_root=onnx_root, batching="rows1").load_cache(
        old
    ) == len(seqs)


def test_a_file_of_another_encoder_is_refused_in_one_line(tmp_path, torch_embedder):
    path = tmp_path / "emb.npz"
    np.savez(path, fingerprint=np.array("0" * 64 + "+rows8"), ids=np.zeros(0, np.int32),
             offsets=np.zeros(1, np.int64), vectors=np.zeros((0, 384), np.float32))  # fmt: skip
    with pytest.raises(ValueError, match="another sentence encoder") as err:
        torch_embedder.load_cache(path)
    assert "\n" not in str(err.value)
    np.savez(path, something=np.zeros(3))
    with pytest.raises(ValueError, match="holds no embeddings"):
        torch_embedder.load_cache(path)


def test_trainer_config_and_threads_reach_the_embedder(onnx_root, monkeypatch, tmp_path):
    from mvpo_train.config import TrainConfig
    from mvpo_train.encoder_policy import load_encoder_policy

    monkeypatch.setenv("MVPO_CACHE_DIR", str(tmp_path))  # the project's cache folder
    cfg = TrainConfig(run_dir=str(tmp_path / "run"), policy="encoder", device="cpu",
                      embedding_runtime="onnx")  # fmt: skip
    policy = load_encoder_policy(cfg, model="fresh")
    assert policy.embedder.runtime == "onnx" and policy.embedder.requested_batching == "auto"
    rows1 = TrainConfig(**{**cfg.to_dict(), "embedding_batching": "rows1"})
    assert load_encoder_policy(rows1, model="fresh").embedder.requested_batching == "rows1"
    assert export_folder(policy.embedder.fingerprint).parent == tmp_path / "minilm-onnx"
    policy.embedder.onnx_root = onnx_root  # reuse the module's export (a build costs seconds)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # what the trainer's --threads 2 does before loading
        assert policy.embedder.onnx_encoder.threads == 2
    finally:
        torch.set_num_threads(before)
    assert policy.embedder.batching == "pad8xdyn"
    assert TrainConfig(policy="encoder").embedding_runtime == "auto"
    assert TrainConfig(policy="encoder").embedding_batching == "auto"


def test_ids_run_the_tokenizer_once_per_text_and_equal_its_ids(torch_embedder, monkeypatch):
    """The text -> ids cache gives the tokenizer's own ids (any limit, a literal [SEP] kept as
    text) and tokenizes a recurring text (a history observation) once."""
    emb = torch_embedder
    texts = ["You arrive at countertop 1. On it, you see a apple 1.", "a [SEP] b", ""]
    calls: list[str] = []
    real = emb.tokenizer.encode

    def counting(text, **kwargs):
        calls.append(text)
        return real(text, **kwargs)

    emb._ids_cache.clear()
    monkeypatch.setattr(emb.tokenizer, "encode", counting)
    for limit in (3, 256, 3, 256):
        for text in texts:
            want = real(text, add_special_tokens=False, split_special_tokens=True)[:limit]
            assert emb.ids(text, limit) == list(want)
    assert sorted(calls) == sorted(texts)
    assert emb.sep_id not in emb.ids("a [SEP] b", 256)
