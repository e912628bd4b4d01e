"""Speed of mvpo/WebShop-v0 in one process: start-up, steps per second, search latency.

:func:`startup` (``gym.make`` + reset, the BM25 index built and from the disk cache),
:func:`fresh_process` (a new interpreter that imports, makes and resets the env),
:func:`first_reward`, :func:`play` (steps/s and mean score of the scripted expert or random
clicks, resets counted as steps) and :func:`search_latency` (an uncached bm25s index);
:func:`measure_all` and :func:`page`: all of them and the page of ``benchmarks/webshop_env.py``
(docs/webshop.md). A measuring tool, so it sits
beside the ``mvpo_envs.webshop`` package, not in it.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_envs.measure import time_calls

__all__ = [
    "first_reward",
    "fresh_process",
    "measure_all",
    "page",
    "play",
    "search_latency",
    "startup",
    "this_machine",
]


def startup(cache_dir: str) -> dict[str, float]:
    """Seconds of ``gym.make`` + reset with the process caches empty: ``cold index`` (the
    BM25 index built into ``cache_dir``) and ``cached index`` (read from it)."""
    import gymnasium as gym

    import mvpo_envs  # noqa: F401
    from mvpo_envs.webshop import env as webshop_env

    out = {}
    for label in ("cold index", "cached index"):
        webshop_env._DATA_CACHE.clear()
        webshop_env._ENGINE_CACHE.clear()
        t = time.perf_counter()
        env = gym.make("mvpo/WebShop-v0", split="test", cache_dir=cache_dir)
        env.reset(seed=0)
        out[label] = time.perf_counter() - t
        env.close()
    return out


def fresh_process(cache_dir: str) -> float:
    """Wall time of a new Python process that imports, makes and resets the env."""
    code = (
        "import gymnasium as gym, mvpo_envs; "
        f"gym.make('mvpo/WebShop-v0', split='test', cache_dir={cache_dir!r}).reset(seed=0)"
    )
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t


def first_reward(env: Any) -> float:
    """Seconds of the expert's first episode (it loads the noun extractor: spaCy when installed)."""
    from mvpo_envs.webshop.expert import expert_episode

    t = time.perf_counter()
    expert_episode(env, 0)
    return time.perf_counter() - t


def play(env: Any, episodes: int, expert: bool) -> tuple[float, float, int]:
    """(env steps per second, mean score, steps) over ``episodes`` episodes (resets included)."""
    from mvpo_envs.webshop.expert import expert_episode, random_episode

    calls = [0]
    step, reset = env.step, env.reset

    def counted_step(action):
        calls[0] += 1
        return step(action)

    def counted_reset(**kw):
        calls[0] += 1
        return reset(**kw)

    env.step, env.reset = counted_step, counted_reset
    scores = []
    t = time.perf_counter()
    try:
        for i in range(episodes):
            if expert:
                scores.append(expert_episode(env, i % len(env.task_ids))[0])
            else:
                scores.append(random_episode(env, i))
    finally:
        env.step, env.reset = step, reset
    return calls[0] / (time.perf_counter() - t), statistics.mean(scores), calls[0]


def search_latency(products: Sequence[Any], queries: Sequence[str]) -> dict[str, float]:
    """Build seconds of an uncached bm25s index of ``products`` and p50 / p95 ms of one
    search per query."""
    from mvpo_envs.webshop.search import make_retriever

    t = time.perf_counter()
    retriever = make_retriever(products, cache_dir=False)
    build = time.perf_counter() - t
    ms = np.array(time_calls(retriever.search, queries))
    return {
        "docs": len(products),
        "build_s": build,
        "p50_ms": float(np.median(ms)),
        "p95_ms": float(np.percentile(ms, 95)),
    }


def measure_all(episodes: int, real_dir: Path | None) -> dict[str, Any]:
    """Every measurement of ``benchmarks/webshop_env.py``'s page (:func:`page`): start-up,
    the first reward, ``episodes`` episodes of random and expert play on the test split's
    synthetic and human goals, and search latency on the bundled catalog and (with
    ``real_dir``) on the real products."""
    from mvpo_envs.webshop.data import load_bundled, load_data_dir
    from mvpo_envs.webshop.env import WebShopEnv
    from mvpo_envs.webshop.nouns import extractor_name

    with tempfile.TemporaryDirectory() as cache:
        start = startup(cache)
        fresh = fresh_process(cache)
        env = WebShopEnv(split="test", cache_dir=cache)
        first = first_reward(env)
        nouns = extractor_name(env.nouns)
        random_sps, random_mean, _ = play(env, episodes, expert=False)
        expert_sps, expert_mean, _ = play(env, episodes, expert=True)
        human = WebShopEnv(split="test", goal_source="human", cache_dir=cache)
        _, human_expert, _ = play(human, len(human.task_ids), expert=True)
        _, human_random, _ = play(human, episodes, expert=False)
    bundled = load_bundled()
    searches = {
        "bundled": search_latency(
            bundled.products, [g["instruction_text"] for g in bundled.goals[:300]]
        )
    }
    if real_dir is not None:
        real = load_data_dir(real_dir)
        searches["real (1000 products)"] = search_latency(
            real.products, [g["instruction_text"] for g in real.goals[:300]]
        )
    return {
        **{"start": start, "fresh": fresh, "first": first, "nouns": nouns},
        **{"random_sps": random_sps, "random_mean": random_mean},
        **{"expert_sps": expert_sps, "expert_mean": expert_mean},
        **{"human_expert": human_expert, "human_random": human_random},
        **{"human_goals": len(human.task_ids), "searches": searches},
    }


def this_machine() -> str:
    """This machine as the page names it: processor, CPUs, Python version."""
    cpu = platform.processor() or platform.machine()
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def page(m: dict[str, Any], quick: bool, episodes: int, machine: str | None = None) -> list[str]:
    """The page's lines from :func:`measure_all`'s measurements ``m`` (``quick``: the
    ``--quick`` run; ``episodes`` per row; ``machine``: where it ran, default this one)."""
    start, fresh, first, nouns = m["start"], m["fresh"], m["first"], m["nouns"]
    random_sps, random_mean = m["random_sps"], m["random_mean"]
    expert_sps, expert_mean = m["expert_sps"], m["expert_mean"]
    human_expert, human_random, searches = m["human_expert"], m["human_random"], m["searches"]
    lines = [
        "# mvpo/WebShop-v0 speed and scores",
        "",
        f"`python benchmarks/webshop_env.py{' --quick' if quick else ''}` on "
        f"{machine or this_machine()}; nouns: `{nouns}`; bundled catalog, test split.",
        "",
        "| what | value |",
        "|---|---|",
        f"| new process: Python + imports + `gym.make` + reset (cached index) | {fresh:.2f} s |",
        f"| start-up, `gym.make` + reset, BM25 index built | {start['cold index']:.2f} s |",
        f"| start-up, `gym.make` + reset, index from disk cache | {start['cached index']:.2f} s |",
        f"| first episode (loads the noun extractor) | {first:.2f} s |",
        f"| random play (resets counted as steps) | {random_sps:,.0f} steps/s |",
        f"| scripted expert (resets counted as steps) | {expert_sps:,.0f} steps/s |",
        "",
        "| search (bm25s, uncached query) | documents | index build | p50 | p95 |",
        "|---|---|---|---|---|",
    ]
    for name, s in searches.items():
        lines.append(
            f"| {name} | {s['docs']} | {s['build_s']:.2f} s | {s['p50_ms']:.2f} ms | {s['p95_ms']:.2f} ms |"
        )
    lines += [
        "",
        "| player (bundled test split) | synthetic goals: mean score | human goals: mean score |",
        "|---|---|---|",
        f"| scripted expert | {expert_mean:.3f} | {human_expert:.3f} |",
        f"| random clicks after searching the instruction | {random_mean:.3f} | {human_random:.3f} |",
        "",
        f"Episodes: {episodes} per row (expert on human goals: all {m['human_goals']}). A step "
        "includes rendering, the info contract (deep-copied state) and the abstraction.",
        "",
    ]
    return lines
