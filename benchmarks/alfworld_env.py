"""Speed of mvpo/ALFWorld-v0's two engines against ALFWorld's own loop, in one run.

docs/alfworld_engine.md, "Speed". All three play the same games with the same seeded action
script (each game's walkthrough but its last command, then seeded random admissible actions),
and the run checks that every feedback, admissible list and ``won`` is identical:

* **ALFWorld's own loop**: ALFWorld's engine exactly as ``AlfredTWEnv`` builds it
  (``textworld.envs.PddlEnv`` + ``AlfredDemangler`` + ``AlfredInfos``), loading the game file at
  every reset as TextWorld's gym loop does;
* **pddl**: the same engine with mvpo's translation and command-text caches
  (``engine="pddl"``, the reference);
* **fast**: the native engine (``engine="fast"``, :mod:`mvpo_envs.alfworld.fast`).

Measured: engine steps/s, warm reset, first load of a game (nothing cached in the process for
that game), the same through ``gym.make("mvpo/ALFWorld-v0", engine=...)``, MiB per env, cost
against room size (the bundled presets differ in room size), and batching: a sync
``GroupedVectorEnv`` of 128 fast envs in one process against the async worker pool.

Run from the repository root: ``python benchmarks/alfworld_env.py`` (writes
``benchmarks/results/alfworld_env.md``). ``--quick`` plays fewer games and steps.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import time
import tracemalloc
from pathlib import Path

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401
from mvpo_envs.alfworld.data import bundled_split_dir, collect_games
from mvpo_envs.alfworld.engine import AlfworldEngine
from mvpo_envs.alfworld.fast import engine as fast_engine
from mvpo_envs.alfworld.fast.engine import FastEngine
from mvpo_envs.measure import play_random, rss_hwm
from mvpo_envs.vector import GroupedVectorEnv

RESULTS = Path(__file__).resolve().parent / "results" / "alfworld_env.md"
#: single-process timings are CPU time of this process: on a machine shared with other jobs the
#: wall clock counts their time too (the vector envs, several processes, use the wall clock)
CLOCK = time.process_time


def script_for(game_file: Path, extra_random: int, seed: int):
    """The walkthrough and ``extra_random`` seeded numbers in [0, 1) (random admissible picks)."""
    walkthrough = json.loads(game_file.read_text())["walkthrough"]
    rng = np.random.default_rng(seed)
    return walkthrough, rng.random(extra_random)


def _clear_fast_caches() -> None:
    fast_engine._GAMES.clear()
    fast_engine._LOGICS.clear()


def memo_off(run, *args):
    """``run(*args)`` with the fast engine's state memo off: every state derived anew."""
    fast_engine.MEMO_ENABLED = False
    try:
        return run(*args)
    finally:
        fast_engine.MEMO_ENABLED = True


def play_engine(make, games, extra: int, episodes: int, reload_each_reset: bool = False):
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


def play_env(engine: str, games, extra: int, episodes: int, env_kwargs: dict):
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


def memory_per_env(engine: str, games, count: int, env_kwargs: dict) -> tuple[float, float]:
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


def engine_speed(make, games, steps: int, seed: int) -> float:
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


def vector_speed(mode: str, groups: int, group_size: int, steps: int, env_kwargs: dict):
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


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="alfworld", help="bundled preset of the main comparison")
    p.add_argument("--split", default="valid_unseen", help="bundled split to play")
    p.add_argument("--games", type=int, default=8, help="number of games (sorted ids)")
    p.add_argument("--extra", type=int, default=15, help="random admissible steps per episode")
    p.add_argument("--episodes", type=int, default=2, help="passes over the games")
    p.add_argument("--vector-steps", type=int, default=20)
    p.add_argument("--async-envs", type=int, default=16, help="sub-envs (processes) of the pool")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.quick:
        args.games, args.extra, args.episodes, args.vector_steps, args.async_envs = 3, 5, 1, 5, 4
    env_kwargs = {"preset": args.preset, "split": args.split}
    games = collect_games(bundled_split_dir(args.split, args.preset))[: args.games]

    # 1. engines: ALFWorld's own loop, pddl (cached), fast; the same script, traces compared
    own = play_engine(lambda: AlfworldEngine(cached=False), games, args.extra, 1, True)
    pddl = play_engine(lambda: AlfworldEngine(cached=True), games, args.extra, args.episodes)
    _clear_fast_caches()
    cold = memo_off(play_engine, FastEngine, games, args.extra, args.episodes)
    _clear_fast_caches()
    fast = play_engine(FastEngine, games, args.extra, args.episodes)
    n_own = len(own[0])
    identical = own[0] == pddl[0][:n_own] == fast[0][:n_own] and pddl[0] == fast[0] == cold[0]

    # 2. through the env wrapper
    _clear_fast_caches()
    env_pddl = play_env("pddl", games, args.extra, args.episodes, env_kwargs)
    _clear_fast_caches()
    env_cold = memo_off(play_env, "fast", games, args.extra, args.episodes, env_kwargs)
    _clear_fast_caches()
    env_fast = play_env("fast", games, args.extra, args.episodes, env_kwargs)
    env_identical = env_pddl[0] == env_fast[0] == env_cold[0]

    # 3. memory per env
    mem_fast = memory_per_env("fast", games, 32, env_kwargs)
    mem_pddl = memory_per_env("pddl", games, 4, env_kwargs)

    # 4. cost against room size
    sizes = []
    for preset, split in (("mini", "train"), ("standard", "train"), ("alfworld", "train")):
        sgames = collect_games(bundled_split_dir(split, preset))[: args.games]
        ents = statistics.mean(room_size(g.game_file) for g in sgames)
        # warm-up: the games' parse and command-text caches, the same for both fast lines
        memo_off(engine_speed, FastEngine, sgames, 4 * args.extra, 1)
        sizes.append(
            (
                preset,
                ents,
                engine_speed(FastEngine, sgames, 4 * args.extra, seed=1),
                memo_off(engine_speed, FastEngine, sgames, 4 * args.extra, 1),
                engine_speed(lambda: AlfworldEngine(cached=True), sgames, args.extra, seed=1),
            )
        )

    # 5. batching with the fast engine: sync 128 envs in one process vs the async pool
    vec = [
        ("fast, sync, 16 x 8 = 128 envs, 1 process", *vector_speed("sync", 16, 8, args.vector_steps, env_kwargs)),
        (f"fast, async, {args.async_envs // 8 or 1} x 8 = {max(8, args.async_envs)} envs, one process each",
         *vector_speed("async", max(1, args.async_envs // 8), 8, args.vector_steps, env_kwargs)),
        ("pddl, sync, 2 x 8 = 16 envs, 1 process", *vector_speed("sync", 2, 8, max(2, args.vector_steps // 4), {**env_kwargs, "engine": "pddl"})),
    ]  # fmt: skip

    def ms(xs):
        return 1e3 * statistics.median(xs)

    own_sps = own[1] / own[2]
    lines = [
        "# mvpo/ALFWorld-v0: fast and pddl engines vs ALFWorld's own loop",
        "",
        f"Command: `python benchmarks/alfworld_env.py{' --quick' if args.quick else ''}` "
        f"({len(games)} bundled `{args.preset}/{args.split}` games, {args.episodes} pass(es), the "
        f"walkthrough then {args.extra} seeded random admissible actions per episode). "
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU(s) shared with other jobs, "
        f"Python {platform.python_version()}. Timings are medians/totals of one run; single-env "
        "timings are CPU time of the benchmark process (`time.process_time`), the batching "
        "table wall-clock time.",
        "",
        f"Feedback, admissible lists and `won` identical on every step (own loop, pddl, fast): "
        f"**{identical}** ({len(fast[0])} states compared); whole env outputs (observation, "
        f'reward, terminated, truncated, info) identical between `engine="pddl"` and '
        f'`engine="fast"`: **{env_identical}** ({len(env_fast[0])} compared).',
        "",
        "## Single env, engine level",
        "",
        "| engine | steps/s | vs own loop | warm reset (ms) | first load of a game (ms) |",
        "|---|---:|---:|---:|---:|",
        f"| ALFWorld's own loop | {own_sps:.1f} | 1x | {ms(own[4]):.0f} (reloads) | {ms(own[4]):.0f} |",
        f"| pddl (cached) | {pddl[1] / pddl[2]:.1f} | {pddl[1] / pddl[2] / own_sps:.0f}x | "
        f"{ms(pddl[3]):.2f} | {ms(pddl[4]):.0f} |",
        f"| **fast** | **{fast[1] / fast[2]:.0f}** | **{fast[1] / fast[2] / own_sps:.0f}x** | "
        f"{ms(fast[3]):.3f} | {ms(fast[4]):.1f} |",
        f"| fast, memo off | {cold[1] / cold[2]:.0f} | {cold[1] / cold[2] / own_sps:.0f}x | "
        f"{ms(cold[3]):.3f} | {ms(cold[4]):.1f} |",
        "",
        "fast = the default: each game's outputs that depend only on the state (command table, "
        "admissible list, `won`; feedback per state and action) are kept in an exact memo "
        "shared by the process's engines, so states met again (the second pass here, the "
        "episodes of a group on one game) cost a lookup. memo off = every state derived anew "
        "(`fast_engine.MEMO_ENABLED = False`), the cost of a state never seen.",
        "",
        '## Single env, through `gym.make("mvpo/ALFWorld-v0", engine=...)`',
        "",
        'Includes the env\'s per-step work (`info["state"]` from the facts, the text view, the '
        "abstraction's signature and milestones), identical for both engines.",
        "",
        "| engine | steps/s | resets/s (warm) |",
        "|---|---:|---:|",
        f"| pddl | {env_pddl[1]:.1f} | {env_pddl[2]:.1f} |",
        f"| fast | {env_fast[1]:.1f} | {env_fast[2]:.1f} |",
        f"| fast, memo off | {env_cold[1]:.1f} | {env_cold[2]:.1f} |",
        "",
        "## Memory per env (each env reset on a game)",
        "",
        "| engine | RSS MiB per env | Python heap MiB per env |",
        "|---|---:|---:|",
        f"| pddl (4 envs) | {mem_pddl[0]:.1f} | {mem_pddl[1]:.2f} |",
        f"| fast (32 envs) | {mem_fast[0]:.2f} | {mem_fast[1]:.2f} |",
        "",
        "## Cost against room size (engine level, random admissible actions)",
        "",
        "| bundled preset | objects + receptacles per game (mean) | fast steps/s "
        "| fast, memo off | pddl steps/s |",
        "|---|---:|---:|---:|---:|",
        *[f"| {p_} | {e:.0f} | {f:.0f} | {c:.0f} | {d:.1f} |" for p_, e, f, c, d in sizes],
        "",
        "## Batching (env steps/s summed over sub-envs)",
        "",
        "| vector env | resets/s | env steps/s |",
        "|---|---:|---:|",
        *[f"| {name} | {r:.1f} | {s:.1f} |" for name, r, s in vec],
        "",
        "ALFWorld's own loop = `PddlEnv` + `AlfredDemangler` + `AlfredInfos`, loading the game at "
        "each reset as TextWorld's gym loop does (its reset is a first load). pddl = the same "
        "engine with the translation and command-text caches. First load = `load` + first "
        "`reset` of a game not yet seen by the process (fast: game and grammar caches cleared). "
        "Async = one worker process per sub-env (`TextAsyncVectorEnv`).",
    ]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    if not (identical and env_identical):
        raise SystemExit("the engines differ from ALFWorld's engine")


if __name__ == "__main__":
    main()
