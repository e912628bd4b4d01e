"""The PPO update: per-row log-probs, one micro-batch's backward, ``ppo_epochs`` x shuffled
mini-batches (docs/training.md, the ``update`` phase; docs/scaling.md, "Data-parallel
training").

There is one update for one process and for ``torchrun``'s ranks: :func:`ppo_update` takes a
:class:`~mvpo_train.distributed.DistContext` (one process: ``DistContext()``, whose
all-reduces are no-ops) and the rows this rank trains. Every rank draws the same mini-batches
from the same generator over the *global* batch, forwards only its own rows, normalises by the
global mini-batch's token (or row) count and sums the gradients over ranks before clipping and
the optimizer step, so the weights after an update equal the one-process update on the same
batch up to floating-point summation order.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch

from mvpo_train.batch import StepBatch
from mvpo_train.config import TrainConfig
from mvpo_train.distributed import (
    DistContext,
    all_sum,
    fsdp_sync_step,
    full_tensor,
    gathered,
    is_fsdp,
    sync_gradients,
)
from mvpo_train.loss import LossConfig, ppo_loss

__all__ = ["micro_batch_backward", "no_grad_logprobs", "ppo_update", "row_logprobs"]

#: the per-token statistics of :func:`mvpo_train.loss.ppo_loss` (besides pg_loss, tokens)
STAT_KEYS = ("kl", "entropy", "clipfrac", "approx_kl")


def row_logprobs(
    policy: Any,
    batch: StepBatch,
    cfg: TrainConfig,
    rows: list[int] | None = None,
    *,
    entropy: bool = False,
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """The policy log-prob of each row's action (per action token), as PPO uses it.

    * ``generate`` mode, or ``score`` mode with ``score_logprob="tokens"``: log-probs of the
      action tokens given the prompt;
    * ``score`` mode with ``score_logprob="choice"``: one value per row,
      ``log_softmax(candidate scores)[chosen]`` (entropy = that distribution's entropy).

    Gradients flow unless called under ``torch.no_grad()``. The same function produces the
    rollout's old log-probs (through :meth:`Policy.score_candidates`) and the trainer's.
    """
    rows = list(range(len(batch))) if rows is None else list(rows)
    ex = batch.extras
    prompts = [ex["prompt_ids"][r] for r in rows]
    if cfg.action_mode == "score" and cfg.score_logprob == "choice":
        cands = [ex["cand_ids"][r] for r in rows]
        res = policy.score_candidates(prompts, cands, norm=cfg.score_norm)
        out, ents = [], []
        for k, r in enumerate(rows):
            logp = torch.log_softmax(res.scores[k].double(), dim=-1)
            out.append(logp[int(ex["choice"][r])].reshape(1))
            if entropy:
                ents.append(-(logp.exp() * logp).sum().reshape(1))
        return out, (ents if entropy else None)
    actions = [ex["action_ids"][r] for r in rows]
    lp, ent = policy.token_logprobs(prompts, actions, entropy=entropy)
    return [x.double() for x in lp], ([x.double() for x in ent] if ent is not None else None)


@torch.no_grad()
def no_grad_logprobs(policy: Any, batch: StepBatch, cfg: TrainConfig) -> list[np.ndarray]:
    """Every row's action log-probs without gradients, as NumPy arrays (old / reference)."""
    return [x.cpu().numpy() for x in row_logprobs(policy, batch, cfg)[0]]


def micro_batch_backward(
    policy: Any,
    batch: StepBatch,
    cfg: TrainConfig,
    loss_cfg: LossConfig,
    micro: list[int],
    adv: np.ndarray,
    old_logp: list,
    ref_logp: list | None,
    denom: float,
) -> dict[str, float]:
    """The clipped PPO loss of the rows ``micro`` (normalised by the mini-batch's ``denom``),
    back-propagated; its statistics (``pg_loss``, ``tokens``, ...)."""
    logp, ent = row_logprobs(policy, batch, cfg, micro, entropy=True)
    seq_index = torch.cat(
        [torch.full((len(x),), k, dtype=torch.long) for k, x in enumerate(logp)]
    ).to(logp[0].device)
    flat = torch.cat(logp)
    old = torch.from_numpy(np.concatenate([old_logp[r] for r in micro])).to(flat.device)
    ref = (
        torch.from_numpy(np.concatenate([ref_logp[r] for r in micro])).to(flat.device)
        if ref_logp is not None
        else None
    )
    a = torch.tensor(adv[micro], dtype=torch.float64, device=flat.device)
    loss, st = ppo_loss(
        flat, old, a, seq_index, len(micro), loss_cfg, ref_logp=ref,
        entropy=torch.cat(ent) if ent is not None else None, denom=denom,
    )  # fmt: skip
    loss.backward()
    return st


def loss_config(cfg: TrainConfig) -> LossConfig:
    """The clipped-PPO settings of ``cfg`` (:mod:`mvpo_train.loss`): :func:`ppo_update` reads
    them from ``cfg`` once, so the loss and the update never disagree (e.g. on ``kl_coef``)."""
    return LossConfig(
        clip_low=cfg.clip_ratio,
        clip_high=cfg.clip_ratio_high or cfg.clip_ratio,
        ratio_level=cfg.ratio_level,
        loss_agg=cfg.loss_agg,
        kl_coef=cfg.kl_coef,
        entropy_coef=cfg.entropy_coef,
    )


def ppo_update(
    policy: Any,
    optimizer: torch.optim.Optimizer,
    batch: StepBatch,
    adv: np.ndarray,
    old_logp: list[np.ndarray],
    ref_logp: list[np.ndarray] | None,
    cfg: TrainConfig,
    generator: torch.Generator,
    local_rows: np.ndarray | None = None,
    ctx: DistContext | None = None,
    on_minibatch: Callable[[], None] | None = None,
) -> dict[str, float]:
    """``ppo_epochs`` passes of shuffled mini-batches of the (global) ``batch``; this process
    trains ``local_rows`` (default: every row) and ``ctx`` sums gradients and statistics over
    the ranks (default: one process). Returns statistics, the same on every rank:
    ``pg_loss`` and ``grad_norm`` (means over optimizer steps), the others (means over the
    trained tokens of all ranks), ``trained_rows`` and ``optimizer_steps``.

    Rows with advantage exactly 0 contribute no gradient when ``kl_coef`` and
    ``entropy_coef`` are 0; with ``skip_zero_adv`` they are not forwarded at all, but still
    count in the loss normaliser, so the update is the same as without skipping.
    ``on_minibatch`` is called after each optimizer step (progress), ``ppo_epochs *
    ceil(len(batch) / minibatch_size)`` times.
    """
    ctx = DistContext() if ctx is None else ctx
    loss_cfg = loss_config(cfg)
    n = len(batch)
    mine = np.zeros(n, dtype=bool)
    mine[np.arange(n) if local_rows is None else np.asarray(local_rows, dtype=np.int64)] = True
    n_tok = np.array([len(x) for x in old_logp], dtype=np.int64)
    skip = cfg.skip_zero_adv and cfg.kl_coef == 0 and cfg.entropy_coef == 0
    mb_size = cfg.minibatch_size or n
    sums = dict.fromkeys(STAT_KEYS, 0.0)  # token-weighted sums of the per-token statistics
    seen = dict.fromkeys(STAT_KEYS, 0.0)
    tokens = 0.0
    pg_loss, grad_norms, trained = [], [], 0
    fsdp = is_fsdp(policy.model)
    params = [p for p in policy.model.parameters() if p.requires_grad]  # sharded under FSDP
    for p in params:  # zero (not None) grads: a mini-batch with nothing to train still steps
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    for _epoch in range(cfg.ppo_epochs):
        perm = torch.randperm(n, generator=generator).numpy()  # the same on every rank
        for start in range(0, n, mb_size):
            mb = perm[start : start + mb_size]
            denom = float(n_tok[mb].sum()) if loss_cfg.loss_agg == "token-mean" else float(len(mb))
            train_rows = [int(r) for r in mb if mine[r] and not (skip and adv[r] == 0.0)]
            optimizer.zero_grad(set_to_none=False)
            mb_pg = 0.0
            with gathered(policy.model, sync_gradients=False) if fsdp else nullcontext():
                for m0 in range(0, len(train_rows), cfg.micro_batch_size):
                    micro = train_rows[m0 : m0 + cfg.micro_batch_size]
                    st = micro_batch_backward(
                        policy, batch, cfg, loss_cfg, micro, adv, old_logp, ref_logp, denom
                    )
                    mb_pg += st.pop("pg_loss")
                    n_micro = st.pop("tokens")
                    tokens += n_micro
                    for k, v in st.items():
                        sums[k] += v * n_micro
                        seen[k] += n_micro
                if fsdp:  # one synchronised backward per mini-batch: FSDP's reduce-scatter
                    fsdp_sync_step(policy)
            if fsdp:
                with torch.no_grad():  # FSDP averaged over ranks: back to the sum
                    for p in params:
                        p.grad.mul_(ctx.world_size)
            else:
                sync_gradients(params, ctx)
            grad_norm = (
                float(full_tensor(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)))
                if cfg.max_grad_norm > 0
                else float(
                    torch.sqrt(sum(full_tensor(p.grad).double().pow(2).sum() for p in params))
                )
            )
            optimizer.step()
            if on_minibatch is not None:
                on_minibatch()
            pg_loss.append(mb_pg)
            grad_norms.append(grad_norm)
            trained += len(train_rows)
    pg_loss = all_sum(pg_loss, ctx) if pg_loss else pg_loss
    totals = all_sum([tokens, float(trained)] + [sums[k] for k in STAT_KEYS], ctx)
    tokens, trained_all, stat_sums = totals[0], totals[1], totals[2:]
    present = all_sum([seen[k] for k in STAT_KEYS], ctx)
    out = {
        k: s / tokens
        for k, s, c in zip(STAT_KEYS, stat_sums, present, strict=True)
        if tokens and c > 0
    }
    out["pg_loss"] = float(np.mean(pg_loss)) if pg_loss else 0.0
    out["grad_norm"] = float(np.mean(grad_norms)) if grad_norms else 0.0
    out["trained_rows"] = float(trained_all)
    out["optimizer_steps"] = float(len(grad_norms))
    return out
