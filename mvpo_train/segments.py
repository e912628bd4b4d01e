"""Per-trajectory layout, scans and integer codes shared by StepBatch and the estimators.

docs/estimators.md §0 (the batch): rows are environment steps identified by a trajectory and a
step index ``t``, in any order. The helpers here lay them out in a padded ``(T_max, n_traj)``
matrix for the discounted scans (return-to-go ``G``, ``p_{i,t}`` of §3.3), code string columns
as integers, and flatten the per-row milestone tuples. NumPy only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "TrajLayout",
    "exclusive_scan",
    "factorize",
    "first_appearance_ids",
    "flatten_milestones",
    "future_any",
    "padded",
    "reverse_scan",
    "traj_layout",
]


class TrajLayout(NamedTuple):
    """Where each row sits in a padded ``(T_max, n_traj)`` matrix (docs/estimators.md §0).

    ``traj_index`` is a compact trajectory index ``0..n_traj-1`` per row and ``t`` the step.
    """

    traj_index: np.ndarray
    t: np.ndarray
    n_traj: int
    t_max: int


def traj_layout(traj: np.ndarray, t: np.ndarray) -> TrajLayout:
    """Compact trajectory ids for the padded scans (docs/estimators.md §0)."""
    traj = np.asarray(traj)
    t = np.asarray(t, dtype=np.int64)
    if traj.size == 0:
        return TrajLayout(np.zeros(0, np.int64), t, 0, 0)
    _, idx = np.unique(traj, return_inverse=True)
    idx = idx.astype(np.int64).reshape(-1)
    return TrajLayout(idx, t, int(idx.max()) + 1, int(t.max()) + 1)


def padded(values: np.ndarray, layout: TrajLayout) -> np.ndarray:
    """``values`` (one per row) in a zero-padded ``(T_max, n_traj)`` matrix (§0)."""
    mat = np.zeros((layout.t_max, layout.n_traj), dtype=np.float64)
    mat[layout.t, layout.traj_index] = values
    return mat


def reverse_scan(values: np.ndarray, layout: TrajLayout, gamma: float) -> np.ndarray:
    """Discounted return-to-go ``x_t + gamma * X_{t+1}`` per trajectory (docs/estimators.md §0).

    Vectorised over trajectories: one NumPy operation per time step, so the cost is
    ``O(T_max * n_traj)`` and the result equals the scalar recursion bit for bit.
    """
    if layout.n_traj == 0:
        return np.zeros(0, dtype=np.float64)
    mat = padded(np.asarray(values, dtype=np.float64), layout)
    for c in range(layout.t_max - 2, -1, -1):
        mat[c] = mat[c] + gamma * mat[c + 1]
    return mat[layout.t, layout.traj_index]


def exclusive_scan(values: np.ndarray, layout: TrajLayout) -> np.ndarray:
    """``sum_{t' < t} x_{t'}`` within each trajectory (docs/estimators.md §3.3, ``p_{i,t}``)."""
    if layout.n_traj == 0:
        return np.zeros(0, dtype=np.float64)
    mat = padded(np.asarray(values, dtype=np.float64), layout)
    out = np.zeros_like(mat)
    np.cumsum(mat[:-1], axis=0, out=out[1:])
    return out[layout.t, layout.traj_index]


def future_any(flag: np.ndarray, layout: TrajLayout) -> np.ndarray:
    """True where the flag holds at this step or any later step of the trajectory (§3.3, F)."""
    if layout.n_traj == 0:
        return np.zeros(0, dtype=bool)
    mat = padded(np.asarray(flag, dtype=np.float64), layout)
    rev = np.cumsum(mat[::-1], axis=0)[::-1]
    return rev[layout.t, layout.traj_index] > 0


def flatten_milestones(milestones: Sequence[Iterable[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Milestone hits as flat ``(row, name)`` pairs (docs/estimators.md §3.3, input of ``m``).

    ``milestones`` holds one sized collection of names per row (a tuple in a StepBatch).
    Returns ``rows`` (int64) and ``names`` (object array of str), one entry per hit.
    """
    items = milestones.tolist() if isinstance(milestones, np.ndarray) else list(milestones)
    lens = np.fromiter(map(len, items), np.int64, len(items))
    nz = np.flatnonzero(lens)
    names = [x for i in nz.tolist() for x in items[i]]
    name_arr = np.empty(len(names), dtype=object)
    name_arr[:] = names
    return np.repeat(nz, lens[nz]).astype(np.int64), name_arr


def factorize(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Integer codes for hashable values in one dict pass (O(n)).

    A value's code is the row of its first appearance, so equal values share a code and
    codes are ``< len(values)``; returns ``(codes, len(values))``, the second being the bound
    callers use when they combine codes with other integer keys. Not dense: compact them with
    :func:`first_appearance_ids` when ``0..k-1`` is needed.
    """
    items = values.tolist()
    first: dict = {}
    n = len(items)
    return np.fromiter(map(first.setdefault, items, range(n)), np.int64, n), n


def first_appearance_ids(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """Relabel non-negative integer labels ``0..k-1`` by order of first appearance."""
    n = len(labels)
    if n == 0:
        return np.zeros(0, np.int64), 0
    first = np.full(int(labels.max()) + 1, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n, dtype=np.int64))
    present = np.flatnonzero(first < n)
    rank = np.empty(len(first), dtype=np.int64)
    rank[present[np.argsort(first[present], kind="stable")]] = np.arange(len(present))
    return rank[labels], len(present)
