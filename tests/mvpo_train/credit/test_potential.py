"""AMP weights, viability values and region potential (docs/estimators.md §3.2-§3.3)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mvpo_train.credit.potential import (
    AMPWeights,
    floor_normalise,
    milestone_reward,
    region_potential,
    viability_values,
)
from mvpo_train.credit.regions import viability_regions
from mvpo_train.segments import (
    exclusive_scan,
    flatten_milestones,
    reverse_scan,
    traj_layout,
)


def hits(amp, rows):
    """rows: (traj, name, t) triples -> the arrays AMPWeights.update takes."""
    tr, nm, t = zip(*rows, strict=True)
    return np.array(tr), np.array([amp.index(n) for n in nm]), np.array(t)


def test_amp_moves_toward_the_milestone_that_predicts_success():
    amp = AMPWeights()
    amp.add_names(["good", "bad"])
    success = np.array([True, True, False, False])
    # "good" hit by the two winners; "bad" hit by one winner and both losers
    rows = [(0, "good", 1), (1, "good", 2), (1, "bad", 0), (2, "bad", 0), (3, "bad", 1)]
    w0 = amp.as_dict()
    s = amp.update(*hits(amp, rows), success)
    # s_good = 1 - .5 = .5 ; s_bad = 1/3 - .5 < 0 -> target (1, 0)
    np.testing.assert_allclose(s[[amp.index("good"), amp.index("bad")]], [0.5, 1 / 3 - 0.5])
    w1 = amp.as_dict()
    assert w1["good"] == pytest.approx(0.9 * 0.5 + 0.1) and w1["bad"] == pytest.approx(0.45)
    assert w1["good"] > w0["good"] and w1["bad"] < w0["bad"]
    for _ in range(100):
        amp.update(*hits(amp, rows), success)
    assert amp.as_dict()["bad"] == pytest.approx(0.02)  # the floor w_min
    assert sum(amp.as_dict().values()) == pytest.approx(1.0)


def test_amp_without_successes_uses_later_progress():
    amp = AMPWeights()
    amp.add_names(["seen", "inhand", "lost"])
    # traj 0: seen (t0) then inhand (t2) ; traj 1: seen (t1) only ; traj 2: lost (t3)
    rows = [(0, "seen", 0), (0, "inhand", 2), (1, "seen", 1), (2, "lost", 3)]
    s = amp.update(*hits(amp, rows), np.zeros(3, dtype=bool))
    assert s[amp.index("seen")] == 0.5 and s[amp.index("inhand")] == 0.0
    assert s[amp.index("lost")] == 0.0
    w = amp.as_dict()
    assert w["seen"] == pytest.approx(0.9 / 3 + 0.1) and w["inhand"] == pytest.approx(0.3)


def test_amp_milestones_without_hits_keep_their_weight():
    amp = AMPWeights()
    amp.add_names(["a", "b", "c"])
    amp.update(*hits(amp, [(0, "a", 0), (1, "b", 0)]), np.array([True, False]))
    w = amp.as_dict()
    assert w["c"] == pytest.approx(1 / 3)
    assert w["a"] == pytest.approx(0.9 / 3 + 0.1 * 2 / 3) and w["b"] == pytest.approx(0.3)


def test_amp_new_name_enters_with_the_mean_and_state_round_trip():
    amp = AMPWeights(names=["a", "b"], weights=np.array([0.8, 0.2]))
    assert amp.add_names(["c", "a"]) == ["c"]
    np.testing.assert_allclose(amp.weights, np.array([0.8, 0.2, 0.5]) / 1.5)
    clone = AMPWeights()
    clone.load_state_dict(json.loads(json.dumps(amp.state_dict())))
    assert clone.as_dict() == amp.as_dict() and clone.index("c") == 2


def test_floor_normalise():
    np.testing.assert_allclose(floor_normalise(np.array([0.0, 0.01, 1.0]), 0.1), [0.1, 0.1, 0.8])
    np.testing.assert_allclose(floor_normalise(np.array([1.0, 3.0]), 0.1), [0.25, 0.75])
    np.testing.assert_allclose(floor_normalise(np.array([1.0, 0.0]), 0.6), [0.5, 0.5])


def test_milestone_reward_and_flatten():
    ms = [(), ("a",), ("a", "b"), ()]
    rows, names = flatten_milestones(ms)
    assert rows.tolist() == [1, 2, 2] and names.tolist() == ["a", "a", "b"]
    np.testing.assert_allclose(milestone_reward(ms, {"a": 0.25, "b": 0.75}), [0, 0.25, 1.0, 0])


def test_scans_and_viability_values_by_hand():
    # two trajectories, rows interleaved and out of order
    traj = np.array([5, 9, 5, 9, 5])
    t = np.array([2, 0, 0, 1, 1])
    lay = traj_layout(traj, t)
    x = np.array([3.0, 1.0, 1.0, 2.0, 2.0])  # traj 5: 1, 2, 3 ; traj 9: 1, 2
    np.testing.assert_allclose(reverse_scan(x, lay, 0.5), [3.0, 2.0, 1 + 0.5 * (2 + 1.5), 2.0, 3.5])
    np.testing.assert_allclose(exclusive_scan(x, lay), [3.0, 0.0, 0.0, 1.0, 1.0])
    m = np.array([0.0, 0.5, 0.5, 0.0, 0.25])  # traj 5: .5, .25, 0 ; traj 9: .5, 0
    is_last = np.array([True, False, False, True, False])
    ret = np.array([1.0, 0.0, 1.0, 0.0, 1.0])  # traj 5 won
    p, g = viability_values(m, traj, t, is_last, ret, c_succ=1.0, gamma_m=0.5)
    np.testing.assert_allclose(p, [0.75, 0.0, 0.0, 0.5, 0.5])
    # traj 5: g2 = 0 + 1 = 1 ; g1 = .25 + .5 ; g0 = .5 + .5 * .75 ; traj 9: g1 = 0, g0 = .5
    np.testing.assert_allclose(g, [1.0, 0.5, 0.875, 0.0, 0.75])


def test_region_potential_by_hand():
    region = np.array([0, 0, 0, 1, 1, 2])
    traj = np.array([0, 0, 1, 1, 2, 2])
    v = np.array([1.0, 2.0, 3.0, 0.0, 1.0, 4.0])
    phi, loop = region_potential(region, traj, v, lambda_l=0.5)
    # region 0: 3 visits by 2 trajectories -> L = .5 ; mean v = 2 -> phi = 1.75
    np.testing.assert_allclose(loop, [0.5, 0.0, 0.0])
    np.testing.assert_allclose(phi, [1.75, 0.5, 4.0])
    fut = np.array([True, False, False, False, True, True])
    phi_f, _ = region_potential(region, traj, v, lambda_l=0.5, lambda_f=1.0, future_milestone=fut)
    np.testing.assert_allclose(phi_f, [1.75 + 1 / 3, 1.0, 5.0])
    with pytest.raises(ValueError):
        region_potential(region, traj, v, lambda_f=1.0)


def test_progressing_regions_beat_looping_ones_in_an_all_failed_group():
    # traj 0 makes progress (milestones at t0, t1); traj 1 loops r -> q -> r -> q
    sig = np.array(["s", "a", "b", "c", "s", "r", "q", "r", "q"], dtype=object)
    traj = np.array([0] * 4 + [1] * 5)
    t = np.array([0, 1, 2, 3, 0, 1, 2, 3, 4])
    m = milestone_reward([("x",), ("y",), (), (), (), (), (), (), ()], {"x": 0.5, "y": 0.5})
    is_last = np.array([False, False, False, True, False, False, False, False, True])
    p, g = viability_values(m, traj, t, is_last, np.zeros(9), gamma_m=0.95)
    region = viability_regions(sig, traj, t, np.zeros(9, np.int64))
    phi, loop = region_potential(region, traj, p + g)
    progress = phi[region[[1, 2, 3]]]
    looping = phi[region[[5, 6]]]
    assert region[5] == region[6] == region[7] == region[8]
    assert loop[region[5]] == 3.0
    assert progress.min() > phi[region[0]] > looping.max()


def test_amp_success_score_is_relative_to_the_batch_success_rate():
    """``s_k = P(success | k) - P(success)``: a milestone no better than average gets no pull.

    Success (T, T, F, F), P(success) = .5. ``a`` is hit by winner 0 (P = 1, s = .5), ``b`` by
    0 and 2 (P = .5, s = 0), ``c`` by 1, 2, 3 (P = 1/3, s = -1/6). Only ``a`` is a target;
    without the ``- P(success)`` term all three would be (targets 6/11, 3/11, 2/11).
    """
    amp = AMPWeights()
    amp.add_names(["a", "b", "c"])
    rows = [(0, "a", 0), (0, "b", 1), (2, "b", 0), (1, "c", 0), (2, "c", 1), (3, "c", 0)]
    success = np.array([True, True, False, False])
    s = amp.update(*hits(amp, rows), success)
    np.testing.assert_allclose(s[[amp.index(n) for n in "abc"]], [0.5, 0.0, -1 / 6], rtol=1e-12)
    w = amp.as_dict()
    assert w["a"] == pytest.approx(0.9 / 3 + 0.1, abs=1e-12)
    assert w["b"] == pytest.approx(0.3, abs=1e-12) and w["c"] == pytest.approx(0.3, abs=1e-12)


def test_amp_later_means_a_different_milestone_at_a_strictly_later_step():
    """No success: ``s_k = P(a milestone other than k fires after k's first hit | k hit)``.

    Traj 0: ``b`` at t0, ``a`` at t1 and ``a`` again at t4 (a repeat of ``a`` is not "another
    milestone"); traj 1: ``a`` and ``b`` together at t2 (not later). So ``a``: 0 of 2,
    ``b``: 1 of 2 (traj 0, where ``a`` follows).
    """
    amp = AMPWeights()
    amp.add_names(["a", "b"])
    rows = [(0, "b", 0), (0, "a", 1), (0, "a", 4), (1, "a", 2), (1, "b", 2)]
    s = amp.scores(*hits(amp, rows), np.zeros(2, dtype=bool))
    np.testing.assert_array_equal(s[[amp.index("a"), amp.index("b")]], [0.0, 0.5])
    # a third milestone after a's first hit makes a's score 1/2
    rows.append((1, "c", 3))
    amp.add_names(["c"])
    s = amp.scores(*hits(amp, rows), np.zeros(2, dtype=bool))
    np.testing.assert_array_equal(s[[amp.index(n) for n in "abc"]], [0.5, 1.0, 0.0])


def test_amp_moves_on_a_single_hit_of_a_single_trajectory():
    amp = AMPWeights()
    amp.add_names(["a", "b"])
    s = amp.update(*hits(amp, [(0, "a", 0)]), np.array([True]))
    # one trajectory, it won: s_a = 1 - 1 = 0 -> no positive score, nothing moves
    assert s[amp.index("a")] == 0.0 and np.isnan(s[amp.index("b")])
    assert amp.as_dict() == {"a": 0.5, "b": 0.5}
    s = amp.update(*hits(amp, [(0, "a", 0), (0, "b", 3)]), np.array([False]))
    # no success: a is followed by b (s = 1), b by nothing (s = 0)
    np.testing.assert_array_equal(s[[amp.index("a"), amp.index("b")]], [1.0, 0.0])
    assert amp.as_dict()["a"] == pytest.approx(0.9 * 0.5 + 0.1, abs=1e-12)
