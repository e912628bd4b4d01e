"""Shared pieces of the estimators: configs, the base class, group statistics (docs/estimators.md §0-§2).

One implementation of each building block, reused by every estimator:

- :func:`group_normalize` - ``(x - mean_S x) / F_norm(S)`` with singleton and zero-credit groups
  set to exactly 0 (§1, §2);
- :func:`episode_advantage` - GRPO's ``A^E`` (§1), used by GiGPO, MVPO, ECPO, ProGPO, BEACON;
- :func:`step_groups` - GiGPO's anchor-state step groups (§2);
- :class:`BaseEstimator` - config handling, canonical row order, shared diagnostics.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, ClassVar, NamedTuple

import numpy as np

from mvpo_train.batch import StepBatch

__all__ = [
    "BaseConfig",
    "BaseEstimator",
    "EpisodeConfig",
    "GroupNorm",
    "StepConfig",
    "StepGroups",
    "compact",
    "episode_advantage",
    "group_max_min",
    "group_normalize",
    "make_config",
    "step_groups",
]


# --------------------------------------------------------------------------------------------
# Configs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BaseConfig:
    """Fields every estimator shares (docs/estimators.md §0).

    ``F_norm``: ``"std"`` divides by the group's standard deviation + ``eps``; ``"1"`` only centres.
    ``ddof``: degrees of freedom of that standard deviation (1 = unbiased, as ``torch.std`` in
    the reference GiGPO code; 0 = population).
    """

    F_norm: str = "std"
    eps: float = 1e-6
    ddof: int = 1

    def __post_init__(self) -> None:
        if str(self.F_norm) not in ("std", "1"):
            raise ValueError(f"F_norm must be 'std' or '1', got {self.F_norm!r}")
        object.__setattr__(self, "F_norm", str(self.F_norm))
        if not self.eps > 0:
            raise ValueError(f"eps must be > 0, got {self.eps!r}")
        if self.ddof not in (0, 1):
            raise ValueError(f"ddof must be 0 or 1, got {self.ddof!r}")
        for name in ("gamma", "gamma_m", "gamma_phi", "gamma_ms", "beta"):
            v = getattr(self, name, None)
            if v is not None and not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v!r}")


@dataclass(frozen=True)
class EpisodeConfig(BaseConfig):
    """Episode-level statistics (docs/estimators.md §1): per trajectory, or length-weighted."""

    stats_over: str = "trajectories"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.stats_over not in ("trajectories", "steps"):
            raise ValueError(
                f"stats_over must be 'trajectories' or 'steps', got {self.stats_over!r}"
            )


@dataclass(frozen=True)
class StepConfig(EpisodeConfig):
    """GiGPO's step level (docs/estimators.md §2): discount, step weight, anchor similarity."""

    gamma: float = 0.95
    omega: float = 1.0
    similarity_threshold: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        thr = self.similarity_threshold
        if thr is not None and not 0.0 < thr <= 1.0:
            raise ValueError(f"similarity_threshold must be in (0, 1], got {thr!r}")


def make_config(cls: type, config: Any, overrides: dict[str, Any], owner: str) -> Any:
    """Build ``cls`` from an instance, a mapping and/or keyword overrides; clear errors."""
    valid = {f.name for f in dataclasses.fields(cls)}
    base: dict[str, Any] = {}
    if isinstance(config, cls):
        base = dataclasses.asdict(config)
    elif isinstance(config, dict):
        base = dict(config)
    elif config is not None:
        raise TypeError(f"{owner}: config must be {cls.__name__} or dict, got {type(config)}")
    base.update(overrides)
    unknown = sorted(set(base) - valid)
    if unknown:
        raise TypeError(
            f"estimator '{owner}' got unknown config field(s) {unknown}; "
            f"valid fields: {sorted(valid)}"
        )
    hints = typing.get_type_hints(cls)
    for name, value in base.items():
        expected = _field_types(hints[name])
        if expected and not _is_instance(value, expected):
            allowed = " or ".join(sorted(t.__name__ for t in expected))
            raise TypeError(
                f"estimator '{owner}': config field '{name}' expects {allowed}, got {value!r}"
            )
    return cls(**base)


def _field_types(hint: Any) -> tuple[type, ...]:
    """The plain types a config field accepts (``()``: not checked here)."""
    args = (
        typing.get_args(hint)
        if typing.get_origin(hint) in (typing.Union, types.UnionType)
        else (hint,)
    )
    plain = tuple(a for a in args if isinstance(a, type))
    return plain if len(plain) == len(args) else ()


def _is_instance(value: Any, expected: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # bool is an int to Python, never a number of a config
        return bool in expected
    if float in expected and isinstance(value, int):
        return True
    return isinstance(value, expected)


# --------------------------------------------------------------------------------------------
# Group statistics
# --------------------------------------------------------------------------------------------


def compact(key: np.ndarray) -> tuple[np.ndarray, int]:
    """Compact ids ``0..k-1`` for integer keys (sorted order)."""
    if len(key) == 0:
        return np.zeros(0, np.int64), 0
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), len(uniq)


def group_max_min(x: np.ndarray, index: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-group max and min of ``x`` (groups ``0..n-1``; empty groups give -inf/+inf)."""
    hi = np.full(n, -np.inf)
    lo = np.full(n, np.inf)
    np.maximum.at(hi, index, x)
    np.minimum.at(lo, index, x)
    return hi, lo


class GroupNorm(NamedTuple):
    """Result of :func:`group_normalize`, per row."""

    adv: np.ndarray  # normalised values, exactly 0 in singleton and zero-credit groups
    size: np.ndarray  # size of the row's group
    zero_credit: np.ndarray  # bool: group of size >= 2 whose values are all equal (max-min <= eps)


def group_normalize(
    x: np.ndarray, index: np.ndarray, n: int, f_norm: str, eps: float, ddof: int = 1
) -> GroupNorm:
    """``(x - mean_S x) / F_norm(S)`` inside groups ``S`` (docs/estimators.md §1-§2).

    ``F_norm`` is ``std + eps`` or 1. A singleton group gets 0, and a group of size >= 2 whose
    values are all equal (``max - min <= eps``) is zero-credit and gets exactly 0.
    """
    x = np.asarray(x, dtype=np.float64)
    count = np.bincount(index, minlength=n).astype(np.float64)
    safe = np.maximum(count, 1.0)
    mean = np.bincount(index, weights=x, minlength=n) / safe
    dev = x - mean[index]
    hi, lo = group_max_min(x, index, n)
    flat = (hi - lo) <= eps
    size = count[index]
    zero_credit = (size >= 2) & flat[index]
    if f_norm == "std":
        ss = np.bincount(index, weights=dev * dev, minlength=n)
        std = np.sqrt(ss / np.maximum(count - ddof, 1.0))
        dev = dev / (std[index] + eps)
    adv = np.where((size < 2) | zero_credit, 0.0, dev)
    return GroupNorm(adv, size, zero_credit)


def episode_advantage(
    batch: StepBatch, cfg: EpisodeConfig, values: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """GRPO's ``A^E_i`` per row and the episode-level zero-credit mask (docs/estimators.md §1).

    ``values`` is one number per compact trajectory (default: the return ``R_i``). Statistics
    are over the trajectories of each rollout group, or over its steps (length-weighted) with
    ``stats_over="steps"``. Groups whose values are all equal get exactly 0.
    """
    vals = batch.traj_return if values is None else np.asarray(values, dtype=np.float64)
    if cfg.stats_over == "steps":
        g = group_normalize(
            vals[batch.traj_index], batch.group_index, batch.n_groups, cfg.F_norm, cfg.eps, cfg.ddof
        )
        return g.adv, g.zero_credit
    g = group_normalize(vals, batch.traj_group, batch.n_groups, cfg.F_norm, cfg.eps, cfg.ddof)
    return g.adv[batch.traj_index], g.zero_credit[batch.traj_index]


class StepGroups(NamedTuple):
    """GiGPO's anchor-state step groups (docs/estimators.md §2)."""

    index: np.ndarray  # step-group id per row, 0..n-1
    n: int


def step_groups(batch: StepBatch, similarity_threshold: float | None = None) -> StepGroups:
    """Rows with equal ``anchor`` within one rollout group form a step group (docs/estimators.md §2).

    With ``similarity_threshold`` (in (0, 1)), distinct anchors of a group whose
    ``difflib`` ratio to a cluster's first anchor reaches the threshold join that cluster
    (greedy, in order of first appearance, as the reference GiGPO code). Exact by default.
    """
    code, n_anchor = batch.codes("anchor")
    if similarity_threshold is not None and similarity_threshold < 1.0:
        code = _similar_anchor_codes(batch, code, n_anchor, similarity_threshold)
        n_anchor = int(code.max()) + 1 if len(code) else 0
    idx, n = compact(batch.group_index * max(n_anchor, 1) + code)
    return StepGroups(idx, n)


def _similar_anchor_codes(
    batch: StepBatch, code: np.ndarray, n_anchor: int, thr: float
) -> np.ndarray:
    """Map each anchor code to a cluster representative within its rollout group."""
    key, _ = compact(batch.group_index * max(n_anchor, 1) + code)
    first_row = np.full(int(key.max()) + 1, len(code), dtype=np.int64)
    np.minimum.at(first_row, key, np.arange(len(code)))
    out = code.copy()
    rows = np.sort(first_row)
    rep_of: dict[tuple[int, int], int] = {}
    clusters: dict[int, list[tuple[str, int]]] = {}
    for r in rows.tolist():
        g, c, text = int(batch.group_index[r]), int(code[r]), batch.anchor[r]
        reps = clusters.setdefault(g, [])
        for rep_text, rep_code in reps:
            if SequenceMatcher(None, text, rep_text).ratio() >= thr:
                rep_of[(g, c)] = rep_code
                break
        else:
            reps.append((text, c))
            rep_of[(g, c)] = c
    pairs = zip(batch.group_index.tolist(), code.tolist(), strict=True)
    out[:] = [rep_of[p] for p in pairs]
    return out


# --------------------------------------------------------------------------------------------
# Base estimator
# --------------------------------------------------------------------------------------------


class BaseEstimator:
    """Config handling, canonical row order and shared diagnostics for every estimator.

    Subclasses set ``name`` and ``Config`` and implement :meth:`compute` on a batch whose rows
    are sorted by ``(traj, t)``; ``__call__`` maps the result back to the caller's row order,
    so permuting the rows permutes the advantages and changes nothing else.
    """

    name: ClassVar[str] = "base"
    Config: ClassVar[type] = BaseConfig

    def __init__(self, config: Any = None, **overrides: Any) -> None:
        self.config = make_config(self.Config, config, overrides, self.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config})"

    def __call__(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """Advantages (float64, one per row, caller's order) and diagnostics."""
        if not isinstance(batch, StepBatch):
            raise TypeError(f"{self.name}: expected a StepBatch, got {type(batch).__name__}")
        if len(batch) == 0:
            return np.zeros(0, dtype=np.float64), {"zero_credit_ratio": 0.0, "zero_adv_ratio": 0.0}
        sb = batch.canonical()
        adv_sorted, diag = self.compute(sb)
        adv = np.empty(len(batch), dtype=np.float64)
        adv[batch.order] = adv_sorted
        diag["zero_adv_ratio"] = float(np.mean(adv_sorted == 0.0))
        return adv, diag

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """Advantages for a canonically ordered batch; must set ``zero_credit_ratio``."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """Carried state (none for stateless estimators)."""
        return {}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; stateless estimators accept only ``{}``."""
        if d:
            raise ValueError(f"{self.name}: stateless estimator got state {sorted(d)}")
