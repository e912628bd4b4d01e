"""MVPO: Milestone Viability Potential Policy Optimization (docs/estimators.md §3).

GiGPO's credit is kept where it is informative; rows of zero-credit step groups are repaired
with ``kappa_t * A^Phi``, a difference of region potentials over Union-Find viability regions.
The step groups, ``A^E`` and ``A^S`` come from :func:`gigpo_parts` (one implementation), so MVPO
equals GiGPO exactly on a batch without zero-credit step groups, whatever the options.

Two readings of the potential (``MVPOConfig.form``, docs/estimators.md §3.8): ``"paper"`` (the
MVPO paper's form, the default since the evidence of §3.10: potential-based shaping of a
per-step progress reward, potentials scaled within the batch, revisit loops, progress-based AMP;
``"seeds"``, its earlier name, is read as ``"paper"``) and ``"v1"`` (§3.3-§3.4 as first written,
the default before; it reproduces the runs made with it).

``repair_source`` (docs/alignment.md, "The oracle repair") swaps the potential difference of the
routed rows for an oracle-driven one at a chosen alignment, or for a control
(:mod:`mvpo_train.credit.oracle_repair`); the default keeps MVPO as it is.

The potential options (docs/estimators.md §3.11-§3.13; off by default): ``region_stats="pooled"``
(region statistics pooled across iterations, a row's own trajectory left out:
:mod:`mvpo_train.credit.pooled_potential`), ``potential_split="milestones"`` (regions split at
milestone events) and ``potential_estimate="td"`` (the value of the pooled chain of keys:
:mod:`mvpo_train.credit.td_potential`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mvpo_train.batch import ORACLE_PLAN_DECREASE, ORACLE_PROGRESS, StepBatch
from mvpo_train.credit.alignment_measure import repair_alignment
from mvpo_train.credit.common import BaseEstimator, StepConfig
from mvpo_train.credit.gigpo import combine, gigpo_parts, step_diagnostics
from mvpo_train.credit.oracle_repair import (
    ORACLE_SCALES,
    ORACLE_SOURCES,
    REPAIR_SOURCES,
    oracle_repair,
    oracle_scale,
    positive_credit,
    shuffled_repair,
)
from mvpo_train.credit.pooled_potential import (
    RegionPool,
    crossfit_potential,
    key_hashes,
    task_labels,
)
from mvpo_train.credit.potential import (
    AMP_SCORES,
    LOOP_STATS,
    AMPWeights,
    _distinct_per_region,
    loop_rows,
    region_potential,
    spearman,
    split_half_mean,
    viability_values,
)
from mvpo_train.credit.regions import regions_of_sorted, split_at_milestones
from mvpo_train.credit.registry import register_estimator
from mvpo_train.credit.td_potential import TransitionPool, td_potential
from mvpo_train.segments import exclusive_scan, future_any, reverse_scan

__all__ = [
    "ESTIMATES",
    "FORMS",
    "FORM_ALIASES",
    "KAPPA_SCHEDULES",
    "MVPO",
    "MVPOConfig",
    "PotentialTerms",
    "REGION_STATS",
    "SPLITS",
    "TD_CHAINS",
    "milestones_done",
    "non_circular_statistic",
    "potential_terms",
    "register_kappa_schedule",
    "repair_term",
]


# ------------------------------------------------------------------ kappa schedules (§3.5)

KappaSchedule = Callable[[float, "MVPOConfig"], float]
KAPPA_SCHEDULES: dict[str, KappaSchedule] = {}


def register_kappa_schedule(name: str, fn: KappaSchedule) -> KappaSchedule:
    """Add a kappa schedule ``fn(ema_success, config) -> kappa`` (docs/estimators.md §3.5)."""
    KAPPA_SCHEDULES[name] = fn
    return fn


register_kappa_schedule("progress", lambda e, c: float(np.clip(1.0 - e, c.kappa_min, 1.0)))
register_kappa_schedule("constant", lambda e, c: float(c.kappa_constant))
register_kappa_schedule("none", lambda e, c: 1.0)
# "progress" applied to the EMA's gain since the first batch, (e - e_start) / (1 - e_start):
# MVPO.kappa passes that relative EMA (docs/estimators.md §3.5)
register_kappa_schedule("relative", lambda e, c: float(np.clip(1.0 - e, c.kappa_min, 1.0)))


# ------------------------------------------------------------------ forms (§3.8)

FORMS: dict[str, dict[str, Any]] = {
    "v1": {
        "value": "progress",
        "loop_stat": "dwell",
        "potential_norm": "none",
        "d_scale": "routed_std",
        "amp_score": "success",
        "lambda_L": 0.5,
        "lambda_F": 0.0,
        "gamma_m": None,  # = gamma
        "gamma_phi": 1.0,
    },
    "paper": {
        "value": "shaping",
        "loop_stat": "revisit",
        "potential_norm": "scale",
        "d_scale": "none",
        "amp_score": "progress",
        "lambda_L": 0.1,
        "lambda_F": 0.2,
        "gamma_m": 1.0,
        "gamma_phi": 1.0,
    },
}
"""What ``form`` fills into the fields left at ``None`` (docs/estimators.md §3.8)."""
#: earlier names of a form, accepted wherever a form is read (config keywords, a saved state):
#: runs saved with ``form: seeds`` resume as ``"paper"``, bit for bit
FORM_ALIASES: dict[str, str] = {"seeds": "paper"}
#: the form of ``MVPOConfig()`` (docs/estimators.md §3.10: chosen by paired runs on the control
#: task and the ALFWorld train split); runs saved without a form ran ``"v1"``, the default before
DEFAULT_FORM = "paper"
FORM_BEFORE_DEFAULT_CHANGE = "v1"
#: ``region_stats`` (§3.11): the current batch in-sample (the paper's), or pooled + cross-fitted
REGION_STATS = ("batch", "pooled")
#: ``potential_split`` (§3.12): regions as they are, or split at milestone events
SPLITS = ("none", "milestones")
#: ``potential_estimate`` (§3.13): mean return-to-go of the visits, or the pooled chain's value
ESTIMATES = ("mc", "td")
#: ``td_chain`` (§3.13): the chain's states are the keys, or the keys the loop rule merges
TD_CHAINS = ("keys", "regions")
_CHOICES = {
    "value": ("progress", "shaping"),
    "loop_stat": LOOP_STATS,
    "potential_norm": ("none", "scale", "zscore"),
    "d_scale": ("routed_std", "none"),
    "amp_score": AMP_SCORES,
    "oracle_scale": ORACLE_SCALES,
}


# ------------------------------------------------------------------ config


@dataclass(frozen=True)
class MVPOConfig(StepConfig):
    """MVPO's options (docs/estimators.md §3); GiGPO's fields come first (§2).

    ``scope`` ('group' | 'batch', §3.1); ``eta``, ``w_min`` (AMP, §3.2); ``milestone_names``
    (optional initial vocabulary, §3.2); ``c_succ``, ``gamma_m`` (None = ``gamma``),
    ``lambda_L``, ``lambda_F`` (§3.3); ``gamma_phi`` (§3.4, 1 = undiscounted); ``beta``,
    ``kappa_min``, ``kappa_schedule`` ('progress' | 'relative' | 'constant' | 'none' |
    registered), ``kappa_constant`` (§3.5); ``repair_singletons``, ``anchor_credit`` (§3.6;
    ``anchor_credit=False`` drops GiGPO's anchor credit ``A^S`` on informative step groups:
    the MVPO paper's ablation "w/o GiGPO anchor").

    ``form`` ("paper", the default, | "v1", §3.8, §3.10; "seeds" is read as "paper") fills
    every field left at ``None``: ``value``
    ('progress' | 'shaping'), ``loop_stat`` ('dwell' | 'revisit'), ``potential_norm``
    ('none' | 'scale' | 'zscore'), ``d_scale`` ('routed_std' | 'none'), ``amp_score``
    ('success' | 'progress'), ``lambda_L``, ``lambda_F``, ``gamma_phi`` and ``gamma_m`` (the
    paper form sets it to 1; v1 leaves it None = ``gamma``). After construction every other
    field holds a concrete value, so a stored config reproduces its run. Bounds: the string
    options against their lists, numbers finite, ``w_min``, ``kappa_min``, ``kappa_constant``
    and the discounts in [0, 1], ``eta`` in [0, 1], ``lambda_L >= 0``.

    The oracle repair (docs/alignment.md, "The oracle repair"; an experiment, off by default):
    ``repair_source`` (str, default ``"potential"``: MVPO's own ``A^Phi``; ``"oracle"``: the
    routed rows' ``A^Phi`` replaced by ``rho * z(D) + sqrt(1 - rho^2) * eps`` at the own
    repair's spread, ``D`` the batch's ``extras["oracle_plan_decrease"]``; ``"shuffled"``: the
    own values permuted among the routed rows; ``"positive"``: ``z(D)`` at that spread as the
    step credit of every row). ``oracle_rho`` (float in [0, 1], default 1; read only by
    ``"oracle"``): the alignment ``rho``. ``oracle_seed`` (int >= 0, default 0; read by
    ``"oracle"`` and ``"shuffled"``): the noise and permutation of iteration ``i`` come from
    ``numpy.random.default_rng([oracle_seed, i])``, so a resumed run draws the same.
    ``oracle_scale`` (str, default ``"own"``; read by ``"oracle"`` and ``"positive"``): the
    spread ``s`` the oracle credit is given before kappa: ``"own"``, the population standard
    deviation of MVPO's own ``A^Phi`` on the routed rows (only alignment changes between arms);
    ``"credit"``, that of GiGPO's advantage over the batch's rows where it is non-zero (the
    scale of the credit GiGPO gives elsewhere: a magnitude arm). Kappa, the routing and the
    combination with ``A^E`` are unchanged by all of them.

    The potential options of docs/estimators.md §3.11-§3.13 (off by default: the paper's reading
    stays bit for bit): ``region_stats`` (str, default ``"batch"``: the potential of a region
    from the current batch, in-sample, as the MVPO paper reads; ``"pooled"``: per task and key,
    decayed running sums of the potential's statistic ``U`` across iterations plus the current
    batch, leave-one-trajectory-out, so that a row's own trajectory never enters the potential
    that scores it (:mod:`mvpo_train.credit.pooled_potential`); needs ``value="shaping"``, and
    with ``pool_decay > 0`` and ``scope="group"`` the batch's ``extras["task_id"]`` or
    ``extras["task_index"]``, else refused in one line). ``pool_decay`` (float in [0, 1],
    default 0.8, read only by ``"pooled"``): per-iteration factor on the past (a batch ``a``
    iterations old weighs ``pool_decay ** a``; 0.8 is a half-life of 3.1 iterations; 0 keeps no
    past: cross-fitting alone; 1 never forgets). ``pool_max_entries`` (int >= 1, default
    1,000,000, read only by ``"pooled"``): cap on the pool's entries, 24 bytes each (24 MB at
    the cap; with ``"td"`` also on its transitions, 32 bytes each: 56 MB in all); the lightest
    go first. ``potential_split`` (str, default ``"none"``;
    ``"milestones"``: every region is split at milestone events, the potential keyed by
    (region, milestones the trajectory made before the row), so the step into the place where
    the next milestone is made is not charged for the dwell that follows; works with either
    form and with ``"pooled"``, whose keys then carry the split). ``potential_estimate`` (str,
    default ``"mc"``: a region's potential is the mean return-to-go ``U`` of its visits;
    ``"td"``, §3.13, needs ``region_stats="pooled"``: the value of the pooled empirical chain
    over the keys, fitted on the pool plus the other folds of the batch's trajectories
    (:mod:`mvpo_train.credit.td_potential`); the pool then also holds the transitions, each
    table capped at ``pool_max_entries``). ``td_folds`` (int >= 2, default 2, read only by
    ``"td"``): the folds of each rollout group's trajectories (rank mod ``td_folds``), one fit
    per fold; the group size makes it leave-one-trajectory-out. ``td_chain`` (str, default
    ``"keys"``, read only by ``"td"``): the chain's states are the pool's keys (as first
    measured: the loop rule's merges do not enter it); ``"regions"``: the keys the batch's
    regions merge (§3.1's loop rule, and the split with ``potential_split``) are one state, in
    the fit and in the scoring (:func:`~mvpo_train.credit.td_potential.region_representatives`).
    """

    scope: str = "group"
    eta: float = 0.1
    w_min: float = 0.02
    milestone_names: tuple[str, ...] | None = None
    c_succ: float = 1.0
    gamma_m: float | None = None
    lambda_L: float | None = None
    lambda_F: float | None = None
    gamma_phi: float | None = None
    beta: float = 0.9
    kappa_min: float = 0.0
    kappa_schedule: str = "progress"
    kappa_constant: float = 1.0
    repair_singletons: bool = False
    anchor_credit: bool = True
    form: str = DEFAULT_FORM
    value: str | None = None
    loop_stat: str | None = None
    potential_norm: str | None = None
    d_scale: str | None = None
    amp_score: str | None = None
    repair_source: str = "potential"
    oracle_rho: float = 1.0
    oracle_seed: int = 0
    oracle_scale: str = "own"
    region_stats: str = "batch"
    pool_decay: float = 0.8
    pool_max_entries: int = 1_000_000
    potential_split: str = "none"
    potential_estimate: str = "mc"
    td_folds: int = 2
    td_chain: str = "keys"

    def __post_init__(self) -> None:
        object.__setattr__(self, "form", FORM_ALIASES.get(self.form, self.form))
        if self.form not in FORMS:
            raise ValueError(f"MVPOConfig.form must be one of {sorted(FORMS)}, got {self.form!r}")
        for name, preset in FORMS[self.form].items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, preset)
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"MVPOConfig.{name} must be one of {list(allowed)}, got {getattr(self, name)!r}"
                )
        for name in ("eta", "w_min", "c_succ", "lambda_L", "lambda_F", "kappa_min",
                     "kappa_constant", "gamma_phi", "gamma_m", "beta"):  # fmt: skip
            v = getattr(self, name)
            if v is not None and not math.isfinite(v):
                raise ValueError(f"MVPOConfig.{name} must be a finite number, got {v!r}")
        for name in ("w_min", "kappa_min", "kappa_constant"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(
                    f"MVPOConfig.{name} must be in [0, 1], got {getattr(self, name)!r}"
                )
        if self.lambda_L < 0.0:
            raise ValueError(f"MVPOConfig.lambda_L must be >= 0, got {self.lambda_L!r}")
        if self.repair_source not in REPAIR_SOURCES:
            raise ValueError(
                f"MVPOConfig.repair_source must be one of {list(REPAIR_SOURCES)}, "
                f"got {self.repair_source!r}"
            )
        if not (math.isfinite(self.oracle_rho) and 0.0 <= self.oracle_rho <= 1.0):
            raise ValueError(f"MVPOConfig.oracle_rho must be in [0, 1], got {self.oracle_rho!r}")
        if isinstance(self.oracle_seed, bool) or not isinstance(self.oracle_seed, int):
            raise ValueError(f"MVPOConfig.oracle_seed must be an int, got {self.oracle_seed!r}")
        if self.oracle_seed < 0:
            raise ValueError(f"MVPOConfig.oracle_seed must be >= 0, got {self.oracle_seed!r}")
        self._check_potential_options()
        super().__post_init__()
        if self.scope not in ("group", "batch"):
            raise ValueError(f"scope must be 'group' or 'batch', got {self.scope!r}")
        if self.kappa_schedule not in KAPPA_SCHEDULES:
            raise ValueError(
                f"kappa_schedule must be one of {sorted(KAPPA_SCHEDULES)}, "
                f"got {self.kappa_schedule!r}"
            )
        if not 0.0 <= self.eta <= 1.0:
            raise ValueError(f"eta must be in [0, 1], got {self.eta!r}")
        if self.milestone_names is not None:
            object.__setattr__(self, "milestone_names", tuple(self.milestone_names))
            if not self.milestone_names or len(set(self.milestone_names)) != len(
                self.milestone_names
            ):
                raise ValueError("milestone_names must be non-empty and unique")
            if self.w_min * len(self.milestone_names) > 1.0:
                raise ValueError("w_min * len(milestone_names) must be <= 1")

    def _check_potential_options(self) -> None:
        """Bounds of the §3.11-§3.13 options, one line each."""
        for name, allowed in (
            ("region_stats", REGION_STATS),
            ("potential_split", SPLITS),
            ("potential_estimate", ESTIMATES),
            ("td_chain", TD_CHAINS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"MVPOConfig.{name} must be one of {list(allowed)}, got {getattr(self, name)!r}"
                )
        if not (math.isfinite(self.pool_decay) and 0.0 <= self.pool_decay <= 1.0):
            raise ValueError(f"MVPOConfig.pool_decay must be in [0, 1], got {self.pool_decay!r}")
        n = self.pool_max_entries
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"MVPOConfig.pool_max_entries must be an int >= 1, got {n!r}")
        k = self.td_folds
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise ValueError(f"MVPOConfig.td_folds must be an int >= 2, got {k!r}")
        if self.potential_estimate == "td" and self.region_stats != "pooled":
            raise ValueError(
                "MVPOConfig.potential_estimate='td' fits the chain of the pooled keys: it needs "
                f"region_stats='pooled', got {self.region_stats!r}"
            )
        if self.region_stats == "pooled" and self.value != "shaping":
            raise ValueError(
                "MVPOConfig.region_stats='pooled' pools the shaping return-to-go: it needs "
                f"value='shaping' (form 'paper'), got value={self.value!r}"
            )


# ------------------------------------------------------------------ potential (§3.3-§3.4)


@dataclass
class PotentialTerms:
    """Per-row potential quantities of one batch (docs/estimators.md §3.3-§3.4, §3.8)."""

    m: np.ndarray  # milestone reward
    v: np.ndarray  # per-visit value: p + g (value="progress") or U (value="shaping")
    region: np.ndarray  # region id per row (a Union-Find root: ids are sparse)
    phi_region: np.ndarray  # phi per region (before the batch normalisation)
    loop_region: np.ndarray  # L per region (value="progress"; 0 with value="shaping")
    phi: np.ndarray  # phi(rho_{i,t}) per row (before the batch normalisation)
    d: np.ndarray  # potential difference D_{i,t} (after the batch normalisation)
    loop: np.ndarray | None = None  # per-row loop indicator (loop_stat), bool
    u: np.ndarray | None = None  # per-step shaping reward (value="shaping")
    phi_scale: float = 1.0  # batch normalisation divisor of phi and D (1 with "none")
    fallback: np.ndarray | None = None  # region_stats="pooled": rows scored by the scope's mean


def potential_terms(
    batch: StepBatch,
    cfg: MVPOConfig,
    amp: AMPWeights,
    hit_name: np.ndarray | None = None,
    pooled: tuple[RegionPool | TransitionPool, np.ndarray] | None = None,
) -> PotentialTerms:
    """``m``, ``v``, regions, ``phi`` and ``D`` for a canonically ordered batch (§3.1-§3.4, §3.8).

    ``hit_name``: :func:`hit_names` of the batch, when already computed. ``pooled``: with
    ``region_stats="pooled"``, the pool and the rows' :func:`key_hashes` (§3.11); the
    potential is then :func:`crossfit_potential`, or :func:`td_potential` with a
    :class:`TransitionPool` (§3.13); the pool is not updated here.
    """
    n = len(batch)
    rows, _ = batch.milestone_hits
    if hit_name is None:
        hit_name = hit_names(batch, amp)
    m = np.bincount(rows, weights=amp.weights[hit_name], minlength=n)
    gamma_m = cfg.gamma if cfg.gamma_m is None else cfg.gamma_m
    lay = batch.layout
    scope = batch.group_index if cfg.scope == "group" else np.zeros(n, dtype=np.int64)
    sig_code = batch.codes("signature")[0]
    region = regions_of_sorted(sig_code, lay.traj_index, scope, relabel=False)
    if cfg.potential_split == "milestones":
        region = split_at_milestones(region, milestones_done(batch))
    label = _traj_in_group(batch) if cfg.scope == "group" else lay.traj_index
    loop = (
        loop_rows(cfg.loop_stat, region, sig_code, lay.traj_index)
        if cfg.loop_stat != "dwell" or cfg.value == "shaping"
        else None
    )
    last = batch.is_last
    term_row = batch.terminated & last
    if cfg.value == "shaping":
        return _shaping_terms(batch, cfg, m, gamma_m, region, loop, term_row, scope, pooled)
    p, g = viability_values(
        m, batch.traj, batch.t, batch.is_last, batch.returns,
        c_succ=cfg.c_succ, gamma_m=gamma_m, layout=lay,
    )  # fmt: skip
    v = p + g
    fut = future_any(batch.milestone_count > 0, lay) if cfg.lambda_F else None
    if loop is None:  # form v1: L(rho) = (visits - distinct trajectories) / distinct
        phi_r, loop_r = region_potential(
            region, label, v, lambda_l=cfg.lambda_L, lambda_f=cfg.lambda_F, future_milestone=fut
        )
    else:  # revisits: L(rho) = returns to a signature after leaving it / distinct trajectories
        phi_r, _ = region_potential(
            region, label, v, lambda_l=0.0, lambda_f=cfg.lambda_F, future_milestone=fut
        )
        n_tr = _distinct_per_region(region, label, len(phi_r))
        loop_r = np.bincount(region, weights=loop.astype(np.float64), minlength=len(phi_r))
        loop_r = loop_r / np.maximum(n_tr, 1.0)
        phi_r = phi_r - cfg.lambda_L * loop_r
    phi = phi_r[region]
    # value after each step: the next row (canonical order), or the end-of-episode value
    nxt = np.empty(n, dtype=np.float64)
    nxt[:-1] = phi[1:]
    terminal = p + m + cfg.c_succ * batch.returns  # p_{i,T} + c_succ * R_i
    nxt[last] = np.where(term_row[last], terminal[last], phi[last])
    d = cfg.gamma_phi * nxt - phi
    d, scale = _normalise(d, phi, cfg)
    return PotentialTerms(m, v, region, phi_r, loop_r, phi, d, loop, None, scale)


def _shaping_terms(
    batch: StepBatch,
    cfg: MVPOConfig,
    m: np.ndarray,
    gamma_m: float,
    region: np.ndarray,
    loop: np.ndarray,
    term_row: np.ndarray,
    scope: np.ndarray,
    pooled: tuple[RegionPool | TransitionPool, np.ndarray] | None = None,
) -> PotentialTerms:
    """``value="shaping"`` (docs/estimators.md §3.8): per-step reward ``u``, its return-to-go
    ``U``, ``phi(rho) = mean_{visits} U`` and ``D = u + gamma_phi * phi(next) - phi``; with
    ``pooled``, ``phi`` per row from the pool and the batch's other trajectories (§3.11)."""
    n = len(batch)
    last = batch.is_last
    enters_loop = np.zeros(n, dtype=np.float64)  # the transition at t leads into a loop row
    enters_loop[:-1] = loop[1:]
    enters_loop[last] = 0.0
    progress = (batch.milestone_count > 0).astype(np.float64)
    u = m + cfg.c_succ * batch.returns * last + cfg.lambda_F * progress - cfg.lambda_L * enters_loop
    big_u = reverse_scan(u, batch.layout, gamma_m)
    fallback = None
    if pooled is not None and isinstance(pooled[0], TransitionPool):
        fold = _traj_in_group(batch) % cfg.td_folds
        states = region if cfg.td_chain == "regions" else None
        phi, fallback = td_potential(
            pooled[1], ~last, u, big_u, fold, scope, batch.layout.traj_index, pooled[0], states
        )
        n_r = int(region.max()) + 1
        visits = np.maximum(np.bincount(region, minlength=n_r), 1)
        phi_r = np.bincount(region, weights=phi, minlength=n_r) / visits
    elif pooled is not None:
        phi, phi_r, fallback = crossfit_potential(
            region, batch.layout.traj_index, scope, pooled[1], big_u, pooled[0]
        )
    else:
        n_r = int(region.max()) + 1
        visits = np.bincount(region, minlength=n_r).astype(np.float64)
        phi_r = np.bincount(region, weights=big_u, minlength=n_r) / np.maximum(visits, 1.0)
        phi = phi_r[region]
    nxt = np.empty(n, dtype=np.float64)
    nxt[:-1] = phi[1:]
    # after the last step: an absorbing terminal state is worth 0; a truncated episode's next
    # state is unknown, its last region stands in for it (a bootstrap)
    nxt[last] = np.where(term_row[last], 0.0, phi[last])
    d = u + cfg.gamma_phi * nxt - phi
    d, scale = _normalise(d, phi, cfg)
    n_r = len(phi_r)
    return PotentialTerms(m, big_u, region, phi_r, np.zeros(n_r), phi, d, loop, u, scale, fallback)


def milestones_done(batch: StepBatch) -> np.ndarray:
    """Per row: the milestones its trajectory made before the row (§3.12), canonical order."""
    done = exclusive_scan(batch.milestone_count.astype(np.float64), batch.layout)
    return np.rint(done).astype(np.int64)


def _normalise(d: np.ndarray, phi: np.ndarray, cfg: MVPOConfig) -> tuple[np.ndarray, float]:
    """Batch normalisation of the potentials (docs/estimators.md §3.8), applied to ``D``.

    ``"none"``: ``D`` as is. ``"scale"``: ``D / s`` with ``s`` the population std of ``phi`` over
    the batch's rows (1 when ``s <= eps``). ``"zscore"``: ``D`` computed from the z-scored
    potentials ``(phi - mu) / s``, which is ``(D + (1 - gamma_phi) * mu) / s``.
    """
    if cfg.potential_norm == "none" or len(phi) == 0:
        return d, 1.0
    s = float(phi.std())
    s = s if s > cfg.eps else 1.0
    if cfg.potential_norm == "zscore":
        return (d + (1.0 - cfg.gamma_phi) * float(phi.mean())) / s, s
    return d / s, s


def hit_names(batch: StepBatch, amp: AMPWeights) -> np.ndarray:
    """AMP index of every milestone hit of the batch; unseen names join the vocabulary (§3.2)."""
    items = batch.milestone_hits[1].tolist()
    uniq = list(dict.fromkeys(items))
    amp.add_names(uniq)
    lookup = {u: amp.index(u) for u in uniq}
    return np.fromiter(map(lookup.__getitem__, items), np.int64, len(items))


def _traj_in_group(batch: StepBatch) -> np.ndarray:
    """Per row: rank of its trajectory among the trajectories of its rollout group."""
    tg = batch.traj_group
    order = np.argsort(tg, kind="stable")
    starts = np.searchsorted(tg[order], tg[order], side="left")
    rank = np.empty(len(tg), dtype=np.int64)
    rank[order] = np.arange(len(tg)) - starts
    return rank[batch.traj_index]


def scale_by_std(d: np.ndarray, routed: np.ndarray, eps: float) -> tuple[np.ndarray, float]:
    """``A^Phi = D / (std of D over routed rows + eps)`` (docs/estimators.md §3.4).

    Guard (documented deviation): when that std is <= eps (one routed row, or all routed
    ``D`` equal) the root mean square of the routed ``D`` is used instead, so the scale never
    blows up to ``1/eps``.
    """
    sel = d[routed]
    if sel.size == 0:
        return np.zeros_like(d), 0.0
    scale = float(sel.std())
    if scale <= eps:
        scale = float(np.sqrt(np.mean(sel * sel)))
    return d / (scale + eps), scale


def repair_term(
    pot: PotentialTerms, routed: np.ndarray, cfg: MVPOConfig
) -> tuple[np.ndarray, float]:
    """``A^Phi`` per row and its divisor (docs/estimators.md §3.4, §3.8).

    ``d_scale="routed_std"`` (form v1): :func:`scale_by_std` over the routed rows;
    ``"none"``: ``A^Phi = D`` (already in batch-normalised potential units), divisor 1.
    """
    if cfg.d_scale == "routed_std":
        return scale_by_std(pot.d, routed, cfg.eps)
    return pot.d, 1.0


def non_circular_statistic(
    batch: StepBatch, pot: PotentialTerms, cfg: MVPOConfig
) -> tuple[float, int]:
    """Does the potential predict progress without being told the outcome? (§3.7)

    The trajectories of every rollout group are split in two halves by their position in the
    group (even, odd). Each row gets its region's potential estimated from the *other* half's
    visits only (same formula as ``phi``). Over the rows of *failed* trajectories that have
    such an estimate: the Spearman correlation between it and the number of milestones the
    row's own trajectory fires from that step on. Neither side contains the row's own outcome
    or its own future, and the estimate does not move with the row's own value (a
    leave-one-out mean would, and correlate negatively by construction). Positive: regions
    from which the other half went on to progress are regions from which failed rollouts
    progressed too. Returns ``(rho, rows used)``; NaN with < 3 rows or no spread.
    """
    fold = _traj_in_group(batch) % 2
    est = split_half_mean(pot.region, fold, pot.v)
    if cfg.value == "progress":
        if cfg.lambda_F:
            fut = future_any(batch.milestone_count > 0, batch.layout).astype(np.float64)
            est = est + cfg.lambda_F * split_half_mean(pot.region, fold, fut)
        if cfg.lambda_L:
            dwell = loop_rows("dwell", pot.region, pot.region, batch.layout.traj_index)
            loop = dwell if pot.loop is None else pot.loop
            # L of the other half: its loop rows / its distinct trajectories (first visits)
            est = est - cfg.lambda_L * split_half_mean(
                pot.region, fold, loop.astype(np.float64), (~dwell).astype(np.float64)
            )
    future = reverse_scan(batch.milestone_count.astype(np.float64), batch.layout, 1.0)
    sel = ~batch.success & np.isfinite(est)
    return spearman(est[sel], future[sel]), int(sel.sum())


# ------------------------------------------------------------------ estimator


@register_estimator("mvpo")
class MVPO(BaseEstimator):
    """GiGPO + potential repair of zero-credit step groups (docs/estimators.md §3).

    Carried state: EMA of batch success (§3.5), AMP weights (§3.2), iteration count. The
    milestone vocabulary is discovered from batches (``milestone_names`` seeds it): a new name
    enters with the mean current weight, then the weights are renormalised.
    """

    name = "mvpo"
    Config = MVPOConfig

    def __init__(self, config: Any = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.ema_success = 0.0
        self.iteration = 0
        self.success_start: float | None = None  # first batch's success rate ("relative")
        self.last_repair = np.zeros(0, dtype=np.float64)
        self.last_routed = np.zeros(0, dtype=bool)
        self.last_gigpo = np.zeros(0, dtype=np.float64)  # GiGPO's advantage of the last batch
        self._decrease_sorted: np.ndarray | None = None
        self._task_sorted: np.ndarray | None = None
        self.pool = self._new_pool()  # region_stats="pooled" (§3.11, §3.13)
        names = list(self.config.milestone_names or ())
        self.amp = AMPWeights(
            eta=self.config.eta,
            w_min=self.config.w_min,
            names=names,
            weights=np.full(len(names), 1.0 / max(len(names), 1)),
        )

    @property
    def kappa(self) -> float:
        """Current kappa from the EMA of success (§3.5).

        ``"relative"`` reads the EMA's gain since the first batch,
        ``(e - e_start) / (1 - e_start)``, with ``e_start`` the first batch's success rate.
        """
        e = self.ema_success
        if self.config.kappa_schedule == "relative":
            start = self.success_start if self.success_start is not None else 0.0
            e = (e - start) / max(1.0 - start, self.config.eps)
        return KAPPA_SCHEDULES[self.config.kappa_schedule](e, self.config)

    def __call__(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """Advantages and diagnostics; also sets :attr:`last_repair` and :attr:`last_routed`.

        ``last_repair``: the repair term ``kappa * A^Phi`` on the routed rows, 0 elsewhere, in
        the caller's row order (its share of the advantage is ``omega * last_repair``; with
        ``repair_source="positive"``, the step credit of every row); ``last_routed``: which rows
        were repaired (docs/estimators.md §3.6); ``last_gigpo``: GiGPO's advantage (the same
        step fields, no repair). A ``repair_source`` that reads the oracle refuses a batch
        without ``extras["oracle_plan_decrease"]`` (or with unknown values) in one line.
        """
        self._decrease_sorted = None
        if self.config.repair_source in ORACLE_SOURCES and len(batch):
            self._decrease_sorted = _plan_decrease(batch, self.config.repair_source)[batch.order]
        self._task_sorted = None
        if self.config.region_stats == "pooled" and len(batch):
            self._task_sorted = _pool_tasks(batch, self.config)[batch.order]
        adv, diag = super().__call__(batch)
        n = len(batch)
        repair = np.zeros(n, dtype=np.float64)
        routed = np.zeros(n, dtype=bool)
        gigpo = np.zeros(n, dtype=np.float64)
        if n:
            repair[batch.order] = self._repair_sorted
            routed[batch.order] = self._routed_sorted
            gigpo[batch.order] = self._gigpo_sorted
        self.last_repair, self.last_routed, self.last_gigpo = repair, routed, gigpo
        return adv, diag

    def alignment_metrics(self, batch: StepBatch, advantages: np.ndarray) -> dict[str, Any]:
        """``align/*`` of the last call (docs/alignment.md, "In training"): the AUC, for
        ``extras["oracle_progress"]``, of the credit this estimator adds, ``last_repair``, over
        the rows it repairs (``last_routed`` with a nonzero repair); ``{}`` when the batch has
        no known label.

        ``last_repair`` is ``kappa * A^Phi`` on the routed rows (with ``repair_source=
        "positive"``, the oracle step credit of every row). It is what ``advantages -
        last_gigpo`` equals on the routed rows of zero-credit groups (up to the factor
        ``omega``), but not where the arm replaces GiGPO's anchor credit (the positive control
        on informative groups, ``anchor_credit=False``): there that difference would mix in
        ``-omega * A^S``. ``advantages`` (the same call's) is not read."""
        if ORACLE_PROGRESS not in batch.extras or len(batch) != len(self.last_repair):
            return {}
        y = np.asarray(batch.extras[ORACLE_PROGRESS], dtype=np.float64)
        if not np.any(y >= 0):
            return {}
        added = np.where(self.last_routed, self.last_repair, 0.0)
        return repair_alignment(batch, added, np.zeros(len(batch)), y).as_metrics()

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """MVPO advantage per row (§3.6) and the §3.7 diagnostics."""
        cfg = self.config
        parts = gigpo_parts(batch, cfg)
        hit_name = hit_names(batch, self.amp)  # grows the vocabulary before the weights are used
        weights_used = self.amp.as_dict()
        pooled = None
        if cfg.region_stats == "pooled":
            pooled = (self.pool, self._pool_keys(batch))
        pot = potential_terms(batch, cfg, self.amp, hit_name, pooled)
        if isinstance(self.pool, TransitionPool) and pooled is not None:  # joins after scoring
            keys = pooled[1]
            self.pool.update(keys, np.roll(keys, -1), ~batch.is_last, pot.u, cfg.pool_decay)
        elif pooled is not None:
            self.pool.update(pooled[1], pot.v, cfg.pool_decay)

        routed = parts.zero_credit | ((parts.size < 2) if cfg.repair_singletons else False)
        a_phi, d_scale = repair_term(pot, routed, cfg)
        success_rate = float(batch.traj_success.mean())
        if self.success_start is None and cfg.kappa_schedule == "relative":
            self.success_start = success_rate
        self.ema_success = cfg.beta * self.ema_success + (1.0 - cfg.beta) * success_rate
        kappa = self.kappa
        gigpo_adv = combine(parts, parts.a_s, cfg.omega)
        scale = (  # the oracle credit's spread; the other sources read none
            oracle_scale(cfg.oracle_scale, a_phi, routed, gigpo_adv)
            if cfg.repair_source in ORACLE_SOURCES
            else 1.0
        )
        if cfg.repair_source == "positive":  # the positive control: oracle credit on every row
            a_s = kappa * positive_credit(self._oracle_decrease(len(batch)), scale)
            repair, routed = a_s, np.ones(len(batch), dtype=bool)
        else:
            a_phi = self._repair_source(a_phi, routed, len(batch), scale)
            repair = np.where(routed, kappa * a_phi, 0.0)
            a_s = np.where(routed, repair, parts.a_s if cfg.anchor_credit else 0.0)
        adv = combine(parts, a_s, cfg.omega)
        self._repair_sorted, self._routed_sorted = repair, routed
        self._gigpo_sorted = gigpo_adv

        rows, _ = batch.milestone_hits
        s = self.amp.update(
            batch.traj_index[rows], hit_name, batch.t[rows], batch.traj_success, cfg.amp_score
        )
        self.iteration += 1
        diag = step_diagnostics(parts)
        diag.update(self._diagnostics(batch, pot, routed, kappa, d_scale, success_rate))
        diag["amp_weights_used"] = weights_used
        if pot.fallback is not None:
            diag["pool_entries"] = len(self.pool)
            diag["pool_bytes"] = self.pool.nbytes
            diag["pool_fallback_ratio"] = float(pot.fallback.mean())
        diag["amp_scores"] = {
            n: float(x) for n, x in zip(self.amp.names, s, strict=True) if not np.isnan(x)
        }
        return adv, diag

    def _repair_source(
        self, a_phi: np.ndarray, routed: np.ndarray, n: int, scale: float
    ) -> np.ndarray:
        """``A^Phi`` from ``repair_source`` (the module :mod:`.oracle_repair`; ``scale``: the
        oracle's spread, :func:`~mvpo_train.credit.oracle_repair.oracle_scale`)."""
        cfg = self.config
        if cfg.repair_source == "potential":
            return a_phi
        rng = np.random.default_rng([cfg.oracle_seed, self.iteration])
        if cfg.repair_source == "shuffled":
            return shuffled_repair(a_phi, routed, rng)
        return oracle_repair(a_phi, self._oracle_decrease(n), routed, cfg.oracle_rho, rng, scale)

    def _new_pool(self) -> RegionPool | TransitionPool:
        if self.config.potential_estimate == "td":
            return TransitionPool(self.config.pool_max_entries)
        return RegionPool(self.config.pool_max_entries)

    def _pool_keys(self, batch: StepBatch, task: np.ndarray | None = None) -> np.ndarray:
        """:func:`key_hashes` of the canonical batch's rows (§3.11); ``task``: their task
        labels (default: those :meth:`__call__` read from the caller's batch)."""
        task = self._task_sorted if task is None else task
        if task is None or len(task) != len(batch):  # compute() called without __call__
            raise ValueError(
                "mvpo: region_stats='pooled' reads the batch's task labels: call the estimator "
                "on the batch itself"
            )
        split = milestones_done(batch) if self.config.potential_split == "milestones" else None
        split = np.full(len(batch), -1, dtype=np.int64) if split is None else split
        return key_hashes(task, batch.signature, split)

    def record_state(self, state: dict[str, Any], batch: StepBatch) -> dict[str, Any]:
        """``state`` (a :meth:`state_dict` taken before the call on ``batch``) cut to what
        scoring ``batch`` reads, for a batch record (docs/inspect.md); call it right after the
        call on ``batch``. With ``region_stats="pooled"`` the pool's entries of the batch's
        keys (with ``"td"``: :meth:`TransitionPool.share_state`, the keys reachable from them
        and the call's sweeps), so a record carries a batch's share of the pool, not the pool;
        the advantages recomputed from it are the same bit for bit. Other states are returned
        as they are."""
        if "pool" not in state or not len(batch):
            return state
        pool = self._new_pool()
        pool.load_state_dict(state["pool"])
        sb = batch.canonical()
        keys = self._pool_keys(sb, _pool_tasks(batch, self.config)[batch.order])
        if isinstance(pool, TransitionPool):
            if not self.pool.last_sweeps:  # not called yet: nothing to replay
                return state
            pool.last_sweeps = self.pool.last_sweeps  # the call's, on the whole pool
            return {**state, "pool": pool.share_state(keys, ~sb.is_last)}
        return {**state, "pool": pool.restricted(np.unique(keys)).state_dict()}

    def _oracle_decrease(self, n: int) -> np.ndarray:
        d = self._decrease_sorted
        if d is None or len(d) != n:  # compute() called without __call__
            raise ValueError(
                f"mvpo: repair_source={self.config.repair_source!r} reads the batch's "
                f"extras[{ORACLE_PLAN_DECREASE!r}]: call the estimator on the batch itself"
            )
        return d

    def _diagnostics(
        self,
        batch: StepBatch,
        pot: PotentialTerms,
        routed: np.ndarray,
        kappa: float,
        d_scale: float,
        success_rate: float,
    ) -> dict[str, Any]:
        """The §3.7 set (mean Phi is per trajectory: mean over its rows, then over trajectories)."""
        visits = np.bincount(pot.region, minlength=len(pot.phi_region))
        ti, n_traj = batch.traj_index, batch.n_traj
        traj_phi = np.bincount(ti, weights=pot.phi, minlength=n_traj) / batch.traj_length
        succ = batch.traj_success
        rho, n_rows = non_circular_statistic(batch, pot, self.config)
        return {
            "grouping_ratio": float((visits[pot.region] >= 2).mean()),
            "repaired_ratio": float(routed.mean()),
            "kappa": float(kappa),
            "ema_success": float(self.ema_success),
            "success_rate": success_rate,
            "amp_weights": self.amp.as_dict(),
            "phi_success_mean": float(traj_phi[succ].mean()) if succ.any() else float("nan"),
            "phi_failure_mean": float(traj_phi[~succ].mean()) if (~succ).any() else float("nan"),
            "num_regions": int(np.count_nonzero(visits)),
            "loop_mean": float(pot.loop_region[visits > 0].mean()),
            "d_scale": d_scale,
            "phi_scale": pot.phi_scale,
            "phi_split_spearman_failed": rho,
            "phi_split_rows": n_rows,
            "iteration": self.iteration,
        }

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state: EMA success, AMP weights, iteration (and, with the
        ``"relative"`` kappa schedule, the first batch's success rate)."""
        out: dict[str, Any] = {
            "ema_success": float(self.ema_success),
            "iteration": int(self.iteration),
            "amp": self.amp.state_dict(),
            "form": self.config.form,  # a resumed run keeps its form (§3.10)
        }
        if self.config.kappa_schedule == "relative":
            out["success_start"] = self.success_start
        if self.config.region_stats == "pooled":
            out["pool"] = self.pool.state_dict()
        return out

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` exactly."""
        unknown = set(d) - {"ema_success", "iteration", "amp", "success_start", "form", "pool"}
        if unknown:
            raise ValueError(f"mvpo: unknown state keys {sorted(unknown)}")
        saved = d.get("form", self.config.form)
        if FORM_ALIASES.get(saved, saved) != self.config.form:
            raise ValueError(
                f"mvpo: the state was saved with form {d['form']!r}, this estimator has form "
                f"{self.config.form!r} (pass form={d['form']!r})"
            )
        start = d.get("success_start")
        self.success_start = None if start is None else float(start)
        self.ema_success = float(d.get("ema_success", 0.0))
        self.iteration = int(d.get("iteration", 0))
        self.amp = AMPWeights(eta=self.config.eta, w_min=self.config.w_min)
        self.amp.load_state_dict(d.get("amp", {}))
        if "pool" in d and self.config.region_stats != "pooled":
            raise ValueError(
                "mvpo: the state holds pooled region statistics, this estimator has "
                f"region_stats={self.config.region_stats!r} (pass region_stats='pooled')"
            )
        self.pool = self._new_pool()
        if "pool" in d:
            self.pool.load_state_dict(d["pool"])


def _pool_tasks(batch: StepBatch, cfg: MVPOConfig) -> np.ndarray:
    """The task part of the pool's keys per row (caller's order), or one clear error line:
    empty with ``scope="batch"`` or ``pool_decay=0`` (no past to tell tasks apart in)."""
    if cfg.scope == "batch" or cfg.pool_decay == 0.0:
        return np.full(len(batch), "", dtype=object)
    labels = task_labels(batch.extras, len(batch))
    if labels is None:
        raise ValueError(
            "mvpo: region_stats='pooled' keys the pool by task: the batch needs "
            "extras['task_id'] or extras['task_index'] (the trainer's rollout fills both); "
            "this batch has neither (pool_decay=0 needs none)"
        )
    return labels


def _plan_decrease(batch: StepBatch, source: str) -> np.ndarray:
    """The batch's ``extras["oracle_plan_decrease"]`` as floats, or one clear error line."""
    if ORACLE_PLAN_DECREASE not in batch.extras:
        raise ValueError(
            f"mvpo: repair_source={source!r} needs the batch's extras[{ORACLE_PLAN_DECREASE!r}] "
            "(an env whose infos carry 'oracle_plan_length', docs/alignment.md); "
            "this batch has none"
        )
    d = np.asarray(batch.extras[ORACLE_PLAN_DECREASE], dtype=np.float64)
    if d.shape != (len(batch),) or not np.all(np.isfinite(d)):
        raise ValueError(
            f"mvpo: repair_source={source!r}: extras[{ORACLE_PLAN_DECREASE!r}] must hold one "
            f"known (finite) value per row; {int(np.sum(~np.isfinite(d)))} of {d.size} are unknown"
        )
    return d
