"""MVPO: Milestone Viability Potential Policy Optimization (docs/estimators.md §3).

GiGPO's credit is kept where it is informative; rows of zero-credit step groups are repaired
with ``kappa_t * A^Phi``, a scaled difference of region potentials over Union-Find viability
regions. The step groups, ``A^E`` and ``A^S`` come from :func:`gigpo_parts` (one
implementation), so MVPO equals GiGPO exactly on a batch without zero-credit step groups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit.common import BaseEstimator, StepConfig
from mvpo_train.credit.gigpo import combine, gigpo_parts, step_diagnostics
from mvpo_train.credit.potential import AMPWeights, region_potential, viability_values
from mvpo_train.credit.regions import regions_of_sorted
from mvpo_train.credit.registry import register_estimator
from mvpo_train.credit.segments import future_any

__all__ = [
    "KAPPA_SCHEDULES",
    "MVPO",
    "MVPOConfig",
    "PotentialTerms",
    "potential_terms",
    "register_kappa_schedule",
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


# ------------------------------------------------------------------ config


@dataclass(frozen=True)
class MVPOConfig(StepConfig):
    """MVPO's options (docs/estimators.md §3); GiGPO's fields come first (§2).

    ``scope`` ('group' | 'batch', §3.1); ``eta``, ``w_min`` (AMP, §3.2); ``milestone_names``
    (optional initial vocabulary, §3.2); ``c_succ``, ``gamma_m`` (None = ``gamma``),
    ``lambda_L``, ``lambda_F`` (§3.3); ``gamma_phi`` (§3.4, 1 = undiscounted); ``beta``,
    ``kappa_min``, ``kappa_schedule`` ('progress' | 'constant' | 'none' | registered),
    ``kappa_constant`` (§3.5); ``repair_singletons`` (§3.6).
    """

    scope: str = "group"
    eta: float = 0.1
    w_min: float = 0.02
    milestone_names: tuple[str, ...] | None = None
    c_succ: float = 1.0
    gamma_m: float | None = None
    lambda_L: float = 0.5
    lambda_F: float = 0.0
    gamma_phi: float = 1.0
    beta: float = 0.9
    kappa_min: float = 0.0
    kappa_schedule: str = "progress"
    kappa_constant: float = 1.0
    repair_singletons: bool = False

    def __post_init__(self) -> None:
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


# ------------------------------------------------------------------ potential (§3.3-§3.4)


@dataclass
class PotentialTerms:
    """Per-row potential quantities of one batch (docs/estimators.md §3.3-§3.4)."""

    m: np.ndarray  # milestone reward
    v: np.ndarray  # viability value p + g
    region: np.ndarray  # region id per row (a Union-Find root: ids are sparse)
    phi_region: np.ndarray  # phi per region
    loop_region: np.ndarray  # L per region
    phi: np.ndarray  # phi(rho_{i,t}) per row
    d: np.ndarray  # potential difference D_{i,t}


def potential_terms(
    batch: StepBatch, cfg: MVPOConfig, amp: AMPWeights, hit_name: np.ndarray | None = None
) -> PotentialTerms:
    """``m``, ``v``, regions, ``phi`` and ``D`` for a canonically ordered batch (§3.1-§3.4).

    ``hit_name``: :func:`hit_names` of the batch, when already computed.
    """
    n = len(batch)
    rows, _ = batch.milestone_hits
    if hit_name is None:
        hit_name = hit_names(batch, amp)
    m = np.bincount(rows, weights=amp.weights[hit_name], minlength=n)
    gamma_m = cfg.gamma if cfg.gamma_m is None else cfg.gamma_m
    lay = batch.layout
    p, g = viability_values(
        m, batch.traj, batch.t, batch.is_last, batch.returns,
        c_succ=cfg.c_succ, gamma_m=gamma_m, layout=lay,
    )  # fmt: skip
    v = p + g
    scope = batch.group_index if cfg.scope == "group" else np.zeros(n, dtype=np.int64)
    region = regions_of_sorted(batch.codes("signature")[0], lay.traj_index, scope, relabel=False)
    fut = future_any(batch.milestone_count > 0, lay) if cfg.lambda_F else None
    label = _traj_in_group(batch) if cfg.scope == "group" else lay.traj_index
    phi_r, loop_r = region_potential(
        region, label, v, lambda_l=cfg.lambda_L, lambda_f=cfg.lambda_F, future_milestone=fut
    )
    phi = phi_r[region]
    # value after each step: the next row (canonical order), or the end-of-episode value
    nxt = np.empty(n, dtype=np.float64)
    nxt[:-1] = phi[1:]
    last = batch.is_last
    terminal = p + m + cfg.c_succ * batch.returns  # p_{i,T} + c_succ * R_i
    term_row = batch.terminated & last
    nxt[last] = np.where(term_row[last], terminal[last], phi[last])
    d = cfg.gamma_phi * nxt - phi
    return PotentialTerms(m, v, region, phi_r, loop_r, phi, d)


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
        names = list(self.config.milestone_names or ())
        self.amp = AMPWeights(
            eta=self.config.eta,
            w_min=self.config.w_min,
            names=names,
            weights=np.full(len(names), 1.0 / max(len(names), 1)),
        )

    @property
    def kappa(self) -> float:
        """Current kappa from the EMA of success (§3.5)."""
        return KAPPA_SCHEDULES[self.config.kappa_schedule](self.ema_success, self.config)

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """MVPO advantage per row (§3.6) and the §3.7 diagnostics."""
        cfg = self.config
        parts = gigpo_parts(batch, cfg)
        hit_name = hit_names(batch, self.amp)  # grows the vocabulary before the weights are used
        weights_used = self.amp.as_dict()
        pot = potential_terms(batch, cfg, self.amp, hit_name)

        routed = parts.zero_credit | ((parts.size < 2) if cfg.repair_singletons else False)
        a_phi, d_scale = scale_by_std(pot.d, routed, cfg.eps)
        success_rate = float(batch.traj_success.mean())
        self.ema_success = cfg.beta * self.ema_success + (1.0 - cfg.beta) * success_rate
        kappa = self.kappa
        a_s = np.where(routed, kappa * a_phi, parts.a_s)
        adv = combine(parts, a_s, cfg.omega)

        rows, _ = batch.milestone_hits
        s = self.amp.update(batch.traj_index[rows], hit_name, batch.t[rows], batch.traj_success)
        self.iteration += 1
        diag = step_diagnostics(parts)
        diag.update(self._diagnostics(batch, pot, routed, kappa, d_scale, success_rate))
        diag["amp_weights_used"] = weights_used
        diag["amp_scores"] = {
            n: float(x) for n, x in zip(self.amp.names, s, strict=True) if not np.isnan(x)
        }
        return adv, diag

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
            "iteration": self.iteration,
        }

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state: EMA success, AMP weights, iteration."""
        return {
            "ema_success": float(self.ema_success),
            "iteration": int(self.iteration),
            "amp": self.amp.state_dict(),
        }

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` exactly."""
        unknown = set(d) - {"ema_success", "iteration", "amp"}
        if unknown:
            raise ValueError(f"mvpo: unknown state keys {sorted(unknown)}")
        self.ema_success = float(d.get("ema_success", 0.0))
        self.iteration = int(d.get("iteration", 0))
        self.amp = AMPWeights(eta=self.config.eta, w_min=self.config.w_min)
        self.amp.load_state_dict(d.get("amp", {}))
