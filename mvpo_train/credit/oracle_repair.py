"""MVPO's repair at a controlled alignment, and its two controls (docs/alignment.md, "The
oracle repair").

MVPO (docs/estimators.md §3.6) adds ``kappa * A^Phi`` on the *routed* rows (the rows of
zero-credit step groups). To ask how much the alignment of ``A^Phi`` with true progress matters,
with its magnitude held fixed, ``MVPOConfig.repair_source`` replaces ``A^Phi`` before kappa and
the combination with the episode-level advantage, which stay as they are:

* ``"potential"`` (the default): MVPO's own ``A^Phi``, unchanged.
* ``"oracle"``: on the routed rows, ``x = rho * z(D) + sqrt(1 - rho^2) * eps``, with ``D`` the
  decrease of the shortest-plan length across the step (``extras["oracle_plan_decrease"]``),
  ``z`` the standardisation over the routed rows and ``eps`` seeded standard normal noise; ``x``
  is standardised over the routed rows and multiplied by ``s``, the population standard
  deviation of MVPO's own ``A^Phi`` there. Only the alignment changes, never the spread.
* ``"shuffled"`` (negative control): MVPO's own ``A^Phi`` values permuted among the routed rows
  (the same multiset of values, no alignment left).
* ``"positive"`` (positive control): ``s * z(D)`` on *every* row, standardised over all rows,
  replaces the step advantage of routed, singleton and informative step groups alike: what the
  policy and optimiser reach with exact step credit at the repair's scale.

Every function is pure: the noise comes from the ``rng`` passed in. ``s`` is 1 when there is no
routed row or the own repair has no spread there, so the controls still speak on such batches.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "ORACLE_SOURCES",
    "REPAIR_SOURCES",
    "oracle_repair",
    "own_scale",
    "positive_credit",
    "shuffled_repair",
    "standardise",
]

#: the values of ``MVPOConfig.repair_source``
REPAIR_SOURCES = ("potential", "oracle", "shuffled", "positive")
#: the sources that read the plan-length oracle of the batch
ORACLE_SOURCES = ("oracle", "positive")


def standardise(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(x - mean) / std`` over ``rows`` (population std), 0 elsewhere and where it has no
    spread."""
    out = np.zeros(len(x), dtype=np.float64)
    sel = x[rows]
    if sel.size == 0:
        return out
    sd = float(sel.std())
    if sd > 0.0:
        out[rows] = (sel - sel.mean()) / sd
    return out


def own_scale(a_phi: np.ndarray, routed: np.ndarray) -> float:
    """The population std of MVPO's own ``A^Phi`` over the routed rows (1 without spread)."""
    sel = a_phi[routed]
    sd = float(sel.std()) if sel.size else 0.0
    return sd if sd > 0.0 else 1.0


def oracle_repair(
    a_phi: np.ndarray,
    decrease: np.ndarray,
    routed: np.ndarray,
    rho: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """``A^Phi`` with its routed rows replaced by the oracle mix at alignment ``rho`` (module
    docstring); rows off the route keep ``a_phi``. ``rho`` in [0, 1]."""
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"oracle_repair: rho must be in [0, 1], got {rho!r}")
    out = np.array(a_phi, dtype=np.float64)
    k = int(np.count_nonzero(routed))
    if k == 0:
        return out
    eps = np.zeros(len(out))
    eps[routed] = rng.standard_normal(k)
    x = rho * standardise(decrease, routed) + math.sqrt(1.0 - rho * rho) * eps
    out[routed] = own_scale(a_phi, routed) * standardise(x, routed)[routed]
    return out


def shuffled_repair(a_phi: np.ndarray, routed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``A^Phi`` with its routed values permuted among the routed rows (the negative control)."""
    out = np.array(a_phi, dtype=np.float64)
    idx = np.flatnonzero(routed)
    out[idx] = out[rng.permutation(idx)]
    return out


def positive_credit(a_phi: np.ndarray, decrease: np.ndarray, routed: np.ndarray) -> np.ndarray:
    """``s * z(D)`` on every row (the positive control; ``z`` over all rows, ``s`` from the
    routed rows as in :func:`own_scale`)."""
    every = np.ones(len(decrease), dtype=bool)
    return own_scale(a_phi, routed) * standardise(np.asarray(decrease, np.float64), every)
