"""MVPO's repair per step kind on control-task batches, and its alignment, for one option
(docs/estimators.md §3.12-§3.13; ``benchmarks/potential_kinds.py`` writes the tables).

:func:`step_kinds` sorts the rows of a ``mvpo/MilestoneChain-v0`` batch into :data:`KINDS`:
``go to`` into a milestone place (a ``go to`` after which a milestone is made before the agent
leaves the place it went to), the milestone step (a row that fires a milestone), the step
leaving it (the first ``go to`` after a milestone, from the place where it was made), every
other ``go to`` and every other step. :func:`measure` calls one MVPO estimator on batches in
order (its state, the pool included, carried from batch to batch, as in a run) and gives per
batch the AUC of its repair for ``extras["oracle_progress"]`` (``repair_alignment``,
docs/alignment.md) and per kind the routed rows' repair ``kappa * A^Phi``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.credit.alignment_measure import repair_alignment
from mvpo_train.stats import t_interval

__all__ = ["KINDS", "measure", "step_kinds"]

KINDS = (
    "go to into a milestone place",
    "milestone step",
    "step leaving it",
    "other go to",
    "other",
)


def step_kinds(batch: StepBatch) -> np.ndarray:
    """Per row (batch order, rows of a trajectory consecutive and in time order): its kind
    (an index into :data:`KINDS`)."""
    place = np.array([s.split("|")[0] for s in batch.signature], dtype=object)
    go = np.array([a.startswith("go to") for a in batch.action])
    fires = batch.milestone_count > 0
    kind = np.where(go, 3, 4)
    kind[fires] = 1
    n, traj = len(batch), batch.traj
    for i in np.flatnonzero(go).tolist():
        if i + 1 < n and traj[i + 1] == traj[i]:  # the stay at the place it goes to
            j = i + 1
            while j < n and traj[j] == traj[i] and place[j] == place[i + 1]:
                if fires[j]:
                    kind[i] = 0
                    break
                j += 1
        k = i - 1  # the stay it ends: a milestone made there makes it the step leaving it
        while kind[i] == 3 and k >= 0 and traj[k] == traj[i] and place[k] == place[i]:
            if fires[k]:
                kind[i] = 2
            k -= 1
    return kind


def measure(batches: list[StepBatch], kwargs: dict[str, Any], burn_in: int) -> dict[str, Any]:
    """One estimator with ``kwargs`` called on ``batches`` in order: per-batch AUC, per-kind
    repair, and (pooled options) the pool's size at the end."""
    est = get_estimator("mvpo", **kwargs)
    aucs: list[float] = []
    per_kind: dict[int, list[np.ndarray]] = {k: [] for k in range(len(KINDS))}
    seconds = 0.0
    for batch in batches:
        t0 = time.perf_counter()
        adv, _ = est(batch)
        seconds += time.perf_counter() - t0
        aucs.append(repair_alignment(batch, adv, est.last_gigpo).auc)
        kind = step_kinds(batch)
        for k in per_kind:
            per_kind[k].append(est.last_repair[est.last_routed & (kind == k)])
    later = [a for a in aucs[burn_in:] if np.isfinite(a)]
    kinds = {}
    for k, parts in per_kind.items():
        x = np.concatenate(parts)
        kinds[KINDS[k]] = {
            "rows": int(len(x)),
            "mean": float(x.mean()) if len(x) else float("nan"),
            "negative": float((x < 0).mean()) if len(x) else float("nan"),
        }
    finite = [a for a in aucs if np.isfinite(a)]
    return {
        "kwargs": kwargs,
        "auc": aucs,
        "auc_mean": dict(zip(("mean", "low", "high"), t_interval(finite), strict=True)),
        "auc_after_burn_in": float(np.mean(later)) if later else float("nan"),
        "kinds": kinds,
        "pool_entries": len(est.pool),
        "pool_bytes": est.pool.nbytes,
        "ms_per_batch": 1000.0 * seconds / max(len(batches), 1),
    }
