"""Speed of mvpo/WebShop-v0 in one process: start-up, steps per second, search latency.

:func:`startup` (``gym.make`` + reset, the BM25 index built and from the disk cache),
:func:`fresh_process` (a new interpreter that imports, makes and resets the env),
:func:`first_reward`, :func:`play` (steps/s and mean score of the scripted expert or random
clicks, resets counted as steps) and :func:`search_latency` (an uncached bm25s index).
``benchmarks/webshop_env.py`` writes the page (docs/webshop.md). A measuring tool, so it sits
beside the ``mvpo_envs.webshop`` package, not in it.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mvpo_envs.measure import time_calls

__all__ = ["first_reward", "fresh_process", "play", "search_latency", "startup"]


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
