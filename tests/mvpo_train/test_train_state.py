"""TrainState: a checkpoint written by ``save`` and read by ``restore`` gives back every part
of the training state (weights, optimizer, estimator, refit, each RNG, counters) exactly."""

from __future__ import annotations

import random

import numpy as np
import torch

from mvpo_train.checkpoint import load_checkpoint
from mvpo_train.config import TrainConfig, build_estimator
from mvpo_train.factories import load_policy
from mvpo_train.train_state import TrainState


def _state(micro, seed: int) -> TrainState:
    cfg = TrainConfig(model=str(micro), device="cpu", estimator="mvpo", seed=seed)
    torch.manual_seed(seed)
    policy = load_policy(cfg)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    gens = {
        "tasks": np.random.default_rng(seed),
        "actions": torch.Generator().manual_seed(seed),
    }
    return TrainState(policy, optimizer, build_estimator(cfg), gens)


def test_save_then_restore_gives_back_every_part_exactly(micro, tmp_path):
    state = _state(micro, seed=1)
    loss = sum(p.float().pow(2).sum() for p in state.policy.model.parameters())
    loss.backward()
    state.optimizer.step()  # optimizer state that a fresh optimizer lacks
    state.estimator.load_state_dict({**state.estimator.state_dict(), "ema_success": 0.375})
    state.generators["tasks"].random(3)
    torch.rand(2, generator=state.generators["actions"])
    state.iteration, state.env_steps, state.metrics_rows = 7, 123, 7
    random.seed(5)
    path = state.save(tmp_path, config={"seed": 1}, keep=2)
    assert path is not None and path.name == "iter-000007"
    assert load_checkpoint(path)["state"]["config"] == {"seed": 1}
    expected = {
        "py": random.random(),
        "tasks": state.generators["tasks"].random(2).tolist(),
        "actions": torch.rand(2, generator=state.generators["actions"]).tolist(),
    }

    other = _state(micro, seed=2)  # other weights, fresh optimizer, other generators
    random.seed(9)
    other.restore(path)
    for (name, a), b in zip(
        state.policy.model.state_dict().items(),
        other.policy.model.state_dict().values(),
        strict=True,
    ):
        assert torch.equal(a, b), name
    sa, sb = state.optimizer.state_dict(), other.optimizer.state_dict()
    assert sa["state"].keys() == sb["state"].keys() and sb["state"]
    for k in sa["state"]:
        assert torch.equal(sa["state"][k]["exp_avg"], sb["state"][k]["exp_avg"])
    assert other.estimator.state_dict() == state.estimator.state_dict()
    assert (other.iteration, other.env_steps, other.metrics_rows) == (7, 123, 7)
    assert {
        "py": random.random(),
        "tasks": other.generators["tasks"].random(2).tolist(),
        "actions": torch.rand(2, generator=other.generators["actions"]).tolist(),
    } == expected
