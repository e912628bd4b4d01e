"""MVPO's ``anchor_credit`` (docs/estimators.md §3.6): ``False`` drops exactly GiGPO's anchor
credit ``A^S`` on informative step groups (the MVPO paper's ablation "w/o GiGPO anchor") and keeps
the potential repair, kappa and the estimator's state as they are."""

from __future__ import annotations

import numpy as np
import pytest

from mvpo_train.batch import StepBatch
from mvpo_train.config import ConfigError
from mvpo_train.credit import get_estimator


def _two_groups() -> StepBatch:
    return StepBatch.from_trajectories([
        # group 0: returns vary at the shared anchor "s" (informative anchor credit)
        dict(group=0, rewards=[0, 0, 1], anchors=["s", "y", "w"], signatures=["s", "y", "w"],
             milestones=[(), ("m",), ()]),
        dict(group=0, rewards=[0, 0, 0], anchors=["s", "y", "z"], signatures=["s", "y", "z"]),
        # group 1: every rollout fails (zero-credit step groups, repaired by the potential)
        dict(group=1, rewards=[0, 0, 0], anchors=["s", "y", "u"], signatures=["s", "y", "u"],
             milestones=[(), ("m",), ()]),
        dict(group=1, rewards=[0, 0, 0], anchors=["s", "y", "v"], signatures=["s", "y", "v"]),
    ])  # fmt: skip


@pytest.mark.parametrize("form", ["paper", "v1"])
def test_without_anchor_credit_only_the_anchor_credit_is_gone(form):
    b = _two_groups()
    b = b.take(np.random.default_rng(0).permutation(len(b)))  # caller order is kept
    mvpo = get_estimator("mvpo", form=form, omega=0.5)
    no_anchor = get_estimator("mvpo", form=form, omega=0.5, anchor_credit=False)
    full, dm = mvpo(b)
    adv, dn = no_anchor(b)
    episode, _ = get_estimator("gigpo", omega=0.0)(b)  # A^E alone
    np.testing.assert_allclose(adv, episode + 0.5 * mvpo.last_repair, atol=1e-15)
    routed = mvpo.last_routed
    assert routed.any() and np.any(mvpo.last_repair[routed] != 0.0)  # the repair is kept
    np.testing.assert_array_equal(adv[routed], full[routed])
    assert np.any(adv[~routed] != full[~routed])  # the anchor credit is gone
    np.testing.assert_array_equal(adv[~routed], episode[~routed])
    assert dn["kappa"] == dm["kappa"] and no_anchor.state_dict() == mvpo.state_dict()


def test_anchor_credit_is_on_by_default_and_must_be_a_bool():
    b = _two_groups()
    default = get_estimator("mvpo", omega=0.5)(b)[0]
    on = get_estimator("mvpo", omega=0.5, anchor_credit=True)(b)[0]
    np.testing.assert_array_equal(default, on)
    with pytest.raises((ConfigError, TypeError, ValueError), match="anchor_credit"):
        get_estimator("mvpo", anchor_credit="no")
