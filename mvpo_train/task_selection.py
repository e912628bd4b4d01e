"""Which tasks an evaluation with ``max_tasks`` plays (``mvpo-eval --max-tasks``,
``eval_max_tasks``; docs/training.md, "Quick start").

A split lists its tasks sorted by id, and ALFWorld's ids start with the task type, so its first
N tasks are all of one type. :func:`stratified_tasks` takes N tasks in proportion to the task
types instead (largest remainders, ties by type name; every type at least one when N is at
least the number of types), each type's tasks drawn with a seeded generator, returned in task
order. An env that lists no task types (``task_type_list``), or
lists one, keeps the first N tasks, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["eval_task_indices", "stratified_tasks"]


def stratified_tasks(types: Sequence[str], n: int, seed: int) -> list[int]:
    """``n`` task indices stratified over ``types`` (one type per task), sorted; seeded."""
    total = len(types)
    if n >= total:
        return list(range(total))
    by_type: dict[str, list[int]] = {}
    for index, kind in enumerate(types):
        by_type.setdefault(str(kind), []).append(index)
    names = sorted(by_type)
    exact = np.array([n * len(by_type[k]) / total for k in names])
    quota = np.floor(exact).astype(int)
    order = sorted(range(len(names)), key=lambda j: (-(exact[j] - quota[j]), names[j]))
    for j in order[: n - int(quota.sum())]:
        quota[j] += 1
    while n >= len(names) and (quota == 0).any():  # room for every type: each gets one
        quota[int(np.argmax(quota))] -= 1
        quota[int(np.flatnonzero(quota == 0)[0])] += 1
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for j, name in enumerate(names):
        members = by_type[name]
        chosen += [members[k] for k in rng.permutation(len(members))[: quota[j]]]
    return sorted(chosen)


def eval_task_indices(venv: Any, max_tasks: int | None, seed: int) -> list[int]:
    """The tasks of ``venv`` (a :class:`~mvpo_envs.vector.GroupedVectorEnv`) to evaluate: all,
    or ``max_tasks`` of them stratified over the env's ``task_type_list`` when it has one with
    several types (else the first ``max_tasks``)."""
    total = int(venv.num_tasks)
    if not max_tasks or max_tasks >= total:
        return list(range(total))
    try:
        types = venv.env.get_attr("task_type_list")[0]
    except AttributeError:
        types = None
    if not types or len(set(types)) < 2 or len(types) != total:
        return list(range(max_tasks))
    return stratified_tasks(types, max_tasks, seed)
