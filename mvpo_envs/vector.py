"""Grouped vector environments: B groups x G rollouts, every env of a group on one task.

GRPO, GiGPO and MVPO compare G rollouts of the *same* task instance (docs/estimators.md §0,
``group``). Gymnasium's vector envs reset each sub-env with its own seed, and every mvpo env
picks its task as a pure function of the seed (``seed % num_tasks``, see
:func:`mvpo_envs.base.select_task_index`). So resetting with the seed list
``[s_0]*G + [s_1]*G + ...`` puts group ``b`` on task ``s_b`` in every sub-env, whether the
vector env is sync or async and however many worker processes it has.

Autoreset: Gymnasium's default ``NEXT_STEP`` mode. An env that finished is reset on the next
``step`` call (its action is ignored, its result is a fresh episode). The trainer's rollout
stops feeding a finished env to the model and discards those autoreset results; for a new
batch of groups it calls :meth:`GroupedVectorEnv.reset_groups` again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np


class WorkerCrashedError(RuntimeError):
    """An async vector-env worker process died; names the workers and their exit codes."""

    def __init__(self, dead: list[tuple[int, int | None]], cause: BaseException):
        self.dead = dead
        desc = ", ".join(f"worker {i} (exit code {code})" for i, code in dead) or "a worker"
        super().__init__(
            f"{desc} died during step ({type(cause).__name__}: {cause}); "
            "close this vector env and make a new one"
        )


class GroupedVectorEnv:
    """A Gymnasium vector env of ``num_groups * group_size`` copies of one env id.

    Sub-env ``i`` belongs to group ``i // group_size``. ``vectorization_mode`` is ``"sync"``
    (one process) or ``"async"`` (one process per sub-env; a crashed worker raises in the
    parent instead of hanging, see :meth:`step`).
    """

    def __init__(
        self,
        env_id: str,
        num_groups: int,
        group_size: int,
        vectorization_mode: str = "sync",
        vector_kwargs: dict[str, Any] | None = None,
        **env_kwargs: Any,
    ):
        if num_groups <= 0 or group_size <= 0:
            raise ValueError(
                f"num_groups and group_size must be positive, got {num_groups}, {group_size}"
            )
        self.num_groups = num_groups
        self.group_size = group_size
        self.num_envs = num_groups * group_size
        vector_kwargs = dict(vector_kwargs or {})
        if vectorization_mode == "async":
            vector_kwargs.setdefault("shared_memory", False)
        self.env = gym.make_vec(
            env_id,
            num_envs=self.num_envs,
            vectorization_mode=vectorization_mode,
            vector_kwargs=vector_kwargs,
            **env_kwargs,
        )
        self.num_tasks = len(self.env.get_attr("task_ids")[0])
        self.group_of_env = np.repeat(np.arange(num_groups), group_size)

    def group_seeds(self, task_indices: Sequence[int]) -> list[int]:
        if len(task_indices) != self.num_groups:
            raise ValueError(f"need {self.num_groups} task indices, got {len(task_indices)}")
        return [int(task_indices[g]) for g in self.group_of_env]

    def sample_tasks(self, rng: np.random.Generator) -> list[int]:
        """Distinct task indices for the groups when there are enough tasks (else with repeats)."""
        replace = self.num_groups > self.num_tasks
        return [int(i) for i in rng.choice(self.num_tasks, size=self.num_groups, replace=replace)]

    def reset_groups(self, task_indices: Sequence[int]) -> tuple[list[str], dict[str, Any]]:
        """Reset every env; group ``b`` plays task ``task_indices[b]``."""
        try:
            obs, infos = self.env.reset(seed=self.group_seeds(task_indices))
        except (EOFError, ConnectionError, BrokenPipeError) as err:
            raise WorkerCrashedError(self._dead_workers(), err) from err
        return list(obs), infos

    def step(self, actions: Sequence[str]):
        """Step every env. A dead async worker raises :class:`WorkerCrashedError` at once."""
        try:
            obs, rewards, terminated, truncated, infos = self.env.step(tuple(actions))
        except (EOFError, ConnectionError, BrokenPipeError) as err:
            raise WorkerCrashedError(self._dead_workers(), err) from err
        return list(obs), rewards, terminated, truncated, infos

    def _dead_workers(self) -> list[tuple[int, int | None]]:
        processes = getattr(self.env, "processes", [])
        return [(i, p.exitcode) for i, p in enumerate(processes) if not p.is_alive()]

    def close(self) -> None:
        self.env.close()


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
