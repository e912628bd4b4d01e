"""mvpo estimators inside verl: registered in verl's registry, fed by verl's real DataProto.

Runs where the ``verl`` extra is installed (``make test-verl`` builds that venv; ``.ci/run``
runs it). The expected advantages come from ``get_estimator(name)`` on a StepBatch built here
independently of the integration's own conversion.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

verl = pytest.importorskip("verl")

from verl import DataProto  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402

from mvpo_train import StepBatch, available_estimators, get_estimator  # noqa: E402
from mvpo_train.integrations import verl as bridge  # noqa: E402

RESPONSE_LEN = 40


def _episodes(seed: int, groups: int = 3, size: int = 4) -> list[dict]:
    """Seeded episodes: shared anchors inside a group, milestones, some wins, some losses."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(groups):
        for _ in range(size):
            n = int(rng.integers(2, 6))
            won = bool(rng.random() < 0.4) if g != 1 else False  # group 1 fails entirely
            steps = []
            for t in range(n):
                last = t == n - 1
                steps.append(
                    dict(
                        anchor=f"room{g}-s{int(rng.integers(0, 3))}",
                        signature=f"sig{int(rng.integers(0, 3))}",
                        milestones=("m1",) if rng.random() < 0.3 else (),
                        action=f"a{int(rng.integers(0, 3))}",
                        reward=1.0 if (last and won) else 0.0,
                        terminated=last and won,
                        truncated=last and not won,
                    )
                )
            out.append({"uid": f"prompt-{g}", "steps": steps})
    return out


def _spans(n_steps: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Consecutive turn spans with observation tokens (mask 0) between them."""
    spans, pos = [], 0
    for _ in range(n_steps):
        width = int(rng.integers(2, 5))
        spans.append((pos, pos + width))
        pos += width + int(rng.integers(1, 3))
    assert pos <= RESPONSE_LEN
    return spans


def _trajectory_rows(episodes: list[dict], seed: int = 0) -> tuple[DataProto, list[list]]:
    rng = np.random.default_rng(seed)
    n = len(episodes)
    mask = torch.zeros((n, RESPONSE_LEN), dtype=torch.int64)
    rewards = torch.zeros((n, RESPONSE_LEN))
    spans = []
    for r, ep in enumerate(episodes):
        sp = _spans(len(ep["steps"]), rng)
        spans.append(sp)
        for s, e in sp:
            mask[r, s:e] = 1
        rewards[r, sp[-1][1] - 1] = sum(st["reward"] for st in ep["steps"])
    nt = {
        "uid": np.array([ep["uid"] for ep in episodes], dtype=object),
        bridge.STEPS_COLUMN: np.array([None] * n, dtype=object),
        bridge.SPANS_COLUMN: np.array([None] * n, dtype=object),
    }
    for r, ep in enumerate(episodes):
        nt[bridge.STEPS_COLUMN][r] = ep["steps"]
        nt[bridge.SPANS_COLUMN][r] = spans[r]
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask}, non_tensors=nt
    )
    return data, spans


def _step_batch(episodes: list[dict]) -> StepBatch:
    """The episodes as mvpo's own ``StepBatch`` (groups numbered by first appearance)."""
    groups = {uid: k for k, uid in enumerate(dict.fromkeys(ep["uid"] for ep in episodes))}
    trajs = [
        dict(
            group=groups[ep["uid"]],
            rewards=[s["reward"] for s in ep["steps"]],
            anchors=[s["anchor"] for s in ep["steps"]],
            signatures=[s["signature"] for s in ep["steps"]],
            milestones=[s["milestones"] for s in ep["steps"]],
            actions=[s["action"] for s in ep["steps"]],
            end="terminated" if ep["steps"][-1]["terminated"] else "truncated",
        )
        for ep in episodes
    ]
    return StepBatch.from_trajectories(trajs)


def _expected_step_advantages(name: str, episodes: list[dict]) -> np.ndarray:
    adv, _ = get_estimator(name)(_step_batch(episodes))
    return adv


@pytest.fixture(autouse=True)
def fresh_estimators():
    bridge._instances.clear()
    bridge._check_rewards.clear()
    yield


def test_every_estimator_is_in_verls_registry():
    names = bridge.install()
    assert names == [f"mvpo_{n}" for n in available_estimators()]
    for name in names:
        assert core_algos.get_adv_estimator_fn(name).__name__ == f"compute_{name}_advantage"


@pytest.mark.parametrize("name", ["grpo", "gigpo", "mvpo", "beacon"])
def test_verl_compute_advantage_equals_get_estimator_on_turn_tokens(name):
    bridge.install()
    import verl.trainer.ppo.ray_trainer as ray_trainer

    episodes = _episodes(seed=1)
    data, spans = _trajectory_rows(episodes)
    out = ray_trainer.compute_advantage(data, adv_estimator=f"mvpo_{name}")
    adv = out.batch["advantages"].numpy()
    expected = _expected_step_advantages(name, episodes)
    k = 0
    for r, ep in enumerate(episodes):
        covered = np.zeros(RESPONSE_LEN, dtype=bool)
        for (s, e), _ in zip(spans[r], ep["steps"], strict=True):
            np.testing.assert_allclose(adv[r, s:e], expected[k], rtol=1e-6, atol=1e-6)
            covered[s:e] = True
            k += 1
        assert np.all(adv[r, ~covered] == 0.0)  # observation tokens get no credit
    assert torch.equal(out.batch["returns"], out.batch["advantages"])
    if name == "grpo":  # the all-failed group gets exactly zero from GRPO
        fails = [r for r, ep in enumerate(episodes) if ep["uid"] == "prompt-1"]
        assert np.all(adv[fails] == 0.0)
    if name == "mvpo":
        assert "zero_credit_ratio" in bridge.last_diagnostics("mvpo")


def test_step_row_layout_through_verls_registry_function():
    episodes = _episodes(seed=2)
    steps, uids = [], []
    for i, ep in enumerate(episodes):
        for t, s in enumerate(ep["steps"]):
            steps.append({**s, "traj": i, "t": t})
            uids.append(ep["uid"])
    n = len(steps)
    mask = torch.ones((n, 6), dtype=torch.int64)
    mask[:, 4:] = 0
    rewards = torch.zeros((n, 6))
    rewards[:, 3] = torch.tensor([s["reward"] for s in steps])
    bridge.register_estimators()
    fn = core_algos.get_adv_estimator_fn("mvpo_gigpo")
    nt = {bridge.STEP_COLUMN: np.array(steps, dtype=object)}
    adv, ret = fn(rewards, mask, index=np.array(uids, dtype=object), non_tensor_batch=nt)
    expected = _expected_step_advantages("gigpo", episodes)
    np.testing.assert_allclose(adv[:, 0].numpy(), expected, rtol=1e-6, atol=1e-6)
    assert torch.all(adv[:, 4:] == 0)


def test_row_order_does_not_change_any_rows_advantage():
    bridge.install()
    import verl.trainer.ppo.ray_trainer as ray_trainer

    episodes = _episodes(seed=3)
    data, _ = _trajectory_rows(episodes)
    base = ray_trainer.compute_advantage(data, adv_estimator="mvpo_gigpo").batch["advantages"]
    perm = np.random.default_rng(0).permutation(len(episodes))
    shuffled, _ = _trajectory_rows(episodes)
    shuffled = shuffled.select_idxs(perm)
    out = ray_trainer.compute_advantage(shuffled, adv_estimator="mvpo_gigpo")
    torch.testing.assert_close(out.batch["advantages"], base[perm])


def test_mvpo_state_carries_across_verl_iterations_like_the_estimator():
    bridge.install()
    import verl.trainer.ppo.ray_trainer as ray_trainer

    reference = get_estimator("mvpo")
    for seed in (4, 5):
        episodes = _episodes(seed=seed)
        data, _ = _trajectory_rows(episodes)
        ray_trainer.compute_advantage(data, adv_estimator="mvpo_mvpo")
        reference(_step_batch(episodes))
    assert bridge.estimator_state("mvpo") == reference.state_dict()


def test_other_estimators_still_use_verls_own_code():
    bridge.install()
    import verl.trainer.ppo.ray_trainer as ray_trainer

    data, _ = _trajectory_rows(_episodes(seed=6))
    out = ray_trainer.compute_advantage(data, adv_estimator="grpo", num_repeat=4)
    assert "advantages" in out.batch.keys()


def test_inconsistent_rewards_are_an_error_unless_declared():
    bridge.install()
    import verl.trainer.ppo.ray_trainer as ray_trainer

    episodes = _episodes(seed=7)
    data, _ = _trajectory_rows(episodes)
    data.batch["token_level_rewards"][0, 0] += 0.5
    with pytest.raises(ValueError, match="row 0: the steps' rewards sum"):
        ray_trainer.compute_advantage(data, adv_estimator="mvpo_gigpo")
    bridge.configure("gigpo", check_rewards=False)
    ray_trainer.compute_advantage(data, adv_estimator="mvpo_gigpo")


def test_missing_columns_and_missing_install_are_clear_errors():
    names = bridge.register_estimators()
    fn = core_algos.get_adv_estimator_fn(names[0])
    with pytest.raises(RuntimeError, match="install()"):
        fn(torch.zeros((1, 3)), torch.ones((1, 3)))
    with pytest.raises(ValueError, match="neither 'mvpo_step'"):
        fn(torch.zeros((1, 3)), torch.ones((1, 3)), non_tensor_batch={"uid": np.array(["a"])})
    data, _ = _trajectory_rows(_episodes(seed=8))
    data.non_tensor_batch[bridge.SPANS_COLUMN][0] = [(30, 50)] * len(
        data.non_tensor_batch[bridge.STEPS_COLUMN][0]
    )
    bridge.install()
    import verl.trainer.ppo.ray_trainer as ray_trainer

    with pytest.raises(ValueError, match="overlaps the previous turn or lies outside"):
        ray_trainer.compute_advantage(data, adv_estimator="mvpo_gigpo")
