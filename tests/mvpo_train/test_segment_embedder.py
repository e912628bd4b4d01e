"""MiniLM on its two runtimes (mvpo_train.segment_embedder, mvpo_train.minilm_onnx): the ONNX
export's vectors equal PyTorch's within the tolerance on real texts, a damaged export is
rebuilt (never used) and one that differs too much is refused, ``auto`` falls back to PyTorch
where onnxruntime does not import, the runtimes' vectors never mix in a cache file, and the
trainer's ``embedding_runtime`` and ``threads`` reach the embedder."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from mvpo_envs.cache_files import MANIFEST
from mvpo_train import minilm_onnx
from mvpo_train.minilm_onnx import CHECK_TEXTS, TOLERANCE, OnnxExportError, export_folder
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
    return SegmentEmbedder(runtime="onnx", onnx_root=onnx_root)


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


def test_onnx_vector_depends_on_its_text_only(onnx_root):
    fresh = SegmentEmbedder(runtime="onnx", onnx_root=onnx_root)
    seg, other = _seqs(fresh, ["go to countertop 1", "go to countertop 2"])  # same length
    assert len(seg) == len(other)
    alone = fresh.embed([seg])[0]
    again = SegmentEmbedder(runtime="onnx", onnx_root=onnx_root)
    assert torch.equal(alone, again.embed([other, seg])[1])


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
        emb = SegmentEmbedder(runtime="onnx", onnx_root=root)
        vec = emb.embed(_seqs(emb, TEXTS[:2]))
    assert any("damaged" in r.getMessage() and "SHA-256" in r.getMessage() for r in caplog.records)
    assert model.read_bytes() != bytes(data)  # rebuilt
    assert torch.equal(vec, onnx_embedder.embed(_seqs(emb, TEXTS[:2])))
    manifest = json.loads((folder / MANIFEST).read_text())
    assert set(manifest["files"]) == {"model.onnx", "export.json"}


def test_export_beyond_tolerance_is_refused(torch_embedder, tmp_path, monkeypatch):
    monkeypatch.setattr(minilm_onnx, "TOLERANCE", 0.0)  # every real export differs a little
    emb = SegmentEmbedder(runtime="onnx", onnx_root=tmp_path)
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


def test_cache_file_keeps_runtimes_apart(torch_embedder, onnx_root, tmp_path):
    path = tmp_path / "emb.npz"
    seqs = _seqs(torch_embedder, TEXTS)
    t = SegmentEmbedder()
    o = SegmentEmbedder(runtime="onnx", onnx_root=onnx_root)
    assert t.cache_key != o.cache_key and o.cache_key.endswith("+rows1+onnx")
    tv, ov = t.embed(seqs), o.embed(seqs)
    assert t.save_cache(path) == len(seqs)
    # a file by PyTorch only: ONNX adds nothing from it ...
    assert SegmentEmbedder(runtime="onnx", onnx_root=onnx_root).load_cache(path) == 0
    assert o.save_cache(path) == len(seqs)
    with np.load(path) as z:  # ... and writes its own section beside PyTorch's
        assert str(z["fingerprint"]) == t.cache_key
        assert str(z["onnx_fingerprint"]) == o.cache_key
    for runtime, want in (("torch", tv), ("onnx", ov)):
        fresh = SegmentEmbedder(runtime=runtime, onnx_root=onnx_root)
        assert fresh.load_cache(path) == len(seqs)
        got = torch.stack([fresh._cache[s] for s in seqs])
        assert torch.equal(got, want)  # each runtime reads back its own vectors, bit for bit


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
    assert policy.embedder.runtime == "onnx"
    assert export_folder(policy.embedder.fingerprint).parent == tmp_path / "minilm-onnx"
    policy.embedder.onnx_root = onnx_root  # reuse the module's export (a build costs seconds)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # what the trainer's --threads 2 does before loading
        assert policy.embedder.onnx_encoder.threads == 2
    finally:
        torch.set_num_threads(before)
    assert TrainConfig(policy="encoder").embedding_runtime == "auto"


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
