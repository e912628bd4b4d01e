"""The default mode (``score``) trains on every env id: mixed pages merge in the vector env.

docs/environments.md, "Info contract". Two iterations on the micro model, two groups of two,
enough steps to leave the first page (WebShop: search -> results -> item) so the sub-envs of
one batch report infos from different states.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mvpo_train.config import TrainConfig
from mvpo_train.metrics import read_metrics
from mvpo_train.trainer import train


@pytest.mark.parametrize(
    ("env_id", "max_steps"),
    [("mvpo/ALFWorld-v0", 4), ("mvpo/WebShop-v0", 6), ("mvpo/SearchQA-v0", 4)],
)
def test_score_mode_trains_two_iterations(micro: Path, tmp_path: Path, env_id: str, max_steps: int):
    cfg = TrainConfig(
        run_dir=str(tmp_path), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, env_id=env_id, action_mode="score", num_groups=2, group_size=2,
        max_steps=max_steps, iterations=2, micro_batch_size=16, save_every=0, seed=3,
    )  # fmt: skip
    rows = train(cfg)
    assert [r["iteration"] for r in read_metrics(tmp_path)] == [1, 2]
    for row in rows:
        assert row["steps"] >= 4  # every one of the 4 envs took at least one step
        assert math.isfinite(row["loss/grad_norm"]) and 0.0 <= row["success"] <= 1.0
