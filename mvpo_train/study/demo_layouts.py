"""Expert demonstrations cut to other prompt layouts, and split by game.

What ``benchmarks/policy_candidates.py`` compares warm starts and history layouts with
(docs/policies.md, "Input layout"). A demonstration
(:data:`mvpo_train.warm_start.Demonstration`) holds prompt ids whose segments are separated by
the embedder's ``sep`` id: the task, the current observation, then one observation and one
action per past pair, most recent first. One collection with the most pairs serves every
layout: :func:`relayout` cuts its segments to what a builder of fewer pairs (or the
``last_action`` layout) renders, since the builder shows the last pairs of the same episode.

* :func:`parse_candidate`: ``encoder:K[:H[:POOL]]`` -> (warm-start steps, pairs, pool);
* :func:`relayout`: one prompt's ids in another layout;
* :func:`game_of_steps`: the game of each demonstration (collected game after game);
* :func:`split_games`: the demonstrations of some games held out (seeded);
* :func:`expert_agreement`: how a policy scores the expert's actions of demonstrations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from mvpo_train.encoder_head import DEFAULT_POOL, HISTORY_POOLS, LEGACY_POOL, prompt_segments

__all__ = ["expert_agreement", "game_of_steps", "parse_candidate", "relayout", "split_games"]


def parse_candidate(name: str, history_length: int) -> tuple[int, int, str]:
    """``encoder:K[:H[:POOL]]`` -> (K, H, POOL); H defaults to ``history_length``, POOL to
    the default pool. Anything else is a ``ValueError`` naming the form."""
    parts = name.split(":")
    try:
        if parts[0] != "encoder" or not 2 <= len(parts) <= 4:
            raise ValueError
        steps = int(parts[1])
        hist = int(parts[2]) if len(parts) > 2 else history_length
        pool = parts[3] if len(parts) > 3 else DEFAULT_POOL
        if steps < 0 or hist < 0 or pool not in HISTORY_POOLS:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"candidate {name!r} is not encoder:K[:H[:POOL]] (K, H >= 0; POOL one of "
            f"{list(HISTORY_POOLS)})"
        ) from None
    return steps, hist, pool


def relayout(ids: Sequence[int], sep: int, hist: int, pool: str) -> list[int]:
    """Prompt ids of layout (``hist``, ``pool``) from those of a demonstration collected with
    ``concat`` and at least ``hist`` pairs (``last_action``: the task, the observation and the
    previous action)."""
    segs: list[list[int]] = [[]]
    for x in ids:
        if x == sep:
            segs.append([])
        else:
            segs[-1].append(x)
    keep = [segs[0], segs[1], segs[3]] if pool == LEGACY_POOL else segs[: 2 + 2 * hist]
    if len(keep) != prompt_segments(hist, pool):
        raise ValueError(
            f"a prompt of {len(segs)} segments cannot be cut to {hist} pairs ({pool}): collect "
            "the demonstrations with at least as many pairs"
        )
    out: list[int] = []
    for k, seg in enumerate(keep):
        out += ([sep] if k else []) + seg
    return out


def game_of_steps(demos: Sequence[Any], sep: int) -> list[int]:
    """The game number of each demonstration (collected game after game, with at least one
    past pair: a step whose past pairs are all empty starts the next game's plan)."""
    out, game = [], -1
    for ids, _, _ in demos:
        cuts = [k for k, x in enumerate(ids) if x == sep]
        if (
            all(b == a + 1 for a, b in zip(cuts[1:-1], cuts[2:], strict=True))
            and cuts[-1] == len(ids) - 1
        ):
            game += 1
        out.append(game)
    return out


def split_games(
    demos: Sequence[Any], sep: int, held_out: float, seed: int
) -> tuple[list[Any], list[Any]]:
    """``(fit, held)``: the demonstrations of a ``held_out`` share of the games (at least one,
    drawn by a torch generator seeded with ``seed``) in ``held``, the others in ``fit``."""
    game_of = game_of_steps(demos, sep)
    n_games = max(game_of) + 1
    gen = torch.Generator().manual_seed(seed)
    n_held = max(1, round(held_out * n_games))
    held_games = set(torch.randperm(n_games, generator=gen)[:n_held].tolist())
    fit = [d for g, d in zip(game_of, demos, strict=True) if g not in held_games]
    held = [d for g, d in zip(game_of, demos, strict=True) if g in held_games]
    return fit, held


def expert_agreement(policy: Any, demos: Sequence[Any], batch: int = 64) -> dict[str, float]:
    """How ``policy`` (a ``score_candidates(prompts, candidates)`` whose result has one score
    tensor per prompt) scores the expert's actions of ``demos``, without gradients:
    ``top1`` (the share where the expert's action scores highest), ``prob`` (its mean
    probability under the softmax of the scores) and ``nll`` (its mean cross-entropy)."""
    if not demos:
        raise ValueError("expert_agreement needs at least one demonstration")
    hits, probs, nll = [], [], []
    with torch.no_grad():
        for k in range(0, len(demos), batch):
            part = demos[k : k + batch]
            res = policy.score_candidates([d[0] for d in part], [d[1] for d in part])
            for scores, (_, _, expert) in zip(res.scores, part, strict=True):
                logp = torch.log_softmax(scores, dim=-1)
                hits.append(int(torch.argmax(scores)) == expert)
                probs.append(float(logp[expert].exp()))
                nll.append(-float(logp[expert]))
    n = len(hits)
    return {"top1": sum(hits) / n, "prob": sum(probs) / n, "nll": sum(nll) / n}
