"""Engine-level and env-level speed of mvpo/ALFWorld-v0's engines on one seeded action script.

Every player here plays each game with the same script (the walkthrough but its last command,
then ``extra`` seeded picks among the admissible actions) and returns its trace, so that
ALFWorld's own loop, ``engine="pddl"`` and ``engine="fast"`` can be checked identical step by
step while they are timed: :func:`play_engine` (an engine: steps, warm resets, first loads),
:func:`play_env` (through ``gym.make``), :func:`memory_per_env`, :func:`engine_speed` (random
admissible steps), :func:`room_size` and :func:`vector_speed` (a grouped vector env).
``benchmarks/alfworld_env.py`` writes the page (docs/alfworld_engine.md, "Speed"). A measuring
tool, so it sits beside the layered ``mvpo_envs.alfworld`` package (docs/architecture.md), not
in it.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.alfworld.data import AlfworldGame, bundled_split_dir, collect_games
from mvpo_envs.alfworld.engine import AlfworldEngine
from mvpo_envs.alfworld.fast import engine as fast_engine
from mvpo_envs.alfworld.fast.engine import FastEngine
from mvpo_envs.measure import play_random, rss_hwm
from mvpo_envs.vector import GroupedVectorEnv

__all__ = [
    "CLOCK",
    "clear_fast_caches",
    "compare_all",
    "engine_speed",
    "memo_off",
    "memory_per_env",
    "play_engine",
    "play_env",
    "room_size",
    "script_for",
    "vector_speed",
]

#: single-process timings are CPU time of this process: on a machine shared with other jobs the
#: wall clock counts their time too (the vector envs, several processes, use the wall clock)
CLOCK = time.process_time
T = TypeVar("T")


def script_for(game_file: Path, extra_random: int, seed: int) -> tuple[list[str], np.ndarray]:
    """The walkthrough and ``extra_random`` seeded numbers in [0, 1) (random admissible picks)."""
    walkthrough = json.loads(game_file.read_text())["walkthrough"]
    rng = np.random.default_rng(seed)
    return walkthrough, rng.random(extra_random)


def clear_fast_caches() -> None:
    """Empty the fast engine's per-process caches of parsed games (the next load is a first)."""
    fast_engine._GAMES.clear()
    fast_engine._LOGICS.clear()


def memo_off(run: Callable[..., T], *args: Any) -> T:
    """``run(*args)`` with the fast engine's state memo off: every state derived anew."""
    fast_engine.MEMO_ENABLED = False
    try:
        return run(*args)
    finally:
        fast_engine.MEMO_ENABLED = True


def play_engine(
    make: Callable[[], Any],
    games: Sequence[AlfworldGame],
    extra: int,
    episodes: int,
    reload_each_reset: bool = False,
) -> tuple[list[Any], int, float, list[float], list[float]]:
    """One engine over the script. Returns trace, #steps, step time, warm-reset times and
    first-load times (load + first reset of a game)."""
    engine = make()
    trace, n_steps, t_step, resets, firsts = [], 0, 0.0, [], []
    for ep in range(episodes):
        for i, game in enumerate(games):
            walkthrough, randoms = script_for(game.game_file, extra, seed=i)
            t0 = CLOCK()
            if reload_each_reset:
                engine._loaded = None  # TextWorld's gym loop loads the game file at every reset
            engine.load(game.game_file)
            state = engine.reset()
            (firsts if ep == 0 else resets).append(CLOCK() - t0)
            if ep == 0 and not reload_each_reset:  # a warm reset of the same game
                t0 = CLOCK()
                state = engine.reset()
                resets.append(CLOCK() - t0)
            trace.append((state.feedback, state.admissible, state.won))
            for u in [*walkthrough[:-1], *randoms]:
                cmd = u if isinstance(u, str) else state.admissible[int(u * len(state.admissible))]
                t0 = CLOCK()
                state = engine.step(cmd)
                t_step += CLOCK() - t0
                trace.append((state.feedback, state.admissible, state.won))
                n_steps += 1
    engine.close()
    return trace, n_steps, t_step, resets, firsts


def play_env(
    engine: str, games: Sequence[AlfworldGame], extra: int, episodes: int, env_kwargs: dict
) -> tuple[list[Any], float, float]:
    """The script through ``gym.make("mvpo/ALFWorld-v0", engine=...)``: the trace (an untimed
    first pass warms the caches), steps/s and warm resets/s of the timed passes."""
    env = gym.make("mvpo/ALFWorld-v0", engine=engine, **env_kwargs)
    index = {g.task_id: k for k, g in enumerate(env.unwrapped.games)}
    trace, n_steps, t_reset, n_resets, t_step = [], 0, 0.0, 0, 0.0
    for ep in range(episodes + 1):  # pass 0 warms the caches (first loads)
        for i, game in enumerate(games):
            walkthrough, randoms = script_for(game.game_file, extra, seed=i)
            t0 = CLOCK()
            obs, info = env.reset(options={"task_index": index[game.task_id]})
            if ep:
                t_reset += CLOCK() - t0
                n_resets += 1
            trace.append((obs, info))
            for u in [*walkthrough[:-1], *randoms]:
                acts = info["admissible_actions"]
                cmd = u if isinstance(u, str) else acts[int(u * len(acts))]
                t0 = CLOCK()
                obs, reward, term, trunc, info = env.step(cmd)
                if ep:
                    t_step += CLOCK() - t0
                    n_steps += 1
                trace.append((obs, reward, term, trunc, info))
    env.close()
    return trace, n_steps / t_step, n_resets / t_reset


def memory_per_env(
    engine: str, games: Sequence[AlfworldGame], count: int, env_kwargs: dict
) -> tuple[float, float]:
    """(RSS MiB per env, Python-heap MiB per env) for ``count`` envs, each reset on a game."""
    gc.collect()
    tracemalloc.start()
    before_rss, (before_py, _) = rss_hwm()[0], tracemalloc.get_traced_memory()
    envs = []
    for k in range(count):
        env = gym.make("mvpo/ALFWorld-v0", engine=engine, **env_kwargs)
        index = {g.task_id: j for j, g in enumerate(env.unwrapped.games)}
        env.reset(options={"task_index": index[games[k % len(games)].task_id]})
        envs.append(env)
    gc.collect()
    after_rss, (after_py, _) = rss_hwm()[0], tracemalloc.get_traced_memory()
    tracemalloc.stop()
    for env in envs:
        env.close()
    return (after_rss - before_rss) / count, (after_py - before_py) / 2**20 / count


def room_size(game_file: Path) -> int:
    """Objects and receptacles of the game (the size of its room)."""
    game = fast_engine.load_game(fast_engine.read_game(game_file))
    return sum(e.type in ("object", "receptacle") for e in game.entities.values())


def engine_speed(
    make: Callable[[], Any], games: Sequence[AlfworldGame], steps: int, seed: int
) -> float:
    """Engine steps per CPU second of ``steps`` random admissible actions on each game."""
    engine = make()
    rng = random.Random(seed)
    n, t = 0, 0.0
    for game in games:
        engine.load(game.game_file)
        state = engine.reset()
        for _ in range(steps):
            cmd = rng.choice(state.admissible)
            t0 = CLOCK()
            state = engine.step(cmd)
            t += CLOCK() - t0
            n += 1
    engine.close()
    return n / t


def vector_speed(
    mode: str, groups: int, group_size: int, steps: int, env_kwargs: dict
) -> tuple[float, float]:
    """(resets/s, env steps/s) of a grouped vector env after a warm-up reset (first loads)."""
    venv = GroupedVectorEnv(
        "mvpo/ALFWorld-v0", groups, group_size, vectorization_mode=mode, **env_kwargs
    )
    tasks = [k % venv.num_tasks for k in range(groups)]
    venv.reset_groups(tasks)  # warm-up: first load of each game in each worker
    run = play_random(venv, tasks, steps, seed=0)
    venv.close()
    n = groups * group_size
    return n / run["reset_s"], n * steps / run["step_s"]


def compare_all(
    games: Sequence[AlfworldGame],
    extra: int,
    episodes: int,
    vector_steps: int,
    async_envs: int,
    env_kwargs: dict[str, Any],
) -> dict[str, Any]:
    """Every measurement of ``benchmarks/alfworld_env.py``'s page
    (:mod:`mvpo_envs.bench.alfworld_env_page`) on ``games``: the engines and the env wrapper
    on the same script (their traces compared), memory per env, cost against room size on
    the first ``len(games)`` train games of each bundled preset, and batching."""
    n_games = len(games)
    # 1. engines: ALFWorld's own loop, pddl (cached), fast; the same script, traces compared
    own = play_engine(lambda: AlfworldEngine(cached=False), games, extra, 1, True)
    pddl = play_engine(lambda: AlfworldEngine(cached=True), games, extra, episodes)
    clear_fast_caches()
    cold = memo_off(play_engine, FastEngine, games, extra, episodes)
    clear_fast_caches()
    fast = play_engine(FastEngine, games, extra, episodes)

    # 2. through the env wrapper
    clear_fast_caches()
    env_pddl = play_env("pddl", games, extra, episodes, env_kwargs)
    clear_fast_caches()
    env_cold = memo_off(play_env, "fast", games, extra, episodes, env_kwargs)
    clear_fast_caches()
    env_fast = play_env("fast", games, extra, episodes, env_kwargs)

    # 3. memory per env
    mem_fast = memory_per_env("fast", games, 32, env_kwargs)
    mem_pddl = memory_per_env("pddl", games, 4, env_kwargs)

    # 4. cost against room size
    sizes = []
    for preset, split in (("mini", "train"), ("standard", "train"), ("alfworld", "train")):
        sgames = collect_games(bundled_split_dir(split, preset))[:n_games]
        ents = statistics.mean(room_size(g.game_file) for g in sgames)
        # warm-up: the games' parse and command-text caches, the same for both fast lines
        memo_off(engine_speed, FastEngine, sgames, 4 * extra, 1)
        sizes.append(
            (
                preset,
                ents,
                engine_speed(FastEngine, sgames, 4 * extra, seed=1),
                memo_off(engine_speed, FastEngine, sgames, 4 * extra, 1),
                engine_speed(lambda: AlfworldEngine(cached=True), sgames, extra, seed=1),
            )
        )

    # 5. batching with the fast engine: sync 128 envs in one process vs the async pool
    pool = f"fast, async, {async_envs // 8 or 1} x 8 = {max(8, async_envs)} envs, one process each"
    pddl_kwargs = {**env_kwargs, "engine": "pddl"}
    vec = [
        (
            "fast, sync, 16 x 8 = 128 envs, 1 process",
            *vector_speed("sync", 16, 8, vector_steps, env_kwargs),
        ),
        (pool, *vector_speed("async", max(1, async_envs // 8), 8, vector_steps, env_kwargs)),
        (
            "pddl, sync, 2 x 8 = 16 envs, 1 process",
            *vector_speed("sync", 2, 8, max(2, vector_steps // 4), pddl_kwargs),
        ),
    ]

    n_own = len(own[0])
    identical = own[0] == pddl[0][:n_own] == fast[0][:n_own] and pddl[0] == fast[0] == cold[0]
    return {
        **{"own": own, "pddl": pddl, "cold": cold, "fast": fast, "identical": identical},
        **{"env_pddl": env_pddl, "env_cold": env_cold, "env_fast": env_fast},
        "env_identical": env_pddl[0] == env_fast[0] == env_cold[0],
        **{"mem_fast": mem_fast, "mem_pddl": mem_pddl, "sizes": sizes, "vec": vec},
    }
