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
  is standardised over the routed rows and multiplied by ``s`` (:func:`oracle_scale`): by
  default the population standard deviation of MVPO's own ``A^Phi`` there, so only the
  alignment changes, never the spread; ``oracle_scale="credit"`` takes the spread of GiGPO's
  non-zero advantage instead (a magnitude arm: the repair at the scale of the credit GiGPO
  gives elsewhere).
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
    "ORACLE_SCALES",
    "ORACLE_SOURCES",
    "REPAIR_SOURCES",
    "credit_scale",
    "oracle_repair",
    "oracle_scale",
    "own_scale",
    "positive_credit",
    "shuffled_repair",
    "standardise",
]

#: the values of ``MVPOConfig.repair_source``
REPAIR_SOURCES = ("potential", "oracle", "shuffled", "positive")
#: the sources that read the plan-length oracle of the batch
ORACLE_SOURCES = ("oracle", "positive")
#: the values of ``MVPOConfig.oracle_scale``: the spread the oracle credit is given
ORACLE_SCALES = ("own", "credit")


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


def credit_scale(gigpo_adv: np.ndarray) -> float:
    """The population std of GiGPO's advantage over the rows where it is non-zero (1 when
    there are none or they have no spread): the scale of the credit GiGPO gives."""
    sel = np.asarray(gigpo_adv, dtype=np.float64)
    sel = sel[sel != 0.0]
    sd = float(sel.std()) if sel.size else 0.0
    return sd if sd > 0.0 else 1.0


def oracle_scale(name: str, a_phi: np.ndarray, routed: np.ndarray, gigpo_adv: np.ndarray) -> float:
    """The spread ``s`` of the oracle credit: ``"own"`` (:func:`own_scale`) or ``"credit"``
    (:func:`credit_scale`)."""
    if name == "own":
        return own_scale(a_phi, routed)
    if name == "credit":
        return credit_scale(gigpo_adv)
    raise ValueError(f"oracle_scale must be one of {list(ORACLE_SCALES)}, got {name!r}")


def oracle_repair(
    a_phi: np.ndarray,
    decrease: np.ndarray,
    routed: np.ndarray,
    rho: float,
    rng: np.random.Generator,
    scale: float | None = None,
) -> np.ndarray:
    """``A^Phi`` with its routed rows replaced by the oracle mix at alignment ``rho`` (module
    docstring) at spread ``scale`` (default :func:`own_scale`); rows off the route keep
    ``a_phi``. ``rho`` in [0, 1]."""
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"oracle_repair: rho must be in [0, 1], got {rho!r}")
    out = np.array(a_phi, dtype=np.float64)
    k = int(np.count_nonzero(routed))
    if k == 0:
        return out
    eps = np.zeros(len(out))
    eps[routed] = rng.standard_normal(k)
    x = rho * standardise(decrease, routed) + math.sqrt(1.0 - rho * rho) * eps
    s = own_scale(a_phi, routed) if scale is None else scale
    out[routed] = s * standardise(x, routed)[routed]
    return out


def shuffled_repair(a_phi: np.ndarray, routed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``A^Phi`` with its routed values permuted among the routed rows (the negative control)."""
    out = np.array(a_phi, dtype=np.float64)
    idx = np.flatnonzero(routed)
    out[idx] = out[rng.permutation(idx)]
    return out


def positive_credit(decrease: np.ndarray, scale: float) -> np.ndarray:
    """``scale * z(D)`` on every row (the positive control; ``z`` over all rows, ``scale``
    from :func:`oracle_scale`)."""
    every = np.ones(len(decrease), dtype=bool)
    return scale * standardise(np.asarray(decrease, np.float64), every)
