"""Fixtures of the inspect tests: a seeded ALFWorld-like batch and its record (docs/inspect.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.records import write_batch_record

PLACES = ["cabinet 1", "cabinet 2", "fridge 1", "countertop 1", "sinkbasin 1", "drawer 1"]


def walk_batch(seed: int = 0, groups: int = 3, group_size: int = 4, horizon: int = 8) -> StepBatch:
    """Seeded random walks: group 0 all failed, others mixed; loops, milestones, odd text."""
    rng = np.random.default_rng(seed)
    trajs = []
    for g in range(groups):
        for j in range(group_size):
            n = int(rng.integers(3, horizon + 1))
            places = [PLACES[int(k)] for k in rng.integers(0, len(PLACES), size=n)]
            held = np.cumsum(rng.random(n) < 0.2) > 0
            sigs = [f"{p}|{'apple' if h else 'none'}|d0" for p, h in zip(places, held, strict=True)]
            anchors = [f"You arrive at {p}. <b>&</b> ünïcode</script>" for p in places]
            ms = [
                ("target_in_hand",) if h and not (k and held[k - 1]) else ()
                for k, h in enumerate(held)
            ]
            won = g > 0 and j % 2 == 0
            rewards = [0.0] * (n - 1) + [1.0 if won else 0.0]
            trajs.append(
                dict(group=g, rewards=rewards, anchors=anchors, signatures=sigs, milestones=ms,
                     actions=[f"go to {p}" for p in places],
                     end="terminated" if won else "truncated", success=won)
            )  # fmt: skip
    b = StepBatch.from_trajectories(trajs)
    extras = {
        "env_reward": b.reward.tolist(),
        "invalid_action": [bool(x) for x in (b.t % 3 == 1)],
        "task_type": ["pick_and_place"] * len(b),
        "prompt_ids": [[1, 2, 3]] * len(b),  # not scalar: not recorded
    }
    return StepBatch(**{f: getattr(b, f) for f in FIELDS}, extras=extras)


def record_mvpo(run_dir: Path, batch: StepBatch, iteration: int = 3, warm: int = 2) -> Path:
    """Record ``batch`` as the trainer would after ``warm`` earlier MVPO calls (state != fresh)."""
    est = get_estimator("mvpo", gamma=0.9)
    for s in range(warm):
        est(walk_batch(seed=100 + s))
    state = est.state_dict()
    adv, diag = est(batch)
    return write_batch_record(
        run_dir, iteration, batch, estimator=est, estimator_state=state, advantages=adv,
        diagnostics=diag, meta={"env_id": "synthetic", "abstraction": "walk"},
    )  # fmt: skip


@pytest.fixture()
def batch() -> StepBatch:
    return walk_batch()


@pytest.fixture()
def recorded(tmp_path, batch) -> Path:
    return record_mvpo(tmp_path / "run", batch)
