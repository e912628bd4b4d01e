"""Grouped vector envs: groups share a task, any worker count, crashes reported."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.vector import GroupedVectorEnv, WorkerCrashedError, unbatch_infos

pytestmark = pytest.mark.usefixtures("forget_shared_retrievers")


def _task_ids(venv, task_indices):
    _, infos = venv.reset_groups(task_indices)
    return [i["task_id"] for i in unbatch_infos(infos, venv.num_envs)]


def test_groups_share_one_task_sync():
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", num_groups=3, group_size=2, split="train")
    ids = _task_ids(venv, [4, 0, 7])
    assert ids[0] == ids[1] and ids[2] == ids[3] and ids[4] == ids[5]
    assert len({ids[0], ids[2], ids[4]}) == 3
    assert venv.group_of_env.tolist() == [0, 0, 1, 1, 2, 2]
    venv.close()


def test_same_seed_same_task_on_1_and_4_workers():
    single = gym.make("mvpo/ALFWorld-v0", split="train")
    expected = [single.reset(seed=s)[1]["task_id"] for s in (3, 3, 9, 9)]
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", 2, 2, vectorization_mode="async", split="train")
    assert _task_ids(venv, [3, 9]) == expected
    venv.close()


def test_sample_tasks_is_seeded_and_distinct():
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", 4, 1, split="train")
    a = venv.sample_tasks(np.random.default_rng(5))
    assert a == venv.sample_tasks(np.random.default_rng(5)) and len(set(a)) == 4
    venv.close()


def test_async_worker_crash_is_reported_not_hung():
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", 1, 2, vectorization_mode="async", split="train")
    venv.reset_groups([0])
    venv.env.processes[1].kill()
    venv.env.processes[1].join(timeout=10)
    with pytest.raises(WorkerCrashedError, match=r"worker 1 \(pid \d+ was killed by SIGKILL\)"):
        venv.step(["look", "look"])
    venv.close()
    assert all(p.exitcode is not None for p in venv.env.processes)


def _searchqa_batches(mode: str) -> list:
    """Three batches; every episode ends on its batch's last step (search, then answer)."""
    log = []
    with GroupedVectorEnv("mvpo/SearchQA-v0", 2, 2, vectorization_mode=mode) as venv:
        for tasks in ([0, 1], [2, 3], [4, 1]):
            obs, infos = venv.reset_groups(tasks)
            ids = [i["task_id"] for i in unbatch_infos(infos, venv.num_envs)]
            log.append((obs, ids))
            for action in ("<search> {} </search>", "<answer> {} </answer>"):
                words = [i["task"].split()[-1] for i in unbatch_infos(infos, venv.num_envs)]
                obs, rewards, term, trunc, infos = venv.step([action.format(w) for w in words])
                step_ids = [i["task_id"] for i in unbatch_infos(infos, venv.num_envs)]
                assert step_ids == ids, f"{mode}: a sub-env left its group's task"
                log.append((obs, rewards.tolist(), term.tolist(), trunc.tolist(), step_ids))
            assert all(log[-1][2]), "every episode must end on the batch's last step"
    return log


def test_async_equals_sync_across_batches_ending_on_the_last_step():
    """Gymnasium 1.4's async worker without shared memory kept its autoreset flag across
    ``reset``: the first step of the next batch reset the env unseeded (another task)."""
    assert _searchqa_batches("async") == _searchqa_batches("sync")


def test_unknown_vectorization_mode_is_one_clear_error():
    with pytest.raises(ValueError, match="vectorization_mode must be one of"):
        GroupedVectorEnv("mvpo/SearchQA-v0", 1, 1, vectorization_mode="threads")


def test_unbatch_infos_roundtrip_nested_dicts():
    infos = {
        "a": np.array([1, 2]),
        "_a": np.array([True, True]),
        "s": {"x": np.array(["p", "q"], dtype=object), "_x": np.array([True, False])},
        "_s": np.array([True, True]),
    }
    assert unbatch_infos(infos, 2) == [{"a": 1, "s": {"x": "p"}}, {"a": 2, "s": {}}]


@pytest.mark.parametrize("bad", ["end", "far", -1, 1.7, True])
def test_reset_groups_never_wraps_a_task_index(bad):
    venv = GroupedVectorEnv("mvpo/SearchQA-v0", num_groups=2, group_size=1)
    n = venv.num_tasks
    bad = {"end": n, "far": 10 * n + 1}.get(bad, bad) if isinstance(bad, str) else bad
    try:
        with pytest.raises(ValueError, match=r"task_indices\[0\]: expected a task index in"):
            venv.reset_groups([bad, 0])
        assert _task_ids(venv, [np.int64(n - 1), 0])[0] == venv.env.get_attr("task_ids")[0][-1]
    finally:
        venv.close()


def test_step_with_the_wrong_number_of_actions_is_one_clear_error():
    venv = GroupedVectorEnv("mvpo/SearchQA-v0", num_groups=1, group_size=2)
    try:
        venv.reset_groups([0])
        with pytest.raises(ValueError, match="need 2 actions"):
            venv.step(["<answer> x </answer>"])
    finally:
        venv.close()
