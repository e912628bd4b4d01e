"""The learning study's headline table (docs/learning_study.md, "Results"): the final
held-out evaluations first, then training success, each a mean over seeds with its Student-t
95% interval and the percentile-bootstrap one beside it, per arm and per paired difference.

Read from a :func:`mvpo_train.study.curves.summarize` table's per-seed values
(``table["arms"][arm]["per_seed"]``), so a page rebuilt from its JSON shows the same cells.
A seed without a value (a run whose held-out evaluation is missing) is left out of that cell,
and of both arms of a paired cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mvpo_train.study.paired import interval
from mvpo_train.study.summary import differences, pair_rows

__all__ = ["cell", "heldout_first_lines", "pair_arms"]

#: the training-success values after the held-out ones: (per-seed key, column name)
TRAINING = (("auc", "training area"), ("final", "training final"))


def cell(values: Sequence[float]) -> str:
    """``mean [t lo, hi] (bootstrap lo, hi)`` of per-seed ``values``; the mean alone with one
    value, ``-`` with none."""
    c = interval(list(values))
    if c["mean"] is None:
        return "-"
    if c["t95"] is None:
        return f"{c['mean']:.3f}"
    (tlo, thi), (blo, bhi) = c["t95"], c["boot95"]
    return f"{c['mean']:.3f} [{tlo:.3f}, {thi:.3f}] ({blo:.3f}, {bhi:.3f})"


def pair_arms(name: str) -> tuple[str, str]:
    """The two arms of a pair's name in a table (``"a - b"``)."""
    a, sep, b = name.partition(" - ")
    if not sep or not a or not b:
        raise ValueError(f"not a pair's name: {name!r} (expected 'ARM - ARM')")
    return a, b


def _seed_rows(row: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [row["per_seed"][str(s)] for s in row["seeds"]]


def _values(rows: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in rows if r.get(key) is not None]


def heldout_first_lines(table: Mapping[str, Any], heldout: Sequence[str]) -> list[str]:
    """The markdown of the headline table (per arm, then per pair of ``table["pairs"]``): the
    held-out keys ``heldout`` (the headline split first; a key no arm has a value of, as in a
    study run with ``--no-eval``, is left out), then training area and final."""
    arms = table["arms"]
    heldout = [k for k in heldout if any(_values(_seed_rows(r), k) for r in arms.values())]
    keys = [*heldout, *(k for k, _ in TRAINING)]
    names = [*(f"held-out {k}" for k in heldout), *(n for _, n in TRAINING)]
    lines = [
        "Held-out first (final checkpoint), then training success: mean over seeds "
        "[Student-t 95% interval] (percentile-bootstrap 95% interval, 10,000 resamples); per "
        "pair, of the per-seed differences on the random seeds both arms have:",
        "",
        "| arm or pair | seeds | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(keys),
    ]
    for arm, row in arms.items():
        rows = _seed_rows(row)
        lines.append(
            f"| {arm} | {len(rows)} | " + " | ".join(cell(_values(rows, k)) for k in keys) + " |"
        )
    for name in table["pairs"]:
        both = pair_rows(arms, *pair_arms(name))
        if both is None:
            continue
        seeds, a, b = both
        lines.append(
            f"| {name} | {len(seeds)} | "
            + " | ".join(cell(differences(a, b, k)) for k in keys)
            + " |"
        )
    return lines + [""]
