"""Per-arm intervals and paired differences over seeds: the cells of a study's tables.

A study's per-seed values are one mapping per seed (``{"auc": ..., "reach": ...}``, None where
a seed has no such value). :func:`intervals` gives each key's percentile-bootstrap interval
over seeds (:func:`mvpo_train.stats.bootstrap_ci`, seed 0); :func:`paired` the interval of
the per-seed differences between two arms on every seed both have. Iterations to a threshold
(``reach``, None for a run that never got there) count as ``iterations + 1``
(:func:`mvpo_train.stats.censored`) in a difference.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mvpo_train.stats import bootstrap_ci, censored

__all__ = ["differences", "intervals", "pair_rows", "paired"]

Interval = tuple[float, float, float]


def intervals(
    per_seed: Iterable[Mapping[str, Any]], keys: Iterable[str]
) -> dict[str, Interval | None]:
    """Key -> bootstrap interval ``(mean, lo, hi)`` of the per-seed values in their order (None or
    missing values left out); None for a key no seed has a value of."""
    rows = list(per_seed)
    out: dict[str, Interval | None] = {}
    for key in keys:
        xs = [r[key] for r in rows if r.get(key) is not None]
        out[key] = bootstrap_ci(xs) if xs else None
    return out


def paired(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    keys: Iterable[str],
    iterations: int,
    reach: Iterable[str] = ("reach",),
) -> dict[str, Interval | None]:
    """Key -> bootstrap interval of the per-seed differences ``a - b`` (``a[i]`` and ``b[i]``:
    one seed's values in each arm); a seed where either value is None or missing is left out;
    the keys in
    ``reach`` are iterations to a threshold, censored at ``iterations + 1``. None for a key
    with no difference."""
    if len(a) != len(b):
        raise ValueError(f"paired: {len(a)} seeds against {len(b)}")
    censor = set(reach)
    out: dict[str, Interval | None] = {}
    for key in keys:
        d = differences(a, b, key, iterations if key in censor else None)
        out[key] = bootstrap_ci(d) if d else None
    return out


def differences(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    key: str,
    censor_at: int | None = None,
) -> list[float]:
    """The per-seed differences ``a[i][key] - b[i][key]`` (one seed's values in each arm), a
    seed where either value is None or missing left out; with ``censor_at``, iterations to a
    threshold, a run that never reached it counting as ``censor_at + 1``."""
    out = []
    for x, y in zip((r.get(key) for r in a), (r.get(key) for r in b), strict=True):
        if censor_at is not None:
            x, y = censored(x, censor_at), censored(y, censor_at)
        if x is not None and y is not None:
            out.append(float(x) - float(y))
    return out


def pair_rows(
    arms: Mapping[str, Mapping[str, Any]], a: str, b: str
) -> tuple[list[int], list[Mapping[str, Any]], list[Mapping[str, Any]]] | None:
    """The random seeds both arms ``a`` and ``b`` of a table's ``arms`` have (each arm's ``seeds``, in
    ``a``'s order) and each arm's ``per_seed`` values on them (keyed by the seed as a string,
    as JSON keeps them); None when either arm is not in the table."""
    if a not in arms or b not in arms:
        return None
    common = [s for s in arms[a]["seeds"] if s in arms[b]["seeds"]]
    return (
        common,
        [arms[a]["per_seed"][str(s)] for s in common],
        [arms[b]["per_seed"][str(s)] for s in common],
    )
