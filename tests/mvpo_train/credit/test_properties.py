"""Property tests for every estimator (docs/estimators.md §5), with hypothesis."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mvpo_train.batch import StepBatch
from mvpo_train.credit import available_estimators, get_estimator
from mvpo_train.credit.mvpo import MVPO, potential_terms

BUILTINS = ["beacon", "ecpo", "gigpo", "grpo", "mvpo", "progpo", "reinforce", "rloo"]
FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOKENS = ["a", "b", "c", "d", "e"]
MILESTONES = [(), (), (), ("m1",), ("m2",), ("m1", "m3")]
SPARSE_RETURNS = st.sampled_from([0.0, 0.0, 0.5, 1.0])


@st.composite
def trajectories(draw, returns=SPARSE_RETURNS, max_groups=3):
    """Small random batches: shared anchors and signatures, sparse milestones."""
    trajs = []
    for g in range(draw(st.integers(1, max_groups))):
        for _ in range(draw(st.integers(1, 4))):
            n = draw(st.integers(1, 6))
            r = draw(returns)
            trajs.append(dict(
                group=g,
                rewards=[0.0] * (n - 1) + [r],
                anchors=draw(st.lists(st.sampled_from(TOKENS), min_size=n, max_size=n)),
                signatures=draw(st.lists(st.sampled_from(TOKENS), min_size=n, max_size=n)),
                actions=draw(st.lists(st.sampled_from(["x", "y"]), min_size=n, max_size=n)),
                milestones=draw(st.lists(st.sampled_from(MILESTONES), min_size=n, max_size=n)),
                end="terminated" if r > 0 else draw(st.sampled_from(["terminated", "truncated"])),
            ))  # fmt: skip
    return trajs


def same_diag(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, float) and math.isnan(x):
            if not (isinstance(y, float) and math.isnan(y)):
                return False
        elif x != y:
            return False
    return True


def test_builtins_listed():
    assert set(BUILTINS) <= set(available_estimators())


@FAST
@given(trajectories(returns=st.just(0.0)))
def test_grpo_and_gigpo_are_exactly_zero_on_all_failed_groups(trajs):
    b = StepBatch.from_trajectories(trajs)
    for name in ("grpo", "gigpo", "rloo", "ecpo"):
        adv, diag = get_estimator(name)(b)
        assert np.all(adv == 0.0), name
        assert diag["zero_adv_ratio"] == 1.0


def reference_gigpo(b: StepBatch, gamma: float, omega: float, f_norm: str, eps: float = 1e-6):
    """GiGPO written from docs/estimators.md §1-§2 with plain loops, sharing no code with the
    estimators: ``(advantage, zero_credit)`` per row. MVPO's guarantee is checked against it, so
    MVPO == GiGPO does not hold merely because both call the same function."""
    rows = range(len(b))
    trajs = sorted(set(b.traj.tolist()))
    steps = {i: sorted((int(b.t[k]), k) for k in rows if b.traj[k] == i) for i in trajs}
    ret = {i: sum(float(b.reward[k]) for _, k in steps[i]) for i in trajs}
    group_of = {i: b.group[steps[i][0][1]] for i in trajs}
    G = {}
    for i in trajs:
        acc = 0.0
        for _, k in reversed(steps[i]):
            acc = float(b.reward[k]) + gamma * acc
            G[k] = acc

    def normalise(values: list[float]) -> tuple[list[float], bool]:
        if len(values) < 2:
            return [0.0] * len(values), False
        if max(values) - min(values) <= eps:
            return [0.0] * len(values), True
        mean = sum(values) / len(values)
        scale = 1.0
        if f_norm == "std":
            scale = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) + eps
        return [(v - mean) / scale for v in values], False

    a_e = {}
    for g in set(group_of.values()):
        members = [i for i in trajs if group_of[i] == g]
        for i, a in zip(members, normalise([ret[i] for i in members])[0], strict=True):
            a_e[i] = a
    a_s, zero = np.zeros(len(b)), np.zeros(len(b), dtype=bool)
    for key in {(b.group[k], b.anchor[k]) for k in rows}:
        members = [k for k in rows if (b.group[k], b.anchor[k]) == key]
        values, flat = normalise([G[k] for k in members])
        a_s[members], zero[members] = values, flat
    adv = np.array([a_e[b.traj[k]] for k in rows]) + omega * a_s
    return adv, zero


@FAST
@given(
    trajectories(),
    st.sampled_from(["std", "1"]),
    st.sampled_from([0.5, 0.95, 1.0]),
    st.sampled_from([0.5, 1.0]),
)
def test_gigpo_matches_a_loop_reference(trajs, f_norm, gamma, omega):
    b = StepBatch.from_trajectories(trajs)
    ref, zero = reference_gigpo(b, gamma, omega, f_norm)
    adv, diag = get_estimator("gigpo", F_norm=f_norm, gamma=gamma, omega=omega)(b)
    np.testing.assert_allclose(adv, ref, rtol=1e-9, atol=1e-12)
    assert diag["zero_credit_ratio"] == pytest.approx(zero.mean())


@FAST
@given(trajectories(), st.sampled_from(["std", "1"]), st.sampled_from([0.5, 1.0]))
def test_mvpo_changes_gigpo_only_in_zero_credit_step_groups(trajs, f_norm, omega):
    """Rows outside zero-credit step groups get the reference GiGPO value; inside them MVPO's
    repair is ``A^E + omega * kappa * A^Phi`` where GiGPO has only ``A^E``."""
    b = StepBatch.from_trajectories(trajs)
    ref, zero = reference_gigpo(b, 0.95, omega, f_norm)
    m, diag = get_estimator("mvpo", F_norm=f_norm, omega=omega)(b)
    g, _ = get_estimator("gigpo", F_norm=f_norm, omega=omega)(b)
    np.testing.assert_allclose(m[~zero], ref[~zero], rtol=1e-9, atol=1e-12)
    assert np.array_equal(m[~zero], g[~zero])
    assert diag["repaired_ratio"] == pytest.approx(zero.mean())
    np.testing.assert_allclose(g[zero], ref[zero], rtol=1e-9, atol=1e-12)  # A^E alone


@FAST
@given(trajectories(returns=st.floats(0.05, 1.0)), st.sampled_from(["std", "1"]))
def test_mvpo_equals_gigpo_without_zero_credit_step_groups(trajs, f_norm):
    b = StepBatch.from_trajectories(trajs)
    ref, zero = reference_gigpo(b, 0.95, 1.0, f_norm)
    assume(not zero.any())
    m, _ = get_estimator("mvpo", F_norm=f_norm)(b)
    g, _ = get_estimator("gigpo", F_norm=f_norm)(b)
    assert np.array_equal(m, g)
    np.testing.assert_allclose(m, ref, rtol=1e-9, atol=1e-12)


def test_mvpo_repairs_a_zero_credit_step_group_that_gigpo_leaves_at_zero():
    """The contrapositive by hand: all fail, B loops (the shared start is zero-credit)."""
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 0], anchors=["s", "p"], signatures=["s", "p"],
             milestones=[("seen",), ()], end="truncated"),
        dict(group=0, rewards=[0, 0, 0], anchors=["s", "c", "c"], signatures=["s", "c", "c"],
             end="truncated"),
    ])  # fmt: skip
    ref, zero = reference_gigpo(b, 0.95, 1.0, "std")
    assert zero.tolist() == [True, False, True, True, True]  # B's two "c" rows too
    m, _ = get_estimator("mvpo")(b)
    g, _ = get_estimator("gigpo")(b)
    assert np.all(g == 0.0) and np.array_equal(g, ref)
    assert m[0] > 0 > m[2]  # A's first action leads to a milestone, B's into a loop


@FAST
@given(
    n_prog=st.integers(1, 3),
    n_loop=st.integers(1, 3),
    n_ms=st.integers(1, 3),
    period=st.integers(2, 3),
    horizon=st.integers(6, 9),
)
def test_mvpo_credits_progress_and_blames_loops_in_all_failed_groups(
    n_prog, n_loop, n_ms, period, horizon
):
    """All fail. Progressing rollouts fire n_ms milestones along a shared path; looping ones
    cycle through `period` cabinets. Every rollout starts at the shared anchor (zero-credit)."""
    trajs = []
    for _ in range(n_prog):
        sigs = ["start"] + [f"p{t}" for t in range(1, horizon)]
        ms = [(f"m{t}",) if t < n_ms else () for t in range(horizon)]
        trajs.append(dict(group=0, rewards=[0.0] * horizon, anchors=sigs, signatures=sigs,
                          milestones=ms, end="truncated"))  # fmt: skip
    for _ in range(n_loop):
        sigs = ["start"] + [f"cab{(t - 1) % period}" for t in range(1, horizon)]
        trajs.append(dict(group=0, rewards=[0.0] * horizon, anchors=sigs, signatures=sigs,
                          end="truncated"))  # fmt: skip
    b = StepBatch.from_trajectories(trajs)
    loop_rows = (b.traj >= n_prog) & (b.t >= 1)
    for form in ("v1", "paper"):
        est = get_estimator("mvpo", form=form)
        adv, diag = est(b)
        first = adv[b.t == 0]
        assert np.all(first[:n_prog] > 0) and np.all(first[n_prog:] < 0), form
        # later progressing steps are never blamed: along one shared path D = (1 - gamma_m) g
        # (v1) or exactly 0 (paper: u_t + U_{t+1} - U_t)
        assert np.all(adv[(b.traj < n_prog) & (b.t >= 1)] >= 0), form
        if form == "v1":  # steps inside the merged loop region (region to itself) get 0
            assert np.all(adv[loop_rows] == 0.0)
        else:  # inside it only the steps that lead back to a cabinet left before pay
            # (lambda_L): from t = period on, but not the last step (it leads to no row)
            # where the step's anchor group is repaired (a singleton stays neutral, §3.6)
            back = loop_rows & (b.t >= period) & (b.t <= horizon - 2)
            routed = np.asarray(est.last_routed, dtype=bool)
            assert np.all(adv[back & routed] < 0) and np.all(adv[loop_rows & ~back] == 0.0)
            assert np.all(adv[back & ~routed] == 0.0)
    assert diag["zero_adv_ratio"] < 1.0


@FAST
@given(trajectories(), st.sampled_from(BUILTINS), st.randoms(use_true_random=False))
def test_row_permutation_permutes_the_output(trajs, name, rnd):
    b = StepBatch.from_trajectories(trajs)
    perm = list(range(len(b)))
    rnd.shuffle(perm)
    perm = np.array(perm)
    extras = {"row": np.arange(len(b))}
    b = StepBatch(**{f: getattr(b, f) for f in _FIELDS}, extras=extras)
    adv, diag = get_estimator(name)(b)
    adv_p, diag_p = get_estimator(name)(b.take(perm))
    assert np.array_equal(adv_p, adv[perm]), name
    assert same_diag(diag, diag_p), name


_FIELDS = ("group", "traj", "t", "reward", "terminated", "truncated", "anchor", "signature",
           "milestones", "action", "success")  # fmt: skip


@FAST
@given(st.lists(st.integers(0, 4), min_size=1, max_size=6), st.floats(0.0, 0.95))
def test_kappa_follows_one_minus_ema_success(wins_per_call, beta):
    est = get_estimator("mvpo", beta=beta)
    e = 0.0
    for wins in wins_per_call:
        trajs = [dict(group=0, rewards=[1.0 if k < wins else 0.0]) for k in range(4)]
        _, diag = est(StepBatch.from_trajectories(trajs))
        e = beta * e + (1 - beta) * wins / 4
        assert diag["ema_success"] == pytest.approx(e, abs=1e-12)
        assert diag["kappa"] == pytest.approx(1 - e, abs=1e-12)
    assert est.state_dict()["iteration"] == len(wins_per_call)


CORRUPTIONS = {
    "nan reward": (lambda s: s[0].update(reward=float("nan")), "reward"),
    "gap in t": (lambda s: s[0].update(t=s[0]["t"] + 100), "'t'"),
    "no end flag": (
        lambda s: [x.update(terminated=False, truncated=False) for x in s],
        "terminated",
    ),
    "early end": (lambda s: s[0].update(terminated=True), "terminated"),
    "two groups": (lambda s: s[0].update(group=99), "group"),
    "missing field": (lambda s: s[0].pop("signature"), "signature"),
    "bad milestones": (lambda s: s[0].update(milestones=5), "milestones"),
}


@FAST
@given(trajectories(), st.sampled_from(sorted(CORRUPTIONS)))
def test_bad_batches_raise_clear_errors(trajs, kind):
    steps = _steps(StepBatch.from_trajectories(trajs))
    mutate, field = CORRUPTIONS[kind]
    if kind in ("early end", "two groups", "gap in t"):
        assume(sum(1 for s in steps if s["traj"] == steps[0]["traj"]) >= 2)
    mutate(steps)
    with pytest.raises(ValueError, match=field):
        StepBatch.from_steps(steps)


def _steps(b: StepBatch) -> list[dict]:
    return [{f: getattr(b, f)[k] for f in _FIELDS if f != "success"} for k in range(len(b))]


STATELESS = ["beacon", "ecpo", "gigpo", "grpo", "progpo", "reinforce", "rloo"]


@FAST
@given(trajectories(max_groups=3), st.sampled_from(STATELESS))
def test_rollout_groups_are_independent(trajs, name):
    """A stateless estimator compares rows only inside their rollout group: each group's
    advantages are the same alone as inside the batch, even when groups share anchors,
    signatures and milestone counts (every group here draws from the same small vocabulary)."""
    b = StepBatch.from_trajectories(trajs)
    adv, _ = get_estimator(name)(b)
    for g in np.unique(b.group):
        rows = np.flatnonzero(b.group == g)
        alone, _ = get_estimator(name)(b.take(rows))
        np.testing.assert_allclose(adv[rows], alone, rtol=1e-12, atol=1e-12, err_msg=name)


@FAST
@given(trajectories(max_groups=3))
def test_mvpo_group_scope_keeps_regions_and_potentials_inside_groups(trajs):
    """With ``scope="group"`` MVPO's regions, potentials and differences ``D`` of a group are
    the same alone as inside the batch (only kappa, the scale of ``A^Phi`` and, in the paper
    form, the batch's spread of potentials are batch-wide)."""
    b = StepBatch.from_trajectories(trajs).canonical()
    # the paper form also divides by the batch's spread of potentials: compared without it
    for cfg in (MVPO(form="v1").config, MVPO(potential_norm="none").config):
        pot = potential_terms(b, cfg, uniform_amp())
        for g in np.unique(b.group):
            rows = np.flatnonzero(b.group == g)
            alone = potential_terms(b.take(rows), cfg, uniform_amp())
            np.testing.assert_allclose(pot.phi[rows], alone.phi, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(pot.d[rows], alone.d, rtol=1e-12, atol=1e-12)


def uniform_amp():
    est = MVPO()
    est.amp.add_names(sorted({n for ms in MILESTONES for n in ms}))
    return est.amp
