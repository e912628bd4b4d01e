"""The results page of ``benchmarks/alfworld_env.py`` (``benchmarks/results/alfworld_env.md``;
docs/alfworld_engine.md, "Speed"): :func:`page` from the measurements of
:func:`mvpo_envs.bench.alfworld_engine_speed.compare_all`."""

from __future__ import annotations

import os
import platform
import statistics
from typing import Any

__all__ = ["page"]


def page(
    m: dict[str, Any], quick: bool, games: int, preset: str, split: str, episodes: int, extra: int
) -> str:
    """The page of the measurements ``m`` on ``games`` bundled ``preset/split`` games
    (``episodes`` passes, ``extra`` random steps per episode; ``quick``: the ``--quick`` run)."""
    own, pddl, cold, fast = m["own"], m["pddl"], m["cold"], m["fast"]
    env_pddl, env_cold, env_fast = m["env_pddl"], m["env_cold"], m["env_fast"]
    identical, env_identical = m["identical"], m["env_identical"]
    mem_fast, mem_pddl, sizes, vec = m["mem_fast"], m["mem_pddl"], m["sizes"], m["vec"]

    def ms(xs):
        return 1e3 * statistics.median(xs)

    own_sps = own[1] / own[2]
    lines = [
        "# mvpo/ALFWorld-v0: fast and pddl engines vs ALFWorld's own loop",
        "",
        f"Command: `python benchmarks/alfworld_env.py{' --quick' if quick else ''}` "
        f"({games} bundled `{preset}/{split}` games, {episodes} pass(es), the "
        f"walkthrough then {extra} seeded random admissible actions per episode). "
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
    return "\n".join(lines) + "\n"
