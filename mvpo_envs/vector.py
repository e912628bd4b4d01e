"""Grouped vector environments: B groups x G rollouts, every env of a group on one task.

docs/environments.md, "Vector envs".

GRPO, GiGPO and MVPO compare G rollouts of the *same* task instance (docs/estimators.md §0,
``group``). Gymnasium's vector envs reset each sub-env with its own seed, and every mvpo env
picks its task as a pure function of the seed (``seed % num_tasks``, see
:func:`mvpo_envs.base.select_task_index`). So resetting with the seed list
``[s_0]*G + [s_1]*G + ...`` puts group ``b`` on task ``s_b`` in every sub-env, whether the
vector env is sync or async and however many worker processes it has.

Vectorization backends (``vectorization_mode``): ``"sync"`` (Gymnasium's ``SyncVectorEnv``, one
process), ``"async"`` (:class:`~mvpo_envs.async_worker.TextAsyncVectorEnv`, one worker
process per sub-env, its own worker protocol so async == sync on the same seeds, and a named
:class:`WorkerCrashedError` instead of a hang) and ``"ray"`` (Ray actors, optional extra ``ray``,
:mod:`mvpo_envs.ray_vector`). All build every sub-env with the same
``gym.make(env_id, **env_kwargs)``. A backend is one function in :data:`BACKENDS`
``(env_fns, vector_kwargs) -> gymnasium.vector.VectorEnv``: adding one is adding an entry; it
must honour seeds per sub-env and ``NEXT_STEP`` autoreset.

Construction: the sub-envs are built inside :func:`mvpo_envs.build_batch.build_batch`, so
their shared data (ALFWorld's game listing) is verified once for the whole batch, not once per
env (docs/environments.md, "Vector envs").

Info keys: Gymnasium merges every key of every sub-env's ``info`` into arrays each step (nested
dicts recursively; with ALFWorld's ``state`` about a fifth of a step's CPU, docs/environments.md,
"Vector envs"). ``info_keys=`` (opt-in)
keeps only the named top-level keys, dropped inside each sub-env before merging (and before an
async worker sends them); the trainer passes the keys its rollout reads
(:data:`mvpo_train.rollout.ROLLOUT_INFO_KEYS`). Default ``None``: every key, as Gymnasium does.

Autoreset: Gymnasium's default ``NEXT_STEP`` mode. An env that finished is reset on the next
``step`` call (its action is ignored, its result is a fresh episode). The trainer's rollout
stops feeding a finished env to the model and discards those autoreset results; for a new
batch of groups it calls :meth:`GroupedVectorEnv.reset_groups` again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from mvpo_envs.async_worker import TextAsyncVectorEnv, WorkerCrashedError
from mvpo_envs.build_batch import build_batch

__all__ = [
    "BACKENDS",
    "GroupedVectorEnv",
    "KeepInfoKeys",
    "WorkerCrashedError",
    "build_batch",
    "unbatch_infos",
]

EnvFn = Callable[[], gym.Env]


def _sync_backend(env_fns: list[EnvFn], vector_kwargs: dict[str, Any]) -> gym.vector.VectorEnv:
    return gym.vector.SyncVectorEnv(env_fns, **vector_kwargs)


def _async_backend(env_fns: list[EnvFn], vector_kwargs: dict[str, Any]) -> gym.vector.VectorEnv:
    # free text does not fit Gymnasium's shared-memory buffers: observations go through pipes
    return TextAsyncVectorEnv(env_fns, **{"shared_memory": False, **vector_kwargs})


def _ray_backend(env_fns: list[EnvFn], vector_kwargs: dict[str, Any]) -> gym.vector.VectorEnv:
    # Ray is an optional extra, imported only when asked for (docs/scaling.md)
    from mvpo_envs.ray_vector import ray_backend

    return ray_backend(env_fns, vector_kwargs)


#: vectorization mode -> constructor ``(env_fns, vector_kwargs) -> VectorEnv``
BACKENDS: dict[str, Callable[[list[EnvFn], dict[str, Any]], gym.vector.VectorEnv]] = {
    "sync": _sync_backend,
    "async": _async_backend,
    "ray": _ray_backend,
}


class GroupedVectorEnv:
    """A Gymnasium vector env of ``num_groups * group_size`` copies of one env id.

    Sub-env ``i`` belongs to group ``i // group_size``. ``vectorization_mode`` is a key of
    :data:`BACKENDS`: ``"sync"`` (one process), ``"ray"`` (Ray actors) or ``"async"`` (one worker process per sub-env;
    a dead or stopped worker raises :class:`WorkerCrashedError` naming it, and :meth:`close`
    returns within seconds). ``vector_kwargs`` go to the backend (for ``"async"``:
    ``call_timeout``, ``stopped_grace``, ``close_timeout`` and Gymnasium's ``AsyncVectorEnv``
    keywords); ``env_kwargs`` to ``gym.make``.

    ``info_keys``: ``None`` (default) merges every info key of every sub-env, as Gymnasium
    does; a collection of key names keeps only those top-level keys of each sub-env's info
    (in ``reset`` and ``step``; a named key an env does not give is simply absent), which
    makes stepping cheaper where infos carry large nested dicts (ALFWorld's ``state``).
    """

    def __init__(
        self,
        env_id: str,
        num_groups: int,
        group_size: int,
        vectorization_mode: str = "sync",
        vector_kwargs: dict[str, Any] | None = None,
        info_keys: Collection[str] | None = None,
        **env_kwargs: Any,
    ):
        if num_groups <= 0 or group_size <= 0:
            raise ValueError(
                f"num_groups and group_size must be positive, got {num_groups}, {group_size}"
            )
        self.num_groups = num_groups
        self.group_size = group_size
        self.num_envs = num_groups * group_size
        if vectorization_mode not in BACKENDS:
            raise ValueError(
                f"vectorization_mode must be one of {sorted(BACKENDS)}, got {vectorization_mode!r}"
            )
        self.env_id = env_id
        self.vectorization_mode = vectorization_mode
        if isinstance(info_keys, str):  # a str is a collection of its letters
            raise ValueError(f"info_keys must be a collection of key names, got {info_keys!r}")
        self.info_keys = None if info_keys is None else frozenset(info_keys)
        env_fns = [_EnvFactory(env_id, env_kwargs, self.info_keys) for _ in range(self.num_envs)]
        with build_batch():  # shared data verified once for the batch, not once per env
            self.env = BACKENDS[vectorization_mode](env_fns, dict(vector_kwargs or {}))
        self.num_tasks = len(self.env.get_attr("task_ids")[0])
        self.group_of_env = np.repeat(np.arange(num_groups), group_size)

    def group_seeds(self, task_indices: Sequence[int]) -> list[int]:
        """Reset seeds ``[t_0]*G + [t_1]*G + ...``; each task index is checked, never wrapped.

        A seed ``s`` plays task ``s % num_tasks``, so an index out of ``[0, num_tasks)`` (or a
        float such as ``1.7``) would silently play another task: it is an error instead.
        """
        if len(task_indices) != self.num_groups:
            raise ValueError(f"need {self.num_groups} task indices, got {len(task_indices)}")
        for b, index in enumerate(task_indices):
            if (
                isinstance(index, bool)
                or not isinstance(index, (int, np.integer))
                or not 0 <= index < self.num_tasks
            ):
                raise ValueError(
                    f"task_indices[{b}]: expected a task index in [0, {self.num_tasks}) of "
                    f"{self.env_id}, got {index!r}"
                )
        return [int(task_indices[g]) for g in self.group_of_env]

    def sample_tasks(self, rng: np.random.Generator) -> list[int]:
        """Distinct task indices for the groups when there are enough tasks (else with repeats)."""
        replace = self.num_groups > self.num_tasks
        return [int(i) for i in rng.choice(self.num_tasks, size=self.num_groups, replace=replace)]

    def reset_groups(self, task_indices: Sequence[int]) -> tuple[list[str], dict[str, Any]]:
        """Reset every env; group ``b`` plays task ``task_indices[b]``.

        Every sub-env starts a fresh episode, whatever its autoreset state was.
        """
        obs, infos = self.env.reset(seed=self.group_seeds(task_indices))
        return list(obs), infos

    def step(self, actions: Sequence[str]):
        """Step every env. A dead or stopped async worker raises :class:`WorkerCrashedError`."""
        if len(actions) != self.num_envs:
            raise ValueError(f"need {self.num_envs} actions (one per sub-env), got {len(actions)}")
        obs, rewards, terminated, truncated, infos = self.env.step(tuple(actions))
        return list(obs), rewards, terminated, truncated, infos

    def close(self) -> None:
        """Close every sub-env (async: returns within seconds, no worker left behind)."""
        self.env.close()

    def __enter__(self) -> GroupedVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _EnvFactory:
    """``gym.make(env_id, **env_kwargs)`` as a picklable callable (for any worker start method),
    wrapped in :class:`KeepInfoKeys` when ``info_keys`` is given."""

    def __init__(
        self, env_id: str, env_kwargs: dict[str, Any], info_keys: frozenset[str] | None = None
    ):
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        self.info_keys = info_keys

    def __call__(self) -> gym.Env:
        import mvpo_envs  # noqa: F401  (registers the ids in a spawned worker)

        env = gym.make(self.env_id, **self.env_kwargs)
        return env if self.info_keys is None else KeepInfoKeys(env, self.info_keys)


class KeepInfoKeys(gym.Wrapper):
    """Keep only the top-level ``info`` keys in ``keys`` (in ``reset`` and ``step``); every
    other call, attribute and method goes to the wrapped env unchanged."""

    def __init__(self, env: gym.Env, keys: Collection[str]):
        super().__init__(env)
        self.keys = frozenset(keys)

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, {k: v for k, v in info.items() if k in self.keys}

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {k: v for k, v in info.items() if k in self.keys}


def unbatch_infos(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium vector infos (nested dicts of arrays + ``_key`` masks) -> one dict per sub-env."""
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, values in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get("_" + key, np.ones(num_envs, dtype=bool))
        per_env = unbatch_infos(values, num_envs) if isinstance(values, dict) else values
        for i in range(num_envs):
            if mask[i]:
                value = per_env[i]
                out[i][key] = value.item() if isinstance(value, np.generic) else value
    return out
