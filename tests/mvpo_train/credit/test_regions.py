"""Union-Find viability regions (docs/estimators.md §3.1)."""

from __future__ import annotations

import numpy as np

from mvpo_train.credit.regions import UnionFind, loop_edges, viability_regions


def test_union_find_basics():
    uf = UnionFind(6)
    uf.union(0, 1)
    uf.union(2, 3)
    uf.union(1, 3)
    assert uf.find(0) == uf.find(2) == uf.find(3)
    assert uf.find(4) != uf.find(5) and uf.find(4) != uf.find(0)
    assert sorted(uf.size[uf.find(0)] for _ in [0]) == [4]
    r = uf.roots()
    assert len(set(r.tolist())) == 3


def test_union_find_long_chain_stays_fast():
    n = 200_000
    uf = UnionFind(n)
    uf.union_many(np.arange(n - 1), np.arange(1, n))
    assert len(set(uf.roots().tolist())) == 1


def regions_of(trajs, scope=None):
    sig, traj, t = [], [], []
    for i, seq in enumerate(trajs):
        for k, s in enumerate(seq):
            sig.append(s)
            traj.append(i)
            t.append(k)
    sc = (
        np.zeros(len(sig), dtype=np.int64)
        if scope is None
        else np.repeat(scope, [len(s) for s in trajs])
    )
    return viability_regions(np.array(sig, dtype=object), np.array(traj), np.array(t), sc)


def test_written_example_loops_merged_others_not():
    trajs = [
        ["start", "a", "b", "a", "c"],  # a..a loop: {a, b} merged ; c separate
        ["start", "d", "e", "f", "e"],  # e..e loop: {e, f} ; d separate
        ["start", "b", "g"],  # b is in {a, b} already (identical signature), g separate
        ["h", "x", "h", "y", "x"],  # h..h and x..x overlap -> {h, x, y}
    ]
    r = regions_of(trajs)
    reg = {}
    k = 0
    for seq in trajs:
        for s in seq:
            reg.setdefault(s, set()).add(int(r[k]))
            k += 1
    assert all(len(v) == 1 for v in reg.values())
    rid = {s: next(iter(v)) for s, v in reg.items()}
    assert rid["a"] == rid["b"] and rid["e"] == rid["f"] and rid["h"] == rid["x"] == rid["y"]
    distinct = {rid[s] for s in ["start", "a", "c", "d", "e", "g", "h"]}
    assert len(distinct) == 7
    assert r.dtype == np.int64 and r.min() == 0 and r.max() == 6


def test_adjacent_but_not_overlapping_loops_stay_apart():
    # a b a | c d c : the two loops touch in time but share no step
    r = regions_of([["a", "b", "a", "c", "d", "c"]])
    assert r[0] == r[1] == r[2] and r[3] == r[4] == r[5] and r[0] != r[3]


def test_loop_rule_is_per_trajectory_not_per_set():
    # traj 0 merges {x, y}; traj 1 visits x, z, y without revisiting a signature: z stays apart
    r = regions_of([["x", "y", "x"], ["x", "z", "y"]])
    assert r[0] == r[1] and r[4] != r[0]


def test_scope_separates_groups():
    trajs = [["s", "a"], ["s", "a"]]
    assert len(set(regions_of(trajs, scope=np.array([0, 1])).tolist())) == 4
    assert len(set(regions_of(trajs).tolist())) == 2


def test_row_order_does_not_matter():
    trajs = [["s", "a", "b", "a"], ["s", "c", "d"]]
    sig = np.array([s for seq in trajs for s in seq], dtype=object)
    traj = np.array([0, 0, 0, 0, 1, 1, 1])
    t = np.array([0, 1, 2, 3, 0, 1, 2])
    base = viability_regions(sig, traj, t, np.zeros(7, np.int64))
    perm = np.random.default_rng(0).permutation(7)
    out = viability_regions(sig[perm], traj[perm], t[perm], np.zeros(7, np.int64))
    np.testing.assert_array_equal(out, base[perm])


def test_loop_edges_empty_and_no_loop():
    a, b = loop_edges(np.array([0, 1, 2]), np.array([0, 0, 0]))
    assert len(a) == 0 and len(b) == 0


def test_rows_grouped_by_trajectory_but_not_in_time_order():
    """Rows sorted by trajectory with steps reversed inside each: still sorted by (traj, t)
    before the loop rule runs (a loop is a stretch in *time*)."""
    sig = np.array(["s", "a", "b", "a", "c"], dtype=object)
    traj = np.zeros(5, np.int64)
    t = np.arange(5)
    base = viability_regions(sig, traj, t, np.zeros(5, np.int64))
    assert base.tolist() == [0, 1, 1, 1, 2]  # a..b..a merged; s and c apart
    rev = np.arange(5)[::-1]
    out = viability_regions(sig[rev], traj[rev], t[rev], np.zeros(5, np.int64))
    np.testing.assert_array_equal(out, base[rev])
