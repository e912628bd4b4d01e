"""StepBatch: construction, validation, derived views (docs/estimators.md §0)."""

from __future__ import annotations

import numpy as np
import pytest

from mvpo_train.batch import StepBatch, canonical_action


def step(group=0, traj=0, t=0, reward=0.0, terminated=False, truncated=False, anchor="a",
         signature="s", milestones=(), action="go", **kw):  # fmt: skip
    d = dict(group=group, traj=traj, t=t, reward=reward, terminated=terminated,
             truncated=truncated, anchor=anchor, signature=signature, milestones=milestones,
             action=action)  # fmt: skip
    d.update(kw)
    return d


def two_traj_steps():
    # traj 7: 3 steps, wins (reward 1 at the end); traj 3: 2 steps, truncated
    return [
        step(traj=7, t=0, action="  Go To  Desk 1 "),
        step(traj=7, t=1, milestones=["seen"]),
        step(traj=7, t=2, reward=1.0, terminated=True),
        step(traj=3, t=1, truncated=True),  # rows of a trajectory may come in any order
        step(traj=3, t=0),
    ]


def test_from_steps_types_and_derived_views():
    b = StepBatch.from_steps(two_traj_steps(), extras={"ids": [[1], [2], [3], [4], [5]]})
    assert len(b) == 5
    assert b.group.dtype == np.int64 and b.reward.dtype == np.float64
    assert b.milestones[1] == ("seen",) and b.milestones[0] == ()
    assert b.action[0] == "go to desk 1"
    # success derived: terminated with a positive return
    assert b.success.tolist() == [True, True, True, False, False]
    # compact trajectory index follows traj id order: traj 3 -> 0, traj 7 -> 1
    assert b.traj_index.tolist() == [1, 1, 1, 0, 0]
    assert b.traj_return.tolist() == [0.0, 1.0]
    assert b.returns.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert b.is_last.tolist() == [False, False, True, True, False]
    assert b.traj_length.tolist() == [2, 3]
    g = b.return_to_go(0.5)
    np.testing.assert_array_equal(g, [0.25, 0.5, 1.0, 0.0, 0.0])
    assert b.order.tolist() == [4, 3, 0, 1, 2]
    c = b.canonical()
    assert c.traj.tolist() == [3, 3, 7, 7, 7] and c.t.tolist() == [0, 1, 0, 1, 2]
    assert c.extras == {}
    assert b.milestone_count.tolist() == [0, 1, 0, 0, 0]


def test_take_permutes_extras_and_validates():
    b = StepBatch.from_steps(two_traj_steps(), extras={"ids": [[1], [2], [3], [4], [5]],
                                                       "lp": np.arange(5.0)})  # fmt: skip
    p = b.take([4, 3, 2, 1, 0])
    assert p.extras["ids"] == [[5], [4], [3], [2], [1]]
    assert p.extras["lp"].tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]
    assert p.traj.tolist() == [3, 3, 7, 7, 7]
    with pytest.raises(ValueError, match="ends with neither"):
        b.take([0, 1])  # cuts trajectory 7 before its last step
    sub = b.take([0, 1], validate=False)
    assert len(sub) == 2


def test_explicit_success_is_kept():
    steps = [dict(s, success=False) for s in two_traj_steps()]
    assert not StepBatch.from_steps(steps).success.any()


def test_canonical_action():
    assert (
        canonical_action("  Take  Apple 1\tFROM countertop 1 ") == "take apple 1 from countertop 1"
    )
    with pytest.raises(TypeError):
        canonical_action(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda s: s[0].pop("anchor"), "anchor"),
        (lambda s: s[1].update(reward=float("nan")), "reward"),
        (lambda s: s[2].update(reward=float("inf")), "reward"),
        (lambda s: s[1].update(t=5), "'t'"),
        (lambda s: s[4].update(t=1), "'t'"),  # duplicate step
        (lambda s: s[2].update(terminated=False), "terminated"),  # no end flag
        (lambda s: s[1].update(truncated=True), "terminated"),  # end flag before the end
        (lambda s: s[4].update(group=1), "group"),  # trajectory spans two groups
        (lambda s: s[0].update(milestones="seen"), "milestones"),
        (lambda s: s[0].update(anchor=3), "anchor"),
    ],
)
def test_bad_batches_raise_clear_errors(mutate, field):
    steps = two_traj_steps()
    mutate(steps)
    with pytest.raises(ValueError, match=field):
        StepBatch.from_steps(steps)


def test_ragged_columns_and_extras():
    b = StepBatch.from_steps(two_traj_steps())
    cols = {
        f: getattr(b, f)
        for f in (
            "group",
            "traj",
            "t",
            "reward",
            "terminated",
            "truncated",
            "anchor",
            "signature",
            "milestones",
            "action",
            "success",
        )
    }
    with pytest.raises(ValueError, match="'reward'"):
        StepBatch(**{**cols, "reward": cols["reward"][:3]})
    with pytest.raises(ValueError, match="extras"):
        StepBatch(**cols, extras={"ids": [1, 2]})
    with pytest.raises(ValueError, match="'success'"):
        StepBatch(**{**cols, "success": np.array([1, 0, 1, 0, 0], bool)})


def test_empty_batch():
    b = StepBatch.from_steps([])
    assert len(b) == 0
