"""Viability regions against the written loop rule (docs/estimators.md §3.1), many scopes."""

from __future__ import annotations

import numpy as np
import pytest

from mvpo_train.credit.regions import loop_edges, viability_regions


def _reference_partition(sig: list, traj: list, t: list, scope: list) -> list[int]:
    """§3.1 as written: nodes are (scope, signature); a trajectory that revisits a signature
    merges every signature it visited in between. A dict Union-Find, no vectorisation."""
    parent: dict = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    rows = sorted(range(len(sig)), key=lambda r: (traj[r], t[r]))
    by_traj: dict = {}
    for r in rows:
        by_traj.setdefault(traj[r], []).append((scope[r], sig[r]))
    for visits in by_traj.values():
        for i, a in enumerate(visits):
            find(a)
            for j in range(i + 1, len(visits)):
                if visits[j] == a:
                    for b in visits[i : j + 1]:
                        parent[find(b)] = find(a)
    return [find((scope[r], sig[r])) for r in range(len(sig))]


def _same_partition(a, b) -> bool:
    pairs = set(zip(a, b, strict=True))
    return len(pairs) == len(set(a)) == len(set(b))


@pytest.mark.parametrize("seed", range(12))
def test_regions_match_the_loop_rule_with_many_scopes_and_few_signatures(seed):
    """More rollout groups than signatures: a region never spans two scopes, and the partition
    is the one the loop rule defines; the row order does not matter."""
    rng = np.random.default_rng(seed)
    n_traj = int(rng.integers(2, 16))
    n_sig = int(rng.integers(1, 4))
    sig, traj, t, scope = [], [], [], []
    for i in range(n_traj):
        g = int(rng.integers(0, 8))
        for k in range(int(rng.integers(1, 7))):
            sig.append(f"s{rng.integers(0, n_sig)}")
            traj.append(i)
            t.append(k)
            scope.append(g)
    ref = _reference_partition(sig, traj, t, scope)
    perm = rng.permutation(len(sig))
    args = [np.array(x)[perm] for x in (sig, traj, t, scope)]
    out = viability_regions(np.array(args[0], dtype=object), *args[1:])
    assert _same_partition(out.tolist(), [ref[r] for r in perm])
    codes = viability_regions(
        np.array([int(s[1:]) for s in sig]), *(np.array(x) for x in (traj, t, scope))
    )
    assert _same_partition(codes.tolist(), ref)


def test_one_signature_in_three_scopes_gives_three_regions():
    # scope 0 visits a then b, scopes 1 and 2 visit a: four (scope, signature) nodes, no loop
    sig = np.array(["a", "b", "a", "a"], dtype=object)
    out = viability_regions(
        sig, np.array([0, 0, 1, 2]), np.array([0, 1, 0, 0]), np.array([0, 0, 1, 2])
    )
    assert out.tolist() == [0, 1, 2, 3]


def test_empty_input_gives_no_regions_and_no_edges():
    empty = np.zeros(0, np.int64)
    assert viability_regions(empty, empty, empty, empty).shape == (0,)
    a, b = loop_edges(empty, empty)
    assert a.shape == b.shape == (0,) and a.dtype == b.dtype == np.int64
