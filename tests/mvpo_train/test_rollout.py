"""Rollout -> StepBatch, both action modes, malformed generations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mvpo_envs  # noqa: F401
from mvpo_envs.vector import GroupedVectorEnv
from mvpo_train.backends import make_backend
from mvpo_train.config import TrainConfig
from mvpo_train.policy import Policy
from mvpo_train.prompts import get_template
from mvpo_train.rollout import RolloutCollector, RolloutConfig
from mvpo_train.trainer import row_logprobs


@pytest.fixture(scope="module")
def venv():
    env = GroupedVectorEnv(
        "mvpo/ALFWorld-v0", num_groups=2, group_size=3, split="train", max_episode_steps=5
    )
    yield env
    env.close()


def _collector(micro, venv, **cfg) -> RolloutCollector:
    policy = Policy.from_pretrained(str(micro), device="cpu", dtype="float32")
    rc = RolloutConfig(**cfg)
    template = get_template("mvpo/ALFWorld-v0", "compact" if rc.action_mode == "score" else "seed")
    backend = make_backend("hf", policy) if rc.action_mode == "generate" else None
    return RolloutCollector(venv, policy, template, rc, backend, torch.Generator().manual_seed(0))


def test_score_rollout_builds_a_valid_step_batch(micro, venv):
    col = _collector(micro, venv)
    batch = col.collect([3, 7])
    n = venv.num_envs
    assert set(batch.traj.tolist()) == set(range(n))
    assert batch.group.tolist() == [int(venv.group_of_env[i]) for i in batch.traj.tolist()]
    lengths = np.bincount(batch.traj, minlength=n)
    assert lengths.max() <= 5 and lengths.min() >= 1
    # each trajectory ends exactly once, at its last row: finished envs stopped generating
    for i in range(n):
        rows = np.flatnonzero(batch.traj == i)
        ends = batch.terminated[rows] | batch.truncated[rows]
        assert ends[-1] and not ends[:-1].any()
        assert batch.t[rows].tolist() == list(range(len(rows)))
    first = batch.t == 0
    assert all(a.startswith("-= Welcome to TextWorld") for a in batch.anchor[first])
    assert all(s.endswith("|d0") for s in batch.signature[first])
    # actions are canonical admissible commands; extras line up with rows
    assert all(a == " ".join(a.lower().split()) for a in batch.action)
    for k in ("prompt_ids", "action_ids", "old_logp", "cand_ids", "choice", "env_reward"):
        assert len(batch.extras[k]) == len(batch)
    for r in range(len(batch)):
        assert (
            batch.extras["cand_ids"][r][batch.extras["choice"][r]] == batch.extras["action_ids"][r]
        )
        assert len(batch.extras["old_logp"][r]) == 1 and batch.extras["old_logp"][r][0] <= 0


def test_same_seed_same_trajectories(micro, venv):
    a = _collector(micro, venv).collect([1, 2])
    b = _collector(micro, venv).collect([1, 2])
    assert a.action.tolist() == b.action.tolist()
    np.testing.assert_array_equal(
        np.concatenate(a.extras["old_logp"]), np.concatenate(b.extras["old_logp"])
    )


@pytest.mark.parametrize("score_logprob", ["choice", "tokens"])
def test_rollout_logprobs_equal_trainer_recomputation(micro, venv, score_logprob):
    col = _collector(micro, venv, score_logprob=score_logprob)
    with torch.no_grad():  # perturb so the candidates are not near-uniform
        g = torch.Generator().manual_seed(3)
        for p in col.policy.model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.2)
    batch = col.collect([0, 5])
    cfg = TrainConfig(score_logprob=score_logprob)
    with torch.no_grad():
        recomputed, _ = row_logprobs(col.policy, batch, cfg)
    for old, new in zip(batch.extras["old_logp"], recomputed, strict=True):
        np.testing.assert_allclose(old, new.numpy(), rtol=1e-5, atol=1e-5)


def test_malformed_generations_become_invalid_actions(micro, venv):
    col = _collector(micro, venv, action_mode="generate", max_new_tokens=6, invalid_penalty=0.25)
    torch.manual_seed(0)
    batch = col.collect([0, 1])  # an untrained model writes no <action> tags
    ex = batch.extras
    assert not any(ex["format_ok"])
    assert all(ex["invalid_action"])  # the env answered with its no-op
    np.testing.assert_allclose(ex["format_penalty"], -0.25)
    np.testing.assert_allclose(batch.reward, np.asarray(ex["env_reward"]) - 0.25)
    assert all(x is None for x in ex["old_logp"])  # the trainer's Logp phase computes them
    assert all(1 <= len(a) <= 6 for a in ex["action_ids"])
    assert not batch.success.any()


def test_wellformed_generation_reaches_the_env(micro, venv):
    col = _collector(micro, venv, action_mode="generate")
    tok = col.policy.tokenizer

    class Scripted:
        name = "scripted"

        def generate(self, prompts, max_new_tokens, greedy=False):
            return [
                tok.encode("<think>ok</think><action>Look</action>", add_special_tokens=False)
            ] * len(prompts)

        def sync_weights(self, model):
            pass

        def close(self):
            pass

    col.backend = Scripted()
    batch = col.collect([0, 1])
    assert all(batch.extras["format_ok"]) and set(batch.action.tolist()) == {"look"}
    assert not any(batch.extras["invalid_action"])
    assert (batch.reward == 0).all()


class _Scripted:
    """A backend that writes a fixed text (stands beside the real HF backend tests above)."""

    name = "scripted"

    def __init__(self, tok, text: str):
        self.ids = tok.encode(text, add_special_tokens=False)

    def generate(self, prompts, max_new_tokens, greedy=False):
        return [list(self.ids)] * len(prompts)

    def sync_weights(self, model):
        pass

    def close(self):
        pass


def test_wellformed_but_inadmissible_action_gets_the_penalty(micro, venv):
    # the invalid-action rule: malformed OR inadmissible -> one -invalid_penalty
    col = _collector(micro, venv, action_mode="generate", invalid_penalty=0.5)
    col.backend = _Scripted(
        col.policy.tokenizer, "<think>ok</think><action>fly to the moon</action>"
    )
    batch = col.collect([0, 1])
    ex = batch.extras
    assert all(ex["format_ok"]) and all(ex["invalid_action"])
    np.testing.assert_allclose(ex["format_penalty"], -0.5)
    np.testing.assert_allclose(batch.reward, np.asarray(ex["env_reward"]) - 0.5)
    assert (batch.reward < 0).all()  # no invalid step can look better than a valid no-reward one


def test_score_mode_actions_are_admissible_and_unpenalised(micro, venv):
    batch = _collector(micro, venv, invalid_penalty=0.5).collect([0, 1])
    ex = batch.extras
    assert not any(ex["invalid_action"]) and all(ex["format_ok"])
    np.testing.assert_allclose(ex["format_penalty"], 0.0)
