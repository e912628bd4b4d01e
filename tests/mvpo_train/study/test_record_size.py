"""A batch record's size with and without the export's extras (mvpo_train/study/record_size.py)."""

from __future__ import annotations

from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.study.record_size import record_sizes


def _batch() -> StepBatch:
    steps = [
        dict(group=0, traj=i, t=t, reward=float(t == 2), terminated=t == 2, truncated=False,
             anchor=f"s{t}", signature=f"s{t}", milestones=(), action="go", success=True)
        for i in range(2) for t in range(3)
    ]  # fmt: skip
    extras = {
        "prompt": [f"a long prompt of step {k} " * 20 for k in range(6)],
        "admissible_actions": [["go", "look", "wait"]] * 6,
        "task_id": ["task"] * 6,
        "task_index": [0] * 6,
    }
    return StepBatch.from_steps(steps, extras=extras)


def test_the_export_extras_are_what_the_smaller_record_lacks() -> None:
    sizes = record_sizes(_batch())
    assert set(sizes) == {"with_export_fields", "without"}
    assert sizes["with_export_fields"] > sizes["without"]


def test_only_the_export_extras_are_left_out() -> None:
    batch = _batch()
    kept = StepBatch(**{f: getattr(batch, f) for f in FIELDS}, extras={"note": ["x"] * 6})
    sizes = record_sizes(kept)
    assert sizes["with_export_fields"] == sizes["without"]
