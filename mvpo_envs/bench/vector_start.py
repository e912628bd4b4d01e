"""Start and stepping cost of a grouped vector env, in process CPU seconds
(``benchmarks/env_start.py``; docs/environments.md).

* :func:`cpu`: a call's process CPU seconds and its result;
* :func:`gym_make_seconds`: ``n`` ``gym.make`` calls, each checking its data, or all inside one
  :func:`~mvpo_envs.build_batch.build_batch`;
* :func:`vector_steps`: seeded vector steps, each timed with the unbatching of its infos;
* :func:`step_rates`: env steps per CPU second with every info key merged against only
  ``keys``, rounds alternated (a first untimed round loads the games), their episodes
  asserted equal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.build_batch import build_batch
from mvpo_envs.vector import GroupedVectorEnv, unbatch_infos

__all__ = ["cpu", "gym_make_seconds", "step_rates", "vector_steps"]

T = TypeVar("T")


def cpu(fn: Callable[[], T]) -> tuple[float, T]:
    """``fn()``'s process CPU seconds and its result."""
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def gym_make_seconds(env_id: str, kwargs: dict[str, Any], n: int, batch: bool) -> float:
    """CPU seconds of ``n`` ``gym.make(env_id, **kwargs)`` (inside one ``build_batch`` when
    ``batch``); the envs are closed after."""
    with build_batch() if batch else nullcontext():
        seconds, envs = cpu(lambda: [gym.make(env_id, **kwargs) for _ in range(n)])
    for env in envs:
        env.close()
    return seconds


def vector_steps(venv: GroupedVectorEnv, steps: int, seed: int) -> tuple[float, list]:
    """CPU seconds of ``steps`` vector steps (+ unbatching) and what they returned (groups reset
    on tasks and actions drawn by ``numpy.random.default_rng(seed)``)."""
    rng = np.random.default_rng(seed)
    tasks = [int(t) for t in rng.integers(0, venv.num_tasks, venv.num_groups)]
    _, infos = venv.reset_groups(tasks)
    info, trace, took = unbatch_infos(infos, venv.num_envs), [], 0.0
    for _ in range(steps):
        actions = [str(rng.choice(i.get("admissible_actions") or [""])) for i in info]
        start = time.process_time()
        obs, rewards, _, _, infos = venv.step(actions)
        info = unbatch_infos(infos, venv.num_envs)
        took += time.process_time() - start
        trace.append((obs, rewards.tolist()))
    return took, trace


def step_rates(
    env_id: str,
    kwargs: dict[str, Any],
    groups: int,
    group_size: int,
    steps: int,
    seed: int,
    repeats: int,
    keys: Sequence[str],
) -> tuple[dict[str, int], int]:
    """Env steps per CPU second (the median of ``repeats`` rounds) with every info key
    (``all_keys``) and with only ``keys`` (``rollout_keys``) merged, and the env's task count;
    the two must play the same episodes."""
    seconds: dict[str, list[float]] = {"all_keys": [], "rollout_keys": []}
    traces = {}
    for round_ in range(repeats + 1):
        for name, info_keys in (("all_keys", None), ("rollout_keys", keys)):
            with GroupedVectorEnv(
                env_id, groups, group_size, info_keys=info_keys, **kwargs
            ) as venv:
                took, traces[name] = vector_steps(venv, steps, seed)
                num_tasks = venv.num_tasks
            if round_:
                seconds[name].append(took)
    if traces["all_keys"] != traces["rollout_keys"]:
        raise RuntimeError("the info-key filter changed the episodes")
    n = groups * group_size
    return {k: round(n * steps / float(np.median(v))) for k, v in seconds.items()}, num_tasks
