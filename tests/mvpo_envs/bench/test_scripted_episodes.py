"""Scripted episodes for ``benchmarks/learned_abstraction.py``
(:mod:`mvpo_envs.bench.scripted_episodes`): per task the behaviours cycle expert, cut expert,
random; the expert's episode is won, the others stop at WebShop's 15-step budget."""

from __future__ import annotations

from mvpo_envs.bench.scripted_episodes import webshop_episodes


def test_webshop_episodes_cycle_the_three_behaviours() -> None:
    episodes = webshop_episodes("train", 1, 4, seed=0)
    assert [e["expert"] for e in episodes] == [True, False, False, True]
    assert {e["group"] for e in episodes} == {0}
    expert = episodes[0]
    assert expert["won"] and expert["return"] > 0
    assert expert == {**episodes[3], "expert": True}  # the expert's play is the same each time
    for e in episodes:
        assert 2 <= len(e["states"]) <= 16  # the first state, then at most 15 steps
        assert all(isinstance(s, dict) for s in e["states"])
