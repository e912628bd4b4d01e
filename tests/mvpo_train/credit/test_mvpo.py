"""MVPO in its v1 form (docs/estimators.md §3.3-§3.4; `form="v1"` pinned throughout): the §3.4
worked example by hand, routing, kappa, state."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.credit.mvpo import MVPO, potential_terms

from .worked_example import A, B, C, D, by_traj, worked_example, worked_potential

EPS = 1e-6


def test_worked_example_potential_by_hand():
    b, pot = worked_potential(form="v1")
    # m: A = .5, .5, 0, 0 ; D = .5, 0, 0, 0.  p: A = 0, .5, 1, 1 ; D = 0, .5, .5, .5
    # g (gamma_m = .95): A = .5 + .95 * .5 = .975, .5, 0, 0 ; D = .5, 0, 0, 0
    v = by_traj(b, pot.v)
    np.testing.assert_allclose(v[A], [0.975, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(v[D], [0.5, 0.5, 0.5, 0.5])
    assert np.all(v[B] == 0) and np.all(v[C] == 0)
    # phi(start) = (.975 + 0 + 0 + .5) / 4 ; phi(ct1|apple) = (1 + .5) / 2
    # C's loop: cab1 revisited -> {cab1, cab2} one region, 3 visits / 1 traj -> L = 2, phi = -1
    phi = by_traj(b, pot.phi)
    np.testing.assert_allclose(phi[A], [0.36875, 0.75, 1.0, 1.0])
    np.testing.assert_allclose(phi[C], [0.36875, -1.0, -1.0, -1.0])
    d = by_traj(b, pot.d)
    np.testing.assert_allclose(d[A], [0.38125, 0.25, 0, 0], atol=1e-15)
    np.testing.assert_allclose(d[B], [-0.36875, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(d[C], [-1.36875, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(d[D], [0.38125, -0.25, 0, 0], atol=1e-15)


def test_worked_example_advantages_by_hand():
    b = worked_example()
    adv, diag = get_estimator("mvpo", form="v1")(b)
    # routed rows (zero-credit step groups): the 4 start rows, {A1, D1} at "ct1 apple",
    # {C1, C3} at "cabinet 1". Their D: .38125, -.36875, -1.36875, .38125, .25, -.25, 0, 0
    # mean -0.121875 ; sum of squared deviations 2.306328125 -> population std below
    scale = np.sqrt(2.306328125 / 8) + EPS
    a = by_traj(b, adv)
    # kappa = 1 - EMA = 1 - (0.9 * 0 + 0.1 * 0) = 1 ; A^E = 0 (all failed)
    np.testing.assert_allclose(a[A], [0.38125 / scale, 0.25 / scale, 0, 0])
    np.testing.assert_allclose(a[B], [-0.36875 / scale, 0, 0, 0])
    np.testing.assert_allclose(a[C], [-1.36875 / scale, 0, 0, 0])
    np.testing.assert_allclose(a[D], [0.38125 / scale, -0.25 / scale, 0, 0])
    np.testing.assert_allclose(a[A][:2], [0.71005, 0.46561], atol=1e-5)
    # the §3.4 claims: A/D first actions positive, B negative, C most negative; at the shared
    # region A positive and D negative; C's loop steps are 0 in the repaired term
    assert a[A][0] > 0 and a[D][0] > 0 and a[C][0] < a[B][0] < 0
    assert a[A][1] > 0 > a[D][1]
    assert a[C][1] == 0.0 and a[C][3] == 0.0
    assert diag["zero_credit_ratio"] == 0.5 and diag["repaired_ratio"] == 0.5
    assert diag["kappa"] == 1.0 and diag["ema_success"] == 0.0
    assert diag["num_regions"] == 10
    assert diag["grouping_ratio"] == 9 / 16  # start (4) + ct1|apple (2) + cabinets (3)
    # AMP after the batch (no success anywhere): s_seen = P(other fires later | seen) = 1/2,
    # s_inhand = 0 -> w = .9 * (.5, .5) + .1 * (0, 1)
    assert diag["amp_weights"] == pytest.approx({"inhand": 0.45, "seen": 0.55})
    gigpo, _ = get_estimator("gigpo")(b)
    assert np.all(gigpo == 0.0)


def test_equals_gigpo_without_zero_credit_groups():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], anchors=["s", "x"], milestones=[("m",), ()]),
        dict(group=0, rewards=[0, 0, 0], anchors=["s", "y", "x"]),
        dict(group=0, rewards=[0, 0.5], anchors=["s", "z"], milestones=[(), ("m",)]),
    ])  # fmt: skip
    g, gd = get_estimator("gigpo")(b)
    m, md = get_estimator("mvpo", form="v1")(b)
    assert gd["zero_credit_ratio"] == 0.0
    np.testing.assert_array_equal(m, g)


def test_routing_keeps_informative_groups_and_repairs_zero_credit():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 0, 1], anchors=["s", "k", "x"], milestones=[("m",), (), ()]),
        dict(group=0, rewards=[0, 0, 0], anchors=["s", "k", "y"]),
        dict(group=0, rewards=[0, 0], anchors=["t", "k"], milestones=[("m",), ()]),
        dict(group=0, rewards=[0, 0], anchors=["t", "u"]),
    ])  # fmt: skip
    # step groups: s and k hold different returns (informative); t = {traj 2, traj 3} at t0,
    # both failed: zero-credit; x, y, u are singletons
    g, _ = get_estimator("gigpo")(b)
    m, md = get_estimator("mvpo", form="v1")(b)
    zero = np.zeros(len(b), dtype=bool)
    zero[[6, 8]] = True
    np.testing.assert_array_equal(m[~zero], g[~zero])
    # traj 2 fires m and moves to k (phi = (1.95 + 0 + 1) / 3); traj 3 moves to u (phi 0);
    # phi(t) = (1 + 0) / 2: traj 2's first action is repaired upward, traj 3's downward
    assert m[6] - g[6] > 0 > m[8] - g[8]
    assert md["zero_credit_ratio"] == 2 / 10
    assert md["kappa"] == pytest.approx(1 - 0.1 * 0.25)


def test_repair_singletons_and_gamma_phi():
    b = worked_example()
    rep, diag = get_estimator("mvpo", form="v1", repair_singletons=True)(b)
    assert diag["repaired_ratio"] == 1.0
    # every singleton step (A2, A3, B1-B3, C2, D2, D3) has D = 0, so only the scale changes:
    # the std is now taken over all 16 rows
    d16 = np.array(
        [0.38125, 0.25, 0, 0, -0.36875, 0, 0, 0, -1.36875, 0, 0, 0, 0.38125, -0.25, 0, 0]
    )
    np.testing.assert_allclose(rep, d16 / (np.std(d16) + EPS), atol=1e-15)
    # gamma_phi = .5: D = .5 * phi(next) - phi(here); truncated last step: (.5 - 1) * phi(last)
    est = MVPO(form="v1", gamma_phi=0.5)
    d = by_traj(b, potential_terms(b.canonical(), est.config, est.amp).d)
    np.testing.assert_allclose(d[A], [0.5 * 0.75 - 0.36875, 0.5 - 0.75, 0.5 - 1.0, -0.5])
    np.testing.assert_allclose(d[C], [-0.5 - 0.36875, 0.5, 0.5, 0.5])


def test_lambda_f_rewards_regions_after_which_progress_follows():
    b = worked_example()
    est = MVPO(form="v1", lambda_F=1.0)
    pot = potential_terms(b.canonical(), est.config, est.amp)
    # start: 4 visits, A and D still fire a milestone at/after t0 -> F = 2/4
    np.testing.assert_allclose(by_traj(b, pot.phi)[A][:2], [0.36875 + 0.5, 0.75 + 0.5])
    adv, _ = get_estimator("mvpo", form="v1", lambda_F=1.0)(b)
    assert adv[(b.traj == A) & (b.t == 0)][0] > 0


def test_terminated_episode_uses_terminal_value():
    # success at the end: terminal value p_T + c_succ * R, so the winning step is credited
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], anchors=["s", "a"], signatures=["s", "a"],
             milestones=[("m",), ()]),
        dict(group=0, rewards=[0, 1], anchors=["s", "a"], signatures=["s", "a"],
             milestones=[("m",), ()]),
    ])  # fmt: skip
    est = MVPO(form="v1")
    est.amp.add_names(["m"])
    pot = potential_terms(b.canonical(), est.config, est.amp)
    # v = p + g: t0 = 0 + (1 + .95 * 1) ; t1 = 1 + 1. phi(a) = 2 ; terminal = 1 + 1 = 2 -> D = 0
    np.testing.assert_allclose(pot.v, [1.95, 2.0, 1.95, 2.0])
    np.testing.assert_allclose(pot.d, [0.05, 0.0, 0.05, 0.0], atol=1e-12)


def test_kappa_schedules_and_ema_over_calls():
    won = StepBatch.from_trajectories([dict(group=0, rewards=[1]), dict(group=0, rewards=[0])])
    est = get_estimator("mvpo", form="v1", beta=0.5)
    e = 0.0
    for _ in range(3):
        _, diag = est(won)
        e = 0.5 * e + 0.5 * 0.5
        assert diag["ema_success"] == pytest.approx(e) and diag["kappa"] == pytest.approx(1 - e)
    _, d = get_estimator("mvpo", form="v1", kappa_schedule="constant", kappa_constant=0.3)(won)
    assert d["kappa"] == 0.3
    _, d = get_estimator("mvpo", form="v1", kappa_schedule="none")(won)
    assert d["kappa"] == 1.0
    _, d = get_estimator("mvpo", form="v1", kappa_min=0.99, beta=0.0)(won)
    assert d["kappa"] == 0.99


def test_kappa_scales_the_repair():
    b = worked_example()
    full, _ = get_estimator("mvpo", form="v1")(b)
    half, _ = get_estimator("mvpo", form="v1", kappa_schedule="constant", kappa_constant=0.5)(b)
    np.testing.assert_allclose(half, 0.5 * full)


def test_scope_batch_merges_signatures_across_groups():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 0], signatures=["s", "x"], anchors=["s", "a"]),
        dict(group=1, rewards=[0, 0], signatures=["s", "y"], anchors=["s", "b"]),
    ])  # fmt: skip
    _, dg = get_estimator("mvpo", form="v1")(b)
    _, db = get_estimator("mvpo", form="v1", scope="batch")(b)
    assert dg["num_regions"] == 4 and db["num_regions"] == 3


def test_state_round_trip_is_exact():
    b = worked_example()
    est = get_estimator("mvpo", form="v1")
    est(b)
    est(b)
    state = json.loads(json.dumps(est.state_dict()))
    clone = get_estimator("mvpo", form="v1")
    clone.load_state_dict(state)
    assert clone.state_dict() == est.state_dict()
    a1, d1 = est(b)
    a2, d2 = clone(b)
    np.testing.assert_array_equal(a1, a2)
    assert d1["amp_weights"] == d2["amp_weights"] and d1["iteration"] == d2["iteration"] == 3
    with pytest.raises(ValueError):
        clone.load_state_dict({"bogus": 1})


def test_milestone_vocabulary_growth_and_config():
    est = get_estimator("mvpo", form="v1", milestone_names=("a", "b"))
    assert est.amp.as_dict() == {"a": 0.5, "b": 0.5}
    b = StepBatch.from_trajectories([dict(group=0, rewards=[0], milestones=[("c",)])])
    _, diag = est(b)
    # "c" enters with the mean weight (.5), then renormalised: 1/3 each (before the update)
    assert diag["amp_weights_used"] == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})


def test_unknown_config_field_is_a_clear_type_error():
    with pytest.raises(TypeError, match="unknown config field.*kapa"):
        get_estimator("mvpo", form="v1", kapa_schedule="constant")
    with pytest.raises(ValueError, match="kappa_schedule"):
        get_estimator("mvpo", form="v1", kappa_schedule="cosine")
    with pytest.raises(ValueError, match="F_norm"):
        get_estimator("mvpo", form="v1", F_norm="max")


def test_worked_example_loop_and_scale_diagnostics():
    b = worked_example()
    _, diag = get_estimator("mvpo", form="v1")(b)
    # regions: C's {cab1, cab2} holds 3 visits of one trajectory -> L = 2; the 9 others L = 0
    assert diag["loop_mean"] == pytest.approx(2 / 10, abs=1e-15)
    assert diag["d_scale"] == pytest.approx(np.sqrt(2.306328125 / 8), abs=1e-12)  # std, no eps
    # every trajectory failed: phi_success_mean is NaN, phi_failure_mean the mean of the
    # trajectories' mean phi (A: .36875 .75 1 1 ; B: .36875 0 0 0 ; C: .36875 -1 -1 -1 ;
    # D: .36875 .75 .5 .5)
    assert np.isnan(diag["phi_success_mean"])
    traj_means = [3.11875 / 4, 0.36875 / 4, -2.63125 / 4, 2.11875 / 4]
    assert diag["phi_failure_mean"] == pytest.approx(np.mean(traj_means), abs=1e-12)


def test_terminal_value_counts_a_milestone_fired_on_the_winning_step():
    """``p_{i,T} = p_{i,T-1} + m_{i,T-1}``: a milestone on the last step is progress made."""
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], anchors=["s", "a"], signatures=["s", "a"],
             milestones=[(), ("m",)]),
        dict(group=0, rewards=[0, 1], anchors=["s", "a"], signatures=["s", "a"],
             milestones=[(), ("m",)]),
    ])  # fmt: skip
    est = MVPO(form="v1")
    est.amp.add_names(["m"])
    pot = potential_terms(b.canonical(), est.config, est.amp)
    # v: t0 = 0 + .95 * (1 + 1) ; t1 = 0 + (1 + 1). Terminal = 0 + 1 + 1 = 2 -> D = .1, 0
    np.testing.assert_allclose(pot.v, [1.9, 2.0, 1.9, 2.0], rtol=1e-12)
    np.testing.assert_allclose(pot.d, [0.1, 0.0, 0.1, 0.0], atol=1e-12)


def test_repair_singletons_leaves_informative_groups_alone():
    """With ``repair_singletons`` only |S| = 1 joins the routed rows; |S| = 2 with varying
    returns keeps GiGPO's A^S."""
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], anchors=["s", "x"], milestones=[("m",), ()]),
        dict(group=0, rewards=[0, 0], anchors=["s", "y"]),
    ])  # fmt: skip
    g, _ = get_estimator("gigpo")(b)
    m, diag = get_estimator("mvpo", form="v1", repair_singletons=True)(b)
    # s = {traj 0 t0, traj 1 t0} informative; x and y singletons (routed)
    assert diag["repaired_ratio"] == 2 / 4
    np.testing.assert_array_equal(m[[0, 2]], g[[0, 2]])


def test_constant_kappa_default_and_no_routed_rows():
    b = worked_example()
    _, diag = get_estimator("mvpo", form="v1", kappa_schedule="constant")(b)
    assert diag["kappa"] == 1.0  # kappa_constant defaults to 1
    _, diag = get_estimator("mvpo", form="v1", kappa_schedule="constant", kappa_constant=0.25)(b)
    assert diag["kappa"] == 0.25
    informative = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], anchors=["s", "x"]),
        dict(group=0, rewards=[0, 0], anchors=["s", "y"]),
    ])  # fmt: skip
    _, diag = get_estimator("mvpo", form="v1")(informative)
    assert diag["repaired_ratio"] == 0.0 and diag["d_scale"] == 0.0
