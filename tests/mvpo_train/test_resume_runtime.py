"""A resumed run keeps the MiniLM runtime and batching it ran on (docs/policies.md, "Where
MiniLM runs"): ``embedding_runtime`` defaults to ``auto`` (onnxruntime where it imports) since
runs were made on PyTorch by default, ``embedding_batching`` to ``auto`` (``pad8xdyn`` on
onnxruntime) since runs were made with ``rows1``, and another runtime's or batching's vectors
differ in their last bits.

End to end on the control task with a fresh encoder head: a run of 2 iterations against one
stopped after the first, made to look as the code before the field existed left it (the field
removed from its ``config.yaml`` and its checkpoint's config, the ``SHA256SUMS`` line of
``state.json`` rewritten), then resumed with today's defaults: a PyTorch run must run on
PyTorch, an onnxruntime ``rows1`` run on ``rows1``, and each match the uninterrupted run; a
``pad8xdyn`` run (today's default) resumes bit for bit too. The rules behind it are checked one
by one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from mvpo_train.checkpoint import latest_checkpoint
from mvpo_train.config import TrainConfig, changed_fields
from mvpo_train.metrics import read_metrics, strip_timing
from mvpo_train.segment_embedder import resumed_batching, resumed_runtime
from mvpo_train.trainer import train

from .checkpoint_edit import edit_state


def _cfg(run_dir: Path, **kw) -> TrainConfig:
    base = dict(
        run_dir=str(run_dir), env_id="mvpo/MilestoneChain-v0", policy="encoder", model="fresh",
        estimator="grpo", device="cpu", threads=1, env_kwargs={"difficulty": 0}, progress=False,
        tensorboard=False, num_groups=2, group_size=2, max_steps=6, iterations=2,
        save_every=1, lr=1e-2, seed=0, eval_every=0,
    )  # fmt: skip
    base.update(kw)
    return TrainConfig(**base)


def _as_before_the_field(run_dir: Path, name: str = "embedding_runtime", value: str = "torch"):
    """Remove the field ``name`` (recorded as ``value``) from ``config.yaml`` and the newest
    checkpoint's config."""
    path = run_dir / "config.yaml"
    saved = yaml.safe_load(path.read_text())
    assert saved.pop(name) == value
    path.write_text(yaml.safe_dump(saved, sort_keys=True))
    edit_state(latest_checkpoint(run_dir), lambda state: state["config"].pop(name))


def _spy_embedders(monkeypatch) -> list:
    """The MiniLM embedders the runs build, as they are built."""
    import mvpo_train.segment_embedder as se

    made: list = []
    real = se.SegmentEmbedder.__init__

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(se.SegmentEmbedder, "__init__", spy)
    return made


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


def _same_runs(full: Path, resumed: Path) -> None:
    a = [strip_timing(r) for r in read_metrics(full)]
    assert len(a) == 2 and a == [strip_timing(r) for r in read_metrics(resumed)]
    weights = "checkpoints/iter-000002/model.safetensors"
    assert (full / weights).read_bytes() == (resumed / weights).read_bytes()


def test_a_run_from_before_the_field_resumes_on_pytorch_bit_for_bit(tmp_path, monkeypatch):
    full, old = tmp_path / "full", tmp_path / "old"
    train(_cfg(full, embedding_runtime="torch"))
    assert len(train(_cfg(old, embedding_runtime="torch", stop_after=1))) == 1
    _as_before_the_field(old)
    made = _spy_embedders(monkeypatch)
    assert TrainConfig().embedding_runtime == "auto"
    rest = train(_cfg(old, resume=True))  # today's default: auto
    assert made and {e.runtime for e in made} == {"torch"}
    assert [r["iteration"] for r in rest] == [2]
    _same_runs(full, old)
    assert yaml.safe_load((old / "config.yaml").read_text())["embedding_runtime"] == "torch"


def test_a_rows1_run_from_before_the_batching_resumes_on_rows1_bit_for_bit(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    full, old = tmp_path / "full", tmp_path / "old"
    train(_cfg(full, embedding_runtime="onnx", embedding_batching="rows1"))
    stopped = train(_cfg(old, embedding_runtime="onnx", embedding_batching="rows1", stop_after=1))
    assert len(stopped) == 1
    _as_before_the_field(old, "embedding_batching", "rows1")
    made = _spy_embedders(monkeypatch)
    assert TrainConfig().embedding_batching == "auto"
    rest = train(_cfg(old, resume=True))  # today's defaults: auto, auto
    assert made and {(e.runtime, e.batching) for e in made} == {("onnx", "rows1")}
    assert [r["iteration"] for r in rest] == [2]
    _same_runs(full, old)
    assert yaml.safe_load((old / "config.yaml").read_text())["embedding_batching"] == "rows1"


def test_a_pad8xdyn_run_resumes_bit_for_bit(tmp_path, monkeypatch):
    """Today's default on onnxruntime: the resumed run embeds its texts in other passes (an
    empty embedding cache, other neighbours and row counts) and still matches, bit for bit."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    full, cut = tmp_path / "full", tmp_path / "cut"
    made = _spy_embedders(monkeypatch)
    train(_cfg(full, embedding_runtime="onnx"))
    assert len(train(_cfg(cut, embedding_runtime="onnx", stop_after=1))) == 1
    rest = train(_cfg(cut, resume=True))
    assert {(e.runtime, e.batching) for e in made} == {("onnx", "pad8xdyn")}
    assert [r["iteration"] for r in rest] == [2]
    _same_runs(full, cut)
    saved = yaml.safe_load((cut / "config.yaml").read_text())  # as resolved, not auto
    assert (saved["embedding_runtime"], saved["embedding_batching"]) == ("onnx", "pad8xdyn")


def test_a_fresh_run_records_what_auto_resolved_to_and_never_falls_back_on_resume(
    tmp_path, monkeypatch
):
    """``auto`` is resolved when the run starts and ``config.yaml`` and the checkpoints record
    the result: resumed where onnxruntime no longer imports, the run is one error line (it
    would otherwise go on with PyTorch's vectors), and the folder is as it was."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    cut = tmp_path / "cut"
    assert len(train(_cfg(cut, stop_after=1))) == 1  # both settings auto (the defaults)
    saved = yaml.safe_load((cut / "config.yaml").read_text())
    assert (saved["embedding_runtime"], saved["embedding_batching"]) == ("onnx", "pad8xdyn")
    assert changed_fields(saved, _cfg(cut, embedding_runtime="onnx",
                                      embedding_batching="pad8xdyn")) == {}  # fmt: skip
    before = _files(cut)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    with pytest.raises(ValueError, match="embedding runtime 'onnx': onnxruntime") as err:
        train(_cfg(cut, resume=True))
    assert "\n" not in str(err.value)
    assert _files(cut) == before


def test_a_fresh_run_without_onnxruntime_records_torch(tmp_path, monkeypatch):
    """Where onnxruntime does not import, ``auto`` runs PyTorch and records it (a later
    resume on a machine that has onnxruntime stays on PyTorch)."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    run = tmp_path / "run"
    train(_cfg(run, iterations=1))
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert (saved["embedding_runtime"], saved["embedding_batching"]) == ("torch", "auto")
    assert resumed_runtime("auto", run) == "torch"


def test_auto_on_resume_takes_the_recorded_runtime(tmp_path):
    path = tmp_path / "config.yaml"
    for saved, want in (({"embedding_runtime": "torch"}, "torch"), ({}, "torch"),
                        ({"embedding_runtime": "onnx"}, "onnx"),
                        ({"embedding_runtime": "auto"}, "auto")):  # fmt: skip
        path.write_text(yaml.safe_dump({"seed": 0, **saved}))
        assert resumed_runtime("auto", tmp_path) == want
        assert resumed_runtime("onnx", tmp_path) == "onnx"  # an explicit value is kept ...
    path.unlink()
    assert resumed_runtime("auto", tmp_path) == "auto"  # ... and no run folder changes nothing


def test_auto_on_resume_takes_the_recorded_batching(tmp_path):
    path = tmp_path / "config.yaml"
    for saved, want in (({"embedding_batching": "rows1"}, "rows1"), ({}, "rows1"),
                        ({"embedding_batching": "pad8xdyn"}, "pad8xdyn"),
                        ({"embedding_batching": "auto"}, "auto")):  # fmt: skip
        path.write_text(yaml.safe_dump({"seed": 0, **saved}))
        assert resumed_batching("auto", tmp_path) == want
        assert resumed_batching("pad8xdyn", tmp_path) == "pad8xdyn"  # an explicit value is kept
    path.unlink()
    assert resumed_batching("auto", tmp_path) == "auto"


def test_a_config_from_before_the_batching_means_rows1():
    before = {k: v for k, v in _cfg(Path("r")).to_dict().items() if k != "embedding_batching"}
    assert changed_fields(before, _cfg(Path("r"), embedding_batching="rows1")) == {}
    # not silently pad8xdyn: auto against a run that predates the field is a difference
    assert changed_fields(before, _cfg(Path("r")))["embedding_batching"] == (None, "auto")
    assert changed_fields(
        {**before, "embedding_batching": "rows1"}, _cfg(Path("r"), embedding_batching="pad8xdyn")
    ) == {"embedding_batching": ("rows1", "pad8xdyn")}


def test_a_config_from_before_the_field_means_torch():
    before = {k: v for k, v in _cfg(Path("r")).to_dict().items() if k != "embedding_runtime"}
    assert changed_fields(before, _cfg(Path("r"), embedding_runtime="torch")) == {}
    # not silently onnxruntime: auto against a run that predates the field is a difference
    assert changed_fields(before, _cfg(Path("r")))["embedding_runtime"] == (None, "auto")
    assert changed_fields({**before, "embedding_runtime": "torch"}, _cfg(Path("r"))) == {
        "embedding_runtime": ("torch", "auto")
    }
