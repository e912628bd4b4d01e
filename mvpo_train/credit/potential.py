"""AMP weights and region potential for MVPO (docs/estimators.md §3.2-§3.3), NumPy on flat arrays.

Everything here works on one row per environment step, rows in any order, identified by a
trajectory index and a step index ``t``; the padded per-trajectory scans come from
:mod:`mvpo_train.segments`. Nothing here imports torch or the trainer.

Contents
--------
- :class:`AMPWeights`, the adaptive milestone progress weights carried across iterations (§3.2);
- :func:`milestone_reward` (``m_{i,t}``, §3.3);
- :func:`viability_values` (``p_{i,t}`` and ``g_{i,t}``, §3.3);
- :func:`region_potential` (``phi(rho)`` and the loop statistic ``L(rho)``, §3.3);
- :func:`seen_before`, :func:`loop_rows` (the per-row loop indicators, §3.3 and §3.8);
- :func:`split_half_mean`, :func:`spearman` (the non-circular potential statistic, §3.7).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mvpo_train.segments import TrajLayout, flatten_milestones, padded, traj_layout

__all__ = [
    "AMP_SCORES",
    "LOOP_STATS",
    "AMPWeights",
    "floor_normalise",
    "loop_rows",
    "milestone_reward",
    "region_potential",
    "seen_before",
    "spearman",
    "split_half_mean",
    "viability_values",
]

AMP_SCORES = ("success", "progress")
"""AMP evidence ``s_k`` (docs/estimators.md §3.2, §3.8): ``"success"`` (form v1) or ``"progress"``."""
LOOP_STATS = ("dwell", "revisit")
"""Loop indicators (docs/estimators.md §3.3, §3.8): ``"dwell"`` (form v1) or ``"revisit"``."""


# --------------------------------------------------------------------------------------------
# Milestones and AMP weights (docs/estimators.md §3.2)
# --------------------------------------------------------------------------------------------


def milestone_reward(
    milestones: Sequence[Iterable[str]], weights: Mapping[str, float]
) -> np.ndarray:
    """``m_{i,t} = sum_{k in milestones_{i,t}} w_k`` per row (docs/estimators.md §3.3).

    Names absent from ``weights`` count 0.
    """
    rows, names = flatten_milestones(milestones)
    w = np.fromiter((weights.get(n, 0.0) for n in names), dtype=np.float64, count=len(names))
    return np.bincount(rows, weights=w, minlength=len(milestones)).astype(np.float64)


@dataclass
class AMPWeights:
    """Adaptive milestone progress weights ``w_k`` (docs/estimators.md §3.2).

    The vocabulary grows as names are seen: a new name enters with the mean of the current
    weights (1 when empty) and the vector is renormalised. ``update`` applies
    ``w <- normalise((1 - eta) * w + eta * normalise(max(s, 0)))`` to the milestones hit in the
    batch, keeping the total weight of the milestones without a hit unchanged, then applies the
    floor ``w_min`` exactly (:func:`floor_normalise`).
    """

    eta: float = 0.1
    w_min: float = 0.02
    names: list[str] = field(default_factory=list)
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))

    def __post_init__(self) -> None:
        self.weights = np.asarray(self.weights, dtype=np.float64)
        if len(self.weights) != len(self.names):
            raise ValueError("AMPWeights: names and weights differ in length")
        self._index = {n: i for i, n in enumerate(self.names)}

    def index(self, name: str) -> int:
        """Position of a known milestone name."""
        return self._index[name]

    def add_names(self, names: Iterable[str]) -> list[str]:
        """Add unseen names (sorted, so row order never matters); return the new ones (§3.2)."""
        new = sorted({n for n in names if n not in self._index})
        if not new:
            return []
        fill = float(self.weights.mean()) if len(self.weights) else 1.0
        self.weights = np.concatenate([self.weights, np.full(len(new), fill)])
        self.weights /= self.weights.sum()
        for n in new:
            self._index[n] = len(self.names)
            self.names.append(n)
        return new

    def as_dict(self) -> dict[str, float]:
        """``{name: weight}`` as plain floats."""
        return {n: float(w) for n, w in zip(self.names, self.weights, strict=True)}

    def scores(
        self,
        hit_traj: np.ndarray,
        hit_name: np.ndarray,
        hit_t: np.ndarray,
        traj_success: np.ndarray,
        mode: str = "success",
    ) -> np.ndarray:
        """Per-milestone evidence ``s_k`` (docs/estimators.md §3.2); NaN for milestones not hit.

        ``hit_*`` describe one milestone hit each (trajectory index, name index, step);
        ``traj_success`` is one bool per trajectory. ``mode="success"`` (form v1): with any
        success in the batch, ``s_k = P(success | k hit) - P(success)``; otherwise
        ``s_k = P(a different milestone fires later | k hit)``. ``mode="progress"`` (§3.8):
        ``s_k = P(progress follows | k hit)``, where progress follows when a different milestone
        fires at a strictly later step or the trajectory succeeds.
        """
        if mode not in AMP_SCORES:
            raise ValueError(f"AMPWeights.scores: mode must be one of {AMP_SCORES}, got {mode!r}")
        n_k, n_traj = len(self.names), len(traj_success)
        s = np.full(n_k, np.nan)
        if len(hit_traj) == 0 or n_traj == 0:
            return s
        # first hit of each (trajectory, milestone)
        key = hit_traj * n_k + hit_name
        order = np.lexsort((hit_t, key))
        key_s = key[order]
        first = np.ones(len(key_s), dtype=bool)
        first[1:] = key_s[1:] != key_s[:-1]
        sel = order[first]
        ft, fk, ftime = hit_traj[sel], hit_name[sel], hit_t[sel]
        n_hit = np.bincount(fk, minlength=n_k).astype(np.float64)
        hit = n_hit > 0
        success = np.asarray(traj_success, dtype=bool)
        if mode == "progress":
            later = _other_fires_later(hit_traj, hit_name, hit_t, ft, fk, ftime, n_traj)
            follows = (later | success[ft]).astype(np.float64)
            s[hit] = np.bincount(fk, weights=follows, minlength=n_k)[hit] / n_hit[hit]
        elif success.any():
            n_succ_hit = np.bincount(fk, weights=success[ft].astype(np.float64), minlength=n_k)
            s[hit] = n_succ_hit[hit] / n_hit[hit] - success.mean()
        else:
            later = _other_fires_later(hit_traj, hit_name, hit_t, ft, fk, ftime, n_traj)
            n_later = np.bincount(fk, weights=later.astype(np.float64), minlength=n_k)
            s[hit] = n_later[hit] / n_hit[hit]
        return s

    def update(self, *hits: Any, **options: Any) -> np.ndarray:
        """Apply one AMP step after a batch (docs/estimators.md §3.2); return ``s`` (NaN = no hit).

        Takes the arguments of :meth:`scores` (the hits, the trajectories' success, ``mode``):
        the step moves the weights of the milestones hit towards that evidence."""
        s = self.scores(*hits, **options)
        hit = ~np.isnan(s)
        pos = np.where(hit, np.maximum(np.nan_to_num(s), 0.0), 0.0)
        if pos.sum() > 0:
            mass = self.weights[hit].sum()
            target = pos / pos.sum() * mass
            w = self.weights.copy()
            w[hit] = (1.0 - self.eta) * w[hit] + self.eta * target[hit]
            self.weights = floor_normalise(w, self.w_min)
        return s

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state."""
        return {"names": list(self.names), "weights": [float(w) for w in self.weights]}

    def load_state_dict(self, d: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` exactly."""
        self.names = list(d.get("names", []))
        self.weights = np.asarray(d.get("weights", []), dtype=np.float64)
        self.__post_init__()


def floor_normalise(w: np.ndarray, w_min: float) -> np.ndarray:
    """Normalise to sum 1 with every weight >= ``w_min`` (docs/estimators.md §3.2, the floor).

    Weights below the floor are set to it and the rest rescaled to fill the remaining mass,
    repeated until none is below (at most ``K`` rounds). Uniform when ``K * w_min >= 1``.
    """
    k = len(w)
    if k == 0:
        return w.astype(np.float64)
    if k * w_min >= 1.0:
        return np.full(k, 1.0 / k)
    w = np.asarray(w, dtype=np.float64) / np.sum(w)
    fixed = np.zeros(k, dtype=bool)
    for _ in range(k):
        low = (w < w_min) & ~fixed
        if not low.any():
            break
        fixed |= low
        rest = 1.0 - w_min * fixed.sum()
        w = np.where(fixed, w_min, w * rest / w[~fixed].sum())
    return w


def _other_fires_later(
    hit_traj: np.ndarray,
    hit_name: np.ndarray,
    hit_t: np.ndarray,
    ft: np.ndarray,
    fk: np.ndarray,
    ftime: np.ndarray,
    n_traj: int,
) -> np.ndarray:
    """For each first hit ``(traj, k, t_k)``: does a milestone ``!= k`` fire at ``t > t_k``?

    Uses the two latest hits of each trajectory with different names: if the latest hit is
    not ``k`` its time decides, otherwise the latest hit of another name decides (§3.2).
    """
    n_k = int(max(hit_name.max(), fk.max())) + 1 if len(hit_name) else 1
    # latest time of each (traj, name)
    key = hit_traj * n_k + hit_name
    uk, inv = np.unique(key, return_inverse=True)
    latest = np.full(len(uk), -1, dtype=np.int64)
    np.maximum.at(latest, inv.reshape(-1), hit_t)
    u_traj, u_name = uk // n_k, uk % n_k
    # per trajectory: best (latest) and the name achieving it, then second best other name
    order = np.lexsort((-latest, u_traj))
    tr_s, nm_s, lt_s = u_traj[order], u_name[order], latest[order]
    start = np.ones(len(tr_s), dtype=bool)
    start[1:] = tr_s[1:] != tr_s[:-1]
    best_t = np.full(n_traj, -1, dtype=np.int64)
    best_n = np.full(n_traj, -1, dtype=np.int64)
    second_t = np.full(n_traj, -1, dtype=np.int64)
    best_t[tr_s[start]] = lt_s[start]
    best_n[tr_s[start]] = nm_s[start]
    nxt = np.zeros(len(tr_s), dtype=bool)
    nxt[1:] = start[:-1] & ~start[1:]
    second_t[tr_s[nxt]] = lt_s[nxt]
    other_latest = np.where(best_n[ft] == fk, second_t[ft], best_t[ft])
    return other_latest > ftime


# --------------------------------------------------------------------------------------------
# Viability values and region potential (docs/estimators.md §3.3)
# --------------------------------------------------------------------------------------------


def viability_values(
    m: np.ndarray,
    traj: np.ndarray,
    t: np.ndarray,
    is_last: np.ndarray,
    episode_return: np.ndarray,
    *,
    c_succ: float = 1.0,
    gamma_m: float = 0.95,
    layout: TrajLayout | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Progress made ``p`` and milestone return-to-go ``g`` per row (docs/estimators.md §3.3).

    ``p_{i,t} = sum_{t'<t} m_{i,t'}``;
    ``g_{i,t} = m_{i,t} + c_succ * R_i * [t is last] + gamma_m * g_{i,t+1}``.
    ``episode_return`` is ``R_i`` repeated on every row of trajectory ``i``.
    """
    lay = layout if layout is not None else traj_layout(traj, t)
    if lay.n_traj == 0:
        return np.zeros(0), np.zeros(0)
    mat = padded(np.asarray(m, dtype=np.float64), lay)
    done = np.zeros_like(mat)
    np.cumsum(mat[:-1], axis=0, out=done[1:])
    last = np.asarray(is_last, dtype=bool)
    ret = np.asarray(episode_return, dtype=np.float64)
    mat[lay.t[last], lay.traj_index[last]] += c_succ * ret[last]
    for c in range(lay.t_max - 2, -1, -1):
        mat[c] = mat[c] + gamma_m * mat[c + 1]
    return done[lay.t, lay.traj_index], mat[lay.t, lay.traj_index]


def _distinct_per_region(region: np.ndarray, traj: np.ndarray, n_r: int) -> np.ndarray:
    """Number of distinct ``traj`` labels per region (a table when small, else np.unique)."""
    if len(region) == 0:
        return np.zeros(n_r, dtype=np.int64)
    traj = traj - traj.min()
    width = int(traj.max()) + 1
    if n_r * width <= 16 * len(region) + 4096:
        seen = np.zeros(n_r * width, dtype=bool)
        seen[region * width + traj] = True
        return seen.reshape(n_r, width).sum(axis=1)
    pair = np.unique(region * width + traj)
    return np.bincount(pair // width, minlength=n_r)


def region_potential(
    region: np.ndarray,
    traj: np.ndarray,
    v: np.ndarray,
    *,
    lambda_l: float = 0.5,
    lambda_f: float = 0.0,
    future_milestone: np.ndarray | None = None,
    n_regions: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``phi(rho)`` per region and the loop statistic ``L(rho)`` (docs/estimators.md §3.3).

    ``phi(rho) = mean_{visits} v - lambda_l * L(rho) + lambda_f * F(rho)`` with
    ``L(rho) = (visits - distinct trajectories) / distinct trajectories`` and ``F(rho)`` the share
    of visits at or after which the trajectory still triggers a milestone (``future_milestone``,
    needed only when ``lambda_f != 0``). ``region`` holds ids ``0..n_regions-1``. ``traj`` may be
    any labelling that tells apart the trajectories inside each region (MVPO passes the index of
    the trajectory within its rollout group when regions stay inside groups: smaller tables).
    """
    region = np.asarray(region, dtype=np.int64)
    n_r = int(n_regions if n_regions is not None else (region.max() + 1 if region.size else 0))
    visits = np.bincount(region, minlength=n_r).astype(np.float64)
    safe = np.maximum(visits, 1.0)
    mean_v = np.bincount(region, weights=np.asarray(v, dtype=np.float64), minlength=n_r) / safe
    n_tr = _distinct_per_region(region, np.asarray(traj, dtype=np.int64), n_r)
    loop = (visits - n_tr) / np.maximum(n_tr, 1)
    phi = mean_v - lambda_l * loop
    if lambda_f != 0.0:
        if future_milestone is None:
            raise ValueError("region_potential: lambda_f != 0 needs future_milestone")
        f = np.bincount(region, weights=np.asarray(future_milestone, np.float64), minlength=n_r)
        phi = phi + lambda_f * f / safe
    return phi, loop


# --------------------------------------------------------------------------------------------
# Loop indicators and the non-circular statistic (docs/estimators.md §3.3, §3.7, §3.8)
# --------------------------------------------------------------------------------------------


def seen_before(code: np.ndarray, traj: np.ndarray) -> np.ndarray:
    """Per row: the same trajectory showed the same ``code`` at an earlier row.

    Rows sorted by (trajectory, step); ``code`` and ``traj`` non-negative integers.
    """
    n = len(code)
    if n == 0:
        return np.zeros(0, dtype=bool)
    key = np.asarray(traj, np.int64) * (int(code.max()) + 1) + np.asarray(code, np.int64)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    first = np.ones(n, dtype=bool)
    first[1:] = ks[1:] != ks[:-1]
    out = np.empty(n, dtype=bool)
    out[order] = ~first
    return out


def loop_rows(mode: str, region: np.ndarray, sig_code: np.ndarray, traj: np.ndarray) -> np.ndarray:
    """Per-row loop indicator (docs/estimators.md §3.3, §3.8); rows sorted by (trajectory, step).

    * ``"dwell"`` (form v1): the trajectory was in this *region* at an earlier step. Summed over
      a region it is ``visits - distinct trajectories``, the numerator of v1's ``L(rho)``; it
      counts staying in a region as much as coming back to it.
    * ``"revisit"``: the trajectory comes back to this *signature* after having left it
      (seen at an earlier step, and the previous step's signature differs): the event the
      loop rule of §3.1 merges. Staying (take, open, heat, put at one place) is not a loop.
    """
    if mode not in LOOP_STATS:
        raise ValueError(f"loop_rows: mode must be one of {LOOP_STATS}, got {mode!r}")
    traj = np.asarray(traj, np.int64)
    if mode == "dwell":
        return seen_before(np.asarray(region, np.int64), traj)
    sig = np.asarray(sig_code, np.int64)
    stay = np.zeros(len(sig), dtype=bool)
    stay[1:] = (sig[1:] == sig[:-1]) & (traj[1:] == traj[:-1])
    return seen_before(sig, traj) & ~stay


def split_half_mean(
    region: np.ndarray, fold: np.ndarray, x: np.ndarray, count: np.ndarray | None = None
) -> np.ndarray:
    """Per row: ``sum x / sum count`` over the rows of its region that lie in the *other* fold
    (``fold`` is 0 or 1 per row; docs/estimators.md §3.7); NaN where that fold has none.

    ``count`` defaults to 1 per row (a plain mean of the other half's visits); pass another
    per-row quantity for a ratio of sums (loop rows over distinct trajectories).
    """
    region = np.asarray(region, np.int64)
    n = len(region)
    if n == 0:
        return np.zeros(0)
    n_r = int(region.max()) + 1
    fold = np.asarray(fold, np.int64)
    key = fold * n_r + region
    c = np.ones(n) if count is None else np.asarray(count, np.float64)
    sx = np.bincount(key, weights=np.asarray(x, np.float64), minlength=2 * n_r)
    sc = np.bincount(key, weights=c, minlength=2 * n_r)
    other = (1 - fold) * n_r + region
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sc[other] > 0, sx[other] / sc[other], np.nan)


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    new = np.ones(len(x), dtype=bool)
    new[1:] = xs[1:] != xs[:-1]
    block = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(x)]
    avg = (starts + ends + 1) / 2.0  # mean of the 1-based positions starts+1 .. ends
    ranks = np.empty(len(x))
    ranks[order] = avg[block]
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (average ranks for ties); NaN with < 3 pairs or a constant side."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    if len(x) < 3:
        return float("nan")
    rx, ry = _average_ranks(x), _average_ranks(y)
    rx -= rx.mean()
    ry -= ry.mean()
    den = float(np.sqrt((rx * rx).sum() * (ry * ry).sum()))
    return float((rx * ry).sum() / den) if den > 0 else float("nan")
