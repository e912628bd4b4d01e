"""The numbers behind the inspect page (docs/inspect.md, "What the page shows").

Everything is computed from a :class:`~mvpo_train.records.BatchRecord` with the estimators'
own code: each estimator's advantages are exactly ``get_estimator(name)(batch)`` (the trained
estimator: its recorded config and pre-call state), the regions, ``Phi`` and ``D`` are MVPO's
:func:`~mvpo_train.credit.mvpo.potential_terms` and the routing is GiGPO's step groups
(:func:`~mvpo_train.credit.gigpo.gigpo_parts`), as used by MVPO (docs/estimators.md §3.1-§3.6).
Rows keep the record's order; per-row arrays are indexed by row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mvpo_train.alignment import LABEL_KEY, gigpo_twin, repair_alignment
from mvpo_train.batch import StepBatch
from mvpo_train.credit import available_estimators, get_estimator
from mvpo_train.records import BatchRecord, RecordError, estimator_config_dict, truncate_text

__all__ = [
    "ROUTING",
    "InspectData",
    "build_inspect_data",
    "loop_flags",
    "parse_estimators",
]

#: routing code -> label (docs/estimators.md §3.6)
ROUTING = ("anchor group", "potential repair", "singleton", "singleton (repaired)")
DEFAULT_ESTIMATORS = ("grpo", "gigpo", "mvpo")


@dataclass
class InspectData:
    """What the page and the PNG draw; ``adv[name][k]`` is row ``k``'s advantage."""

    batch: StepBatch
    iteration: int
    source: str
    estimators: list[str]
    trained: str | None
    adv: dict[str, np.ndarray]
    diag: dict[str, dict[str, Any]]
    configs: dict[str, dict[str, Any] | None]
    region: np.ndarray  # region label per row, 0.. within each rollout group (first appearance)
    phi: np.ndarray
    d: np.ndarray
    routing: np.ndarray  # index into ROUTING
    loop: np.ndarray  # inside a loop stretch of its trajectory (docs/estimators.md §3.1)
    revisit: np.ndarray  # the signature was visited earlier in the same trajectory
    observation: np.ndarray  # display text per row (object array)
    groups: list[int]  # rollout-group ids shown
    potential_diag: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def traj_rows(self) -> dict[int, list[dict[str, Any]]]:
        """Group id -> its trajectories (won first, then by id), each with its rows by step."""
        b = self.batch
        order = np.lexsort((b.t, b.traj))
        by_traj: dict[int, list[int]] = {}
        for r in order.tolist():
            by_traj.setdefault(int(b.traj[r]), []).append(r)
        out: dict[int, list[dict[str, Any]]] = {g: [] for g in self.groups}
        for traj, rows in by_traj.items():
            g = int(b.group[rows[0]])
            if g not in out:
                continue
            out[g].append(
                {
                    "traj": traj,
                    "success": bool(b.success[rows[0]]),
                    "return": float(b.reward[rows].sum()),
                    "rows": rows,
                }
            )
        for trajs in out.values():
            trajs.sort(key=lambda x: (not x["success"], x["traj"]))
        return out

    def zero_rows(self, name: str) -> list[int]:
        """Trajectory ids (of the shown groups) whose advantage is exactly 0 on every step."""
        a = self.adv[name]
        out = []
        for trajs in self.traj_rows().values():
            for tr in trajs:
                if np.all(a[tr["rows"]] == 0.0):
                    out.append(tr["traj"])
        return sorted(out)


def parse_estimators(spec: str | None, trained: str | None) -> list[str]:
    """``"grpo,gigpo,mvpo"``, ``"all"`` or None (the defaults plus the trained estimator)."""
    if spec is None:
        names = list(DEFAULT_ESTIMATORS)
        if trained and trained not in names:
            names.append(trained)
        return names
    if spec.strip() == "all":
        return available_estimators()
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise ValueError("--estimators: give at least one name (or 'all')")
    known = set(available_estimators()) | ({trained} if trained else set())
    unknown = [n for n in names if n not in known]
    if unknown:
        for n in unknown:
            try:
                get_estimator(n)  # entry points load on first use
            except KeyError:
                raise ValueError(
                    f"--estimators: unknown estimator {n!r}; available: "
                    f"{', '.join(available_estimators())}"
                ) from None
    return list(dict.fromkeys(names))


def loop_flags(batch: StepBatch) -> tuple[np.ndarray, np.ndarray]:
    """Per row: inside a loop stretch (between two visits of one signature in its trajectory,
    the loop rule of docs/estimators.md §3.1) and "revisit" (signature seen before)."""
    n = len(batch)
    loop = np.zeros(n, dtype=bool)
    revisit = np.zeros(n, dtype=bool)
    order = np.lexsort((batch.t, batch.traj))
    sig = batch.signature
    traj = batch.traj
    start = 0
    while start < n:
        end = start
        while end < n and traj[order[end]] == traj[order[start]]:
            end += 1
        rows = order[start:end]
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for k, r in enumerate(rows.tolist()):
            s = sig[r]
            if s in first:
                revisit[r] = True
            else:
                first[s] = k
            last[s] = k
        cover = np.zeros(len(rows) + 1, dtype=np.int64)
        for s, a in first.items():
            b = last[s]
            if b > a:
                cover[a] += 1
                cover[b + 1] -= 1
        loop[rows] = np.cumsum(cover)[: len(rows)] > 0
        start = end
    return loop, revisit


def _scatter(values: np.ndarray, batch: StepBatch) -> np.ndarray:
    """Canonical-order values back to the record's row order."""
    out = np.empty(len(batch), dtype=values.dtype)
    out[batch.order] = values
    return out


def _potential(record: BatchRecord) -> tuple[Any, ...]:
    """Regions, Phi, D and routing from MVPO's own functions: the trained estimator's config and
    pre-call AMP weights when it is an MVPO, else MVPO's defaults (docs/inspect.md)."""
    from mvpo_train.credit.gigpo import gigpo_parts
    from mvpo_train.credit.mvpo import MVPO, hit_names, potential_terms

    est = record.make_estimator() if record.estimator_name is not None else None
    if not isinstance(est, MVPO):
        est = get_estimator("mvpo")
    batch = record.batch
    sb = batch.canonical()
    cfg = est.config
    amp = type(est.amp)(eta=est.amp.eta, w_min=est.amp.w_min)
    amp.load_state_dict(est.amp.state_dict())  # a copy: the estimator's own state is untouched
    parts = gigpo_parts(sb, cfg)
    pot = potential_terms(sb, cfg, amp, hit_names(sb, amp))
    single = parts.size < 2
    routing = np.where(parts.zero_credit, 1, np.where(single, 2, 0))
    if cfg.repair_singletons:
        routing = np.where(single, 3, routing)
    region = _scatter(pot.region, batch)
    # small labels per rollout group, by first appearance in (traj, t) order
    labels = np.empty(len(batch), dtype=np.int64)
    seen: dict[tuple[int, int], int] = {}
    count: dict[int, int] = {}
    for r in np.lexsort((batch.t, batch.traj)).tolist():
        g = int(batch.group[r])
        key = (g, int(region[r]))
        if key not in seen:
            seen[key] = count.get(g, 0)
            count[g] = seen[key] + 1
        labels[r] = seen[key]
    potential_diag = {
        "config": estimator_config_dict(est),
        "amp_weights_used": amp.as_dict(),
    }
    return (
        labels,
        _scatter(pot.phi, batch),
        _scatter(pot.d, batch),
        _scatter(routing.astype(np.int64), batch),
        potential_diag,
    )


def build_inspect_data(
    record: BatchRecord,
    estimators: list[str] | None = None,
    groups: list[int] | None = None,
    *,
    check_recorded: bool = True,
) -> InspectData:
    """Compute everything the page shows (docs/inspect.md).

    ``estimators``: names (default :func:`parse_estimators` of None); ``groups``: rollout-group
    ids to show (default all). With ``check_recorded`` the trained estimator's recomputed
    advantages must equal the recorded ones bit for bit (:meth:`BatchRecord.verify`), else
    :class:`~mvpo_train.records.RecordError`.
    """
    batch = record.batch
    names = estimators if estimators is not None else parse_estimators(None, record.estimator_name)
    all_groups = sorted(set(batch.group.tolist()))
    if groups is None:
        groups = all_groups
    else:
        missing = [g for g in groups if g not in all_groups]
        if missing:
            raise ValueError(
                f"--group: no rollout group {missing[0]} in this record; groups: "
                f"{all_groups[0]}..{all_groups[-1]}"
                if all_groups
                else "--group: the record is empty"
            )
    adv: dict[str, np.ndarray] = {}
    diag: dict[str, dict[str, Any]] = {}
    configs: dict[str, dict[str, Any] | None] = {}
    for name in names:
        est = record.make_estimator(name)
        configs[name] = estimator_config_dict(est)
        a, d = est(batch)
        labels = record.extras.get(LABEL_KEY)
        if labels is not None and getattr(est, "name", "") == "mvpo":
            # the repair against the recorded oracle labels (docs/alignment.md)
            gigpo_adv, _ = gigpo_twin(est)(batch)
            d = {**d, **repair_alignment(batch, a, gigpo_adv, labels).as_metrics()}
        adv[name], diag[name] = a, d
    if check_recorded and record.advantages is not None:
        trained = record.estimator_name
        a = adv[trained] if trained in adv else record.make_estimator()(batch)[0]
        if not np.array_equal(a, record.advantages):
            k = int(np.argmax(np.abs(a - record.advantages)))
            raise RecordError(
                f"{record.path}: recomputed {trained} advantages differ from the recorded ones "
                f"(row {k}: {a[k]!r} vs {record.advantages[k]!r})"
            )
    region, phi, d, routing, pdiag = _potential(record)
    loop, revisit = loop_flags(batch)
    if record.observations is not None:
        obs = record.observations
    else:
        obs = np.empty(len(batch), dtype=object)
        obs[:] = [truncate_text(a, record.max_obs_chars or 600) for a in batch.anchor.tolist()]
    return InspectData(
        batch=batch,
        iteration=record.iteration,
        source=str(record.path),
        estimators=list(names),
        trained=record.estimator_name,
        adv=adv,
        diag=diag,
        configs=configs,
        region=region,
        phi=phi,
        d=d,
        routing=routing,
        loop=loop,
        revisit=revisit,
        observation=obs,
        groups=list(groups),
        potential_diag=pdiag,
        meta=dict(record.meta),
    )


def finite_or_none(x: Any) -> Any:
    """JSON for the browser: NaN/inf become null (JSON.parse rejects them)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): finite_or_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_or_none(v) for v in x]
    if isinstance(x, np.generic):
        return finite_or_none(x.item())
    if isinstance(x, np.ndarray):
        return finite_or_none(x.tolist())
    return x
