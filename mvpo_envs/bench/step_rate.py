"""Env steps per process-CPU second, on seeded play that two variants can be checked on.

What a before/after measurement of env stepping needs (``benchmarks/info_copy_cost.py``):
the ``step`` calls alone are timed (a reset may load a game, and choosing the actions is the
caller's cost), with :func:`time.process_time` (other processes do not count), and the play
is a pure function of its random seeds, so the returned trace (a pickle of what the steps returned)
of two variants must be equal when only their cost differs.

* :func:`seeded_action`: a random admissible action, an invalid one every ``invalid_every``
  steps (or where none is admissible);
* :func:`time_env`: seeded episodes of one env (episode ``k`` reset with seed ``k``);
* :func:`time_vector`: vector steps of a :class:`~mvpo_envs.vector.GroupedVectorEnv`.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["INVALID", "StepRun", "seeded_action", "time_env", "time_vector"]

#: an action no mvpo env admits (the env's no-op feedback, ``invalid_action=True``)
INVALID = "jump over the moon"


@dataclass(frozen=True)
class StepRun:
    """``steps`` env steps (a vector step of N envs counts N) in ``seconds`` of process CPU
    time spent inside ``step``; ``trace``: a pickle of what the steps returned."""

    steps: int
    seconds: float
    trace: bytes

    @property
    def rate(self) -> float:
        """Steps per CPU second."""
        return self.steps / self.seconds


def seeded_action(
    info: dict[str, Any], rng: np.random.Generator, t: int, invalid_every: int
) -> str:
    """Step ``t``'s action: :data:`INVALID` at ``t % invalid_every == invalid_every // 2`` or
    where nothing is admissible, else an admissible action drawn with ``rng``."""
    adm = info["admissible_actions"]
    if not adm or t % invalid_every == invalid_every // 2:
        return INVALID
    return adm[int(rng.integers(len(adm)))]


def time_env(env: Any, steps: int, invalid_every: int = 7) -> StepRun:
    """``steps`` steps of ``env`` (a Gymnasium text env) in seeded episodes: episode ``k`` is
    reset with seed ``k`` and its actions drawn by ``numpy.random.default_rng(k)``; the trace
    holds each step's (observation, reward, info)."""
    trace, done, episode, took = [], 0, 0, 0.0
    while done < steps:
        rng = np.random.default_rng(episode)
        _, info = env.reset(seed=episode)
        for t in range(steps - done):
            action = seeded_action(info, rng, t, invalid_every)
            start = time.process_time()
            obs, reward, term, trunc, info = env.step(action)
            took += time.process_time() - start
            trace.append((obs, reward, info))
            done += 1
            if term or trunc:
                break
        episode += 1
    return StepRun(done, took, pickle.dumps(trace))


def time_vector(venv: Any, steps: int, invalid_every: int = 7, seed: int = 0) -> StepRun:
    """``steps`` vector steps of ``venv`` (a ``GroupedVectorEnv``, its groups reset on tasks
    ``0 .. num_groups - 1``) with actions drawn by ``numpy.random.default_rng(seed)``; the
    trace holds each step's observations and rewards (sub-envs that end are reset by the
    vector env)."""
    from mvpo_envs.vector import unbatch_infos

    rng = np.random.default_rng(seed)
    _, infos = venv.reset_groups(list(range(venv.num_groups)))
    trace, took = [], 0.0
    for t in range(steps):
        acts = [
            seeded_action(i, rng, t, invalid_every) for i in unbatch_infos(infos, venv.num_envs)
        ]
        start = time.process_time()
        obs, rewards, _, _, infos = venv.step(acts)
        took += time.process_time() - start
        trace.append((list(obs), rewards.tolist()))
    return StepRun(steps * venv.num_envs, took, pickle.dumps(trace))
