"""The encoder policy's trainable action scorer (docs/policies.md, "The head").

:class:`ScorerHead` is an MLP ``(2C+1)·dim -> hidden -> 1`` over
``[ctx_1..C, a, ctx_1*a, ..., ctx_C*a]`` (``C`` context embeddings of a prompt, ``a`` the
embedding of one admissible action). Its first layer ``W = [W_c | W_a | W_x]`` is linear, so
for a prompt ``p`` with candidates ``a_1..a_K``

    W [ctx, a, ctx*a] + b = (W_c ctx + b) + (W_a + sum_c W_x^c diag(ctx_c)) a = u_p + M_p a

(``W_x^c`` the ``[hidden, dim]`` block of context ``c``): a per-prompt vector ``u_p`` and
matrix ``M_p``, then one ``[hidden, dim]`` product per candidate instead of a
``[hidden, (2C+1)·dim]`` one. Two forms compute the same function from the same weights
(the same ``model.safetensors``):

* ``"factored"`` (the default): ``u_p``, ``M_p`` once per prompt, candidates padded to the
  prompt's longest list and multiplied in one batched product; equal to ``concat`` up to float
  rounding (tested); about 9x fewer FLOPs with the ALFWorld ``concat`` layout
  (``benchmarks/cpu_cost.py``);
* ``"concat"`` (the first form): the concatenated input built for every (prompt, candidate)
  pair; kept to compare with and to reproduce earlier runs bit for bit.

The form is a way of computing, not part of the weights: it is not saved in ``config.json``;
``mvpo-train --encoder-head`` chooses it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

__all__ = [
    "DEFAULT_POOL",
    "HEAD_FORMS",
    "HEAD_KIND",
    "HISTORY_POOLS",
    "ScorerHead",
    "check_layout",
    "context_segments",
    "prompt_segments",
]

HEAD_KIND = "mvpo-encoder-head"
SEGMENTS = 3  # the first layout's prompt segments: task, current observation, previous action

#: history layouts (docs/policies.md, "Input layout"): ``last_action`` is the first one
#: (the previous action only; what a head folder whose config.json names no layout reads)
HISTORY_POOLS = ("concat", "mean", "last_action")
LEGACY_POOL = "last_action"
#: the layout of a new head: the first one, so earlier runs and warm starts reproduce; the
#: history layouts are opt-in (``--history-pool concat`` of the warm start; ``concat`` measured
#: best by benchmarks/policy_candidates.py, docs/policies.md)
DEFAULT_POOL = LEGACY_POOL
#: the ways of computing the head's first layer (module docstring); the first is the default
HEAD_FORMS = ("factored", "concat")


def check_layout(history_length: int, history_pool: str) -> None:
    """A ``ValueError`` (one line) for a layout that does not exist."""
    if history_pool not in HISTORY_POOLS:
        raise ValueError(f"history_pool must be one of {list(HISTORY_POOLS)}, not {history_pool!r}")
    if (
        isinstance(history_length, bool)
        or not isinstance(history_length, int)
        or history_length < 0
    ):
        raise ValueError(f"history_length must be an integer >= 0, not {history_length!r}")


def prompt_segments(history_length: int, history_pool: str) -> int:
    """Segments of a prompt's ids: task, current observation, then (``concat``/``mean``) one
    observation and one action per past pair, or (``last_action``) the previous action."""
    return SEGMENTS if history_pool == LEGACY_POOL else 2 + 2 * history_length


def context_segments(history_length: int, history_pool: str) -> int:
    """Context vectors the head reads: the prompt's segments, or (``mean``) task, current
    observation, mean past observation, mean past action (no history: task, observation)."""
    if history_pool == "mean":
        return 4 if history_length > 0 else 2
    return prompt_segments(history_length, history_pool)


class ScorerHead(nn.Module):
    """MLP over ``[context..., action, context_1*action, ...]`` embeddings -> one score per
    (context, action) pair (docs/policies.md, "Input layout"), computed in ``form`` (one of
    :data:`HEAD_FORMS`, module docstring).

    The context segments depend on the layout (:func:`context_segments`): ``last_action``
    (the first layout) reads the task, the current observation and the previous action;
    ``concat`` reads the task, the current observation and each of the last
    ``history_length`` (observation, action) pairs, most recent first; ``mean`` reads the
    same prompt segments but pools the shown past observations and past actions into one mean
    each. Parameters (``net.0`` the first layer, ``net.2`` the output) and ``config`` are the
    same in both forms, so a head saved by one loads into the other."""

    #: prompts per chunk of the factored form: ``M_p`` is ``hidden x dim`` floats per prompt
    #: (384 KiB at 256 x 384), so a chunk holds 25 MB; 64 was the fastest of 8-256 on one
    #: thread (a chunk that fits the caches; an update micro-batch is one chunk)
    CHUNK_PROMPTS = 64
    #: the factored form builds ``M_p`` when candidates x (C + 1) per prompt exceed this, else
    #: multiplies each candidate's ``[a, ctx*a]`` (one thread, 256 x 384: ``M_p`` for 64
    #: prompts costs about as much as 15 candidates per prompt with C = 6, 25 with C = 3)
    M_CANDIDATE_WORK = 96
    #: candidate rows per chunk of the ``concat`` form (an ALFWorld batch's old / reference
    #: log-probs in one forward peaked at 8.74 GB, 1.74 GB in chunks of this size;
    #: docs/policies.md, "Memory")
    CHUNK_ROWS = 8192

    def __init__(
        self,
        dim: int = 384,
        hidden: int = 256,
        encoder_sha256: str = "",
        *,
        history_length: int = 2,
        history_pool: str = DEFAULT_POOL,
        form: str = HEAD_FORMS[0],
    ):
        super().__init__()
        check_layout(history_length, history_pool)
        n_ctx = context_segments(history_length, history_pool)
        self.net = nn.Sequential(
            nn.Linear((2 * n_ctx + 1) * dim, hidden), nn.Tanh(), nn.Linear(hidden, 1)
        )
        self.form = form  # validated by the setter
        # what checkpoint.load_model_weights reads; the rest is saved to config.json
        self.config = SimpleNamespace(
            kind=HEAD_KIND,
            dim=dim,
            hidden=hidden,
            encoder_sha256=encoder_sha256,
            history_length=int(history_length),
            history_pool=history_pool,
            tie_word_embeddings=False,
        )

    @property
    def history_length(self) -> int:
        return int(self.config.history_length)

    @property
    def history_pool(self) -> str:
        return str(self.config.history_pool)

    @property
    def form(self) -> str:
        return self._form

    @form.setter
    def form(self, value: str) -> None:
        if value not in HEAD_FORMS:
            raise ValueError(f"encoder head form must be one of {list(HEAD_FORMS)}, not {value!r}")
        self._form = value

    # ------------------------------------------------------------------ the concat form
    def forward(self, ctx: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """The ``concat`` form on pairs: ``ctx`` ``[N, C, dim]``, ``act`` ``[N, dim]`` ->
        ``[N]``."""
        x = torch.cat([ctx.flatten(1), act, (ctx * act.unsqueeze(1)).flatten(1)], dim=-1)
        return self.net(x).squeeze(-1)

    # ------------------------------------------------------------------ grouped scoring
    def score_groups(self, ctx: torch.Tensor, act: torch.Tensor, counts: list[int]) -> torch.Tensor:
        """Scores of prompt ``p``'s ``counts[p]`` candidates, flat in prompt order: ``ctx``
        ``[P, C, dim]``, ``act`` ``[sum(counts), dim]`` -> ``[sum(counts)]``, in the head's
        ``form``, in chunks (:attr:`CHUNK_PROMPTS` prompts or balanced :attr:`CHUNK_ROWS`
        rows) whose activations are recomputed in the backward pass when gradients are on,
        so peak memory stays that of one chunk."""
        if self.form == "concat":
            return self._concat_chunks(ctx, act, counts)
        if len(counts) <= self.CHUNK_PROMPTS:
            return self._factored(ctx, act, counts) if sum(counts) else act.new_zeros(0)
        out, start = [], 0
        for p0 in range(0, len(counts), self.CHUNK_PROMPTS):
            part = counts[p0 : p0 + self.CHUNK_PROMPTS]
            n = sum(part)
            if n:
                args = (ctx[p0 : p0 + len(part)], act[start : start + n], part)
                out.append(self._run(self._factored, *args))
            start += n
        return torch.cat(out) if out else act.new_zeros(0)

    def _run(self, fn: Callable[..., torch.Tensor], *args: Any) -> torch.Tensor:
        """``fn(*args)``; with gradients on and more than one chunk, checkpointed (its
        activations recomputed in the backward pass instead of kept)."""
        if torch.is_grad_enabled() and any(p.requires_grad for p in self.parameters()):
            return checkpoint(fn, *args, use_reentrant=False)
        return fn(*args)

    def _factored(self, ctx: torch.Tensor, act: torch.Tensor, counts: list[int]) -> torch.Tensor:
        """The factored form of one chunk (module docstring): ``u_p`` once per prompt, then
        either ``M_p`` once per prompt and one ``[hidden, dim]`` product per candidate (many
        candidates per prompt), or the candidate part ``[W_a | W_x] [a, ctx*a]`` per candidate
        (few candidates: building ``M_p`` costs more than it saves); see
        :attr:`M_CANDIDATE_WORK`."""
        lin = self.net[0]
        P, C, D = ctx.shape
        w = lin.weight  # [hidden, (2C+1) D] = [W_c | W_a | W_x]
        u = torch.addmm(lin.bias, ctx.reshape(P, C * D), w[:, : C * D].t())  # [P, hidden]
        sizes = torch.tensor(counts, device=ctx.device)
        if len(act) * (C + 1) <= self.M_CANDIDATE_WORK * P:
            rows = torch.repeat_interleave(torch.arange(P, device=ctx.device), sizes)
            x = torch.cat([act.unsqueeze(1), ctx[rows] * act.unsqueeze(1)], dim=1).flatten(1)
            pre = torch.addmm(u[rows], x, w[:, C * D :].t())  # [N, hidden]
            return self.net[2](torch.tanh(pre)).squeeze(-1)
        # W_a joins W_x as the block of a constant context of ones, so M_p is one product
        # batched over the embedding dimension: M[d] = [ctx, 1][:, :, d] @ [W_x | W_a][:, :, d]
        w_xa = torch.cat([w[:, (C + 1) * D :], w[:, C * D : (C + 1) * D]], dim=1)
        ctx1 = torch.cat([ctx, ctx.new_ones(P, 1, D)], dim=1)  # [P, C+1, D]
        m = torch.bmm(ctx1.permute(2, 0, 1), w_xa.reshape(-1, C + 1, D).permute(2, 1, 0))
        mask = torch.arange(max(counts), device=ctx.device) < sizes.unsqueeze(1)  # [P, K]
        padded = act.new_zeros(P, mask.shape[1], D)
        padded[mask] = act
        pre = torch.baddbmm(u.unsqueeze(1), padded, m.permute(1, 0, 2))  # [P, K, hidden]
        return self.net[2](torch.tanh(pre[mask])).squeeze(-1)

    def _concat_chunks(
        self, ctx: torch.Tensor, act: torch.Tensor, counts: list[int]
    ) -> torch.Tensor:
        """The ``concat`` form in balanced chunks of at most :attr:`CHUNK_ROWS` rows (none
        under half of that once there are two): identical to one forward below the limit."""
        rows = torch.repeat_interleave(
            torch.arange(len(counts), device=ctx.device), torch.tensor(counts, device=ctx.device)
        )
        n = len(rows)
        if n <= self.CHUNK_ROWS:
            return self(ctx[rows], act)
        size = -(-n // -(-n // self.CHUNK_ROWS))
        return torch.cat([self(ctx[rows[i : i + size]], act[i : i + size])
                          for i in range(0, n, size)])  # fmt: skip

    # ------------------------------------------------------------------ files
    def save_pretrained(self, path: str | Path, safe_serialization: bool = True) -> None:
        """``model.safetensors`` (the head's weights) + ``config.json`` (its shape and the
        encoder's SHA-256), the layout :mod:`mvpo_train.checkpoint` expects."""
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}
        save_file(state, str(path / "model.safetensors"))
        cfg = {k: v for k, v in vars(self.config).items() if k != "tie_word_embeddings"}
        (path / "config.json").write_text(json.dumps(cfg, indent=1, sort_keys=True) + "\n")
