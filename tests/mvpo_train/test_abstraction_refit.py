"""AbstractionRefit: fit from rollouts, refit schedule, install in a vector env, bit-exact resume."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_abstraction.learned import EmbeddingClusterAbstraction
from mvpo_envs.vector import GroupedVectorEnv
from mvpo_train.abstraction_refit import AbstractionRefit, RefitConfig
from mvpo_train.batch import StepBatch
from mvpo_train.fit_abstraction import main as fit_main
from mvpo_train.records import find_records, read_batch_record

MAX_STEPS = 8
pytestmark = pytest.mark.usefixtures("forget_shared_retrievers")


def alfworld_batch(first: int, n: int, seed: int) -> StepBatch:
    """Episodes ``first..first+n-1`` of the bundled games as a StepBatch (anchors = the
    observations): walkthroughs, walkthroughs cut short then random, random."""
    env = gym.make("mvpo/ALFWorld-v0", preset="mini", max_episode_steps=MAX_STEPS)
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
    cfg = RefitConfig(fit_after=1, refit_every=2, window=2, k=12, top_k=3, min_support=2)
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

    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", 1, 2, preset="mini", max_episode_steps=MAX_STEPS)
    try:
        _, infos = venv.reset_groups([0])
        assert not infos["signature"][0].startswith("c")  # the rules before install
        _install_and_check(run, a, venv)
    finally:
        venv.close()


def _install_and_check(
    run: AbstractionRefit, fitted: EmbeddingClusterAbstraction, venv: GroupedVectorEnv
) -> None:
    """``run.install(venv)``: a reset then reads ``fitted``'s clusters and milestones."""
    run.install(venv)
    obs, infos = venv.reset_groups([0])
    assert list(infos["signature"]) == [f"c{fitted.cluster([obs[0]])[0]}|d0"] * 2
    keys = {k for k in infos["progress"] if not k.startswith("_")}
    assert keys == set(fitted.milestone_names)


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
    run = AbstractionRefit(k=12, top_k=3, min_support=2)
    fitted = run.step(0, batches[0])
    assert fitted.milestone_names
    venv = GroupedVectorEnv(
        "mvpo/ALFWorld-v0", 1, 2, "async", preset="mini", max_episode_steps=MAX_STEPS
    )
    try:
        _install_and_check(run, fitted, venv)
    finally:
        venv.close()


#: each env id, its keywords for a fast run, and a step limit that leaves the first page
ENVS = [
    ("mvpo/ALFWorld-v0", {"preset": "mini"}, 4),
    ("mvpo/WebShop-v0", {"search_query": "instruction"}, 6),
    ("mvpo/SearchQA-v0", {}, 4),
]
SIGNATURE = re.compile(r"c\d+\|d\d+")
#: the action mode each env trains in: SearchQA's free-text answers need generate mode (score
#: mode is refused there, tests/mvpo_train/test_score_templates.py)
MODE = {
    "mvpo/SearchQA-v0": {"action_mode": "generate", "prompt_style": "seed", "max_new_tokens": 8}
}


def _train_kill_resume(micro, tmp_path, **kw) -> tuple[list[dict], Path]:
    """Two iterations uninterrupted, and killed after one then resumed: the same metrics and
    the same bytes of the final weights. Returns the metrics and the uninterrupted run."""
    from mvpo_train.config import TrainConfig
    from mvpo_train.metrics import read_metrics, strip_timing
    from mvpo_train.trainer import train

    def cfg(run, **more):
        return TrainConfig(
            run_dir=str(run), model=str(micro), device="cpu", threads=1, progress=False,
            tensorboard=False, num_groups=2, group_size=2, iterations=2, estimator="mvpo",
            minibatch_size=8, micro_batch_size=8, ppo_epochs=1, seed=3, **kw, **more,
        )  # fmt: skip

    train(cfg(tmp_path / "full"))
    assert len(train(cfg(tmp_path / "split", stop_after=1))) == 1
    train(cfg(tmp_path / "split", resume=True))
    a = [strip_timing(r) for r in read_metrics(tmp_path / "full")]
    b = [strip_timing(r) for r in read_metrics(tmp_path / "split")]
    assert len(a) == 2 and a == b
    name = "checkpoints/iter-000002/model.safetensors"
    assert (tmp_path / "full" / name).read_bytes() == (tmp_path / "split" / name).read_bytes()
    return a, tmp_path / "full"


def _signatures(run: Path) -> dict[int, set[str]]:
    """The signatures the trainer credited, per iteration (from the batch records)."""
    records = find_records(run)
    return {it: {str(s) for s in read_batch_record(p).batch.signature} for it, p in records.items()}


@pytest.mark.parametrize(("env_id", "env_kwargs", "max_steps"), ENVS)
def test_each_env_fit_load_vector_env_train_and_resume(
    env_id, env_kwargs, max_steps, micro, tmp_path
):
    """The user path on every env: ``mvpo-fit-abstraction`` on a few episodes, the folder loaded
    in a vector env, ``mvpo-train --abstraction learned:DIR`` for two iterations, bit-exact
    after a kill and resume, every credited signature a learned one."""
    out = tmp_path / "abs"
    args = [env_id, "--episodes", "4", "--k", "2", "--milestones", "rules", "--max-steps"]
    args += [str(max_steps), "--env-kwargs", json.dumps(env_kwargs), "--out", str(out)]
    assert fit_main(args) == 0
    fitted = EmbeddingClusterAbstraction.load(out)
    venv = GroupedVectorEnv(env_id, 1, 2, abstraction=f"learned:{out}", **env_kwargs)
    try:
        obs, infos = venv.reset_groups([0])
        assert list(infos["signature"]) == [f"c{fitted.cluster([obs[0]])[0]}|d0"] * 2
    finally:
        venv.close()
    _train_kill_resume(
        micro, tmp_path, env_id=env_id, env_kwargs=env_kwargs, max_steps=max_steps,
        abstraction=f"learned:{out}", **MODE.get(env_id, {}),
    )  # fmt: skip
    signatures = _signatures(tmp_path / "full")
    assert sorted(signatures) == [1, 2]
    assert all(SIGNATURE.fullmatch(s) for sigs in signatures.values() for s in sigs)


@pytest.mark.parametrize(("env_id", "env_kwargs", "max_steps"), ENVS)
def test_each_env_trainer_fits_refits_and_resumes_bit_exactly(
    env_id, env_kwargs, max_steps, micro, tmp_path
):
    """``--abstraction learned --abstraction-refit-every 1`` on every env: the rules label the
    first iteration, the fit from its rollouts the second; refitted after every iteration,
    saved in checkpoints, and a killed run resumes bit-exactly."""
    from mvpo_train.checkpoint import find_intact_checkpoint, load_checkpoint

    _train_kill_resume(
        micro, tmp_path, env_id=env_id, env_kwargs=env_kwargs, max_steps=max_steps,
        abstraction="learned", abstraction_refit_every=1,
        abstraction_kwargs={"k": 2, "min_support": 1}, **MODE.get(env_id, {}),
    )  # fmt: skip
    signatures = _signatures(tmp_path / "full")
    assert not any(SIGNATURE.fullmatch(s) for s in signatures[1])  # the rules until the fit
    assert all(SIGNATURE.fullmatch(s) for s in signatures[2])
    state = load_checkpoint(find_intact_checkpoint(tmp_path / "full")[0])["state"]
    assert state["abstraction_refit"]["fitted_at"] == 1  # refitted after the last iteration too
    assert state["abstraction_refit"]["abstraction"]["config"]["k"] == 2


def test_trainer_names_the_fix_when_k_is_too_large(micro, tmp_path, capsys):
    """The default k=32 on a tiny batch: one line naming --abstraction-kwargs, exit code 2."""
    from mvpo_train.cli import train_main

    argv = ["--model", str(micro), "--run-dir", str(tmp_path / "run"), "--threads", "1"]
    argv += ["--num-groups", "1", "--group-size", "2", "--max-steps", "3", "--iterations", "2"]
    argv += ["--env-id", "mvpo/SearchQA-v0", "--abstraction", "learned", "--no-progress"]
    argv += ["--action-mode", "generate", "--prompt-style", "seed", "--max-new-tokens", "4"]
    assert train_main(argv) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(lines) == 1 and "for k=32 clusters" in lines[0], lines
    assert "--abstraction-kwargs" in lines[0]
