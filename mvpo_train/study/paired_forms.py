"""Two forms of one setting compared on their runs' training success, paired by seed
(``benchmarks/head_equivalence.py``: the factored and the concat action-scorer head).

Per form, over the random seeds: the area (mean batch success over the iterations) and the final
success (the last 5 iterations), each with a percentile-bootstrap 95% interval
(:func:`mvpo_train.stats.bootstrap_ci`); paired by seed, the differences second - first with
the bootstrap interval and a t-based one beside it (:func:`mvpo_train.stats.t_interval`), and
how many seeds gave the two forms the very same success curve.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from mvpo_train.stats import bootstrap_ci, t_interval

__all__ = ["form_lines"]

#: the final success: the mean of the last iterations
FINAL = 5


def _fmt(m: tuple[float, float, float]) -> str:
    return f"{m[0]:+.3f} [{m[1]:+.3f}, {m[2]:+.3f}]"


def form_lines(curves: Mapping[str, Sequence[Sequence[float]]], label: str) -> list[str]:
    """The table (one row per form, ``label`` its column's name) and the paired line of the
    two forms of ``curves`` (form -> one success curve per seed, seeds in the same order)."""
    first, second = list(curves)
    c = {f: np.array(v) for f, v in curves.items()}
    area = {f: c[f].mean(axis=1) for f in c}
    final = {f: c[f][:, -FINAL:].mean(axis=1) for f in c}
    same = [int(np.array_equal(a, b)) for a, b in zip(c[first], c[second], strict=True)]
    lines = [f"| {label} | area | final |", "|---|---|---|"]
    for f in c:
        lines.append(f"| {f} | {_fmt(bootstrap_ci(area[f]))} | {_fmt(bootstrap_ci(final[f]))} |")
    cells = []
    for name, d in (("area", area[second] - area[first]), ("final", final[second] - final[first])):
        t = t_interval(d)
        cells.append(f"{name} {_fmt(bootstrap_ci(d))} (t: [{t[1]:+.3f}, {t[2]:+.3f}])")
    return lines + [
        "",
        f"Paired {second} - {first}: {', '.join(cells)}; success curves identical in "
        f"{sum(same)} of {len(same)} seeds.",
    ]
