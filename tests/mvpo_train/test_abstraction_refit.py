"""AbstractionRefit: fit from rollouts, refit schedule, install in a vector env, bit-exact resume."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.vector import GroupedVectorEnv
from mvpo_train.abstraction_refit import AbstractionRefit, RefitConfig
from mvpo_train.batch import StepBatch

MAX_STEPS = 8


def alfworld_batch(first: int, n: int, seed: int) -> StepBatch:
    """Episodes ``first..first+n-1`` of the bundled games as a StepBatch (anchors = the
    observations): walkthroughs, walkthroughs cut short then random, random."""
    env = gym.make("mvpo/ALFWorld-v0", max_episode_steps=MAX_STEPS)
    rng = np.random.default_rng(seed)
    trajs = []
    for j, i in enumerate(range(first, first + n)):
        obs, info = env.reset(seed=i)
        walk = json.loads(open(info["gamefile"]).read())["walkthrough"]
        scripted = {0: len(walk), 1: len(walk) - 1, 2: 0}[i % 3]
        anchors, rewards = [], []
        for t in range(MAX_STEPS):
            acts = info["admissible_actions"]
            action = walk[t] if t < scripted else acts[rng.integers(len(acts))]
            anchors.append(obs)
            obs, r, term, trunc, info = env.step(action)
            rewards.append(r)
            if term or trunc:
                break
        trajs.append({"group": j // 2, "rewards": rewards, "anchors": anchors})
    return StepBatch.from_trajectories(trajs)


@pytest.fixture(scope="module")
def batches():
    return [alfworld_batch(12 * it, 12, seed=it) for it in range(3)]


def test_schedule():
    r = AbstractionRefit(fit_after=2, refit_every=3)
    assert [r.due(i) for i in range(3)] == [False, True, True]
    r.fitted_at = 1
    assert [r.due(i) for i in range(1, 6)] == [False, False, False, True, True]
    once = AbstractionRefit(fit_after=1, refit_every=0)
    once.fitted_at = 0
    assert not any(once.due(i) for i in range(10))
    with pytest.raises(ValueError):
        RefitConfig(fit_after=0)


def test_fit_install_and_bit_exact_resume(batches):
    cfg = RefitConfig(fit_after=1, refit_every=2, window=2, k=6, top_k=3, min_support=2)
    run = AbstractionRefit(cfg)
    fitted = run.step(0, batches[0])
    assert fitted is not None and run.fitted_at == 0 and fitted.milestone_names
    assert run.step(1, batches[1]) is None  # refit every 2
    # checkpoint after iteration 1 (JSON round trip: plain data), resume in a fresh object
    saved = json.loads(json.dumps(run.state_dict()))
    resumed = AbstractionRefit()
    resumed.load_state_dict(saved)
    texts = [str(a) for a in batches[1].anchor]
    assert (resumed.abstraction.cluster(texts) == run.abstraction.cluster(texts)).all()
    assert resumed.abstraction.events == run.abstraction.events
    # iteration 2 refits on the same window in both runs: identical results
    a, b = run.step(2, batches[2]), resumed.step(2, batches[2])
    assert a is not None and b is not None and a.events == b.events
    assert np.array_equal(a.centroids, b.centroids)
    assert json.dumps(run.state_dict()) == json.dumps(resumed.state_dict())
    assert {e[0] for e in run.episodes} == {1, 2}  # window of 2 iterations

    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", 1, 2, max_episode_steps=MAX_STEPS)
    try:
        _, infos = venv.reset_groups([0])
        assert not infos["signature"][0].startswith("c")  # the rules before install
        run.install(venv)
        obs, infos = venv.reset_groups([0])
        assert list(infos["signature"]) == [f"c{a.cluster([obs[0]])[0]}|d0"] * 2
        keys = {k for k in infos["progress"] if not k.startswith("_")}
        assert keys == set(a.milestone_names)
    finally:
        venv.close()


def test_no_success_yet_fits_clusters_without_milestones(batches):
    b = batches[0]
    flat = StepBatch.from_trajectories(
        [
            {"group": 0, "rewards": [0.0] * len(rows), "anchors": [str(b.anchor[r]) for r in rows]}
            for rows in (np.flatnonzero(b.traj == i) for i in np.unique(b.traj))
        ]
    )
    run = AbstractionRefit(k=4)
    fitted = run.step(0, flat)
    assert fitted.milestone_names == [] and fitted.centroids.shape[0] == 4
    with pytest.raises(RuntimeError, match="nothing fitted"):
        AbstractionRefit().install(None)


@pytest.mark.slow
def test_install_in_async_workers(batches):
    run = AbstractionRefit(k=6, top_k=3, min_support=2)
    fitted = run.step(0, batches[0])
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", 1, 2, "async", max_episode_steps=MAX_STEPS)
    try:
        run.install(venv)
        obs, infos = venv.reset_groups([0])
        assert list(infos["signature"]) == [f"c{fitted.cluster([obs[0]])[0]}|d0"] * 2
        keys = {k for k in infos["progress"] if not k.startswith("_")}
        assert keys == set(fitted.milestone_names)
    finally:
        venv.close()


def test_trainer_fits_the_learned_abstraction_and_resumes_bit_exactly(micro, tmp_path):
    """``--abstraction learned --abstraction-refit-every 1``: fitted from the first iteration's
    rollouts, refitted each iteration, saved in checkpoints; kill + resume == uninterrupted."""
    from mvpo_train.checkpoint import find_intact_checkpoint, load_checkpoint
    from mvpo_train.config import TrainConfig
    from mvpo_train.metrics import read_metrics, strip_timing
    from mvpo_train.trainer import train

    def cfg(run, **kw):
        return TrainConfig(
            run_dir=str(run), model=str(micro), device="cpu", threads=1, progress=False,
            tensorboard=False, num_groups=2, group_size=2, max_steps=4, iterations=3,
            estimator="mvpo", minibatch_size=8, micro_batch_size=4, ppo_epochs=1, seed=3,
            env_kwargs={"preset": "mini"}, abstraction="learned", abstraction_refit_every=1,
            abstraction_kwargs={"k": 4, "min_support": 1}, **kw,
        )  # fmt: skip

    train(cfg(tmp_path / "full"))
    assert len(train(cfg(tmp_path / "split", stop_after=1))) == 1
    train(cfg(tmp_path / "split", resume=True))
    a = [strip_timing(r) for r in read_metrics(tmp_path / "full")]
    b = [strip_timing(r) for r in read_metrics(tmp_path / "split")]
    assert len(a) == 3 and a == b
    name = "checkpoints/iter-000003/model.safetensors"
    assert (tmp_path / "full" / name).read_bytes() == (tmp_path / "split" / name).read_bytes()
    saved = load_checkpoint(find_intact_checkpoint(tmp_path / "full")[0])
    state = saved["state"]["abstraction_refit"]
    assert state["fitted_at"] == 2  # refitted after every iteration, the last after iteration 3
