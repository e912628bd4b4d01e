"""``mvpo_envs.bench.alfworld_engine_speed``: every player follows the same seeded script, so the
pddl and fast engines' traces agree step by step, and the timings it returns are counts of
what was played."""

from __future__ import annotations

from mvpo_envs.alfworld.data import bundled_split_dir, collect_games
from mvpo_envs.alfworld.engine import AlfworldEngine
from mvpo_envs.alfworld.fast import engine as fast_engine
from mvpo_envs.alfworld.fast.engine import FastEngine
from mvpo_envs.bench.alfworld_engine_speed import (
    clear_fast_caches,
    engine_speed,
    memo_off,
    play_engine,
    play_env,
    room_size,
)


def test_engines_agree_on_the_seeded_script() -> None:
    games = collect_games(bundled_split_dir("eval", "mini"))[:2]
    pddl = play_engine(lambda: AlfworldEngine(cached=True), games, extra=4, episodes=1)
    clear_fast_caches()
    cold = memo_off(play_engine, FastEngine, games, 4, 2)
    assert fast_engine.MEMO_ENABLED  # memo_off restores the memo
    assert pddl[0] == cold[0][: len(pddl[0])] and cold[0][: len(pddl[0])] == cold[0][len(pddl[0]) :]
    steps = pddl[1]
    assert steps == len(pddl[0]) - len(games)  # one state per reset, one per step
    assert len(cold[4]) == len(games) and len(cold[3]) == 2 * len(games)  # firsts, warm resets
    env_kwargs = {"preset": "mini", "split": "eval"}
    assert (
        play_env("pddl", games, 4, 1, env_kwargs)[0] == play_env("fast", games, 4, 1, env_kwargs)[0]
    )
    assert engine_speed(FastEngine, games, steps=5, seed=1) > 0
    assert all(room_size(g.game_file) > 1 for g in games)
