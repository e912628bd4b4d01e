"""A resumed run keeps the MiniLM runtime it ran on (docs/policies.md, "Where MiniLM runs"):
``embedding_runtime`` defaults to ``auto`` (onnxruntime where it imports) since runs were made
on PyTorch by default, and another runtime's vectors differ in their last bits.

End to end on the control task with a fresh encoder head: a PyTorch run of 2 iterations
against one stopped after the first, made to look as the code before ``embedding_runtime``
existed left it (the field removed from its ``config.yaml`` and its checkpoint's config, the
``SHA256SUMS`` line of ``state.json`` rewritten), then resumed with today's defaults. It must
run on PyTorch and match the uninterrupted run; the rules behind it are checked one by one."""

from __future__ import annotations

from pathlib import Path

import yaml

from mvpo_train.checkpoint import latest_checkpoint
from mvpo_train.config import TrainConfig, changed_fields
from mvpo_train.metrics import read_metrics, strip_timing
from mvpo_train.segment_embedder import resumed_runtime
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


def _as_before_the_field(run_dir: Path) -> None:
    """Remove ``embedding_runtime`` from ``config.yaml`` and the newest checkpoint's config."""
    path = run_dir / "config.yaml"
    saved = yaml.safe_load(path.read_text())
    assert saved.pop("embedding_runtime") == "torch"
    path.write_text(yaml.safe_dump(saved, sort_keys=True))
    edit_state(latest_checkpoint(run_dir), lambda state: state["config"].pop("embedding_runtime"))


def test_a_run_from_before_the_field_resumes_on_pytorch_bit_for_bit(tmp_path, monkeypatch):
    full, old = tmp_path / "full", tmp_path / "old"
    train(_cfg(full, embedding_runtime="torch"))
    assert len(train(_cfg(old, embedding_runtime="torch", stop_after=1))) == 1
    _as_before_the_field(old)
    import mvpo_train.segment_embedder as se

    runtimes: list[str] = []
    real = se.SegmentEmbedder.__init__

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        runtimes.append(self.runtime)

    monkeypatch.setattr(se.SegmentEmbedder, "__init__", spy)
    assert TrainConfig().embedding_runtime == "auto"
    rest = train(_cfg(old, resume=True))  # today's default: auto
    assert runtimes and set(runtimes) == {"torch"}
    assert [r["iteration"] for r in rest] == [2]
    a = [strip_timing(r) for r in read_metrics(full)]
    assert len(a) == 2 and a == [strip_timing(r) for r in read_metrics(old)]
    weights = "checkpoints/iter-000002/model.safetensors"
    assert (full / weights).read_bytes() == (old / weights).read_bytes()
    assert yaml.safe_load((old / "config.yaml").read_text())["embedding_runtime"] == "torch"


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


def test_a_config_from_before_the_field_means_torch():
    before = {k: v for k, v in _cfg(Path("r")).to_dict().items() if k != "embedding_runtime"}
    assert changed_fields(before, _cfg(Path("r"), embedding_runtime="torch")) == {}
    # not silently onnxruntime: auto against a run that predates the field is a difference
    assert changed_fields(before, _cfg(Path("r")))["embedding_runtime"] == (None, "auto")
    assert changed_fields({**before, "embedding_runtime": "torch"}, _cfg(Path("r"))) == {
        "embedding_runtime": ("torch", "auto")
    }
