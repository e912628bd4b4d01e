"""Speed of mvpo/ALFWorld-v0's two engines against ALFWorld's own loop, in one run.

docs/alfworld_engine.md, "Speed". ALFWorld's own loop (``PddlEnv`` + ``AlfredDemangler`` +
``AlfredInfos``, the game loaded at every reset), ``engine="pddl"`` and ``engine="fast"`` play
the same games with the same seeded script (the walkthrough but its last command, then seeded
random admissible actions); the run checks every feedback, admissible list and ``won`` agree.
Measured: steps/s, warm reset, first load, the same through ``gym.make``, MiB per env, cost
against room size, and sync against async batching.

``python benchmarks/alfworld_env.py`` writes ``benchmarks/results/alfworld_env.md``;
``--quick`` plays fewer games and steps.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
from pathlib import Path

from mvpo_envs.alfworld.data import bundled_split_dir, collect_games
from mvpo_envs.alfworld.engine import AlfworldEngine
from mvpo_envs.alfworld.fast.engine import FastEngine
from mvpo_envs.bench.alfworld_engine_speed import (
    clear_fast_caches,
    engine_speed,
    memo_off,
    memory_per_env,
    play_engine,
    play_env,
    room_size,
    vector_speed,
)

RESULTS = Path(__file__).resolve().parent / "results" / "alfworld_env.md"


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
    clear_fast_caches()
    cold = memo_off(play_engine, FastEngine, games, args.extra, args.episodes)
    clear_fast_caches()
    fast = play_engine(FastEngine, games, args.extra, args.episodes)
    n_own = len(own[0])
    identical = own[0] == pddl[0][:n_own] == fast[0][:n_own] and pddl[0] == fast[0] == cold[0]

    # 2. through the env wrapper
    clear_fast_caches()
    env_pddl = play_env("pddl", games, args.extra, args.episodes, env_kwargs)
    clear_fast_caches()
    env_cold = memo_off(play_env, "fast", games, args.extra, args.episodes, env_kwargs)
    clear_fast_caches()
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
