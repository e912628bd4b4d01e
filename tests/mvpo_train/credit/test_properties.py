"""Property tests for every estimator (docs/estimators.md §5), with hypothesis."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mvpo_train.batch import StepBatch
from mvpo_train.credit import available_estimators, get_estimator

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


@FAST
@given(trajectories(returns=st.floats(0.05, 1.0)), st.sampled_from(["std", "1"]))
def test_mvpo_equals_gigpo_without_zero_credit_step_groups(trajs, f_norm):
    b = StepBatch.from_trajectories(trajs)
    g, gd = get_estimator("gigpo", F_norm=f_norm)(b)
    assume(gd["zero_credit_ratio"] == 0.0)
    m, _ = get_estimator("mvpo", F_norm=f_norm)(b)
    assert np.array_equal(m, g)


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
    adv, diag = get_estimator("mvpo")(b)
    first = adv[b.t == 0]
    assert np.all(first[:n_prog] > 0) and np.all(first[n_prog:] < 0)
    # steps inside the loop (region to itself) get 0
    loop_rows = (b.traj >= n_prog) & (b.t >= 1)
    assert np.all(adv[loop_rows] == 0.0)
    # later progressing steps are never blamed: along one shared path D = (1 - gamma_m) g >= 0
    assert np.all(adv[(b.traj < n_prog) & (b.t >= 1)] >= 0)
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
