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
its own visits only, so a place is valued by where it leads.

Loop merges (``td_chain``): with ``"keys"`` (the default, as first measured) the chain's states
are the keys, and the loop rule's merges (§3.1) do not enter it; with ``"regions"`` the keys the
batch's regions join are one state (:func:`region_representatives`: the keys of a region, and
the regions that share a key, merged by Union-Find), in the fit and in the scoring, as the
Monte-Carlo estimate sums the keys of a region: the steps inside a loop become the state's
dwell, and every row of a region gets one value per fold. The pool keeps the keys unmerged (the
regions are the batch's), so the merge is redone per batch.

A batch's share of the pool (:meth:`TransitionPool.share_state`, what a batch record carries,
docs/inspect.md): the keys reachable from the batch's keys along the pool's transitions and the
batch's own, and the number of sweeps each fold's fit took. The other keys cannot change a
scored value within a sweep; they only take part in the stopping rule, so replaying the
recorded number of sweeps on the share gives the same values bit for bit.

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
from scipy.sparse import csr_array
from scipy.sparse.csgraph import breadth_first_order

from mvpo_train.credit.pooled_potential import RegionPool, others_in_region
from mvpo_train.credit.regions import UnionFind

__all__ = [
    "MAX_SWEEPS",
    "TransitionPool",
    "chain_values",
    "fit_chain",
    "reachable",
    "region_representatives",
    "td_potential",
]

#: the most Jacobi sweeps of one fit (the change left is then reported as not converged)
MAX_SWEEPS = 5000


class TransitionPool:
    """The pooled chain: per key its decayed visits and reward sum (``nodes``) and per pair of
    keys the decayed transitions (``edges``), each a :class:`RegionPool` with its own cap."""

    def __init__(self, max_entries: int) -> None:
        self.nodes = RegionPool(max_entries)
        self.edges = RegionPool(max_entries, width=2)
        #: the sweeps each fold's fit took in the last :func:`td_potential` call
        self.last_sweeps: list[int] = []
        #: a batch's share (:meth:`share_state`): the next call replays these sweeps per fold
        self.replay_sweeps: list[int] | None = None

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

    def share_state(self, key: np.ndarray, has_next: np.ndarray) -> dict[str, Any]:
        """The :meth:`state_dict` of a batch's share (module docstring), for the pool as it was
        *before* the :func:`td_potential` call on that batch, whose sweeps it stores: ``key``
        the batch's rows (sorted by trajectory and step), ``has_next`` not a trajectory's last
        row. Loaded, it scores that batch exactly as the whole pool did."""
        batch_edges = np.stack([key, np.roll(key, -1)], axis=1)[has_next]
        keep = reachable(key, np.concatenate([self.edges.keys.reshape(-1, 2), batch_edges]))
        return {
            "nodes": self.nodes.restricted(keep).state_dict(),
            "edges": self.edges.restricted(keep).state_dict(),
            "sweeps": [int(x) for x in self.last_sweeps],
        }

    def state_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes.state_dict(), "edges": self.edges.state_dict()}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`, or a batch's :meth:`share_state` (its sweeps kept for
        the next call)."""
        if not isinstance(d, dict) or set(d) - {"sweeps"} != {"nodes", "edges"}:
            raise ValueError("mvpo: the pooled transitions are damaged (expected nodes, edges)")
        sweeps = d.get("sweeps")
        if sweeps is not None and not (
            isinstance(sweeps, list) and all(isinstance(x, int) and x >= 1 for x in sweeps)
        ):
            raise ValueError("mvpo: the pooled transitions are damaged (sweeps: whole numbers)")
        self.nodes.load_state_dict(d["nodes"])
        self.edges.load_state_dict(d["edges"])
        self.replay_sweeps = sweeps


def chain_values(
    node_key: np.ndarray,
    node_sum: np.ndarray,
    node_w: np.ndarray,
    edge: np.ndarray,
    edge_w: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, phi)`` of :func:`fit_chain`, until converged."""
    keys, phi, _ = fit_chain(node_key, node_sum, node_w, edge, edge_w)
    return keys, phi


def fit_chain(
    node_key: np.ndarray,
    node_sum: np.ndarray,
    node_w: np.ndarray,
    edge: np.ndarray,
    edge_w: np.ndarray,
    sweeps: int | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(keys, phi, sweeps done)``: the sorted distinct keys of ``node_key`` and the chain's
    value at each (module docstring). Several entries of one key or one edge are summed; an
    edge whose target is no node counts as an end. ``sweeps``: exactly that many (a batch's
    share replayed); None: until converged."""
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
    done_sweeps = 0
    for _ in range(MAX_SWEEPS if sweeps is None else sweeps):
        new = (s + np.bincount(src, weights=ew * phi[dst], minlength=len(keys))) / leave
        done_sweeps += 1
        scale = max(1.0, float(np.max(np.abs(new), initial=0.0)))
        done = float(np.max(np.abs(new - phi), initial=0.0)) <= 1e-12 * scale
        phi = new
        if done and sweeps is None:
            break
    return keys, phi, done_sweeps


def reachable(start: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The sorted keys reachable from ``start`` along ``edges`` (pairs of keys, from, to),
    ``start`` included (one breadth-first search from a node joined to every start key)."""
    start = np.unique(start)
    if not len(edges):
        return start
    nodes = np.unique(np.concatenate([start, edges.reshape(-1)]))
    root = len(nodes)
    src = np.concatenate([np.searchsorted(nodes, edges[:, 0]), np.full(len(start), root)])
    dst = np.concatenate([np.searchsorted(nodes, edges[:, 1]), np.searchsorted(nodes, start)])
    graph = csr_array((np.ones(len(src), np.int8), (src, dst)), shape=(root + 1, root + 1))
    seen = breadth_first_order(graph, root, directed=True, return_predecessors=False)
    return np.sort(nodes[seen[seen != root]])


def region_representatives(key: np.ndarray, region: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, rep)``: the batch's sorted distinct keys and, per key, the smallest key of its
    state when the loop rule's regions are the chain's states (``td_chain="regions"``): the keys
    of one region are one state, and so are two regions that share a key (a key the batch saw
    in two regions: same task in two rollout groups, or a key without its task)."""
    keys, k_of = np.unique(key, return_inverse=True)
    regions, r_of = np.unique(region, return_inverse=True)
    pairs = np.unique(np.stack([k_of.reshape(-1), r_of.reshape(-1) + len(keys)], 1), axis=0)
    uf = UnionFind(len(keys) + len(regions))
    uf.union_many(pairs[:, 0], pairs[:, 1])
    _, first, state = np.unique(uf.roots()[: len(keys)], return_index=True, return_inverse=True)
    return keys, keys[first][state.reshape(-1)]  # keys sorted: a state's first key is its least


def _renamed(x: np.ndarray, keys: np.ndarray, rep: np.ndarray) -> np.ndarray:
    """``x`` with each key of ``keys`` replaced by its ``rep`` (other keys kept)."""
    idx = np.minimum(np.searchsorted(keys, x), len(keys) - 1)
    return np.where(keys[idx] == x, rep[idx], x)


def td_potential(
    key: np.ndarray,
    has_next: np.ndarray,
    u: np.ndarray,
    big_u: np.ndarray,
    fold: np.ndarray,
    scope: np.ndarray,
    traj: np.ndarray,
    pool: TransitionPool,
    region: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the cross-fitted ``phi`` of its key (module docstring; a trajectory lies in one
    fold, so its next row's ``phi`` is the same fit's value of the next key), and which rows
    fell back to the scope's mean. Rows sorted by (trajectory, step); ``has_next``: the row is
    not its trajectory's last; ``fold`` ``0..K-1`` per row (one chain fitted per fold);
    ``region``: the rows' regions, whose keys are then one state of the chain
    (``td_chain="regions"``; None: the chain over keys). The pool is not updated here; its
    ``last_sweeps`` are set, and a loaded share's ``replay_sweeps`` used up."""
    prior_sum, prior_n = others_in_region(scope, traj, big_u)
    phi = np.where(prior_n > 0, prior_sum / np.maximum(prior_n, 1.0), 0.0)
    known = np.zeros(len(key), dtype=bool)
    node_key, edge_key = pool.nodes.keys, pool.edges.keys.reshape(-1, 2)
    replay, pool.replay_sweeps, pool.last_sweeps = pool.replay_sweeps, None, []
    if replay is not None and len(replay) != int(fold.max()) + 1:
        raise ValueError(
            f"mvpo: a batch's share of the pool replays {len(replay)} fits, this batch has "
            f"{int(fold.max()) + 1} folds (a record's pool scores its own batch only)"
        )
    if region is not None:
        keys, rep = region_representatives(key, region)
        key, node_key, edge_key = (_renamed(x, keys, rep) for x in (key, node_key, edge_key))
    nxt = np.roll(key, -1)
    for f in range(int(fold.max()) + 1):
        fit = fold != f
        fit_edge = fit & has_next
        keys, values, sweeps = fit_chain(
            np.concatenate([node_key, key[fit]]),
            np.concatenate([pool.nodes.sums, u[fit]]),
            np.concatenate([pool.nodes.weights, np.ones(int(fit.sum()))]),
            np.concatenate([edge_key, np.stack([key, nxt], 1)[fit_edge]]),
            np.concatenate([pool.edges.weights, np.ones(int(fit_edge.sum()))]),
            None if replay is None else replay[f],
        )
        pool.last_sweeps.append(sweeps)
        rows = np.flatnonzero(~fit)
        if not len(keys) or not len(rows):
            continue
        idx = np.minimum(np.searchsorted(keys, key[rows]), len(keys) - 1)
        found = keys[idx] == key[rows]
        phi[rows[found]] = values[idx[found]]
        known[rows[found]] = True
    return phi, ~known
