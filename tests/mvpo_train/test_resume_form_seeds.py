"""An MVPO run saved before the paper form was renamed resumes bit for bit (docs/estimators.md
§3.8): its ``config.yaml`` and its checkpoint's estimator state say ``form: seeds``, the old
name of ``form: paper``.

End to end on the control task (``mvpo/MilestoneChain-v0``) with a fresh encoder head: a run
of 3 iterations with ``form: paper`` against a run stopped after 2 iterations, made to look as
the code before the rename left it (``state.json``'s estimator state says ``seeds``, its
``SHA256SUMS`` line rewritten to match), then resumed for the third with its own command. The
metrics (timings aside), the recorded advantages and the final weights must be equal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from mvpo_train.checkpoint import latest_checkpoint
from mvpo_train.config import TrainConfig
from mvpo_train.metrics import read_metrics, strip_timing
from mvpo_train.records import find_records, read_batch_record
from mvpo_train.trainer import train

from .checkpoint_edit import edit_state


def _cfg(run_dir: Path, form: str, **kw) -> TrainConfig:
    base = dict(
        run_dir=str(run_dir), env_id="mvpo/MilestoneChain-v0", policy="encoder", model="fresh",
        estimator="mvpo", estimator_kwargs={"form": form}, device="cpu", threads=1,
        env_kwargs={"difficulty": 0}, progress=False, tensorboard=False, num_groups=2,
        group_size=4, max_steps=12,
        iterations=3, save_every=1, record_every=1, lr=1e-2, seed=0,
    )  # fmt: skip
    base.update(kw)
    return TrainConfig(**base)


def _as_before_the_rename(checkpoint: Path) -> None:
    """Write ``form: seeds`` into the checkpoint's estimator state, as the old code saved it,
    and the new digest of ``state.json`` into ``SHA256SUMS``."""

    def rename(state: dict) -> None:
        assert state["estimator"]["form"] == "paper"
        state["estimator"]["form"] = "seeds"

    edit_state(checkpoint, rename)


def test_a_run_saved_with_form_seeds_resumes_as_the_paper_form_bit_for_bit(tmp_path):
    full, old = tmp_path / "paper", tmp_path / "seeds"
    train(_cfg(full, "paper"))
    assert len(train(_cfg(old, "seeds", stop_after=2))) == 2
    saved = yaml.safe_load((old / "config.yaml").read_text())
    assert saved["estimator_kwargs"] == {"form": "seeds"}
    ckpt = latest_checkpoint(old)
    assert ckpt is not None and ckpt.name.endswith("2")
    _as_before_the_rename(ckpt)

    rest = train(_cfg(old, "seeds", resume=True))
    assert [r["iteration"] for r in rest] == [3]
    a = [strip_timing(r) for r in read_metrics(full)]
    b = [strip_timing(r) for r in read_metrics(old)]
    assert len(a) == 3 and a == b
    records_a, records_b = find_records(full), find_records(old)
    assert sorted(records_a) == sorted(records_b) == [1, 2, 3]
    for it in (1, 2, 3):
        ra, rb = read_batch_record(records_a[it]), read_batch_record(records_b[it])
        assert ra.advantages is not None and rb.advantages is not None
        np.testing.assert_array_equal(ra.advantages, rb.advantages)
    # the resumed iteration credits something (its advantages are not all zero)
    assert np.any(read_batch_record(records_a[3]).advantages != 0)
    weights = "checkpoints/iter-000003/model.safetensors"
    assert (full / weights).read_bytes() == (old / weights).read_bytes()
