"""The worked example of docs/estimators.md §3.4, shared by the MVPO tests: the batch, its
rows per trajectory, and its potential terms worked out by hand in the tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit.mvpo import MVPO, PotentialTerms, potential_terms

#: the trajectories, in order
A, B, C, D = 0, 1, 2, 3


def worked_example() -> StepBatch:
    """All-failed group of four truncated rollouts from one start state: A fires seen then
    inhand, B takes the wrong object, C loops between two cabinets, D sees, then wanders."""
    return StepBatch.from_trajectories([
        dict(group=0, rewards=[0] * 4,  # A: seen, then inhand
             anchors=["start", "ct1 apple", "ct1 holding apple", "fridge"],
             signatures=["start", "ct1|apple", "ct1|inhand", "fridge|inhand"],
             milestones=[("seen",), ("inhand",), (), ()]),
        dict(group=0, rewards=[0] * 4,  # B: takes the wrong object
             anchors=["start", "shelf mug", "shelf holding mug", "sink"],
             signatures=["start", "shelf|mug", "shelf|mug-inhand", "sink|mug-inhand"]),
        dict(group=0, rewards=[0] * 4,  # C: loops between two cabinets
             anchors=["start", "cabinet 1", "cabinet 2", "cabinet 1"],
             signatures=["start", "cab1", "cab2", "cab1"]),
        dict(group=0, rewards=[0] * 4,  # D: seen, then wanders
             anchors=["start", "ct1 apple", "drawer 1", "drawer 2"],
             signatures=["start", "ct1|apple", "drawer1", "drawer2"],
             milestones=[("seen",), (), (), ()]),
    ])  # fmt: skip


def by_traj(b: StepBatch, x: np.ndarray) -> list[np.ndarray]:
    """``x``'s rows of each trajectory of ``b``, in trajectory order."""
    return [x[b.traj == i] for i in sorted(set(b.traj.tolist()))]


def worked_potential(**mvpo_kwargs: Any) -> tuple[StepBatch, PotentialTerms]:
    """The example and its potential terms under ``MVPO(**mvpo_kwargs)``, both milestones
    named (uniform AMP weights: .5 each)."""
    b = worked_example()
    est = MVPO(**mvpo_kwargs)
    est.amp.add_names(["seen", "inhand"])
    return b, potential_terms(b.canonical(), est.config, est.amp)
