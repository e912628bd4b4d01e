"""The learned abstraction on the bundled ALFWorld games: fit (clusters and learned milestones),
save/load, ``learned:DIR`` in gym.make and a vector env, encoder check, not-fitted errors."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_abstraction import make_abstraction
from mvpo_abstraction.learned import EmbeddingClusterAbstraction
from mvpo_abstraction.learned_milestones import MilestoneLearner
from mvpo_envs.vector import GroupedVectorEnv

MAX_STEPS = 8


def alfworld_episodes(n: int, seed: int = 0):
    """Expert walkthroughs (won), walkthroughs cut one step short then random, random play."""
    env = gym.make("mvpo/ALFWorld-v0", max_episode_steps=MAX_STEPS)
    rng = np.random.default_rng(seed)
    episodes, outcomes = [], []
    for i in range(n):
        _, info = env.reset(seed=i)
        walk = json.loads(open(info["gamefile"]).read())["walkthrough"]
        scripted = {0: len(walk), 1: len(walk) - 1, 2: 0}[i % 3]
        states, ret = [info["state"]], 0.0
        for t in range(MAX_STEPS):
            acts = info["admissible_actions"]
            action = walk[t] if t < scripted else acts[rng.integers(len(acts))]
            _, r, term, trunc, info = env.step(action)
            states.append(info["state"])
            ret += r
            if term or trunc:
                break
        episodes.append(states)
        outcomes.append(ret)
    return episodes, outcomes


def _fit(episodes, outcomes, seed=0):
    learner = MilestoneLearner(top_k=3, min_support=2, seed=seed)
    return EmbeddingClusterAbstraction(
        k=6, milestones_from="learned", seed=seed, learner=learner
    ).fit_episodes(episodes, outcomes)


@pytest.fixture(scope="module")
def data():
    episodes, outcomes = alfworld_episodes(18)
    assert 0 < np.mean(outcomes) < 1  # some won, some not: something to learn
    return episodes, outcomes, _fit(episodes, outcomes)


def test_fit_learns_named_milestones_deterministically(data, tmp_path):
    episodes, outcomes, fitted = data
    assert 1 <= len(fitted.milestone_names) <= 3
    assert all(n.startswith(("visit:", "move:")) for n in fitted.milestone_names)
    for name in fitted.milestone_names:  # short readable names from the clusters' content
        assert len(name) <= 64 and "available" not in name and "commands" not in name, name
        assert re.fullmatch(r"(visit|move):[a-z0-9~-]+(>[a-z0-9~-]+)?", name), name
    assert [e.score for e in fitted.events] == sorted(
        (e.score for e in fitted.events), reverse=True
    )
    again = _fit(episodes, outcomes)
    fitted.save(tmp_path / "a")
    again.save(tmp_path / "b")
    assert (tmp_path / "a/abstraction.json").read_text() == (
        tmp_path / "b/abstraction.json"
    ).read_text()
    assert (tmp_path / "a/centroids.npy").read_bytes() == (
        tmp_path / "b/centroids.npy"
    ).read_bytes()


def test_names_stable_across_refits(data):
    episodes, outcomes, fitted = data
    perm = np.random.default_rng(1).permutation(len(episodes))
    refit = _fit([episodes[i] for i in perm], [outcomes[i] for i in perm])
    assert refit.milestone_names == fitted.milestone_names
    assert refit.cluster_names == fitted.cluster_names


def test_learned_milestones_fire_in_the_env_as_fitted(data, tmp_path):
    episodes, outcomes, fitted = data
    fitted.save(tmp_path / "abs")
    env = gym.make("mvpo/ALFWorld-v0", abstraction=f"learned:{tmp_path / 'abs'}")
    _, info = env.reset(seed=0)  # episode 0 is a won walkthrough
    assert set(info["progress"]) == set(fitted.milestone_names)
    assert info["signature"].startswith("c") and info["signature"].endswith("|d0")
    walk = json.loads(open(info["gamefile"]).read())["walkthrough"]
    fired = []
    for action in walk:
        _, _, _, _, info = env.step(action)
        fired += info["milestones"]
    # the env's tracker reports exactly the events the learner counted for this episode
    ids = fitted.cluster([s["observation"] for s in episodes[0]])
    occ = fitted.learner.candidates([ids])
    expected = {
        e.name for e in fitted.events if occ.get((e.kind, e.src, e.dst), np.zeros(1, bool))[0]
    }
    assert set(fired) == expected


def test_save_load_round_trip_and_encoder_check(data, tmp_path):
    episodes, _, fitted = data
    fitted.save(tmp_path / "abs", extra={"note": "x"})
    loaded = make_abstraction(f"learned:{tmp_path / 'abs'}")
    states = [s for ep in episodes[:4] for s in ep]
    assert [loaded.signature(s, 5) for s in states] == [fitted.signature(s, 5) for s in states]
    assert loaded.events == fitted.events and loaded.milestone_names == fitted.milestone_names
    meta = json.loads((tmp_path / "abs/abstraction.json").read_text())
    assert meta["encoder"]["name"] == "all-MiniLM-L6-v2" and len(meta["encoder"]["sha256"]) == 64
    meta["encoder"]["sha256"] = "0" * 64
    (tmp_path / "abs/abstraction.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="encoder"):
        make_abstraction(f"learned:{tmp_path / 'abs'}")


def test_in_a_vector_env(data, tmp_path):
    _, _, fitted = data
    fitted.save(tmp_path / "abs")
    venv = GroupedVectorEnv(
        "mvpo/ALFWorld-v0", 2, 2, abstraction=f"learned:{tmp_path / 'abs'}", max_episode_steps=4
    )
    try:
        _, infos = venv.reset_groups([0, 1])
        sigs = list(infos["signature"])
        assert all(s.startswith("c") for s in sigs)
        assert sigs[0] == sigs[1] and len(set(sigs)) <= 2  # same task -> same first signature
        _, _, _, _, infos = venv.step(["look"] * 4)
        keys = {k for k in infos["progress"] if not k.startswith("_")}  # Gymnasium's batching
        assert keys == set(fitted.milestone_names)
        assert all(len(infos["progress"][k]) == 4 for k in keys)
    finally:
        venv.close()


def test_not_fitted_errors_name_the_fix(tmp_path):
    with pytest.raises(RuntimeError, match="mvpo-fit-abstraction"):
        gym.make("mvpo/ALFWorld-v0", abstraction="learned")
    with pytest.raises(FileNotFoundError, match="mvpo-fit-abstraction"):
        make_abstraction(f"learned:{tmp_path / 'nothing-here'}")
    with pytest.raises(RuntimeError, match="not fitted"):
        EmbeddingClusterAbstraction(k=3).signature({"observation": "x"}, 0)
    with pytest.raises(ValueError, match="same outcome"):
        EmbeddingClusterAbstraction(k=2, milestones_from="learned").fit_episodes(
            [[{"observation": f"room {i}"}, {"observation": "hall"}] for i in range(8)], [0.0] * 8
        )
