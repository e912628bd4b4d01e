"""Viability regions: Union-Find over prefix signatures (docs/estimators.md §3.1).

Nodes are distinct ``(scope, signature)`` pairs: identical signatures within one scope (a rollout
group, or the whole batch) are one node. Loop rule: when a trajectory revisits a signature
(``sigma_{i,t} == sigma_{i,t'}``, ``t < t'``), every signature visited in between is merged.
No success label or reward enters the merging.

The loop rule is applied without touching each pair of visits: within a trajectory the stretch
between the first and the last visit of a signature is an interval; overlapping intervals chain
into maximal blocks, and the union of all stretches is exactly "merge every signature inside each
block". Blocks come from one cumulative maximum over the whole (sorted) batch, so only the
Union-Find pass over the resulting edges is a Python loop: near-linear in the number of rows.
"""

from __future__ import annotations

import numpy as np

from mvpo_train.segments import factorize, first_appearance_ids

__all__ = [
    "UnionFind",
    "loop_edges",
    "regions_of_sorted",
    "split_at_milestones",
    "viability_regions",
]


class UnionFind:
    """Disjoint sets with path compression and union by size (docs/estimators.md §3.1)."""

    __slots__ = ("parent", "size")

    def __init__(self, n: int) -> None:
        self.parent: list[int] = list(range(n))
        self.size: list[int] = [1] * n

    def __len__(self) -> int:
        return len(self.parent)

    def find(self, x: int) -> int:
        """Root of ``x``; compresses the path behind it."""
        parent = self.parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: int, b: int) -> int:
        """Merge the sets of ``a`` and ``b`` (smaller under larger); return the new root."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return ra

    def union_many(self, a: np.ndarray, b: np.ndarray) -> None:
        """Union each pair ``(a[k], b[k])``."""
        parent, size = self.parent, self.size
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            rx = x  # find with path halving, inlined: this loop is the only Python-level pass
            while parent[rx] != rx:
                parent[rx] = parent[parent[rx]]
                rx = parent[rx]
            ry = y
            while parent[ry] != ry:
                parent[ry] = parent[parent[ry]]
                ry = parent[ry]
            if rx == ry:
                continue
            if size[rx] < size[ry]:
                rx, ry = ry, rx
            parent[ry] = rx
            size[rx] += size[ry]

    def roots(self) -> np.ndarray:
        """Root of every element, as int64 (pointer jumping over the parent array)."""
        parent = np.asarray(self.parent, dtype=np.int64)
        while True:
            grand = parent[parent]
            if np.array_equal(grand, parent):
                return parent
            parent = grand


def loop_edges(node: np.ndarray, traj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges that implement the loop rule of docs/estimators.md §3.1.

    ``node`` and ``traj`` are per row, rows sorted by trajectory then step (rows of a
    trajectory contiguous and in time order). Returns ``(a, b)`` node pairs with ``a != b``
    (one per row inside a loop block; repeats are cheap for the Union-Find, so not removed).
    """
    order = np.argsort(node, kind="stable")
    return _edges_from_sorted(node, traj, order)


def _edges_from_sorted(
    node: np.ndarray, traj: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`loop_edges` given ``order``, a stable sort of the rows by node."""
    n = len(node)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # runs of equal (node, traj) in the sorted order: rows ascending, so a run's last element
    # is the last visit of that node by that trajectory
    ns, ts = node[order], traj[order]
    start_run = np.ones(n, dtype=bool)
    start_run[1:] = (ns[1:] != ns[:-1]) | (ts[1:] != ts[:-1])
    run = np.cumsum(start_run) - 1
    run_last = order[np.r_[np.flatnonzero(start_run)[1:] - 1, n - 1]]
    last = np.empty(n, dtype=np.int64)
    last[order] = run_last[run]
    pos = np.arange(n, dtype=np.int64)
    reach = np.maximum.accumulate(last)  # last visits never cross a trajectory's end
    start = np.ones(n, dtype=bool)
    start[1:] = reach[:-1] < pos[1:]
    first = np.flatnonzero(start)
    head = node[first[np.cumsum(start) - 1]]
    keep = head != node
    return head[keep], node[keep]


def viability_regions(
    signature: np.ndarray,
    traj: np.ndarray,
    t: np.ndarray,
    scope: np.ndarray,
) -> np.ndarray:
    """Region id ``rho_{i,t}`` (int64, ``0..R-1``) for every row (docs/estimators.md §3.1).

    ``signature`` holds strings (or integer signature codes); ``scope`` is the rollout-group id
    per row (default MVPO scope) or all zeros (batch scope). Rows may come in any order. Region
    ids are numbered by first appearance in (trajectory, step) order, so they do not depend on
    the order of the rows.
    """
    signature = np.asarray(signature)
    traj = np.asarray(traj)
    t = np.asarray(t)
    scope = np.asarray(scope)
    n = len(signature)
    if not (len(traj) == len(t) == len(scope) == n):
        raise ValueError("viability_regions: signature, traj, t and scope differ in length")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = _trajectory_order(traj, t)
    if order is not None:
        signature, traj, scope = signature[order], traj[order], scope[order]
    if signature.dtype.kind in "iu":
        sig_code = signature.astype(np.int64) - int(signature.min())
    else:
        sig_code, _ = factorize(signature)
    traj_code = np.cumsum(np.r_[False, traj[1:] != traj[:-1]]).astype(np.int64)
    region_sorted = regions_of_sorted(
        sig_code, traj_code, scope.astype(np.int64) - int(scope.min())
    )
    if order is None:
        return region_sorted
    out = np.empty(n, dtype=np.int64)
    out[order] = region_sorted
    return out


def regions_of_sorted(
    sig_code: np.ndarray, traj_code: np.ndarray, scope: np.ndarray, *, relabel: bool = True
) -> np.ndarray:
    """:func:`viability_regions` for rows already sorted by (trajectory, step) (§3.1).

    ``sig_code``: non-negative signature codes; ``traj_code``: non-decreasing trajectory codes;
    ``scope``: non-negative scope codes. Region ids by first appearance (``0..R-1``); with
    ``relabel=False`` the Union-Find root of each row's node instead (same partition, ids below
    the number of nodes, deterministic for a given row order).
    """
    n = len(sig_code)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    key = scope * (int(sig_code.max()) + 1) + sig_code
    by_key = np.argsort(key, kind="stable")
    ks = key[by_key]
    new_node = np.ones(n, dtype=bool)
    new_node[1:] = ks[1:] != ks[:-1]
    node = np.empty(n, dtype=np.int64)
    node[by_key] = np.cumsum(new_node) - 1  # node ids in key order; same stable order by node
    a, b = _edges_from_sorted(node, traj_code, by_key)
    roots = _merge_loops(node, int(new_node.sum()), a, b)
    return first_appearance_ids(roots)[0] if relabel else roots


def split_at_milestones(region: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Regions split at milestone events (docs/estimators.md §3.12): one sub-region per
    ``(region, done)``, ``done`` the milestones the row's trajectory made before the row.

    Ids are compact (``0..R'-1``, in sorted key order). Inside a sub-region no visit has made a
    milestone that another has not: the place where the next milestone is made is valued by the
    visits that still have it ahead, and the visits after it form their own sub-region.
    """
    if len(region) == 0:
        return np.zeros(0, dtype=np.int64)
    done = np.asarray(done, dtype=np.int64)
    key = np.asarray(region, dtype=np.int64) * (int(done.max()) + 1) + done
    return np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _merge_loops(node: np.ndarray, n_nodes: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Root node per row after the loop-rule unions ``(a, b)``; the Union-Find holds only the
    nodes that take part in a loop (the others are their own roots)."""
    if len(a) == 0:
        return node
    involved, ends = np.unique(np.concatenate([a, b]), return_inverse=True)
    ends = ends.reshape(-1)
    uf = UnionFind(len(involved))
    uf.union_many(ends[: len(a)], ends[len(a) :])
    root_of_node = np.arange(n_nodes, dtype=np.int64)
    root_of_node[involved] = involved[uf.roots()]
    return root_of_node[node]


def _trajectory_order(traj: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """Permutation sorting rows by (traj, t), or None when they already are."""
    d = np.diff(traj)
    if np.all(d >= 0) and np.all((d > 0) | (np.diff(t) > 0)):
        return None
    return np.lexsort((t, traj))
