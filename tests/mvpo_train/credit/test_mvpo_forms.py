"""MVPO's forms (docs/estimators.md §3.8): v1 reproduces the recorded outputs, the MVPO paper's reading
by hand, the options one by one, the per-row repair and the non-circular statistic (§3.7)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mvpo_envs.data_files import load_json
from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.credit.mvpo import FORMS, MVPO, MVPOConfig, potential_terms
from mvpo_train.credit.potential import (
    AMPWeights,
    loop_rows,
    seen_before,
    spearman,
    split_half_mean,
)

from .worked_example import by_traj, worked_potential

REFERENCE = Path(__file__).with_name("mvpo_v1_reference.json")
OPTIONS = {
    "value": ("progress", "shaping"),
    "loop_stat": ("dwell", "revisit"),
    "potential_norm": ("none", "scale", "zscore"),
    "d_scale": ("routed_std", "none"),
    "amp_score": ("success", "progress"),
}


def same(a: object, b: object) -> bool:
    return (isinstance(a, float) and math.isnan(a) and math.isnan(b)) or a == b


# ------------------------------------------------------------------ v1 = the old implementation


def test_v1_reproduces_the_recorded_outputs_bit_for_bit():
    """The fixture holds three consecutive calls recorded before the forms existed."""
    ref = load_json(REFERENCE, "MVPO v1 reference")
    est = get_estimator("mvpo", form="v1")
    for call in ref["calls"]:
        adv, diag = est(StepBatch(**call["steps"]))
        np.testing.assert_array_equal(adv, np.asarray(call["advantages"]))
        for key, value in call["diag"].items():
            assert same(value, diag[key]), key
    state = est.state_dict()
    assert state.pop("form") == "v1"  # recorded since the default changed (§3.10)
    assert state == ref["state"]
    # the default is now the paper form, which gives other advantages on the same calls
    default = get_estimator("mvpo")
    assert default.config.form == "paper"
    adv, _ = default(StepBatch(**ref["calls"][0]["steps"]))
    assert not np.array_equal(adv, np.asarray(ref["calls"][0]["advantages"]))


def test_form_fills_the_fields_left_unset_and_explicit_fields_win():
    v1, paper = MVPOConfig(form="v1"), MVPOConfig()  # the default is the paper form (§3.10)
    assert (v1.value, v1.loop_stat, v1.potential_norm, v1.d_scale, v1.amp_score) == (
        "progress", "dwell", "none", "routed_std", "success"
    )  # fmt: skip
    assert (v1.lambda_L, v1.lambda_F, v1.gamma_phi, v1.gamma_m) == (0.5, 0.0, 1.0, None)
    assert (paper.value, paper.loop_stat, paper.potential_norm, paper.d_scale) == (
        "shaping", "revisit", "scale", "none"
    )  # fmt: skip
    assert (paper.amp_score, paper.lambda_L, paper.lambda_F) == ("progress", 0.1, 0.2)
    assert (paper.gamma_m, paper.gamma_phi) == (1.0, 1.0)
    mixed = MVPOConfig(form="paper", loop_stat="dwell", lambda_L=0.0)
    assert (mixed.loop_stat, mixed.lambda_L, mixed.value) == ("dwell", 0.0, "shaping")
    assert set(FORMS) == {"v1", "paper"}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"form": "article"}, "form"),
        ({"value": "both"}, "value"),
        ({"loop_stat": "cycles"}, "loop_stat"),
        ({"potential_norm": "minmax"}, "potential_norm"),
        ({"d_scale": "mad"}, "d_scale"),
        ({"amp_score": "lift"}, "amp_score"),
        ({"lambda_L": -0.5}, "lambda_L"),
        ({"lambda_F": float("nan")}, "lambda_F"),
        ({"c_succ": float("inf")}, "c_succ"),
        ({"w_min": 1.5}, "w_min"),
        ({"kappa_min": -0.1}, "kappa_min"),
        ({"kappa_constant": 2.0}, "kappa_constant"),
        ({"gamma_phi": 1.5}, "gamma_phi"),
    ],
)
def test_bad_option_values_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        get_estimator("mvpo", **kwargs)


# ------------------------------------------------------------------ the MVPO paper's reading by hand


def test_paper_form_on_the_worked_example_by_hand():
    b, pot = worked_potential(form="paper")
    # u = m + lambda_F * [milestone] - lambda_L * [next row is a revisit]; gamma_m = 1
    u = by_traj(b, pot.u)
    np.testing.assert_allclose(u[0], [0.7, 0.7, 0, 0])
    np.testing.assert_allclose(u[2], [0, 0, -0.1, 0])  # cab2 -> cab1 returns to cab1
    np.testing.assert_allclose(by_traj(b, pot.v)[0], [1.4, 0.7, 0, 0])  # U = return-to-go of u
    # phi = mean U over visits: start (1.4 + 0 - .1 + .7) / 4 = .5 ; ct1|apple (.7 + 0) / 2
    # C's loop region {cab1, cab2}: (-.1 - .1 + 0) / 3
    phi = by_traj(b, pot.phi)
    loop = -0.2 / 3
    np.testing.assert_allclose(phi[0], [0.5, 0.35, 0, 0])
    np.testing.assert_allclose(phi[2], [0.5, loop, loop, loop])
    rows = [0.5, 0.35, 0, 0, 0.5, 0, 0, 0, 0.5, loop, loop, loop, 0.5, 0.35, 0, 0]
    s = float(np.std(rows))
    assert pot.phi_scale == pytest.approx(s, rel=1e-12)
    # D = (u + phi(next) - phi(here)) / s ; truncated last step: next = its own region
    d = by_traj(b, pot.d)
    np.testing.assert_allclose(d[0], np.array([0.7 + 0.35 - 0.5, 0.7 - 0.35, 0, 0]) / s)
    np.testing.assert_allclose(d[1], np.array([-0.5, 0, 0, 0]) / s, atol=1e-15)
    np.testing.assert_allclose(d[2], np.array([loop - 0.5, 0, -0.1, 0]) / s, atol=1e-15)
    np.testing.assert_allclose(d[3], np.array([0.7 + 0.35 - 0.5, -0.35, 0, 0]) / s)
    # the estimator: A^Phi = D unscaled (d_scale "none"), kappa 1; routed rows only
    adv, diag = get_estimator("mvpo", form="paper")(b)
    a = by_traj(b, adv)
    np.testing.assert_allclose(a[2], np.array([loop - 0.5, 0, 0, 0]) / s)  # C2 is a singleton
    assert a[0][0] > 0 and a[3][0] > 0 and a[2][0] < a[1][0] < 0 and a[0][1] > 0 > a[3][1]
    assert diag["d_scale"] == 1.0 and diag["phi_scale"] == pytest.approx(s, rel=1e-12)


def progress_and_loops() -> StepBatch:
    """All failed: P progresses (seen, inhand), W sees and wanders, L1 and L2 loop between two
    cabinets twice (their anchors repeat, so every loop step sits in a zero-credit group)."""
    loop = dict(group=0, rewards=[0] * 5,
                anchors=["start", "cabinet 1", "cabinet 2", "cabinet 1", "cabinet 2"],
                signatures=["start", "cab1", "cab2", "cab1", "cab2"])  # fmt: skip
    return StepBatch.from_trajectories([
        dict(group=0, rewards=[0] * 5,
             anchors=["start", "ct apple", "ct holding", "fridge", "fridge open"],
             signatures=["start", "ct|apple", "ct|inhand", "fridge|inhand", "fridge|open"],
             milestones=[("seen",), ("inhand",), (), (), ()]),
        dict(group=0, rewards=[0] * 5,
             anchors=["start", "ct apple", "drawer 1", "drawer 2", "drawer 3"],
             signatures=["start", "ct|apple", "drawer1", "drawer2", "drawer3"],
             milestones=[("seen",), (), (), (), ()]),
        loop, dict(loop),
    ])  # fmt: skip


def test_paper_repair_is_positive_on_progress_and_negative_on_loops():
    b = progress_and_loops()
    est = get_estimator("mvpo", form="paper")
    est(b)
    r = by_traj(b, est.last_repair)
    routed = by_traj(b, est.last_routed)
    assert routed[2][:4].all() and routed[3][:4].all()
    assert r[0][0] > 0 and r[1][0] > 0  # toward the milestones
    assert r[0][1] > 0 > r[1][1]  # at the shared state: progress vs wandering
    for k in (2, 3):
        assert r[k][0] < 0  # into the loop
        assert r[k][2] < 0 and r[k][3] < 0  # cab2 -> cab1 and cab1 -> cab2: back where it was
        assert r[k][1] == 0.0  # cab1 -> cab2 the first time is not a return
    # v1 on the same batch: the loop steps lie inside one merged region, so they get nothing
    v1 = get_estimator("mvpo", form="v1")
    v1(b)
    assert np.all(by_traj(b, v1.last_repair)[2][1:] == 0.0)


def test_loop_rows_count_returns_not_dwelling():
    sig = np.array([0, 0, 1, 0, 0, 2, 2])  # a a b a a | c c (second trajectory)
    traj = np.array([0, 0, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(seen_before(sig, traj), [0, 1, 0, 1, 1, 0, 1])
    np.testing.assert_array_equal(loop_rows("revisit", sig, sig, traj), [0, 0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(loop_rows("dwell", sig, sig, traj), [0, 1, 0, 1, 1, 0, 1])
    with pytest.raises(ValueError, match="mode"):
        loop_rows("cycles", sig, sig, traj)


def test_revisit_loop_statistic_in_the_v1_value():
    """``value="progress"`` with revisits: L = returns / distinct trajectories."""
    b, pot = worked_potential(form="v1", loop_stat="revisit")
    # C returns to cab1 once: L({cab1, cab2}) = 1 (dwell counting gave 2), phi = 0 - .5 * 1
    np.testing.assert_allclose(by_traj(b, pot.phi)[2], [0.36875, -0.5, -0.5, -0.5])


def test_frequency_term_does_not_fall_at_the_step_that_makes_progress():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0] * 3, anchors=["s", "a", "b"], signatures=["s", "a", "b"],
             milestones=[("m",), (), ()]),
        dict(group=0, rewards=[0] * 3, anchors=["s", "c", "d"], signatures=["s", "c", "d"]),
    ])  # fmt: skip

    def d_at_progress(**kw: object) -> float:
        est = MVPO(potential_norm="none", **kw)
        est.amp.add_names(["m"])
        return float(potential_terms(b.canonical(), est.config, est.amp).d[0])

    # shaping: u0 = 1 + lambda_F, U = (1 + lambda_F, 0, 0), phi(s) = (1 + lambda_F) / 2
    # -> D0 = (1 + lambda_F) / 2: the F term adds lambda_F / 2 at the progressing step
    base = d_at_progress(form="paper", lambda_F=0.0)
    assert base == pytest.approx(0.5)
    assert d_at_progress(form="paper", lambda_F=1.0) - base == pytest.approx(0.5)
    # v1's F (share of visits with progress at or after): 1/2 at s, 0 at a -> falls by 1/2
    v1 = d_at_progress(form="v1", lambda_F=0.0)
    assert d_at_progress(form="v1", lambda_F=1.0) - v1 == pytest.approx(-0.5)


def test_potential_norm_options_by_hand():
    def pot(**kw: object):
        return worked_potential(form="paper", **kw)[1]

    raw = pot(potential_norm="none", gamma_phi=0.5)
    s, mu = float(raw.phi.std()), float(raw.phi.mean())
    assert raw.phi_scale == 1.0
    np.testing.assert_allclose(pot(potential_norm="scale", gamma_phi=0.5).d, raw.d / s)
    # z-scored potentials: u / s + g * z' - z = (D + (1 - g) * mu) / s, the terminal z = -mu / s
    np.testing.assert_allclose(
        pot(potential_norm="zscore", gamma_phi=0.5).d, (raw.d + 0.5 * mu) / s, atol=1e-15
    )
    # undiscounted, the mean cancels: zscore == scale
    np.testing.assert_allclose(pot(potential_norm="zscore").d, pot(potential_norm="scale").d)


def test_shaping_terminal_state_is_worth_nothing_and_the_win_is_the_reward():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], anchors=["s", "a"], signatures=["s", "a"]),
        dict(group=0, rewards=[0, 0], anchors=["s", "b"], signatures=["s", "b"]),
    ])  # fmt: skip
    est = MVPO(form="paper", potential_norm="none")
    pot = potential_terms(b.canonical(), est.config, est.amp)
    # u = (0, 1) and (0, 0); U = (1, 1), (0, 0); phi(s) = .5
    np.testing.assert_allclose(pot.phi, [0.5, 1.0, 0.5, 0.0])
    # won (terminated): D1 = 1 + 0 - 1 = 0 ; D0 = 0 + 1 - .5 ; failed (truncated) D0 = -.5
    np.testing.assert_allclose(pot.d, [0.5, 0.0, -0.5, 0.0])


# ------------------------------------------------------------------ AMP on future progress


def test_amp_progress_score_counts_later_milestones_and_success():
    # traj 0: seen t0, inhand t1, fails ; traj 1: seen t0, fails ; traj 2: seen t0, wins
    amp = AMPWeights(eta=0.5, w_min=0.0, names=["seen", "inhand"], weights=np.array([0.5, 0.5]))
    hit_traj, hit_name, hit_t = (
        np.array([0, 0, 1, 2]),
        np.array([0, 1, 0, 0]),
        np.array([0, 1, 0, 0]),
    )
    success = np.array([False, False, True])
    s = amp.scores(hit_traj, hit_name, hit_t, success, mode="progress")
    np.testing.assert_allclose(s, [2 / 3, 0.0])  # seen: inhand later (0), success (2)
    old = amp.scores(hit_traj, hit_name, hit_t, success)  # v1: P(success | k) - P(success)
    np.testing.assert_allclose(old, [0.0, -1 / 3])
    amp.update(hit_traj, hit_name, hit_t, success, mode="progress")
    np.testing.assert_allclose(amp.weights, [0.5 * 0.5 + 0.5 * 1.0, 0.5 * 0.5])
    with pytest.raises(ValueError, match="mode"):
        amp.scores(hit_traj, hit_name, hit_t, success, mode="lift")


# ------------------------------------------------------------------ kappa relative to its start


def test_relative_kappa_starts_at_one_and_round_trips():
    def batch(wins: int) -> StepBatch:
        return StepBatch.from_trajectories(
            [dict(group=0, rewards=[1 if k < wins else 0]) for k in range(4)]
        )

    est = get_estimator("mvpo", kappa_schedule="relative", beta=0.0)
    kappas = [est(batch(w))[1]["kappa"] for w in (2, 4, 3)]
    # e_start = .5; EMA (beta 0) = batch success; kappa = 1 - (e - .5) / .5
    np.testing.assert_allclose(kappas, [1.0, 0.0, 0.5])
    state = json.loads(json.dumps(est.state_dict()))
    assert state["success_start"] == 0.5
    clone = get_estimator("mvpo", kappa_schedule="relative", beta=0.0)
    clone.load_state_dict(state)
    assert clone(batch(3))[1]["kappa"] == est(batch(3))[1]["kappa"] == 0.5
    assert "success_start" not in get_estimator("mvpo").state_dict()  # no extra key otherwise


# ------------------------------------------------------------------ invariants, every option


def all_option_sets():
    for combo in itertools.product(*OPTIONS.values()):
        yield dict(zip(OPTIONS, combo, strict=True))


def test_equals_gigpo_without_zero_credit_groups_for_every_option():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], anchors=["s", "x"], signatures=["s", "x"],
             milestones=[("m",), ()]),
        dict(group=0, rewards=[0, 0, 0], anchors=["s", "y", "x"], signatures=["s", "y", "s"]),
        dict(group=0, rewards=[0, 0.5], anchors=["s", "z"], milestones=[(), ("m",)]),
    ])  # fmt: skip
    g, gd = get_estimator("gigpo")(b)
    assert gd["zero_credit_ratio"] == 0.0
    for form in FORMS:
        for opts in all_option_sets():
            est = get_estimator("mvpo", form=form, **opts)
            m, _ = est(b)
            np.testing.assert_array_equal(m, g, err_msg=str(opts))
            assert not est.last_routed.any() and np.all(est.last_repair == 0.0)


def test_last_repair_is_the_routed_difference_from_gigpo_in_caller_order():
    b = progress_and_loops()
    b = b.take(np.random.default_rng(0).permutation(len(b)))
    g, _ = get_estimator("gigpo")(b)
    for opts in all_option_sets():
        est = get_estimator("mvpo", form="paper", omega=0.5, **opts)
        adv, diag = est(b)
        assert est.last_repair.shape == est.last_routed.shape == (len(b),)
        np.testing.assert_allclose(adv - g, 0.5 * est.last_repair, atol=1e-15)
        assert np.all(est.last_repair[~est.last_routed] == 0.0)
        assert est.last_routed.mean() == diag["repaired_ratio"]


# ------------------------------------------------------------------ the non-circular statistic


def test_spearman_and_split_half_mean_by_hand():
    assert spearman(np.array([1.0, 2, 3]), np.array([1.0, 3, 2])) == pytest.approx(0.5)
    assert math.isnan(spearman(np.array([1.0, 1, 1]), np.array([1.0, 2, 3])))
    assert math.isnan(spearman(np.array([1.0, 2]), np.array([1.0, 2])))
    x, y = np.array([1.0, 1, 2, 3, 3, 0]), np.array([5.0, 2, 2, 7, 1, 0])
    stats = pytest.importorskip("scipy.stats")
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, rel=1e-12)
    region = np.array([0, 0, 0, 1, 1])
    fold = np.array([0, 1, 1, 0, 0])
    est = split_half_mean(region, fold, np.array([1.0, 2, 4, 5, 6]))
    np.testing.assert_allclose(est[:3], [3.0, 1.0, 1.0])
    assert np.isnan(est[3:]).all()  # region 1 has no visit in fold 1
    # a row's estimate never moves with its own half's values
    moved = split_half_mean(region, fold, np.array([100.0, 2, 4, 5, 6]))
    assert moved[0] == est[0]


def test_non_circular_statistic_by_hand_and_free_of_the_outcome():
    good = dict(
        group=0,
        rewards=[0] * 4,
        anchors=["s", "a", "b", "c"],
        signatures=["s", "a", "b", "c"],
        milestones=[("m1",), ("m2",), (), ()],
    )
    bad = dict(group=0, rewards=[0] * 4, anchors=["s", "x", "y", "z"],
               signatures=["s", "x", "y", "z"])  # fmt: skip
    b = StepBatch.from_trajectories([good, dict(good), bad, dict(bad)])
    _, diag = get_estimator("mvpo", form="paper")(b)
    # halves by position in the group: (good, bad) and (good, bad). U of good = 1.4, .7, 0, 0;
    # the other half's mean at s = (1.4 + 0) / 2 for everyone; a, b, c: the other good's U
    est = [0.7, 0.7, 0, 0] * 2 + [0.7, 0, 0, 0] * 2
    future = [2, 1, 0, 0] * 2 + [0, 0, 0, 0] * 2  # milestones from this step on
    expect = spearman(np.array(est, float), np.array(future, float))
    assert diag["phi_split_spearman_failed"] == pytest.approx(expect, rel=1e-12) and expect > 0
    assert diag["phi_split_rows"] == 16
    # a successful trajectory's rows are left out: only the failed ones are scored
    won = dict(good, rewards=[0, 0, 0, 1], end="terminated")
    _, diag = get_estimator("mvpo", form="paper")(
        StepBatch.from_trajectories([won, dict(good), bad, dict(bad)])
    )
    assert diag["phi_split_rows"] == 12


def test_paper_form_is_invariant_to_the_row_order():
    b = progress_and_loops()
    perm = np.random.default_rng(1).permutation(len(b))
    a, da = get_estimator("mvpo", form="paper")(b)
    est = get_estimator("mvpo", form="paper")
    p, dp = est(b.take(perm))
    np.testing.assert_array_equal(p, a[perm])
    assert all(same(da[k], dp[k]) for k in da if not isinstance(da[k], dict))
    ref = get_estimator("mvpo", form="paper")
    ref(b)
    np.testing.assert_array_equal(est.last_repair, ref.last_repair[perm])


def test_helpers_on_edge_cases():
    from mvpo_train.credit.potential import _average_ranks

    # codes of one trajectory never collide with another's (keys are one-to-one)
    np.testing.assert_array_equal(seen_before(np.array([2, 1, 1]), np.array([0, 1, 1])), [0, 0, 1])
    np.testing.assert_array_equal(seen_before(np.array([2, 0, 0]), np.array([0, 1, 1])), [0, 0, 1])
    np.testing.assert_array_equal(_average_ranks(np.array([3.0, 1, 1, 2])), [4, 1.5, 1.5, 3])
    assert np.isnan(split_half_mean(np.array([0]), np.array([0]), np.array([1.0]))).all()
    assert split_half_mean(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)).size == 0
    est = MVPO()
    assert est.last_repair.shape == est.last_routed.shape == (0,)
    adv, _ = est(StepBatch.from_trajectories([]))
    assert adv.size == 0 and est.last_repair.size == 0


def test_an_empty_state_loads_as_a_fresh_estimator():
    est = get_estimator("mvpo", form="paper")
    est(progress_and_loops())
    est.load_state_dict({})
    fresh = get_estimator("mvpo", form="paper")
    assert est.state_dict() == fresh.state_dict()
    assert est.ema_success == 0.0 and est.iteration == 0 and est.success_start is None


def test_form_seeds_is_read_as_paper_and_an_old_state_resumes_bit_for_bit():
    """Runs saved before the rename have ``form: seeds`` in their config and in the saved
    estimator state: they build the paper form and continue exactly as an uninterrupted run."""
    assert MVPOConfig(form="seeds") == MVPOConfig(form="paper") == MVPOConfig()
    b = progress_and_loops()
    perm = np.random.default_rng(3).permutation(len(b))
    batches = [b, b.take(perm), b]
    ref = get_estimator("mvpo", form="paper")
    expected = [ref(x)[0] for x in batches]
    old = get_estimator("mvpo", form="seeds")  # an old run's estimator_kwargs
    np.testing.assert_array_equal(old(batches[0])[0], expected[0])
    state = json.loads(json.dumps(old.state_dict()))
    state["form"] = "seeds"  # what the code before the rename saved
    resumed = get_estimator("mvpo", form="seeds")
    resumed.load_state_dict(state)
    for x, want in zip(batches[1:], expected[1:], strict=True):
        np.testing.assert_array_equal(resumed(x)[0], want)
    with pytest.raises(ValueError, match="saved with form 'seeds'"):
        get_estimator("mvpo", form="v1").load_state_dict(state)


def test_a_run_saved_with_form_seeds_passes_the_resume_check():
    """``--resume`` compares the saved config with today's (mvpo_train.config.changed_fields):
    a run of the default MVPO saved before the rename (state ``form: seeds``) and one that named
    ``form: seeds`` resume; another form is still refused."""
    from mvpo_train.config import TrainConfig, changed_fields

    default = TrainConfig(estimator="mvpo")
    saved = default.to_dict()
    assert changed_fields(saved, default, {"form": "seeds"}) == {}
    named = TrainConfig(estimator="mvpo", estimator_kwargs={"form": "seeds"})
    assert changed_fields(named.to_dict(), named, {"form": "seeds"}) == {}
    assert changed_fields(named.to_dict(), default, {"form": "seeds"}) == {}
    assert "estimator_kwargs" in changed_fields(saved, default, {"form": "v1"})
