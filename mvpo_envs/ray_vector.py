"""Vector env whose sub-envs live in Ray actors (docs/scaling.md, "Env workers on Ray").

:class:`RayVectorEnv` is a Gymnasium ``VectorEnv`` with the interface
:class:`~mvpo_envs.vector.GroupedVectorEnv` uses (``reset(seed=[...])``, ``step``, ``call`` /
``get_attr``, ``close``) and the semantics of Gymnasium's ``SyncVectorEnv`` in the default
``NEXT_STEP`` autoreset mode: sub-env ``i`` is reset with ``seed[i]`` (so a group's sub-envs
play the same task, docs/environments.md "Vector envs"), an env whose episode ended is reset
(unseeded) on the next ``step`` with reward 0, and every ``reset`` clears that pending
autoreset. Same seeds, same results as the sync vector env, whatever the actor layout.

Layout: ``envs_per_actor`` consecutive sub-envs share one actor (default 1: one actor per
sub-env, as verl-agent does); each actor steps its envs in order. ``actor_options`` go to Ray's
``.options(...)`` (e.g. ``{"num_cpus": 1}`` to reserve a core per actor, or a scheduling
strategy to spread actors over nodes); by default an actor reserves no CPU (Ray's own default
for actors that run), so any number fits a small cluster.

Ray must be initialised by the caller (``ray.init(address=...)`` on a cluster,
``ray.init()`` on a laptop) or ``address`` given here. A dead actor raises
:class:`ActorDiedError` naming the sub-envs it held, the actor id and Ray's reason. With
``restart=True`` the dead actor is replaced by a fresh one before the error is raised: the
batch in flight is lost (the error says so) and the vector env refuses to ``step`` until the
next ``reset``, so nothing continues from a state that no longer exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from mvpo_envs.async_worker import WorkerCrashedError

__all__ = ["ActorDiedError", "RayVectorEnv", "ray_backend"]

EnvFn = Callable[[], gym.Env]


class ActorDiedError(WorkerCrashedError):
    """A Ray env actor died; ``problems`` holds ``(sub-env index, description)`` pairs."""

    def __init__(self, problems: Sequence[tuple[int, str]], during: str, restarted: bool):
        self.problems = list(problems)
        self.workers = [index for index, _ in self.problems]
        self.restarted = restarted
        desc = "; ".join(f"sub-env {index} ({what})" for index, what in self.problems)
        then = (
            "the actor was replaced by a fresh one: this batch is lost, reset() before stepping"
            if restarted
            else "close() this vector env and make a new one (or pass restart=True)"
        )
        RuntimeError.__init__(self, f"Ray vector env: {desc} during {during}; {then}")


class _EnvHost:
    """The body of one env actor: a few sub-envs, stepped in order (NEXT_STEP autoreset)."""

    def __init__(self, env_fns: list[EnvFn]):
        self.envs = [fn() for fn in env_fns]
        self.reset_next = [False] * len(self.envs)

    def reset(self, seeds: list[int | None], options: dict[str, Any] | None) -> list[tuple]:
        out = []
        for k, (env, seed) in enumerate(zip(self.envs, seeds, strict=True)):
            out.append(env.reset(seed=seed, options=options))
            self.reset_next[k] = False
        return out

    def step(self, actions: list[Any]) -> list[tuple]:
        out = []
        for k, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            if self.reset_next[k]:
                obs, info = env.reset()
                out.append((obs, 0.0, False, False, info))
                self.reset_next[k] = False
                continue
            obs, reward, terminated, truncated, info = env.step(action)
            self.reset_next[k] = bool(terminated or truncated)
            out.append((obs, reward, terminated, truncated, info))
        return out

    def call(self, name: str, args: tuple, kwargs: dict) -> list[Any]:
        if name in ("reset", "step", "close"):
            raise ValueError(f"use `{name}` directly, not through `call`")
        out = []
        for env in self.envs:
            attr = env.get_wrapper_attr(name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return out

    def spaces(self) -> tuple[gym.Space, gym.Space]:
        return self.envs[0].observation_space, self.envs[0].action_space

    def close(self) -> None:
        for env in self.envs:
            env.close()


class RayVectorEnv(gym.vector.VectorEnv):
    """A vector env of ``len(env_fns)`` sub-envs in Ray actors; see the module docstring."""

    def __init__(
        self,
        env_fns: Sequence[EnvFn],
        *,
        envs_per_actor: int = 1,
        actor_options: dict[str, Any] | None = None,
        restart: bool = False,
        address: str | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    ):
        import ray

        if AutoresetMode(autoreset_mode) != AutoresetMode.NEXT_STEP:
            raise ValueError(
                f"RayVectorEnv supports NEXT_STEP autoreset only, got {autoreset_mode}"
            )
        if envs_per_actor <= 0:
            raise ValueError(f"envs_per_actor must be positive, got {envs_per_actor}")
        if not env_fns:
            raise ValueError("RayVectorEnv needs at least one env_fn")
        if not ray.is_initialized():
            ray.init(address=address)
        elif address is not None:
            raise ValueError(f"Ray is already initialised; address={address!r} cannot apply")
        self._ray = ray
        self._remote = ray.remote(_EnvHost)
        self._options = {"num_cpus": 0, **dict(actor_options or {})}
        self.env_fns = list(env_fns)
        self.num_envs = len(self.env_fns)
        self.restart = restart
        self.metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}
        self._slices = [
            list(range(a, min(a + envs_per_actor, self.num_envs)))
            for a in range(0, self.num_envs, envs_per_actor)
        ]
        self._actors = [self._spawn(sl) for sl in self._slices]
        self._needs_reset = False
        self._closed = False
        self.single_observation_space, self.single_action_space = self._get(
            [a.spaces.remote() for a in self._actors[:1]], "spaces"
        )[0]
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    # ------------------------------------------------------------------ actors
    def _spawn(self, sl: list[int]):
        return self._remote.options(**self._options).remote([self.env_fns[i] for i in sl])

    def _get(self, refs: list[Any], during: str) -> list[Any]:
        """``ray.get`` per actor; dead actors -> :class:`ActorDiedError` naming them all."""
        results, problems = [], []
        for a, ref in enumerate(refs):
            try:
                results.append(self._ray.get(ref))
            except self._ray.exceptions.RayActorError as err:
                actor_id = self._actors[a]._actor_id.hex()
                reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
                problems += [(i, f"Ray actor {actor_id} died: {reason}") for i in self._slices[a]]
                if self.restart:
                    self._actors[a] = self._spawn(self._slices[a])
                results.append(None)
        if problems:
            if self.restart:
                self._needs_reset = True
            raise ActorDiedError(problems, during, restarted=self.restart)
        return results

    def _per_actor(self, values: Sequence[Any]) -> list[list[Any]]:
        return [[values[i] for i in sl] for sl in self._slices]

    def _batch(self, rows: list[tuple]):
        """Per-env result tuples -> (observations, *arrays, infos) like SyncVectorEnv."""
        infos: dict[str, Any] = {}
        for i, row in enumerate(rows):
            infos = self._add_info(infos, row[-1], i)
        obs = concatenate(
            self.single_observation_space,
            [row[0] for row in rows],
            create_empty_array(self.single_observation_space, self.num_envs),
        )
        return obs, infos

    # ------------------------------------------------------------------ VectorEnv API
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options=None):
        self._check_open()
        if seed is None:
            seed = [None] * self.num_envs
        elif isinstance(seed, int):
            seed = [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(f"need {self.num_envs} seeds, got {len(seed)}")
        parts = self._per_actor(list(seed))
        refs = [a.reset.remote(p, options) for a, p in zip(self._actors, parts, strict=True)]
        rows = [row for part in self._get(refs, "reset") for row in part]
        self._needs_reset = False
        return self._batch(rows)

    def step(self, actions: Any):
        self._check_open()
        if self._needs_reset:
            raise RuntimeError(
                "Ray vector env: an actor was restarted and its episode is gone; reset() first"
            )
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"need {self.num_envs} actions, got {len(actions)}")
        parts = self._per_actor(actions)
        refs = [a.step.remote(p) for a, p in zip(self._actors, parts, strict=True)]
        rows = [row for part in self._get(refs, "step") for row in part]
        obs, infos = self._batch(rows)
        rewards = np.array([float(r[1]) for r in rows], dtype=np.float64)
        terminated = np.array([bool(r[2]) for r in rows], dtype=np.bool_)
        truncated = np.array([bool(r[3]) for r in rows], dtype=np.bool_)
        return obs, rewards, terminated, truncated, infos

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        self._check_open()
        refs = [a.call.remote(name, args, kwargs) for a in self._actors]
        return tuple(v for part in self._get(refs, f"call({name!r})") for v in part)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    def close_extras(self, **kwargs: Any) -> None:
        if self._closed:
            return
        self._closed = True
        refs = [a.close.remote() for a in self._actors]
        for a, ref in zip(self._actors, refs, strict=True):
            try:
                self._ray.get(ref, timeout=30)
            except (self._ray.exceptions.RayActorError, self._ray.exceptions.GetTimeoutError):
                pass  # already dead or hung: killed below either way
            self._ray.kill(a)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Ray vector env is closed")


def ray_backend(env_fns: list[EnvFn], vector_kwargs: dict[str, Any]) -> RayVectorEnv:
    """The ``"ray"`` entry of :data:`mvpo_envs.vector.BACKENDS` (``vector_kwargs`` -> here)."""
    return RayVectorEnv(env_fns, **vector_kwargs)
