"""The worked example of docs/estimators.md §3.4, run through every estimator.

An all-failed group of four rollouts from one start state (time limit 4 steps):

- A: goes to the countertop (fires ``seen``), takes the apple (fires ``inhand``), carries it;
- B: goes to the shelf and takes the wrong object (a mug);
- C: loops between cabinet 1 and cabinet 2;
- D: goes to the countertop (fires ``seen``), then wanders off to the drawers.

Run: ``python examples/credit_worked_example.py``. docs/estimators.md shows its output.
"""

from __future__ import annotations

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import available_estimators, get_estimator

# (anchor = observation, signature, action, milestones) per step; every episode fails (R = 0)
ROLLOUTS = {
    "A": [
        ("kitchen start", "start", "go to countertop 1", ("seen",)),
        ("countertop 1: an apple", "ct1|apple", "take apple 1 from countertop 1", ("inhand",)),
        ("countertop 1: holding apple", "ct1|apple-inhand", "go to fridge 1", ()),
        ("fridge 1, closed", "fridge1|apple-inhand", "open fridge 1", ()),
    ],
    "B": [
        ("kitchen start", "start", "go to shelf 1", ()),
        ("shelf 1: a mug", "shelf1|mug", "take mug 1 from shelf 1", ()),
        ("shelf 1: holding mug", "shelf1|mug-inhand", "go to sinkbasin 1", ()),
        ("sinkbasin 1", "sink1|mug-inhand", "clean mug 1 with sinkbasin 1", ()),
    ],
    "C": [
        ("kitchen start", "start", "go to cabinet 1", ()),
        ("cabinet 1, closed", "cabinet1", "go to cabinet 2", ()),
        ("cabinet 2, closed", "cabinet2", "go to cabinet 1", ()),
        ("cabinet 1, closed", "cabinet1", "go to cabinet 2", ()),
    ],
    "D": [
        ("kitchen start", "start", "go to countertop 1", ("seen",)),
        ("countertop 1: an apple", "ct1|apple", "go to drawer 1", ()),
        ("drawer 1, closed", "drawer1", "go to drawer 2", ()),
        ("drawer 2, closed", "drawer2", "go to drawer 3", ()),
    ],
}


def worked_example_batch() -> StepBatch:
    """The §3.4 batch: one group, four failed, truncated rollouts."""
    steps = []
    for traj, (_, rollout) in enumerate(ROLLOUTS.items()):
        for t, (anchor, sig, action, ms) in enumerate(rollout):
            last = t == len(rollout) - 1
            steps.append(
                dict(group=0, traj=traj, t=t, reward=0.0, terminated=False, truncated=last,
                     anchor=anchor, signature=sig, milestones=ms, action=action, success=False)
            )  # fmt: skip
    return StepBatch.from_steps(steps)


def main() -> None:
    """Print every estimator's advantages (rows: rollout, columns: step) and MVPO's internals."""
    batch = worked_example_batch()
    names = list(ROLLOUTS)
    np.set_printoptions(precision=4, suppress=True, floatmode="fixed")
    order = ["grpo", "rloo", "reinforce", "gigpo", "mvpo", "ecpo", "progpo", "beacon"]
    for est_name in [n for n in order if n in available_estimators()]:
        adv, diag = get_estimator(est_name)(batch)
        print(f"{est_name:>9}  zero_credit_ratio={diag['zero_credit_ratio']:.3f}"
              f"  zero_adv_ratio={diag['zero_adv_ratio']:.3f}")  # fmt: skip
        for i, name in enumerate(names):
            print(f"{'':>9}  {name}: {adv[batch.traj == i]}")
    from mvpo_train.credit.mvpo import MVPO, potential_terms

    est = MVPO()
    sb = batch.canonical()
    pot = potential_terms(sb, est.config, est.amp)
    print("\nMVPO internals (uniform AMP weights before the first update):")
    for i, name in enumerate(names):
        rows = sb.traj == i
        print(f"  {name}: v={pot.v[rows]}  phi={pot.phi[rows]}  D={pot.d[rows]}")
    _, diag = est(batch)
    keys = ("kappa", "ema_success", "grouping_ratio", "num_regions", "repaired_ratio", "d_scale")
    print("  " + "  ".join(f"{k}={diag[k]:.4g}" for k in keys))
    print(f"  amp_weights after the update: {diag['amp_weights']}")


if __name__ == "__main__":
    main()
