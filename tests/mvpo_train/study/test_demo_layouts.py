"""Demonstrations cut to other prompt layouts (:mod:`mvpo_train.study.demo_layouts`)."""

from __future__ import annotations

import math

import pytest
import torch

from mvpo_train.encoder_head import DEFAULT_POOL
from mvpo_train.study.demo_layouts import (
    expert_agreement,
    game_of_steps,
    parse_candidate,
    relayout,
    split_games,
)

SEP = 0
#: task [1], observation [2], past pair 1 ([3], [4]), past pair 2 ([5, 6], [7])
IDS = [1, SEP, 2, SEP, 3, SEP, 4, SEP, 5, 6, SEP, 7]


def test_parse_candidate_defaults_and_refusals():
    assert parse_candidate("encoder:200", 2) == (200, 2, DEFAULT_POOL)
    assert parse_candidate("encoder:0:1:last_action", 2) == (0, 1, "last_action")
    for bad in ("encoder", "encoder:x", "encoder:5:1:max", "lm:5", "encoder:-1"):
        with pytest.raises(ValueError, match=r"is not encoder:K\[:H\[:POOL\]\]"):
            parse_candidate(bad, 2)


def test_relayout_keeps_the_most_recent_pairs_or_the_previous_action():
    assert relayout(IDS, SEP, 2, "concat") == IDS
    assert relayout(IDS, SEP, 1, "concat") == [1, SEP, 2, SEP, 3, SEP, 4]
    assert relayout(IDS, SEP, 1, "mean") == [1, SEP, 2, SEP, 3, SEP, 4]
    assert relayout(IDS, SEP, 0, "concat") == [1, SEP, 2]
    assert relayout(IDS, SEP, 2, "last_action") == [1, SEP, 2, SEP, 4]
    with pytest.raises(ValueError, match="cannot be cut to 3 pairs"):
        relayout(IDS, SEP, 3, "concat")


def _step(task: int, past: list[int]) -> tuple[list[int], list[list[int]], int]:
    """A one-pair demonstration: empty past segments start a game."""
    ids = [task, SEP, 9, SEP] + ([past[0], SEP, past[1]] if past else [SEP])
    return ids, [[1]], 0


def test_games_start_where_the_past_is_empty_and_split_by_game():
    demos = [_step(1, []), _step(1, [3, 4]), _step(2, []), _step(2, [5, 6]), _step(3, [])]
    assert game_of_steps(demos, SEP) == [0, 0, 1, 1, 2]
    fit, held = split_games(demos, SEP, 0.34, seed=0)
    assert len(held) in (1, 2) and len(fit) + len(held) == 5
    held_games = {d[0][0] for d in held}
    assert len(held_games) == 1 and all(d[0][0] not in held_games for d in fit)
    assert split_games(demos, SEP, 0.34, seed=0) == (fit, held)


class _Scores:
    """A policy whose score of candidate ``c`` is the number written in its ids."""

    def score_candidates(self, prompts, candidates):
        class Result:
            scores = [torch.tensor([float(c[0]) for c in cands]) for cands in candidates]

        return Result()


def test_expert_agreement_counts_top1_probability_and_cross_entropy():
    demos = [([1], [[0], [2]], 1), ([1], [[3], [1]], 1), ([1], [[5], [5]], 0)]
    got = expert_agreement(_Scores(), demos, batch=2)  # two batches
    p_win = float(torch.softmax(torch.tensor([0.0, 2.0]), 0)[1])
    assert got["top1"] == pytest.approx(2 / 3)  # a tie goes to the first (argmax)
    assert got["prob"] == pytest.approx((p_win + (1 - p_win) + 0.5) / 3)
    assert got["nll"] == pytest.approx(-(math.log(p_win) + math.log(1 - p_win) + math.log(0.5)) / 3)
    with pytest.raises(ValueError, match="at least one demonstration"):
        expert_agreement(_Scores(), [])
