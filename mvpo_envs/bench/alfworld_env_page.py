"""The results page of ``benchmarks/alfworld_env.py`` (``benchmarks/results/alfworld_env.md``;
docs/alfworld_engine.md, "Speed"): :func:`page` from the measurements of
:func:`mvpo_envs.bench.alfworld_engine_speed.compare_all`: :func:`page_figures` (what the page
prints, kept as the results JSON) rendered by :func:`report`."""

from __future__ import annotations

import os
import platform
import statistics
from typing import Any

__all__ = ["page", "page_figures", "report"]


def page_figures(
    m: dict[str, Any], quick: bool, games: int, preset: str, split: str, episodes: int, extra: int
) -> dict[str, Any]:
    """What the page prints (JSON-able; the speed-ups and medians computed here), from the
    measurements ``m`` on ``games`` bundled ``preset/split`` games (``episodes`` passes,
    ``extra`` random steps per episode; ``quick``: the ``--quick`` run), and this machine."""
    own_sps = m["own"][1] / m["own"][2]

    def engine(run: tuple) -> dict[str, float | None]:  # trace, steps, s, warm resets, firsts
        sps = run[1] / run[2]
        # ALFWorld's own loop has no warm reset (it reloads the game): None
        reset_ms, first_ms = (1e3 * statistics.median(xs) if xs else None for xs in run[3:5])
        return {"sps": sps, "vs_own": sps / own_sps, "reset_ms": reset_ms, "first_ms": first_ms}

    return {
        **{"quick": quick, "games": games, "preset": preset, "split": split},
        **{"episodes": episodes, "extra": extra},
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU(s)",
        "python": platform.python_version(),
        "identical": m["identical"],
        "states": len(m["fast"][0]),
        "env_identical": m["env_identical"],
        "env_states": len(m["env_fast"][0]),
        "engines": {k: engine(m[k]) for k in ("own", "pddl", "fast", "cold")},
        "env": {k: [m[f"env_{k}"][1], m[f"env_{k}"][2]] for k in ("pddl", "fast", "cold")},
        **{"mem_pddl": list(m["mem_pddl"]), "mem_fast": list(m["mem_fast"])},
        **{"sizes": [list(x) for x in m["sizes"]], "vec": [list(x) for x in m["vec"]]},
    }


def page(
    m: dict[str, Any], quick: bool, games: int, preset: str, split: str, episodes: int, extra: int
) -> str:
    """The page of the measurements ``m`` (:func:`page_figures`, :func:`report`)."""
    return report(page_figures(m, quick, games, preset, split, episodes, extra))


def report(f: dict[str, Any]) -> str:
    """The page of :func:`page_figures`' figures ``f``."""
    own, pddl, fast, cold = (f["engines"][k] for k in ("own", "pddl", "fast", "cold"))
    env_pddl, env_fast, env_cold = (f["env"][k] for k in ("pddl", "fast", "cold"))
    mem_pddl, mem_fast = f["mem_pddl"], f["mem_fast"]
    lines = [
        "# mvpo/ALFWorld-v0: fast and pddl engines vs ALFWorld's own loop",
        "",
        f"Command: `python benchmarks/alfworld_env.py{' --quick' if f['quick'] else ''}` "
        f"({f['games']} bundled `{f['preset']}/{f['split']}` games, {f['episodes']} pass(es), "
        f"the walkthrough then {f['extra']} seeded random admissible actions per episode). "
        f"Machine: {f['machine']} shared with other jobs, "
        f"Python {f['python']}. Timings are medians/totals of one run; single-env "
        "timings are CPU time of the benchmark process (`time.process_time`), the batching "
        "table wall-clock time.",
        "",
        f"Feedback, admissible lists and `won` identical on every step (own loop, pddl, fast): "
        f"**{f['identical']}** ({f['states']} states compared); whole env outputs (observation, "
        f'reward, terminated, truncated, info) identical between `engine="pddl"` and '
        f'`engine="fast"`: **{f["env_identical"]}** ({f["env_states"]} compared).',
        "",
        "## Single env, engine level",
        "",
        "| engine | steps/s | vs own loop | warm reset (ms) | first load of a game (ms) |",
        "|---|---:|---:|---:|---:|",
        f"| ALFWorld's own loop | {own['sps']:.1f} | 1x | {own['first_ms']:.0f} (reloads) "
        f"| {own['first_ms']:.0f} |",
        f"| pddl (cached) | {pddl['sps']:.1f} | {pddl['vs_own']:.0f}x | "
        f"{pddl['reset_ms']:.2f} | {pddl['first_ms']:.0f} |",
        f"| **fast** | **{fast['sps']:.0f}** | **{fast['vs_own']:.0f}x** | "
        f"{fast['reset_ms']:.3f} | {fast['first_ms']:.1f} |",
        f"| fast, memo off | {cold['sps']:.0f} | {cold['vs_own']:.0f}x | "
        f"{cold['reset_ms']:.3f} | {cold['first_ms']:.1f} |",
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
        f"| pddl | {env_pddl[0]:.1f} | {env_pddl[1]:.1f} |",
        f"| fast | {env_fast[0]:.1f} | {env_fast[1]:.1f} |",
        f"| fast, memo off | {env_cold[0]:.1f} | {env_cold[1]:.1f} |",
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
        *[f"| {p_} | {e:.0f} | {fs:.0f} | {c:.0f} | {d:.1f} |" for p_, e, fs, c, d in f["sizes"]],
        "",
        "## Batching (env steps/s summed over sub-envs)",
        "",
        "| vector env | resets/s | env steps/s |",
        "|---|---:|---:|",
        *[f"| {name} | {r:.1f} | {s:.1f} |" for name, r, s in f["vec"]],
        "",
        "ALFWorld's own loop = `PddlEnv` + `AlfredDemangler` + `AlfredInfos`, loading the game at "
        "each reset as TextWorld's gym loop does (its reset is a first load). pddl = the same "
        "engine with the translation and command-text caches. First load = `load` + first "
        "`reset` of a game not yet seen by the process (fast: game and grammar caches cleared). "
        "Async = one worker process per sub-env (`TextAsyncVectorEnv`).",
    ]
    return "\n".join(lines) + "\n"
