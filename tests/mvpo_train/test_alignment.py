"""The alignment of MVPO's repair with the oracle label (docs/alignment.md)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import mvpo_envs  # noqa: F401
from mvpo_envs.vector import GroupedVectorEnv
from mvpo_train.alignment import (
    LABEL_KEY,
    alignment_metrics,
    auc,
    gigpo_twin,
    repair_alignment,
)
from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.credit.registry import ReportsAlignment
from mvpo_train.policy import Policy
from mvpo_train.prompts import get_template
from mvpo_train.rollout import RolloutCollector, RolloutConfig


def _pairwise_auc(s, y) -> float:
    pos = [a for a, b in zip(s, y, strict=True) if b == 1]
    neg = [a for a, b in zip(s, y, strict=True) if b == 0]
    wins = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p, q in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_auc_perfect_reversed_ties_and_random():
    assert auc([0.1, 0.2, 0.9, 1.5], [0, 0, 1, 1]) == 1.0
    assert auc([0.9, 1.5, 0.1, 0.2], [0, 0, 1, 1]) == 0.0
    assert auc([1.0, 1.0, 1.0, 1.0], [0, 1, 0, 1]) == 0.5
    assert auc([0.0, 1.0, 1.0], [0, 0, 1]) == 0.75  # a tie with one negative: 1/2
    rng = np.random.default_rng(0)
    s, y = rng.normal(size=4000), rng.integers(0, 2, size=4000)
    assert abs(auc(s, y) - 0.5) < 0.03
    s, y = rng.integers(0, 4, size=60).astype(float), rng.integers(0, 2, size=60)
    assert auc(s, y) == pytest.approx(_pairwise_auc(s, y), abs=1e-12)
    assert np.isnan(auc([0.1, 0.2], [1, 1]))
    with pytest.raises(ValueError, match="0 or 1"):
        auc([0.1, 0.2], [1, 2])


def _batch(labels) -> StepBatch:
    n = len(labels)
    b = StepBatch.from_trajectories([{"group": 0, "rewards": [0.0] * n}])
    return StepBatch(
        **{f: getattr(b, f) for f in ("group", "traj", "t", "reward", "terminated")},
        truncated=b.truncated, anchor=b.anchor, signature=b.signature,
        milestones=b.milestones, action=b.action, success=b.success,
        extras={LABEL_KEY: list(labels)},
    )  # fmt: skip


def test_only_repaired_rows_with_known_labels_count():
    labels = [1, 0, 1, 0, 1, 0, -1, -1]
    gigpo = np.array([0.3, -0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    repair = np.array([0.0, 0.0, 0.5, -0.5, 0.4, -0.1, 9.0, -9.0])
    # rows 0-1 are not repaired: their advantage (which would reverse the AUC) is left out
    res = repair_alignment(_batch(labels), gigpo + repair, gigpo)
    assert res.repaired_rows == 6
    assert res.labelled_fraction == pytest.approx(4 / 6)
    assert (res.positives, res.negatives) == (2, 2)
    assert res.auc == 1.0
    res = repair_alignment(_batch(labels), gigpo - repair, gigpo)
    assert res.auc == 0.0
    flat = np.where(np.arange(8) >= 2, 0.25, 0.0)
    assert repair_alignment(_batch(labels), gigpo + flat, gigpo).auc == 0.5  # all tied
    none = repair_alignment(_batch(labels), gigpo, gigpo)
    assert none.repaired_rows == 0 and np.isnan(none.auc) and np.isnan(none.labelled_fraction)


def test_bad_inputs_are_named():
    b = _batch([1, 0])
    with pytest.raises(ValueError, match="mvpo_adv has shape"):
        repair_alignment(b, np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="1, 0 or -1"):
        repair_alignment(b, np.zeros(2), np.zeros(2), labels=[1, 3])
    bare = StepBatch.from_trajectories([{"group": 0, "rewards": [0.0, 1.0]}])
    with pytest.raises(KeyError, match="oracle_progress"):
        repair_alignment(bare, np.zeros(2), np.zeros(2))


def _zero_credit_batch(labels: bool) -> StepBatch:
    """Two groups; identical anchors with equal returns make zero-credit step groups."""
    trajs = []
    for g in range(2):
        for k in range(4):
            win = k < 2
            trajs.append(
                {
                    "group": g,
                    "rewards": [0.0, 0.0, 1.0 if win else 0.0],
                    "anchors": ["start", f"mid{k // 2}", f"end{k}"],
                    "milestones": [(), ("m",) if win else (), ()],
                }
            )
    b = StepBatch.from_trajectories(trajs)
    extras = {LABEL_KEY: [int(t == 1 and s) for t, s in zip(b.t, b.success, strict=True)]}
    return StepBatch(
        **{f: getattr(b, f) for f in ("group", "traj", "t", "reward", "terminated")},
        truncated=b.truncated, anchor=b.anchor, signature=b.signature,
        milestones=b.milestones, action=b.action, success=b.success,
        extras=extras if labels else {},
    )  # fmt: skip


def test_training_metrics_only_for_mvpo_with_labels():
    batch = _zero_credit_batch(labels=True)
    mvpo = get_estimator("mvpo", form="v1")  # a form that repairs this batch
    twin = gigpo_twin(mvpo)
    adv, _ = mvpo(batch)
    gig, _ = twin(batch)
    np.testing.assert_array_equal(mvpo.last_gigpo, gig)  # its own twin, not another estimator
    assert isinstance(mvpo, ReportsAlignment) and not isinstance(twin, ReportsAlignment)
    m = alignment_metrics(batch, adv, mvpo)
    assert repr(m) == repr(mvpo.alignment_metrics(batch, adv))  # NaN AUC here: compare text
    assert repr(m) == repr(repair_alignment(batch, adv, gig).as_metrics())
    assert m["align/repaired_rows"] == int(np.count_nonzero(adv != gig)) > 0
    assert set(m) >= {"align/auc", "align/repaired_rows", "align/labelled_fraction"}
    assert alignment_metrics(batch, gig, get_estimator("gigpo")) == {}
    assert alignment_metrics(_zero_credit_batch(labels=False), adv, mvpo) == {}
    unknown = StepBatch(
        **{f: getattr(batch, f) for f in ("group", "traj", "t", "reward", "terminated")},
        truncated=batch.truncated, anchor=batch.anchor, signature=batch.signature,
        milestones=batch.milestones, action=batch.action, success=batch.success,
        extras={LABEL_KEY: [-1] * len(batch)},
    )  # fmt: skip
    assert alignment_metrics(unknown, adv, mvpo) == {}


def test_gigpo_twin_takes_the_step_fields():
    mvpo = get_estimator("mvpo", gamma=0.9, omega=0.5, lambda_L=0.0)
    twin = gigpo_twin(mvpo)
    assert twin.name == "gigpo" and twin.config.gamma == 0.9 and twin.config.omega == 0.5


@pytest.mark.parametrize("oracle", [True, False])
def test_rollout_collects_the_label_when_the_env_gives_it(micro, oracle):
    venv = GroupedVectorEnv(
        "mvpo/ALFWorld-v0", num_groups=1, group_size=2, split="train", max_episode_steps=4,
        progress_oracle=oracle,
    )  # fmt: skip
    try:
        policy = Policy.from_pretrained(str(micro), device="cpu", dtype="float32")
        template = get_template("mvpo/ALFWorld-v0", "compact")
        col = RolloutCollector(
            venv, policy, template, RolloutConfig(), None, torch.Generator().manual_seed(0)
        )
        batch = col.collect([2])
    finally:
        venv.close()
    if oracle:
        assert set(batch.extras[LABEL_KEY]) <= {0, 1}
        assert len(batch.extras[LABEL_KEY]) == len(batch)
    else:
        assert LABEL_KEY not in batch.extras
