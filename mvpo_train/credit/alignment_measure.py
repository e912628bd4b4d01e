"""The alignment of MVPO's repair with an exact progress label: the measure (docs/alignment.md,
"The measure").

:func:`repair_alignment` is a pure function of a batch and two advantage arrays: on the rows
where ``mvpo_adv != gigpo_adv`` (the repaired rows), the AUC (Mann-Whitney U / (n+ n-), ties
count 1/2) of the repair ``mvpo_adv - gigpo_adv`` as a score for the label
``extras["oracle_progress"]`` (1 the step shortened the shortest plan, 0 it did not, -1
unknown), over the rows whose label is known; with the number of repaired rows and the fraction
of them with a known label. An AUC of 1 means every progress step got a larger repair than
every non-progress step, 0.5 means unrelated, 0 reversed. MVPO reports it on its own batches
(``MVPO.alignment_metrics``); :mod:`mvpo_train.alignment` re-exports it for analyses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mvpo_train.batch import ORACLE_PROGRESS, StepBatch

__all__ = ["Alignment", "auc", "repair_alignment"]


@dataclass(frozen=True)
class Alignment:
    """The alignment of one batch's repair (docs/alignment.md, "The measure")."""

    auc: float  # NaN when the known labels of repaired rows are all 1 or all 0 (or none)
    repaired_rows: int
    labelled_fraction: float  # of the repaired rows (NaN when none is repaired)
    positives: int  # repaired rows labelled 1
    negatives: int  # repaired rows labelled 0

    def as_metrics(self, prefix: str = "align/") -> dict[str, float | int]:
        return {
            f"{prefix}auc": self.auc,
            f"{prefix}repaired_rows": self.repaired_rows,
            f"{prefix}labelled_fraction": self.labelled_fraction,
            f"{prefix}positives": self.positives,
            f"{prefix}negatives": self.negatives,
        }


def auc(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> float:
    """Mann-Whitney AUC of ``scores`` for binary ``labels`` (1 positive, 0 negative): the
    probability that a random positive scores above a random negative, ties counting 1/2.
    NaN when one class is empty."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"auc: scores {s.shape} and labels {y.shape} must be equal 1-D shapes")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("auc: labels must be 0 or 1")
    n_pos = int(np.count_nonzero(y == 1))
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    # average ranks (ties share their mean rank), then U of the positives
    order = np.argsort(s, kind="stable")
    sorted_s = s[order]
    ranks = np.empty(len(s), dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], len(s)]
    for a, b in zip(starts, ends, strict=True):
        ranks[order[a:b]] = (a + b + 1) / 2.0  # mean of ranks a+1 .. b
    u = ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def repair_alignment(
    batch: StepBatch,
    mvpo_adv: np.ndarray,
    gigpo_adv: np.ndarray,
    labels: Sequence[int] | np.ndarray | None = None,
) -> Alignment:
    """The AUC of the repair ``mvpo_adv - gigpo_adv`` for the oracle label on the repaired rows
    (module docstring). Advantages and labels are in ``batch``'s row order; ``labels`` default
    to ``batch.extras["oracle_progress"]`` (a :class:`KeyError` naming the key if absent)."""
    n = len(batch)
    mvpo_adv = np.asarray(mvpo_adv, dtype=np.float64)
    gigpo_adv = np.asarray(gigpo_adv, dtype=np.float64)
    if labels is None:
        if ORACLE_PROGRESS not in batch.extras:
            raise KeyError(
                f"repair_alignment: the batch has no extras[{ORACLE_PROGRESS!r}] (play an env whose "
                "infos carry it, e.g. with progress_oracle=True, or pass labels=)"
            )
        labels = batch.extras[ORACLE_PROGRESS]
    y = np.asarray(labels, dtype=np.float64)
    for name, arr in (("mvpo_adv", mvpo_adv), ("gigpo_adv", gigpo_adv), ("labels", y)):
        if arr.shape != (n,):
            raise ValueError(f"repair_alignment: {name} has shape {arr.shape}, expected ({n},)")
    if not np.all(np.isin(y, (-1.0, 0.0, 1.0))):
        raise ValueError("repair_alignment: labels must be 1, 0 or -1 (unknown)")
    repair = mvpo_adv - gigpo_adv
    repaired = mvpo_adv != gigpo_adv
    known = repaired & (y >= 0)
    k = int(repaired.sum())
    return Alignment(
        auc=auc(repair[known], y[known].astype(np.int64)),
        repaired_rows=k,
        labelled_fraction=float(known.sum() / k) if k else float("nan"),
        positives=int(np.count_nonzero(known & (y == 1))),
        negatives=int(np.count_nonzero(known & (y == 0))),
    )
