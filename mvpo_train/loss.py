"""The clipped PPO objective on action tokens, with optional KL to a reference and entropy.

docs/architecture.md (``loss.py (clipped PPO + KL)``); MVPO paper §4.3: the routed step advantage
of docs/estimators.md §3.6 (or any estimator's) is assigned to every token of the step's action
and optimised with a clipped, critic-free objective.

For one step ``i`` with action tokens ``k`` (one "token" when the score-mode policy log-prob is
the candidate choice):

* ``ratio_level="token"``: ``rho_{ik} = exp(logp_{ik} - old_{ik})`` per token;
  ``"sequence"``: one ratio per step, ``exp(sum_k logp_{ik} - sum_k old_{ik})`` (the action's
  probability ratio), shared by its tokens;
* ``pg_{ik} = max(-A_i rho_{ik}, -A_i clip(rho_{ik}, 1 - eps_low, 1 + eps_high))``;
* ``kl_{ik}`` = ``low_var_kl`` (Schulman's k3 estimator, ``exp(ref - logp) - (ref - logp) - 1``,
  clamped to [-10, 10] as in verl) to the frozen reference;
* loss terms ``pg + kl_coef * kl - entropy_coef * H`` aggregated by ``loss_agg``:
  ``token-mean`` (mean over every action token of the mini-batch), ``seq-mean-token-sum``
  (sum over a step's tokens, mean over steps) or ``seq-mean-token-mean``.

Inputs are flat token tensors plus ``seq_index`` (which step each token belongs to).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["LossConfig", "aggregate", "low_var_kl", "ppo_loss"]

LOSS_AGGS = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean")


@dataclass(frozen=True)
class LossConfig:
    clip_low: float = 0.2
    clip_high: float = 0.2
    ratio_level: str = "token"
    loss_agg: str = "token-mean"
    kl_coef: float = 0.0
    entropy_coef: float = 0.0

    def __post_init__(self) -> None:
        if self.ratio_level not in ("token", "sequence"):
            raise ValueError(f"ratio_level must be 'token' or 'sequence', got {self.ratio_level!r}")
        if self.loss_agg not in LOSS_AGGS:
            raise ValueError(f"loss_agg must be one of {LOSS_AGGS}, got {self.loss_agg!r}")


def low_var_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || ref) per sampled token, clamped to [-10, 10]."""
    d = (ref_logp - logp).clamp(-20.0, 20.0)
    return (torch.exp(d) - d - 1.0).clamp(-10.0, 10.0)


def aggregate(
    x: torch.Tensor, seq_index: torch.Tensor, n_seq: int, how: str, denom: float | None = None
):
    """Aggregate per-token values ``x`` (``loss_agg``); ``denom`` overrides the mean's count
    (gradient accumulation over micro-batches divides by the whole mini-batch)."""
    if how == "token-mean":
        return x.sum() / (denom if denom is not None else max(x.numel(), 1))
    per_seq = torch.zeros(n_seq, dtype=x.dtype, device=x.device).index_add(0, seq_index, x)
    if how == "seq-mean-token-mean":
        count = torch.zeros(n_seq, dtype=x.dtype, device=x.device).index_add(
            0, seq_index, torch.ones_like(x)
        )
        per_seq = per_seq / count.clamp(min=1.0)
    return per_seq.sum() / (denom if denom is not None else max(n_seq, 1))


def ppo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    seq_index: torch.Tensor,
    n_seq: int,
    cfg: LossConfig,
    ref_logp: torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
    denom: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Loss (a scalar with gradient) and detached statistics; see the module docstring.

    Statistics: ``pg_loss`` is the policy term of the objective (aggregated like the loss,
    with ``denom``); ``kl``, ``entropy``, ``clipfrac``, ``approx_kl`` are plain means over
    the given tokens, and ``tokens`` their count (for weighting across micro-batches).

    ``logp``, ``old_logp``, ``ref_logp``, ``entropy``: per action token; ``adv``: per step
    (``n_seq``); ``seq_index``: step of each token.
    """
    adv_tok = adv[seq_index].to(logp.dtype)
    old_logp = old_logp.to(logp.dtype)
    if cfg.ratio_level == "token":
        log_ratio = logp - old_logp
    else:
        per_seq = torch.zeros(n_seq, dtype=logp.dtype, device=logp.device).index_add(
            0, seq_index, logp - old_logp
        )
        log_ratio = per_seq[seq_index]
    ratio = torch.exp(log_ratio.clamp(-20.0, 20.0))
    pg1 = -adv_tok * ratio
    pg2 = -adv_tok * ratio.clamp(1.0 - cfg.clip_low, 1.0 + cfg.clip_high)
    pg = torch.maximum(pg1, pg2)
    total = pg
    stats: dict[str, float] = {}
    if ref_logp is not None and cfg.kl_coef > 0:
        kl = low_var_kl(logp, ref_logp.to(logp.dtype))
        total = total + cfg.kl_coef * kl
        stats["kl"] = float(kl.detach().mean())
    if entropy is not None:
        if cfg.entropy_coef != 0:
            total = total - cfg.entropy_coef * entropy
        stats["entropy"] = float(entropy.detach().mean())
    loss = aggregate(total, seq_index, n_seq, cfg.loss_agg, denom)
    with torch.no_grad():
        stats["pg_loss"] = float(aggregate(pg.detach(), seq_index, n_seq, cfg.loss_agg, denom))
        clipped = (pg2 > pg1).to(logp.dtype)
        stats["clipfrac"] = float(clipped.mean())
        # k3 estimate of KL(old || new), as CleanRL logs it
        stats["approx_kl"] = float(((ratio - 1.0) - log_ratio).mean())
        stats["tokens"] = float(logp.numel())
    return loss, stats
