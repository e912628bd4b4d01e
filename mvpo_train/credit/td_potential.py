"""The potential as the value of the pooled chain of keys, cross-fitted (docs/estimators.md §3.13).

``MVPOConfig(potential_estimate="td")`` (with ``region_stats="pooled"``) replaces the mean of the
Monte-Carlo return-to-go ``U`` over a region's visits by the value of the empirical Markov chain
over the pool's keys ``(task, signature, split)`` (:mod:`mvpo_train.credit.pooled_potential`):

``phi(k) = (S_k + sum_{k'} w_{k,k'} phi(k')) / W_k``

with ``W_k`` the (decayed) visits of key ``k``, ``S_k`` the sum of their per-step rewards ``u``
and ``w_{k,k'}`` the (decayed) number of those visits whose next step was at ``k'``; a visit on
a trajectory's last step has no successor (the chain ends there, as ``U`` does). This is the
certainty-equivalent value of the rewards ``u`` (Sutton 1988; a batch TD(0) fixed point): each
key borrows the visits of every key that follows it instead of averaging the noisy returns of
its own visits only, so a place is valued by where it leads. Regions' loop merges are not used
(the chain is over keys, loops are part of it).

Cross-fitting: the trajectories of each rollout group are split in ``K = td_folds`` folds by
their rank in the group (rank mod K); the rows of one fold are scored by the chain fitted on the
pool plus the *other* folds, so a row's own trajectory never enters the value that scores it
(K = the group size is leave-one-trajectory-out; each fold costs one fit). A key the fit
has never seen gets the mean of ``U`` over the other trajectories of its scope (0 when none).

The fixed point is found by Jacobi iteration with each key's self-transitions solved exactly
(dwelling does not slow it down), until the largest change is below ``1e-12`` (at most
:data:`MAX_SWEEPS` sweeps). Every trajectory ends, so every set of keys has an exit and the
iteration converges.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mvpo_train.credit.pooled_potential import RegionPool, others_in_region

__all__ = ["MAX_SWEEPS", "TransitionPool", "chain_values", "td_potential"]

#: the most Jacobi sweeps of one fit (the change left is then reported as not converged)
MAX_SWEEPS = 5000


class TransitionPool:
    """The pooled chain: per key its decayed visits and reward sum (``nodes``) and per pair of
    keys the decayed transitions (``edges``), each a :class:`RegionPool` with its own cap."""

    def __init__(self, max_entries: int) -> None:
        self.nodes = RegionPool(max_entries)
        self.edges = RegionPool(max_entries, width=2)

    def __len__(self) -> int:
        return len(self.nodes) + len(self.edges)

    @property
    def nbytes(self) -> int:
        return self.nodes.nbytes + self.edges.nbytes

    def update(
        self, key: np.ndarray, nxt: np.ndarray, has_next: np.ndarray, u: np.ndarray, decay: float
    ) -> None:
        """Add one batch's rows (key, next key, whether there is one, reward), then decay."""
        self.nodes.update(key, u, decay)
        pairs = np.stack([key, nxt], axis=1)[has_next]
        self.edges.update(pairs, np.zeros(len(pairs)), decay)

    def state_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes.state_dict(), "edges": self.edges.state_dict()}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        if not isinstance(d, dict) or set(d) != {"nodes", "edges"}:
            raise ValueError("mvpo: the pooled transitions are damaged (expected nodes, edges)")
        self.nodes.load_state_dict(d["nodes"])
        self.edges.load_state_dict(d["edges"])


def chain_values(
    node_key: np.ndarray,
    node_sum: np.ndarray,
    node_w: np.ndarray,
    edge: np.ndarray,
    edge_w: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, phi)``: the sorted distinct keys of ``node_key`` and the chain's value at each
    (module docstring). Several entries of one key or one edge are summed; an edge whose target
    is no node counts as an end."""
    keys, inv = np.unique(node_key, return_inverse=True)
    inv = inv.reshape(-1)
    s = np.bincount(inv, weights=node_sum, minlength=len(keys))
    w = np.bincount(inv, weights=node_w, minlength=len(keys))
    src = np.searchsorted(keys, edge[:, 0]) if len(edge) else np.zeros(0, np.int64)
    dst = np.searchsorted(keys, edge[:, 1]) if len(edge) else np.zeros(0, np.int64)
    ok = (src < len(keys)) & (dst < len(keys))
    ok[ok] &= (keys[src[ok]] == edge[ok, 0]) & (keys[dst[ok]] == edge[ok, 1])
    src, dst, ew = src[ok], dst[ok], np.asarray(edge_w, np.float64)[ok]
    self_loop = src == dst
    stay = np.bincount(src[self_loop], weights=ew[self_loop], minlength=len(keys))
    src, dst, ew = src[~self_loop], dst[~self_loop], ew[~self_loop]
    leave = np.maximum(w - stay, 1e-12 * np.maximum(w, 1.0))
    phi = s / leave
    for _ in range(MAX_SWEEPS):
        new = (s + np.bincount(src, weights=ew * phi[dst], minlength=len(keys))) / leave
        scale = max(1.0, float(np.max(np.abs(new), initial=0.0)))
        done = float(np.max(np.abs(new - phi), initial=0.0)) <= 1e-12 * scale
        phi = new
        if done:
            break
    return keys, phi


def td_potential(
    key: np.ndarray,
    has_next: np.ndarray,
    u: np.ndarray,
    big_u: np.ndarray,
    fold: np.ndarray,
    scope: np.ndarray,
    traj: np.ndarray,
    pool: TransitionPool,
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the cross-fitted ``phi`` of its key (module docstring; a trajectory lies in one
    fold, so its next row's ``phi`` is the same fit's value of the next key), and which rows
    fell back to the scope's mean. Rows sorted by (trajectory, step); ``has_next``: the row is
    not its trajectory's last; ``fold`` ``0..K-1`` per row (one chain fitted per fold); the
    pool is not updated here."""
    prior_sum, prior_n = others_in_region(scope, traj, big_u)
    phi = np.where(prior_n > 0, prior_sum / np.maximum(prior_n, 1.0), 0.0)
    known = np.zeros(len(key), dtype=bool)
    nxt = np.roll(key, -1)
    nodes, edges = pool.nodes, pool.edges
    for f in range(int(fold.max()) + 1):
        fit = fold != f
        fit_edge = fit & has_next
        keys, values = chain_values(
            np.concatenate([nodes.keys, key[fit]]),
            np.concatenate([nodes.sums, u[fit]]),
            np.concatenate([nodes.weights, np.ones(int(fit.sum()))]),
            np.concatenate([edges.keys.reshape(-1, 2), np.stack([key, nxt], 1)[fit_edge]]),
            np.concatenate([edges.weights, np.ones(int(fit_edge.sum()))]),
        )
        rows = np.flatnonzero(~fit)
        if not len(keys) or not len(rows):
            continue
        idx = np.minimum(np.searchsorted(keys, key[rows]), len(keys) - 1)
        found = keys[idx] == key[rows]
        phi[rows[found]] = values[idx[found]]
        known[rows[found]] = True
    return phi, ~known
