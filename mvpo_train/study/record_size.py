"""A batch record's size with and without what ``mvpo-export`` needs (benchmarks/record_size.py;
docs/inspect.md, "Batch records").

:func:`showcase_batch` collects one real batch of the showcase's shape (the ``cpu-showcase``
preset: the bundled encoder warm start on ALFWorld) with the trainer's collector;
:func:`record_sizes` writes it once as the trainer writes it and once without the extras that
only the export reads (:data:`mvpo_train.export.RECORDED_FIELDS`).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.export import RECORDED_FIELDS
from mvpo_train.records import write_batch_record


def showcase_batch(
    groups: int, group_size: int, max_steps: int, seed: int
) -> tuple[str, StepBatch, float]:
    """One batch of ``groups`` tasks (drawn with ``numpy.random.default_rng(seed)``) x
    ``group_size`` rollouts x up to ``max_steps`` steps of the ``cpu-showcase`` preset, one
    torch thread: the env id, the batch and the collection's wall seconds."""
    from mvpo_train.config import preset
    from mvpo_train.factories import load_policy, make_collector, make_venv

    torch.set_num_threads(1)
    cfg = preset(
        "cpu-showcase", num_groups=groups, group_size=group_size, max_steps=max_steps,
        seed=seed, threads=1, progress=False, embedding_cache="",
    )  # fmt: skip
    policy = load_policy(cfg)
    venv = make_venv(cfg, cfg.env_kwargs.get("split", "train"), groups, group_size)
    try:
        collector = make_collector(cfg, venv, policy, torch.Generator().manual_seed(seed))
        tasks = np.random.default_rng(seed).integers(0, venv.num_tasks, groups)
        start = time.perf_counter()
        batch = collector.collect([int(t) for t in tasks])
        return cfg.env_id, batch, time.perf_counter() - start
    finally:
        venv.close()


def record_sizes(batch: StepBatch) -> dict[str, int]:
    """Bytes of ``batch``'s record as the trainer writes it (``with_export_fields``) and
    without the export's extras (``without``)."""
    without = StepBatch(
        **{f: getattr(batch, f) for f in FIELDS},
        extras={k: v for k, v in batch.extras.items() if k not in RECORDED_FIELDS},
    )
    sizes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, b in (("with_export_fields", batch), ("without", without)):
            path = write_batch_record(tmp, 1, b, path=Path(tmp) / f"{name}.npz")
            sizes[name] = path.stat().st_size
    return sizes
