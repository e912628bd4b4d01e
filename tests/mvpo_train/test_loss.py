"""Clipped PPO objective, KL, aggregation; one update lowers the loss."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mvpo_train.batch import StepBatch
from mvpo_train.config import TrainConfig
from mvpo_train.loss import LossConfig, aggregate, low_var_kl, ppo_loss
from mvpo_train.policy import Policy
from mvpo_train.trainer import ppo_update, row_logprobs


def _t(x):
    return torch.tensor(x, dtype=torch.float64)


def test_low_var_kl_values():
    lp = _t([-1.0, -2.0, -0.5])
    assert torch.allclose(low_var_kl(lp, lp), torch.zeros(3, dtype=torch.float64))
    ref = _t([-1.5, -1.0, -0.5])
    d = ref - lp
    torch.testing.assert_close(low_var_kl(lp, ref), torch.exp(d) - d - 1)
    assert (low_var_kl(lp, ref) >= 0).all()
    assert low_var_kl(_t([0.0]), _t([-100.0])).item() <= 10.0  # clamped


def test_ratio_one_gives_minus_mean_advantage():
    logp = _t([-1.0, -2.0, -0.3])
    seq = torch.tensor([0, 0, 1])
    adv = _t([2.0, -1.0])
    loss, st = ppo_loss(logp, logp.clone(), adv, seq, 2, LossConfig())
    # token-mean: tokens carry advantages [2, 2, -1]
    assert math.isclose(loss.item(), -(2 + 2 - 1) / 3)
    assert st["clipfrac"] == 0.0 and abs(st["approx_kl"]) < 1e-12
    loss_s, _ = ppo_loss(logp, logp.clone(), adv, seq, 2, LossConfig(loss_agg="seq-mean-token-sum"))
    assert math.isclose(loss_s.item(), -(2 * 2 - 1) / 2)
    loss_m, _ = ppo_loss(
        logp, logp.clone(), adv, seq, 2, LossConfig(loss_agg="seq-mean-token-mean")
    )
    assert math.isclose(loss_m.item(), -(2 - 1) / 2)


def test_clipping_hand_values():
    old = _t([0.0, 0.0])
    new = _t([math.log(1.5), math.log(0.5)])  # ratios 1.5 and 0.5
    seq = torch.tensor([0, 1])
    # A > 0 with ratio 1.5: clipped at 1.2; A < 0 with ratio 0.5: clipped at 0.8
    loss, st = ppo_loss(new, old, _t([1.0, -1.0]), seq, 2, LossConfig(clip_low=0.2, clip_high=0.2))
    assert math.isclose(loss.item(), (-1.2 + 0.8) / 2, rel_tol=1e-12)
    assert st["clipfrac"] == 1.0
    # A > 0 with ratio 0.5: unclipped side is the max
    loss2, st2 = ppo_loss(new, old, _t([-1.0, 1.0]), seq, 2, LossConfig())
    assert math.isclose(loss2.item(), (1.5 - 0.5) / 2, rel_tol=1e-12)
    assert st2["clipfrac"] == 0.0


def test_sequence_ratio_uses_the_whole_action_probability():
    old = _t([-1.0, -1.0])
    new = _t([-0.9, -1.2])  # per-token ratios e^0.1, e^-0.2; sequence ratio e^-0.1
    seq = torch.tensor([0, 0])
    loss, _ = ppo_loss(new, old, _t([1.0]), seq, 1, LossConfig(ratio_level="sequence"))
    assert math.isclose(loss.item(), -math.exp(-0.1), rel_tol=1e-12)


def test_kl_and_entropy_terms():
    lp = _t([-1.0, -1.0])
    ref = _t([-2.0, -0.5])
    ent = _t([0.7, 0.3])
    seq = torch.tensor([0, 1])
    cfg = LossConfig(kl_coef=0.5, entropy_coef=0.1)
    loss, st = ppo_loss(lp, lp.clone(), _t([0.0, 0.0]), seq, 2, cfg, ref_logp=ref, entropy=ent)
    kl = low_var_kl(lp, ref).mean().item()
    assert math.isclose(st["kl"], kl) and math.isclose(st["entropy"], 0.5)
    assert math.isclose(loss.item(), 0.5 * kl - 0.1 * 0.5, rel_tol=1e-12)


def test_aggregate_denominator_for_micro_batches():
    x = _t([1.0, 2.0, 3.0, 4.0])
    seq = torch.tensor([0, 0, 1, 2])
    whole = aggregate(x, seq, 3, "token-mean")
    parts = aggregate(x[:2], seq[:2], 1, "token-mean", denom=4) + aggregate(
        x[2:], torch.tensor([0, 1]), 2, "token-mean", denom=4
    )
    assert math.isclose(whole.item(), parts.item())
    with pytest.raises(ValueError):
        LossConfig(loss_agg="mean")


# ------------------------------------------------------------------ with the model


def _fixed_batch(policy: Policy) -> StepBatch:
    """Four one-step trajectories choosing among three candidates (score mode)."""
    rng = np.random.default_rng(0)
    cands = [[5, 6], [7], [8, 9, 10]]
    rows, extras = (
        [],
        {k: [] for k in ("prompt_ids", "action_ids", "old_logp", "cand_ids", "choice")},
    )
    for i in range(4):
        rows.append({
            "group": 0, "traj": i, "t": 0, "reward": float(i % 2), "terminated": True,
            "truncated": False, "anchor": "a", "signature": "s", "milestones": (),
            "action": f"a{i % 3}", "success": bool(i % 2),
        })  # fmt: skip
        extras["prompt_ids"].append(rng.integers(5, 200, size=6).tolist())
        extras["cand_ids"].append(cands)
        extras["choice"].append(i % 3)
        extras["action_ids"].append(cands[i % 3])
        extras["old_logp"].append(None)
    batch = StepBatch.from_steps(rows, extras=extras)
    with torch.no_grad():
        lp, _ = row_logprobs(policy, batch, TrainConfig())
    for i, x in enumerate(lp):
        batch.extras["old_logp"][i] = x.numpy()
    return batch


@pytest.mark.parametrize("score_logprob", ["choice", "tokens"])
def test_one_ppo_update_lowers_the_loss(micro, score_logprob):
    torch.manual_seed(0)
    policy = Policy.from_pretrained(str(micro), device="cpu", dtype="float32")
    cfg = TrainConfig(
        score_logprob=score_logprob, lr=1e-2, minibatch_size=0, ppo_epochs=1, skip_zero_adv=False
    )
    batch = _fixed_batch(policy)
    with torch.no_grad():
        lp, _ = row_logprobs(policy, batch, cfg)
    old = [x.numpy() for x in lp]
    batch.extras["old_logp"] = old
    adv = np.array([-1.0, 1.0, -1.0, 1.0])
    lcfg = LossConfig()

    def loss_now() -> float:
        with torch.no_grad():
            new, _ = row_logprobs(policy, batch, cfg)
        seq = torch.cat([torch.full((len(x),), k) for k, x in enumerate(new)])
        loss, _ = ppo_loss(
            torch.cat(new),
            torch.from_numpy(np.concatenate(old)),
            torch.from_numpy(adv),
            seq,
            4,
            lcfg,
        )
        return loss.item()

    before = loss_now()
    opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr)
    stats = ppo_update(policy, opt, batch, adv, old, None, cfg, torch.Generator().manual_seed(0))
    after = loss_now()
    assert math.isclose(stats["pg_loss"], before, rel_tol=1e-6, abs_tol=1e-9)
    assert after < before - 1e-4


@pytest.mark.parametrize("batch_adv", [[0.0, 1.0, 0.0, -2.0], [0.0, 0.0, 0.5, 0.0]])
def test_skipping_zero_advantage_rows_changes_nothing(micro, batch_adv):
    batch_adv = np.array(batch_adv)
    params = []
    for skip in (True, False):
        torch.manual_seed(0)
        policy = Policy.from_pretrained(str(micro), device="cpu", dtype="float32")
        cfg = TrainConfig(
            lr=1e-2, minibatch_size=2, micro_batch_size=1, ppo_epochs=1, skip_zero_adv=skip
        )
        batch = _fixed_batch(policy)
        opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr)
        ppo_update(
            policy, opt, batch, batch_adv, batch.extras["old_logp"], None, cfg,
            torch.Generator().manual_seed(0),
        )  # fmt: skip
        params.append(torch.cat([p.detach().flatten() for p in policy.model.parameters()]))
    torch.testing.assert_close(params[0], params[1], atol=1e-7, rtol=1e-6)
