"""Played batches kept as batch records, so that a benchmark plays each batch once
(``benchmarks/alignment.py``, ``benchmarks/potential_options.py``; docs/alignment.md).

:func:`cached_batch` returns the batch recorded at a path, or plays it and records it there
(:mod:`mvpo_train.records`, written atomically; the CPU seconds of the play are kept in the
record's ``meta["play_cpu_s"]``). A record that cannot be read is played again. A batch read
back carries the extras the alignment measurements read (:func:`measured_batch`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.batch import FIELDS, ORACLE_PLAN_DECREASE, ORACLE_PROGRESS, StepBatch
from mvpo_train.records import BatchRecord, RecordError, read_batch_record, write_batch_record
from mvpo_train.scripted_batches import SIGNATURE_PREFIX

__all__ = ["cached_batch", "measured_batch"]

#: a play: the batch and the facts to keep with it (JSON-serialisable)
Play = Callable[[], tuple[StepBatch, dict[str, Any]]]


def measured_batch(rec: BatchRecord) -> StepBatch:
    """The recorded batch with the extras the measurements read, in their played types: the
    oracle label and ``task_index`` as int64, ``oracle_plan_decrease`` as float64, the other
    abstractions' ``signature:NAME`` columns as lists (a :class:`KeyError` without a label)."""
    extras: dict[str, Any] = {ORACLE_PROGRESS: rec.extras[ORACLE_PROGRESS].astype(np.int64)}
    for k, v in rec.extras.items():
        if k == "task_index":
            extras[k] = v.astype(np.int64)
        elif k.startswith(SIGNATURE_PREFIX):
            extras[k] = list(v)
        elif k == ORACLE_PLAN_DECREASE:
            extras[k] = np.asarray(v, dtype=np.float64)
    return StepBatch(**{f: getattr(rec.batch, f) for f in FIELDS}, extras=extras)


def cached_batch(path: Path, play: Play) -> tuple[StepBatch, dict[str, Any], bool]:
    """``(batch, meta, from_cache)``: the record at ``path``, or ``play()`` recorded there with
    ``meta["play_cpu_s"]`` (the process CPU seconds of the play) added."""
    if path.is_file():
        try:
            rec = read_batch_record(path)
            return measured_batch(rec), rec.meta, True
        except (RecordError, KeyError):
            path.unlink()  # a broken cache entry is played again
    t0 = time.process_time()
    batch, meta = play()
    meta = {**meta, "play_cpu_s": time.process_time() - t0}
    write_batch_record(path.parent, 0, batch, meta=meta, path=path)
    return batch, meta, False
