"""Timing the LM policy's score mode: the three ways :class:`~mvpo_train.policy.Policy`
scores a batch of candidate actions (docs/training.md, "Action modes").

* ``kv``: the default; one forward over the prompts keeps their KV cache, then every
  candidate of a prompt runs as one row on top of that cache, shared (a block mask);
* ``kv copy``: the same two passes with the prompt cache copied once per candidate (the
  path before the shared cache; the fallback for flash and flex attention);
* ``concat``: every prompt + candidate sequence in full, no cache.

:func:`score_batch` draws a seeded batch of prompts and candidates; :func:`time_scorers` times
the scorers on it (forward alone, or forward + backward of the summed scores), in process CPU
seconds, the median of some rounds that each run every scorer once. ``benchmarks/policy_candidates.py --score-prompts``
writes the table.
"""

from __future__ import annotations

import statistics
import time
from contextlib import nullcontext

import torch

from mvpo_train.policy import Policy

__all__ = ["SCORERS", "score_batch", "time_scorers"]

#: scorer name -> (``Policy.score_impl``, copy the prompt cache per candidate)
SCORERS: dict[str, tuple[str, bool]] = {
    "kv": ("kv", False),
    "kv copy": ("kv", True),
    "concat": ("concat", False),
}


def score_batch(
    vocab: int,
    prompts: int,
    prompt_tokens: int,
    candidates: tuple[int, int] = (6, 11),
    candidate_tokens: tuple[int, int] = (3, 9),
    seed: int = 0,
) -> tuple[list[list[int]], list[list[list[int]]]]:
    """``prompts`` prompts of ``prompt_tokens`` token ids each (from ``[1, vocab)``), each
    with between ``candidates[0]`` and ``candidates[1]`` candidates of between
    ``candidate_tokens[0]`` and ``candidate_tokens[1]`` tokens (bounds included), drawn by a
    generator seeded with ``seed``."""
    if vocab < 2 or prompts < 1 or prompt_tokens < 1:
        raise ValueError(
            f"score_batch needs vocab >= 2, prompts >= 1 and prompt_tokens >= 1, got {vocab}, "
            f"{prompts}, {prompt_tokens}"
        )
    gen = torch.Generator().manual_seed(seed)

    def ids(n: int) -> list[int]:
        return torch.randint(1, vocab, (n,), generator=gen).tolist()

    def between(lo_hi: tuple[int, int]) -> int:
        return int(torch.randint(lo_hi[0], lo_hi[1] + 1, (1,), generator=gen))

    batch_prompts = [ids(prompt_tokens) for _ in range(prompts)]
    batch_cands = [
        [ids(between(candidate_tokens)) for _ in range(between(candidates))] for _ in range(prompts)
    ]
    return batch_prompts, batch_cands


def time_scorers(
    policy: Policy,
    prompts: list[list[int]],
    candidates: list[list[list[int]]],
    backward: bool,
    repeats: int = 3,
    scorers: tuple[str, ...] = tuple(SCORERS),
) -> dict[str, float]:
    """Median process CPU seconds of ``policy.score_candidates`` with each of ``scorers``
    (keys of :data:`SCORERS`) over ``repeats`` rounds, each round running every scorer once
    (so the load of a shared machine meets them alike), with ``backward`` the backward pass of
    the summed scores included (else under ``torch.no_grad``). The policy's own settings are
    restored."""
    unknown = [s for s in scorers if s not in SCORERS]
    if unknown:
        raise ValueError(f"unknown scorer(s) {unknown}; known: {list(SCORERS)}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    saved = policy.score_impl, policy._copy_prompt_cache
    seconds: dict[str, list[float]] = {s: [] for s in scorers}
    try:
        for _ in range(repeats):
            for name in scorers:
                policy.score_impl, policy._copy_prompt_cache = SCORERS[name]
                policy.model.zero_grad(set_to_none=True)
                start = time.process_time()
                with nullcontext() if backward else torch.no_grad():
                    scores = policy.score_candidates(prompts, candidates).scores
                    if backward:
                        torch.stack([s.sum() for s in scores]).sum().backward()
                seconds[name].append(time.process_time() - start)
    finally:
        policy.score_impl, policy._copy_prompt_cache = saved
        policy.model.zero_grad(set_to_none=True)
    return {name: statistics.median(v) for name, v in seconds.items()}
