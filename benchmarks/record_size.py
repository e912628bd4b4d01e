"""Batch-record size with and without what ``mvpo-export`` needs (docs/inspect.md, "Batch
records"): one real batch of the showcase's shape (``cpu-showcase`` preset: the bundled encoder
warm start on ALFWorld, 16 groups x 8 rollouts x up to 50 steps), collected by the trainer's
collector, written once as the trainer writes it and once without the ``prompt``,
``admissible_actions``, ``task_id`` and ``task_index`` extras.

    python benchmarks/record_size.py --out benchmarks/results/record_size.json

Seeded (``--seed``); one torch thread.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.config import preset
from mvpo_train.export import RECORDED_FIELDS
from mvpo_train.factories import load_policy, make_venv, rollout_config
from mvpo_train.prompts import get_template
from mvpo_train.records import write_batch_record
from mvpo_train.rollout import RolloutCollector


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="JSON result file")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    cfg = preset(
        "cpu-showcase", num_groups=args.groups, group_size=args.group_size,
        max_steps=args.max_steps, seed=args.seed, threads=1, progress=False,
        embedding_cache="",
    )  # fmt: skip
    policy = load_policy(cfg)
    venv = make_venv(cfg, cfg.env_kwargs.get("split", "train"), args.groups, args.group_size)
    try:
        collector = RolloutCollector(
            venv, policy, get_template(cfg.env_id, cfg.prompt_style), rollout_config(cfg),
            None, torch.Generator().manual_seed(args.seed),
        )  # fmt: skip
        tasks = np.random.default_rng(args.seed).integers(0, venv.num_tasks, args.groups)
        start = time.perf_counter()
        batch = collector.collect([int(t) for t in tasks])
        seconds = time.perf_counter() - start
    finally:
        venv.close()
    without = StepBatch(
        **{f: getattr(batch, f) for f in FIELDS},
        extras={k: v for k, v in batch.extras.items() if k not in RECORDED_FIELDS},
    )
    sizes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, b in (("with_export_fields", batch), ("without", without)):
            path = write_batch_record(tmp, 1, b, path=Path(tmp) / f"{name}.npz")
            sizes[name] = path.stat().st_size
    result = {
        "command": "python benchmarks/record_size.py" + (f" --out {args.out}" if args.out else ""),
        "env_id": cfg.env_id,
        "rows": len(batch),
        "rollout_seconds": round(seconds, 1),
        "record_mib": {k: round(v / 2**20, 3) for k, v in sizes.items()},
        "bytes_per_row": {k: round(v / len(batch), 1) for k, v in sizes.items()},
        "distinct_prompts": len(set(batch.extras["prompt"])),
    }
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
