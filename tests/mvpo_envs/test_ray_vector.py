"""Env workers on Ray: equal to the sync vector env on the same seeds; dead actors named.

Runs on a local Ray instance bound to loopback (``ray.init(num_cpus=2)``); skipped where the
``ray`` package is absent (``make test-integrations`` runs it in the verl venv, which has it).
"""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from mvpo_envs.ray_vector import ActorDiedError, RayVectorEnv  # noqa: E402
from mvpo_envs.vector import BACKENDS, GroupedVectorEnv, unbatch_infos  # noqa: E402

ENV_ID = "mvpo/ALFWorld-v0"


@pytest.fixture(scope="module")
def local_ray():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    yield
    ray.shutdown()


def _kill(actor) -> None:
    """``ray.kill`` returns before the actor is gone: wait until a call fails."""
    import time

    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            ray.get(actor.__ray_ready__.remote(), timeout=10)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError("the killed actor still answers after 60 s")


@pytest.fixture
def with_ray_backend():
    """The real ``"ray"`` entry of ``BACKENDS`` (vector.py's dispatch), no patching."""
    assert BACKENDS["ray"].__name__ == "_ray_backend"


def _play(venv: GroupedVectorEnv, tasks: list[int], steps: int, seed: int) -> list:
    """Seeded admissible actions for ``steps`` steps; everything the env returned."""
    rng = np.random.default_rng(seed)
    obs, infos = venv.reset_groups(tasks)
    info = unbatch_infos(infos, venv.num_envs)
    trace = [(list(obs), [i.get("task_id") for i in info])]
    for _ in range(steps):
        actions = []
        for i in info:
            adm = list(i.get("admissible_actions") or ["look"])
            actions.append(adm[int(rng.integers(len(adm)))])
        obs, rew, term, trunc, infos = venv.step(actions)
        info2 = unbatch_infos(infos, venv.num_envs)
        trace.append((list(obs), rew.tolist(), term.tolist(), trunc.tolist(),
                      [(i.get("anchor"), i.get("milestones"), i.get("won")) for i in info2]))  # fmt: skip
        info = [b if b.get("admissible_actions") else a for a, b in zip(info, info2, strict=True)]
    return trace


@pytest.mark.parametrize("envs_per_actor", [1, 3])
def test_ray_equals_sync_on_the_same_seeds(local_ray, with_ray_backend, envs_per_actor):
    kw = dict(num_groups=2, group_size=3, split="train", max_episode_steps=6)
    sync = GroupedVectorEnv(ENV_ID, **kw)
    remote = GroupedVectorEnv(
        ENV_ID, vectorization_mode="ray", vector_kwargs={"envs_per_actor": envs_per_actor}, **kw
    )
    try:
        # 14 steps with a 6-step horizon: episodes end, autoreset, and a second reset follows
        for tasks in ([4, 9], [1, 1]):
            expected = _play(sync, tasks, steps=14, seed=7)
            got = _play(remote, tasks, steps=14, seed=7)
            assert got == expected
            task_ids = got[0][1]
            assert task_ids[0] == task_ids[1] == task_ids[2]  # a group shares its task
        assert remote.num_tasks == sync.num_tasks
    finally:
        sync.close()
        remote.close()


def test_a_dead_actor_is_named_and_restart_needs_a_reset(local_ray, with_ray_backend):
    venv = GroupedVectorEnv(
        ENV_ID, 2, 2, vectorization_mode="ray", split="train",
        vector_kwargs={"envs_per_actor": 2, "restart": True},
    )  # fmt: skip
    try:
        venv.reset_groups([0, 1])
        _kill(venv.env._actors[1])
        with pytest.raises(ActorDiedError, match=r"sub-env 2 .*sub-env 3 .*during step") as err:
            venv.step(["look"] * 4)
        assert err.value.workers == [2, 3] and err.value.restarted
        with pytest.raises(RuntimeError, match="reset"):
            venv.step(["look"] * 4)
        obs, _ = venv.reset_groups([0, 1])  # the fresh actor plays again
        assert obs[2] == obs[3] and len(obs) == 4
        venv.step(["look"] * 4)
    finally:
        venv.close()


def test_without_restart_a_dead_actor_stays_an_error(local_ray):
    from mvpo_envs.vector import _EnvFactory

    env = RayVectorEnv([_EnvFactory(ENV_ID, {"split": "train"}) for _ in range(2)])
    try:
        env.reset(seed=[0, 0])
        _kill(env._actors[0])
        for _ in range(2):
            with pytest.raises(ActorDiedError, match="sub-env 0 .*make a new one"):
                env.step(["look", "look"])
    finally:
        env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(["look", "look"])
