"""The trainer's vector env merges only :data:`~mvpo_train.rollout.ROLLOUT_INFO_KEYS`: the
rollout reads no other key (recorded on real rollouts), and its batches are bit-identical
with and without the filter, on the control task and on ALFWorld's mini rooms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import mvpo_envs  # noqa: F401
import mvpo_train.rollout as rollout_module
from mvpo_envs.vector import GroupedVectorEnv
from mvpo_train.backends import make_backend
from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.config import TrainConfig
from mvpo_train.factories import make_venv
from mvpo_train.policy import Policy
from mvpo_train.prompts import get_template
from mvpo_train.rollout import ROLLOUT_INFO_KEYS, RolloutCollector, RolloutConfig

ENVS = {
    "control": ("mvpo/MilestoneChain-v0", {"max_episode_steps": 5}),
    "alfworld-mini": (
        "mvpo/ALFWorld-v0",
        {"preset": "mini", "progress_oracle": True, "max_episode_steps": 5},
    ),
}


def _collect(micro, env: str, info_keys, action_mode: str = "score") -> StepBatch:
    env_id, kwargs = ENVS[env]
    policy = Policy.from_pretrained(str(micro), device="cpu", dtype="float32")
    rc = RolloutConfig(action_mode=action_mode, max_new_tokens=8)
    template = get_template(env_id, "compact" if action_mode == "score" else "seed")
    backend = make_backend("hf", policy, seed=0) if action_mode == "generate" else None
    with GroupedVectorEnv(env_id, 2, 2, info_keys=info_keys, **kwargs) as venv:
        collector = RolloutCollector(
            venv, policy, template, rc, backend, torch.Generator().manual_seed(0)
        )
        return collector.collect([0, 1])


class _Recording(dict):
    """A per-env info dict that records every key the rollout reads from it."""

    read: set[str] = set()

    def get(self, key: Any, default: Any = None) -> Any:
        _Recording.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        _Recording.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        _Recording.read.add(str(key))
        return super().__contains__(key)


@pytest.mark.parametrize(
    ("env", "action_mode"),
    [("control", "score"), ("alfworld-mini", "score"), ("control", "generate")],
)
def test_the_rollout_reads_only_the_merged_keys(micro, monkeypatch, env, action_mode):
    real = rollout_module.unbatch_infos
    monkeypatch.setattr(
        rollout_module, "unbatch_infos", lambda infos, n: [_Recording(i) for i in real(infos, n)]
    )
    _Recording.read = set()
    _collect(micro, env, None, action_mode)  # every key merged: any read is seen
    assert {"admissible_actions", "anchor", "milestones"} <= _Recording.read
    unmerged = _Recording.read - ROLLOUT_INFO_KEYS
    assert not unmerged, f"the rollout reads {sorted(unmerged)}: add them to ROLLOUT_INFO_KEYS"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind == "f":
            return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
        return a.shape == b.shape and all(
            _same(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True)
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("env", sorted(ENVS))
def test_rollouts_are_bit_identical_with_and_without_the_filter(micro, env):
    full = _collect(micro, env, None)
    kept = _collect(micro, env, ROLLOUT_INFO_KEYS)
    assert len(full) > 4
    for field in FIELDS:
        assert _same(getattr(full, field), getattr(kept, field)), field
    assert sorted(full.extras) == sorted(kept.extras)
    for key in full.extras:
        assert _same(full.extras[key], kept.extras[key]), key
    if env == "alfworld-mini":  # the oracle keys reached the batch through the filter
        assert "oracle_progress" in kept.extras and "oracle_plan_decrease" in kept.extras


def test_make_venv_merges_the_rollout_keys(micro, tmp_path):
    cfg = TrainConfig(
        run_dir=str(tmp_path), env_id="mvpo/MilestoneChain-v0", model=str(micro), device="cpu",
        progress=False, tensorboard=False,
    )  # fmt: skip
    venv = make_venv(cfg, cfg.split, 1, 2)
    try:
        assert venv.info_keys == ROLLOUT_INFO_KEYS
        _, infos = venv.reset_groups([0])
        assert set(k for k in infos if not k.startswith("_")) <= ROLLOUT_INFO_KEYS
        assert "state" not in infos
    finally:
        venv.close()
