"""What an estimator option costs: one estimator per arm called on the same batches in order
(its state, pools included, grows as in a run), milliseconds per batch, and the page section
that compares the arms with the MVPO paper's form (``benchmarks/potential_learning.py --cost``;
docs/estimators.md §3.11-§3.13).

* :func:`uniform_batches`: the batches they are timed on, uniform-policy play of an env;
* :func:`time_arms`: the milliseconds per batch of each arm, with the first and last five;
* :func:`cost_lines`: the results page's "Estimator cost" section from the saved JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator

__all__ = ["cost_lines", "time_arms", "uniform_batches"]


def uniform_batches(
    env: Any, count: int, num_groups: int, group_size: int, steps: int
) -> list[StepBatch]:
    """``count`` uniform-policy batches of ``env`` (:func:`mvpo_train.scripted_batches.noisy_expert_batch`
    at ``p = 0``, batch ``i`` seeded ``(0, i)``): ``num_groups`` tasks drawn from the env's
    tasks per batch, as ``mvpo-train`` draws them, ``group_size`` rollouts of ``steps`` steps."""
    from mvpo_train.scripted_batches import noisy_expert_batch

    n_tasks = len(env.unwrapped.task_ids)
    batches = []
    for i in range(count):
        rng = np.random.default_rng([0, i])
        tasks = [int(t) for t in rng.choice(n_tasks, size=num_groups, replace=False)]
        batches.append(noisy_expert_batch(env, tasks, group_size, steps, 0.0, rng).batch)
    return batches


def time_arms(
    batches: Sequence[StepBatch], arms: Mapping[str, tuple[str, Mapping[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """Per arm (name -> (estimator, keywords)): one estimator called on ``batches`` in order,
    its milliseconds per batch (``ms``), their mean over the first 5 (``first5``), the last 5
    (``last5``) and all (``mean``)."""
    rows: dict[str, dict[str, Any]] = {}
    for name, (estimator, kwargs) in arms.items():
        est = get_estimator(estimator, **kwargs)
        ms = []
        for batch in batches:
            t0 = time.perf_counter()
            est(batch)
            ms.append(1000.0 * (time.perf_counter() - t0))
        rows[name] = {
            "ms": ms,
            "first5": float(np.mean(ms[:5])),
            "last5": float(np.mean(ms[-5:])),
            "mean": float(np.mean(ms)),
        }
    return rows


def cost_lines(path: Path, paper: str = "mvpo") -> list[str]:
    """The cost section of a results page from the JSON at ``path`` (``batches``, ``command``,
    ``arms``: :func:`time_arms`), each arm's mean against the arm ``paper``'s; none without
    the file."""
    path = Path(path)
    if not path.is_file():
        return []
    c = json.loads(path.read_text())
    ref = c["arms"][paper]
    lines = [
        "",
        "## Estimator cost",
        "",
        f"Command: `{c['command']}`: one estimator per arm on {c['batches']} consecutive "
        "uniform-policy batches of this env and size (the pools grow as in a run); "
        "milliseconds per batch, and the ratio to the paper's form. A run's iteration takes "
        "seconds (rollout and update), so these are its estimator's share only.",
        "",
        "| arm | ms/batch, batches 1-5 | last 5 | mean | mean / paper |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, r in c["arms"].items():
        lines.append(
            f"| {name} | {r['first5']:.1f} | {r['last5']:.1f} | {r['mean']:.1f} | "
            f"{r['mean'] / ref['mean']:.1f}x |"
        )
    return lines
