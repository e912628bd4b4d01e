"""MVPO's oracle repair and its controls (docs/alignment.md, "The oracle repair") on a batch of
the real control task, played by a seeded uniform policy, and the pure functions by hand."""

from __future__ import annotations

import math
import random

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_train.batch import FIELDS, ORACLE_PLAN_DECREASE, ORACLE_PROGRESS, StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.credit.alignment_measure import repair_alignment
from mvpo_train.credit.oracle_repair import (
    credit_scale,
    oracle_repair,
    oracle_scale,
    own_scale,
    positive_credit,
    shuffled_repair,
    standardise,
)


def control_batch(layouts: int = 8, rollouts: int = 8, seed: int = 0) -> StepBatch:
    """``layouts`` x ``rollouts`` uniform episodes of ``mvpo/MilestoneChain-v0`` (difficulty 1),
    with the oracle columns as :mod:`mvpo_train.rollout` fills them."""
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1)
    rng = random.Random(seed)
    rows: list[dict] = []
    progress: list[int] = []
    decrease: list[float] = []
    for g in range(layouts):
        for r in range(rollouts):
            _, info = env.reset(options={"task_index": g})
            t, done = 0, False
            while not done:
                action = rng.choice(info["admissible_actions"])
                _, reward, term, trunc, after = env.step(action)
                rows.append(
                    {
                        "group": g, "traj": g * rollouts + r, "t": t, "reward": reward,
                        "terminated": term, "truncated": trunc and not term,
                        "anchor": info["anchor"], "signature": info["signature"],
                        "milestones": tuple(after["milestones"]), "action": action,
                    }
                )  # fmt: skip
                progress.append(after[ORACLE_PROGRESS])
                decrease.append(float(info["oracle_plan_length"] - after["oracle_plan_length"]))
                info, t, done = after, t + 1, term or trunc
    extras = {ORACLE_PROGRESS: np.array(progress), ORACLE_PLAN_DECREASE: np.array(decrease)}
    return StepBatch.from_steps(rows, extras=extras)


@pytest.fixture(scope="module")
def batch() -> StepBatch:
    return control_batch()


def auc_of(batch: StepBatch, rho: float, oracle_seed: int = 0) -> tuple[float, object]:
    est = get_estimator("mvpo", repair_source="oracle", oracle_rho=rho, oracle_seed=oracle_seed)
    adv, _ = est(batch)
    return repair_alignment(batch, adv, est.last_gigpo).auc, est


def test_the_batch_is_the_regime_in_question(batch):
    y = np.asarray(batch.extras[ORACLE_PROGRESS])
    d = np.asarray(batch.extras[ORACLE_PLAN_DECREASE])
    np.testing.assert_array_equal(y, (d == 1).astype(int))  # one step shortens by one at most
    assert set(np.unique(d)) <= {-1.0, 0.0, 1.0}
    own = get_estimator("mvpo")
    own(batch)
    assert own.last_routed.mean() > 0.5  # most rows are routed (zero-credit step groups)


def test_rho_one_ranks_progress_steps_and_rho_zero_is_chance(batch):
    auc1, est1 = auc_of(batch, 1.0)
    assert auc1 >= 0.99
    for seed in range(3):
        auc0, _ = auc_of(batch, 0.0, oracle_seed=seed)
        assert 0.4 <= auc0 <= 0.6
    mid = [auc_of(batch, r)[0] for r in (0.25, 0.5, 0.75)]
    assert mid == sorted(mid) and 0.5 < mid[0] < mid[-1] < auc1


def test_only_the_alignment_changes_not_the_spread_nor_the_routing(batch):
    own = get_estimator("mvpo")
    own_adv, _ = own(batch)
    _, est = auc_of(batch, 0.5)
    np.testing.assert_array_equal(est.last_routed, own.last_routed)
    routed = own.last_routed
    assert est.last_repair[routed].std() == pytest.approx(own.last_repair[routed].std(), rel=1e-9)
    assert np.all(est.last_repair[~routed] == 0.0)
    # off the route the advantage is MVPO's own: GiGPO's credit of informative groups
    np.testing.assert_array_equal(est(batch)[0][~routed], own_adv[~routed])


def test_the_noise_is_seeded_by_oracle_seed_and_iteration(batch):
    a = get_estimator("mvpo", repair_source="oracle", oracle_rho=0.5, oracle_seed=7)
    b = get_estimator("mvpo", repair_source="oracle", oracle_rho=0.5, oracle_seed=7)
    np.testing.assert_array_equal(a(batch)[0], b(batch)[0])
    second = a(batch)[0]
    assert not np.array_equal(second, b.last_repair)  # a new draw each iteration
    c = get_estimator("mvpo", repair_source="oracle", oracle_rho=0.5, oracle_seed=7)
    c.load_state_dict(b.state_dict())  # a resumed run draws what the uninterrupted one drew
    np.testing.assert_array_equal(c(batch)[0], second)


def test_credit_scale_gives_the_oracle_gigpos_spread_and_changes_nothing_else(batch):
    """``oracle_scale="credit"``: the same aligned values on the same routed rows, at the spread
    of GiGPO's non-zero advantage instead of the own repair's (a magnitude arm)."""
    _, own = auc_of(batch, 1.0)
    big = get_estimator("mvpo", repair_source="oracle", oracle_rho=1.0, oracle_scale="credit")
    big(batch)
    routed = own.last_routed
    np.testing.assert_array_equal(big.last_routed, routed)
    gigpo = own.last_gigpo[own.last_gigpo != 0.0]
    kappa = own.kappa  # the same kappa schedule state after one call each
    assert big.last_repair[routed].std() == pytest.approx(kappa * gigpo.std(), rel=1e-9)
    assert big.last_repair[routed].std() != pytest.approx(own.last_repair[routed].std(), rel=0.05)
    ratio = big.last_repair[routed] / own.last_repair[routed]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)  # the same values, rescaled
    pos = get_estimator("mvpo", repair_source="positive", oracle_scale="credit")
    pos(batch)
    assert pos.last_repair.std() == pytest.approx(pos.kappa * gigpo.std(), rel=1e-9)


def test_shuffled_control_keeps_the_multiset_of_repair_values(batch):
    own = get_estimator("mvpo")
    own(batch)
    sh = get_estimator("mvpo", repair_source="shuffled")
    sh(batch)
    routed = own.last_routed
    np.testing.assert_array_equal(sh.last_routed, routed)
    np.testing.assert_array_equal(np.sort(sh.last_repair[routed]), np.sort(own.last_repair[routed]))
    assert not np.array_equal(sh.last_repair, own.last_repair)
    auc = repair_alignment(batch, sh(batch)[0], sh.last_gigpo).auc
    assert 0.4 <= auc <= 0.6


def test_positive_control_credits_every_row_by_the_oracle(batch):
    pos = get_estimator("mvpo", repair_source="positive")
    adv, _ = pos(batch)
    assert pos.last_routed.all()
    d = np.asarray(batch.extras[ORACLE_PLAN_DECREASE])
    # the step credit is an increasing function of the plan decrease on every row
    order = np.argsort(d, kind="stable")
    assert np.all(np.diff(pos.last_repair[order]) >= 0) and pos.last_repair.std() > 0
    assert repair_alignment(batch, adv, pos.last_gigpo).auc > 0.9


def test_align_auc_measures_the_credit_the_arm_adds(batch):
    """``align/auc`` scores ``last_repair`` on the rows the arm repairs. The positive control's
    credit is the oracle's, so it reads >= 0.99; ``advantages - last_gigpo`` would mix GiGPO's
    anchor credit of the informative step groups into it and read less. Where the credit is
    added on zero-credit groups only (every other source), it is that difference's reading."""
    pos = get_estimator("mvpo", repair_source="positive")
    adv, _ = pos(batch)
    m = pos.alignment_metrics(batch, adv)
    assert m["align/auc"] >= 0.99 and m["align/repaired_rows"] == len(batch)
    assert m["align/positives"] > 50 and m["align/negatives"] > 50
    assert repair_alignment(batch, adv, pos.last_gigpo).auc < m["align/auc"]
    for kw in ({}, {"repair_source": "oracle", "oracle_rho": 0.5}, {"repair_source": "shuffled"}):
        est = get_estimator("mvpo", **kw)
        adv, _ = est(batch)
        m = est.alignment_metrics(batch, adv)
        old = repair_alignment(batch, adv, est.last_gigpo).as_metrics()
        assert m["align/repaired_rows"] == old["align/repaired_rows"] > 100
        # equal up to the rounding of (A^E + omega x) - A^E against omega x
        assert m["align/auc"] == pytest.approx(old["align/auc"], abs=1e-4)


@pytest.mark.parametrize("source", ["oracle", "positive"])
def test_asking_for_the_oracle_without_labels_is_refused_in_one_line(batch, source):
    first = batch.take(np.flatnonzero(batch.traj < 2))  # two whole trajectories
    bare = StepBatch(**{f: getattr(first, f) for f in FIELDS})
    with pytest.raises(ValueError, match="oracle_plan_decrease") as err:
        get_estimator("mvpo", repair_source=source)(bare)
    assert "\n" not in str(err.value)
    n = len(bare)
    unknown = StepBatch(
        **{f: getattr(bare, f) for f in FIELDS}, extras={ORACLE_PLAN_DECREASE: np.full(n, np.nan)}
    )
    with pytest.raises(ValueError, match=f"{n} of {n} are unknown"):
        get_estimator("mvpo", repair_source=source)(unknown)
    get_estimator("mvpo", repair_source="shuffled")(bare)  # the shuffle needs no oracle


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"repair_source": "both"}, "repair_source"),
        ({"oracle_rho": 1.5}, "oracle_rho"),
        ({"oracle_rho": float("nan")}, "oracle_rho"),
        ({"oracle_seed": -1}, "oracle_seed"),
        ({"oracle_scale": "gigpo"}, "oracle_scale"),
    ],
)
def test_bad_options_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        get_estimator("mvpo", **kwargs)


def test_pure_functions_by_hand():
    x = np.array([1.0, 2.0, 3.0, 9.0])
    rows = np.array([True, True, True, False])
    z = standardise(x, rows)
    np.testing.assert_allclose(z, [-math.sqrt(1.5), 0.0, math.sqrt(1.5), 0.0])
    assert not standardise(np.ones(3), np.ones(3, bool)).any()  # no spread: 0
    assert own_scale(x, rows) == pytest.approx(np.std([1.0, 2.0, 3.0]))
    assert own_scale(np.ones(3), np.ones(3, bool)) == 1.0 == own_scale(x, np.zeros(4, bool))
    rng = np.random.default_rng(0)
    d = np.array([1.0, 0.0, -1.0, 1.0])
    out = oracle_repair(x, d, rows, 1.0, rng)
    np.testing.assert_allclose(out[:3], own_scale(x, rows) * standardise(d, rows)[:3])
    assert out[3] == 9.0  # off the route: untouched
    sh = shuffled_repair(x, rows, np.random.default_rng(1))
    assert sorted(sh[:3]) == [1.0, 2.0, 3.0] and sh[3] == 9.0
    pc = positive_credit(d, own_scale(x, rows))
    np.testing.assert_allclose(pc, own_scale(x, rows) * standardise(d, np.ones(4, bool)))
    out = oracle_repair(x, d, rows, 1.0, np.random.default_rng(0), scale=2.5)
    np.testing.assert_allclose(out[:3], 2.5 * standardise(d, rows)[:3])
    gigpo = np.array([0.0, 2.0, -2.0, 0.0, 4.0])
    assert credit_scale(gigpo) == pytest.approx(np.std([2.0, -2.0, 4.0]))
    assert credit_scale(np.zeros(3)) == 1.0
    assert oracle_scale("own", x, rows, gigpo) == own_scale(x, rows)
    assert oracle_scale("credit", x, rows, gigpo) == credit_scale(gigpo)
    with pytest.raises(ValueError, match="oracle_scale"):
        oracle_scale("gigpo", x, rows, gigpo)
    with pytest.raises(ValueError, match="rho"):
        oracle_repair(x, d, rows, -0.1, rng)


def _oracle_gain_script():
    """``benchmarks/oracle_gain.py`` as a module (its dataclasses look it up in sys.modules)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "oracle_gain.py"
    spec = importlib.util.spec_from_file_location("oracle_gain_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_oracle_gain_env_options_enter_the_fingerprint_only_when_on(tmp_path):
    import json

    og = _oracle_gain_script()
    assert og.parse_args([]).show_route  # the study's setting since its first check failed
    old = og.parse_args(["--no-show-route"])
    # the fingerprint the runs made before the options existed recorded
    assert og.fingerprint(og.settings(old)) == "4b67dbe9adbf9fd5"
    route = og.parse_args(["--show-route", "--num-tasks", "4"])
    assert og.settings(route)["show_route"] is True and og.settings(route)["num_tasks"] == 4
    arm = og.arms()[0]
    cmd = og.train_cmd(tmp_path / "run", arm, 0, route)
    env_kwargs = json.loads(cmd[cmd.index("--env-kwargs") + 1])
    assert env_kwargs["show_route"] is True and env_kwargs["num_tasks"] == 4
    assert "show_route" not in json.loads(
        (c := og.train_cmd(tmp_path / "run", arm, 0, old))[c.index("--env-kwargs") + 1]
    )
    og.check_settings(tmp_path, og.settings(old))
    with pytest.raises(SystemExit, match="num_tasks.*show_route"):
        og.check_settings(tmp_path, og.settings(route))
