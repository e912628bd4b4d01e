""":mod:`mvpo_train.study.expert_alignment`: every (p, seed) batch played once, scored per
variant, and tabled per p."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_train.study.expert_alignment import context_lines, score_batches, variant_lines
from mvpo_train.study.progress_sources import play_scripted


def _play(p: float, seed: int):
    make_env = lambda: gym.make("mvpo/MilestoneChain-v0", difficulty=1, max_episode_steps=30)  # noqa: E731
    return play_scripted(make_env, lambda env: {}, p, seed, 0, (2, 4, 30)), {"tasks": [seed]}


def test_batches_are_played_once_and_every_variant_scores_them(tmp_path: Path, capsys) -> None:
    cache = lambda p, seed: tmp_path / f"p{p:g}-s{seed}.npz"  # noqa: E731
    variants = ["mvpo", "mvpo:lambda_L=0"]
    first = score_batches([0.0, 0.5], [0, 1], variants, cache, _play)
    assert [(b["p"], b["seed"]) for b in first] == [(0.0, 0), (0.0, 1), (0.5, 0), (0.5, 1)]
    assert not any(b["from_cache"] for b in first) and first[1]["tasks"] == [1]
    assert "p=0.5 seed=1:" in capsys.readouterr().out
    again = score_batches([0.0, 0.5], [0, 1], variants, cache, lambda p, s: pytest.fail("played"))
    assert all(b["from_cache"] for b in again)
    for a, b in zip(first, again, strict=True):
        assert a["variants"]["mvpo"]["auc"] == pytest.approx(
            b["variants"]["mvpo"]["auc"], nan_ok=True
        )
    results = {"batches": again, "variants": variants}
    table = variant_lines(results)
    assert table[0] == "| variant | p=0 AUC | p=0.5 AUC | repaired rows / batch |"
    assert [r.split(" |")[0] for r in table[2:]] == ["| `mvpo`", "| `mvpo:lambda_L=0`"]
    assert [r.split(" |")[0] for r in context_lines(results)[2:]] == ["| 0", "| 0.5"]
