"""Batch-record size with and without what ``mvpo-export`` needs (docs/inspect.md, "Batch
records"): one real batch of the showcase's shape (``cpu-showcase``, 16 groups x 8 rollouts x
up to 50 steps) written with and without the export's extras
(:mod:`mvpo_train.study.record_size`). Seeded (``--seed``); one torch thread.

    python benchmarks/record_size.py --out benchmarks/results/record_size.json
"""

from __future__ import annotations

import argparse

from mvpo_train.study.record_size import record_sizes, showcase_batch
from mvpo_train.study.tables import report_json


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="JSON result file")
    args = p.parse_args(argv)
    env_id, batch, seconds = showcase_batch(args.groups, args.group_size, args.max_steps, args.seed)
    sizes = record_sizes(batch)
    result = {
        "command": "python benchmarks/record_size.py" + (f" --out {args.out}" if args.out else ""),
        "env_id": env_id,
        "rows": len(batch),
        "rollout_seconds": round(seconds, 1),
        "record_mib": {k: round(v / 2**20, 3) for k, v in sizes.items()},
        "bytes_per_row": {k: round(v / len(batch), 1) for k, v in sizes.items()},
        "distinct_prompts": len(set(batch.extras["prompt"])),
    }
    report_json(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
