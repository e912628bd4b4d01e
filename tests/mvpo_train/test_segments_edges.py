"""Edges of the trajectory layout and scans (docs/estimators.md §0, §3.3): no rows, relabelling."""

from __future__ import annotations

import numpy as np

from mvpo_train.credit.potential import viability_values
from mvpo_train.segments import (
    exclusive_scan,
    first_appearance_ids,
    future_any,
    reverse_scan,
    traj_layout,
)


def test_layout_of_no_rows_has_no_trajectories_and_no_steps():
    empty = np.zeros(0, np.int64)
    lay = traj_layout(empty, empty)
    assert lay.traj_index.shape == (0,) and lay.n_traj == 0 and lay.t_max == 0
    assert reverse_scan(np.zeros(0), lay, 0.9).shape == (0,)
    assert exclusive_scan(np.zeros(0), lay).shape == (0,)
    assert future_any(np.zeros(0, bool), lay).shape == (0,)
    p, g = viability_values(empty, empty, empty, np.zeros(0, bool), np.zeros(0))
    assert p.shape == g.shape == (0,)


def test_layout_matches_the_rows():
    lay = traj_layout(np.array([7, 3, 7, 3, 9]), np.array([0, 0, 1, 1, 0]))
    assert lay.traj_index.tolist() == [1, 0, 1, 0, 2] and lay.n_traj == 3 and lay.t_max == 2
    np.testing.assert_array_equal(
        reverse_scan(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), lay, 0.5), [2.5, 4.0, 3.0, 4.0, 5.0]
    )


def test_first_appearance_ids():
    ids, k = first_appearance_ids(np.array([5, 2, 5, 7, 2, 0]))
    assert ids.tolist() == [0, 1, 0, 2, 1, 3] and k == 4
    ids, k = first_appearance_ids(np.array([4]))
    assert ids.tolist() == [0] and k == 1
    ids, k = first_appearance_ids(np.zeros(0, np.int64))
    assert ids.shape == (0,) and k == 0
