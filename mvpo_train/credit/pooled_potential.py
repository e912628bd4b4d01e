"""Pooled, cross-fitted region statistics for MVPO's potential (docs/estimators.md §3.11).

The paper's reading estimates a region's potential ``phi(rho) = mean_{visits} U`` from the
current batch alone, in-sample: the row it scores is one of the visits it averages. With
``MVPOConfig(region_stats="pooled")`` the potential that scores a row of trajectory ``j`` is

``phi_j(rho) = (P_sum(rho) + C_sum(rho, -j)) / (P_w(rho) + C_n(rho, -j))``

* ``C_sum(rho, -j)``, ``C_n(rho, -j)``: the sum of ``U`` and the number of visits of region
  ``rho`` by the current batch's *other* trajectories (a row's own trajectory never enters the
  estimate that scores it: prefix plus suffix sums inside the region, so not even by rounding);
* ``P_sum``, ``P_w``: the pooled past, summed over the *keys* the region is made of. A key is
  ``(task, signature, split)``: regions are Union-Find roots of one batch, so they do not exist
  across batches; the signatures they merge do. ``split`` is the number of milestones made before
  the row with ``potential_split="milestones"`` (else -1); ``task`` is the batch's
  ``extras["task_id"]`` (or ``extras["task_index"]``), empty with ``scope="batch"`` or
  ``pool_decay=0``.

After scoring, the batch's per-key sums join the pool, and the pool is multiplied by
``pool_decay`` once per iteration: a batch ``a`` iterations old weighs ``pool_decay ** a``
(0: the current batch only, pure leave-one-trajectory-out). Entries whose weight falls below
:data:`MIN_WEIGHT` are dropped; beyond ``pool_max_entries`` the lightest go first, so memory is
bounded: 24 bytes per entry (key, sum, weight; 32 for a transition's pair of keys). A row
without any out-of-trajectory visit of its region (a region only its own trajectory saw, never
seen before) falls back to the mean of ``U`` over the other trajectories of its scope (its
rollout group), 0 when there are none. Keys are 64-bit BLAKE2b digests of the key's text,
stable across processes and runs (two of a million keys collide with odds near 3e-8).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "EDGE_BYTES",
    "ENTRY_BYTES",
    "MIN_WEIGHT",
    "RegionPool",
    "crossfit_potential",
    "key_hashes",
    "others_in_region",
    "task_labels",
]

#: pool entries lighter than this (in decayed visits) are dropped after each update
MIN_WEIGHT = 1e-3
#: bytes per pool entry: an int64 key, a float64 sum and a float64 weight
ENTRY_BYTES = 24
#: bytes per entry of a pool of transitions (``width=2``: two int64 keys)
EDGE_BYTES = 32


def task_labels(extras: Mapping[str, Any], n: int) -> np.ndarray | None:
    """Per row (caller's order): the task a row's group played, as text (``"id:..."`` from
    ``extras["task_id"]`` when every row has a non-empty one, else ``"index:..."`` from
    ``extras["task_index"]``); ``None`` when the batch carries neither."""
    ids = extras.get("task_id")
    if ids is not None and len(ids) == n and all(str(x) for x in ids):
        return np.array(["id:" + str(x) for x in ids], dtype=object)
    idx = extras.get("task_index")
    if idx is not None and len(idx) == n:
        return np.array([f"index:{int(x)}" for x in idx], dtype=object)
    return None


def key_hashes(task: Sequence[str], signature: Sequence[str], split: np.ndarray) -> np.ndarray:
    """64-bit key per row for ``(task, signature, split)`` (one digest per distinct key)."""
    n = len(signature)
    text = [f"{a}\x1f{s}\x1f{int(k)}" for a, s, k in zip(task, signature, split, strict=True)]
    uniq, inv = np.unique(np.array(text, dtype=object), return_inverse=True) if n else ([], [])
    digests = np.fromiter(
        (
            int.from_bytes(
                hashlib.blake2b(u.encode(), digest_size=8).digest(), "little", signed=True
            )
            for u in uniq
        ),
        dtype=np.int64,
        count=len(uniq),
    )
    return digests[np.asarray(inv, dtype=np.int64).reshape(-1)] if n else np.zeros(0, np.int64)


class RegionPool:
    """Decayed per-key sums of the potential's statistic across iterations (module docstring).

    ``keys`` (sorted int64; with ``width=2`` pairs of int64, sorted rows: the transitions of
    :mod:`mvpo_train.credit.td_potential`), ``sums`` (decayed sum of the value added) and
    ``weights`` (decayed visits), one entry per key; ``max_entries`` caps their number.
    """

    def __init__(self, max_entries: int, width: int = 1) -> None:
        self.max_entries = int(max_entries)
        self.width = int(width)
        self.keys = np.zeros(0 if width == 1 else (0, width), dtype=np.int64)
        self.sums = np.zeros(0, dtype=np.float64)
        self.weights = np.zeros(0, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        """Bytes held by the three arrays."""
        return int(self.keys.nbytes + self.sums.nbytes + self.weights.nbytes)

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pooled ``(sum, weight)`` per queried key (0, 0 for unknown keys)."""
        if not len(self.keys):
            return np.zeros(len(keys)), np.zeros(len(keys))
        idx = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        found = self.keys[idx] == keys
        return np.where(found, self.sums[idx], 0.0), np.where(found, self.weights[idx], 0.0)

    def restricted(self, keys: np.ndarray) -> RegionPool:
        """A copy holding only the entries of ``keys`` (sorted; with ``width=2`` the pairs
        whose first key is one of them), in the same order: what a lookup of ``keys`` reads."""
        first = self.keys if self.width == 1 else self.keys[:, 0]
        idx = np.minimum(np.searchsorted(keys, first), max(len(keys) - 1, 0))
        keep = keys[idx] == first if len(keys) else np.zeros(len(first), dtype=bool)
        out = RegionPool(self.max_entries, self.width)
        out.keys, out.sums, out.weights = self.keys[keep], self.sums[keep], self.weights[keep]
        return out

    def update(self, keys: np.ndarray, values: np.ndarray, decay: float) -> None:
        """Add one batch (a key and a value of ``U`` per row), then decay, prune and cap."""
        axis = None if self.width == 1 else 0
        batch_keys, inv = np.unique(keys, return_inverse=True, axis=axis)
        inv = inv.reshape(-1)
        b_sum = np.bincount(inv, weights=np.asarray(values, np.float64), minlength=len(batch_keys))
        b_w = np.bincount(inv, minlength=len(batch_keys)).astype(np.float64)
        all_keys, where = np.unique(
            np.concatenate([self.keys, batch_keys]), return_inverse=True, axis=axis
        )
        where = where.reshape(-1)
        sums = np.bincount(where, np.concatenate([self.sums, b_sum]), len(all_keys)) * decay
        weights = np.bincount(where, np.concatenate([self.weights, b_w]), len(all_keys)) * decay
        keep = weights >= MIN_WEIGHT
        if int(keep.sum()) > self.max_entries:  # the lightest go first; ties: the later key
            order = np.lexsort((-np.arange(len(weights)), -weights))
            keep = np.zeros(len(all_keys), dtype=bool)
            keep[order[: self.max_entries]] = True
        self.keys, self.sums, self.weights = all_keys[keep], sums[keep], weights[keep]

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable and bit-exact: the arrays as base64 of their little-endian bytes."""
        return {
            "width": self.width,
            "keys": _b64(self.keys, "<i8"),
            "sums": _b64(self.sums, "<f8"),
            "weights": _b64(self.weights, "<f8"),
        }

    def load_state_dict(self, d: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` exactly; a damaged state is refused in one line."""
        try:
            keys = _unb64(d["keys"], "<i8")
            if int(d.get("width", 1)) != self.width or len(keys) % self.width:
                raise ValueError(f"width {d.get('width', 1)}, expected {self.width}")
            keys = keys if self.width == 1 else keys.reshape(-1, self.width)
            sums = _unb64(d["sums"], "<f8")
            weights = _unb64(d["weights"], "<f8")
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"mvpo: the pooled region statistics are damaged ({err})") from None
        order_ok = np.array_equal(np.unique(keys, axis=None if self.width == 1 else 0), keys)
        if not (len(keys) == len(sums) == len(weights)) or not order_ok:
            raise ValueError(
                "mvpo: the pooled region statistics are damaged (lengths differ or keys unsorted)"
            )
        self.keys, self.sums, self.weights = keys, sums, weights


def _b64(a: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def _unb64(s: str, dtype: str) -> np.ndarray:
    raw = base64.b64decode(s.encode("ascii"), validate=True)
    if len(raw) % 8:
        raise ValueError("byte length not a multiple of 8")
    return np.frombuffer(raw, dtype=dtype).astype(dtype[1:], copy=True)


def _exclusive_of_own(segment: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per element: the sum of ``x`` over the *other* elements of its ``segment`` (segments
    contiguous), as a prefix plus a suffix sum inside the segment (each starting from 0), so no
    element's own value, nor any value outside its segment, enters its result, not even by
    rounding (a total minus the own share would)."""
    n = len(x)
    new = np.r_[True, segment[1:] != segment[:-1]]
    seg_id = np.cumsum(new) - 1
    pos = np.arange(n) - np.flatnonzero(new)[seg_id]
    mat = np.zeros((int(seg_id[-1]) + 1, int(pos.max()) + 2))  # one zero column either side
    mat[seg_id, pos + 1] = x
    before = np.cumsum(mat, axis=1)  # before[s, p] = x of positions < p
    after = np.cumsum(mat[:, ::-1], axis=1)[:, ::-1]  # after[s, p + 2] = x of positions > p
    return before[seg_id, pos] + np.c_[after, np.zeros(len(mat))][seg_id, pos + 2]


def others_in_region(
    region: np.ndarray, traj: np.ndarray, big_u: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the sum of ``U`` and the number of visits of its region by *other*
    trajectories of the batch."""
    width = int(traj.max()) + 1
    pairs, inv = np.unique(region * width + traj, return_inverse=True)
    inv = inv.reshape(-1)
    seg = pairs // width
    ps = np.bincount(inv, weights=big_u, minlength=len(pairs))
    pn = np.bincount(inv, minlength=len(pairs)).astype(np.float64)
    return _exclusive_of_own(seg, ps)[inv], _exclusive_of_own(seg, pn)[inv]


def crossfit_potential(
    region: np.ndarray,
    traj: np.ndarray,
    scope: np.ndarray,
    keys: np.ndarray,
    big_u: np.ndarray,
    pool: RegionPool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: ``phi_j(rho)`` of the module docstring; the per-region potential with every
    current visit in (for diagnostics); and which rows fell back to the scope's mean.

    ``region``: region id per row (ids below ``len(region)``); ``traj``: compact trajectory
    index; ``scope``: the rows' scope (rollout group); ``keys``: :func:`key_hashes` per row.
    At least one row. Sums over the other trajectories are prefix + suffix sums, so a row's own
    trajectory does not enter its potential even by rounding.
    """
    big_u = np.asarray(big_u, np.float64)
    n_r = int(region.max()) + 1
    # the pooled past of each region: sum over the distinct keys it holds
    pair = np.unique(np.stack([region, keys], axis=1), axis=0)
    p_sum_k, p_w_k = pool.lookup(pair[:, 1])
    p_sum = np.bincount(pair[:, 0], weights=p_sum_k, minlength=n_r)
    p_w = np.bincount(pair[:, 0], weights=p_w_k, minlength=n_r)
    c_sum = np.bincount(region, weights=big_u, minlength=n_r)
    c_n = np.bincount(region, minlength=n_r).astype(np.float64)
    o_sum, o_n = others_in_region(region, traj, big_u)
    num = p_sum[region] + o_sum
    den = p_w[region] + o_n
    # fallback: the mean of U over the other trajectories of the row's scope
    s_sum, s_n = others_in_region(scope, traj, big_u)
    with np.errstate(invalid="ignore", divide="ignore"):
        prior = np.where(s_n > 0, s_sum / np.maximum(s_n, 1.0), 0.0)
        fallback = ~(den > 0.5 * MIN_WEIGHT)  # pooled entries weigh >= MIN_WEIGHT
        phi = np.where(fallback, prior, num / np.where(fallback, 1.0, den))
        phi_region = (p_sum + c_sum) / np.maximum(p_w + c_n, MIN_WEIGHT)
    return phi, phi_region, fallback
