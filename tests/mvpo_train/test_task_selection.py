"""``max_tasks`` evaluations take tasks stratified over the task types, seeded
(mvpo_train/task_selection.py): not the first N of a split sorted by id (one task type)."""

from __future__ import annotations

from collections import Counter

import pytest

import mvpo_envs  # noqa: F401  (registers the envs)
from mvpo_envs.vector import GroupedVectorEnv
from mvpo_train.task_selection import eval_task_indices, stratified_tasks

TYPES = ["look"] * 10 + ["pick"] * 20 + ["clean"] * 5 + ["heat"] * 5


def test_stratified_in_proportion_seeded_and_in_task_order():
    chosen = stratified_tasks(TYPES, 8, seed=0)
    assert chosen == sorted(chosen) and len(set(chosen)) == 8
    assert Counter(TYPES[i] for i in chosen) == {"pick": 4, "look": 2, "clean": 1, "heat": 1}
    assert stratified_tasks(TYPES, 8, seed=0) == chosen  # seeded
    assert any(stratified_tasks(TYPES, 8, seed=s) != chosen for s in range(1, 5))
    # largest remainders (fewer tasks than types); every type once when there is room
    assert Counter(TYPES[i] for i in stratified_tasks(TYPES, 3, seed=0)) == {"pick": 2, "look": 1}
    assert Counter(TYPES[i] for i in stratified_tasks(TYPES, 4, seed=0)) == {
        "pick": 1, "look": 1, "clean": 1, "heat": 1,
    }  # fmt: skip
    assert stratified_tasks(TYPES, 40, seed=0) == list(range(40))
    assert stratified_tasks(TYPES, 99, seed=0) == list(range(40))


@pytest.fixture(scope="module")
def alfworld():
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", num_groups=1, group_size=1, split="valid_unseen")
    yield venv
    venv.close()


def test_an_alfworld_split_is_sampled_across_its_task_types(alfworld):
    types = alfworld.env.get_attr("task_type_list")[0]
    assert len(types) == alfworld.num_tasks and len(set(types)) >= 3
    k = next(i for i, t in enumerate(types) if t != types[0])
    assert 2 <= k <= len(set(types))  # the first k tasks, what max_tasks=k gave: one type
    chosen = eval_task_indices(alfworld, k, seed=0)
    assert len(chosen) == k and len({types[i] for i in chosen}) == k
    assert eval_task_indices(alfworld, 0, seed=0) == list(range(alfworld.num_tasks))


def test_an_env_without_task_types_keeps_the_first_tasks():
    venv = GroupedVectorEnv("mvpo/WebShop-v0", num_groups=1, group_size=1, split="test")
    try:
        assert eval_task_indices(venv, 4, seed=3) == [0, 1, 2, 3]
    finally:
        venv.close()
