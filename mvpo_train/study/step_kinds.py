"""MVPO's repair per step kind on control-task batches, and its alignment, for one option
(docs/estimators.md §3.12-§3.13; ``benchmarks/potential_kinds.py`` writes the tables).

:func:`step_kinds` sorts the rows of a ``mvpo/MilestoneChain-v0`` batch into :data:`KINDS`:
``go to`` into a milestone place (a ``go to`` after which a milestone is made before the agent
leaves the place it went to), the milestone step (a row that fires a milestone), the step
leaving it (the first ``go to`` after a milestone, from the place where it was made), every
other ``go to`` and every other step. :func:`measure` calls one MVPO estimator on batches in
order (its state, the pool included, carried from batch to batch, as in a run) and gives per
batch the AUC of its repair for ``extras["oracle_progress"]`` (``repair_alignment``,
docs/alignment.md) and per kind the routed rows' repair ``kappa * A^Phi``;
:func:`pool_lines` writes one task pool's table of them, :func:`decay_fold_lines` the
section on the pool's decay, its folds and its memory. :func:`keys_per_task` counts the
entries a batch adds to the pool per task.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.credit.alignment_measure import repair_alignment
from mvpo_train.credit.mvpo import MVPOConfig, milestones_done
from mvpo_train.stats import t_interval

__all__ = [
    "KINDS",
    "KINDS_NOTE",
    "decay_fold_lines",
    "keys_per_task",
    "measure",
    "ms_x_paper",
    "pool_lines",
    "step_kinds",
]

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


def keys_per_task(batch: StepBatch) -> list[int]:
    """Distinct ``(signature, milestones done)`` keys of each task of ``batch`` (the pool's
    entries one batch adds per task with ``potential_split="milestones"``)."""
    sb = batch.canonical()
    task = np.asarray(batch.extras["task_index"])[batch.order]
    done = milestones_done(sb)
    keys: dict[int, set] = {}
    for k, sig, d in zip(task.tolist(), sb.signature.tolist(), done.tolist(), strict=True):
        keys.setdefault(k, set()).add((sig, d))
    return [len(v) for v in keys.values()]


def pool_lines(
    n_tasks: int, res: dict[str, dict[str, Any]], burn_in: int, paper: str = "paper (default)"
) -> list[str]:
    """The section of one task pool (tasks drawn from ``n_tasks`` layouts): per option its
    :func:`measure` (``res``: option -> result), the AUC with its interval, after
    ``burn_in`` batches and per batch, the repair of the first three :data:`KINDS`, and the
    milliseconds per call against the option ``paper``'s."""
    lines = [
        "",
        f"## Tasks drawn from N = {n_tasks} layouts",
        "",
        "AUC of the repair for the oracle label, per batch (`repair_alignment`); per-kind "
        "repair `kappa * A^Phi` over the routed rows of every batch: mean / share below 0 / "
        "rows; the estimator's wall time per batch (one process, this run) and its ratio "
        "to the paper form's.",
        "",
        f"| option | MVPO keywords | mean AUC [95% t] | mean after batch {burn_in} "
        "| per batch | " + " | ".join(KINDS[:3]) + " | ms per call (x paper) |",
        "|---|---|---|---:|---|---|---|---|---:|",
    ]
    for name, r in res.items():
        ci = r["auc_mean"]
        per = " ".join(f"{a:.2f}" for a in r["auc"])
        cells = [
            f"{c['mean']:+.3f} / {c['negative']:.0%} / {c['rows']}"
            for c in (r["kinds"][k] for k in KINDS[:3])
        ]
        lines.append(
            f"| {name} | `{json.dumps(r['kwargs'])}` | {ci['mean']:.3f} "
            f"[{ci['low']:.3f}, {ci['high']:.3f}] | {r['auc_after_burn_in']:.3f} | {per} | "
            + " | ".join(cells)
            + f" | {r['ms_per_batch']:.0f} ({ms_x_paper(res, name, paper):.1f}x) |"
        )
    return lines


def ms_x_paper(res: dict[str, dict[str, Any]], name: str, paper: str = "paper (default)") -> float:
    """Option ``name``'s milliseconds per call over the option ``paper``'s: its ``ms_x_paper``
    where a page's JSON keeps it (the ratio of the unrounded times), else computed."""
    r = res[name]
    return r.get("ms_x_paper", r["ms_per_batch"] / res[paper]["ms_per_batch"])


#: what the kinds and the routed rows of :func:`pool_lines` are, for a page
KINDS_NOTE = (
    "Kinds: `go to` into a milestone place = a `go to` after which a milestone is made before "
    "the agent leaves the place it went to; milestone step = a row that fires a milestone; "
    "step leaving it = the first `go to` after a milestone, from the place where it was made. "
    "Routed rows: those MVPO repairs (zero-credit step groups). NaN AUCs (one class among "
    "the labelled repaired rows) are left out of the means."
)


def decay_fold_lines(out: dict[str, Any], combination: dict[str, Any]) -> list[str]:
    """The section on the pool's decay and the folds: ``combination``'s mean AUC after the
    burn-in at other ``pool_decay`` values (``out["decays"]``) and with more ``td_folds``
    (``out["folds"]``, ``out["folds_ms"]``: per N, folds -> AUC and ms per call), then the
    pool's entries and bytes at the end of each pooled option's run (``out["pools"]``); the
    defaults named are ``out["config"]``'s where it has them (as measured), else MVPO's now."""
    s, default = out["settings"], MVPOConfig()
    cfg = {"pool_decay": default.pool_decay, "td_folds": default.td_folds, **out.get("config", {})}
    folds = "; ".join(
        f"N = {n}: "
        + ", ".join(f"{k} folds {a:.3f} ({out['folds_ms'][n][k]:.0f} ms)" for k, a in v.items())
        for n, v in out["folds"].items()
    )
    memory = "; ".join(
        f"{name}, N = {n}: {r['pool_entries']} ({r['pool_bytes'] / 1e6:.2f} MB)"
        for n, res in out["pools"].items()
        for name, r in res.items()
        if r["kwargs"].get("region_stats") == "pooled"
    )
    return [
        "",
        "## The decay of the pool, the folds",
        "",
        f"The three options together (`{json.dumps(combination)}`) at "
        f"other `pool_decay` values, N = {s['groups']} (every task in every batch), mean AUC "
        f"after batch {s['burn_in']}: "
        + ", ".join(f"{d}: {a:.3f}" for d, a in out["decays"].items())
        + f" (default {cfg['pool_decay']}: the table above). A fixed uniform policy "
        "gains from never forgetting; a learning one changes what its old rollouts say.",
        "",
        f"The same with more folds (`td_folds`; default {cfg['td_folds']}), mean AUC after "
        f"batch {s['burn_in']} and ms per call: {folds}.",
        "",
        "## Memory of the pool",
        "",
        f"Pool entries and bytes at the end of the run above, per pooled option and N: {memory}.",
    ]
