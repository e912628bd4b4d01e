"""The learned abstraction: fit on rollout states, save, load, plug into the env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_abstraction.learned import EmbeddingClusterAbstraction


@pytest.fixture(scope="module")
def states_and_env(realdata):
    env = gym.make("mvpo/ALFWorld-v0", data_dir=realdata / "alfworld", split="valid_seen")
    rng = np.random.default_rng(0)
    states = []
    obs, info = env.reset(seed=0)
    states.append(info["state"])
    for _ in range(40):
        acts = info["admissible_actions"]
        obs, _, term, trunc, info = env.step(acts[rng.integers(len(acts))])
        states.append(info["state"])
        if term or trunc:
            obs, info = env.reset(seed=0)
    return states, env


def test_fit_save_load_and_use_in_env(states_and_env, tmp_path):
    states, env = states_and_env
    learned = EmbeddingClusterAbstraction(k=4, seed=0).fit(states)
    sigs = [learned.signature(s, 4) for s in states]
    assert all(s.startswith("c") and s.endswith("|d3") for s in sigs)
    assert len(set(sigs)) > 1  # clusters separate different observations
    same_text = [s for s in states if s["observation"] == states[0]["observation"]]
    assert len({learned.signature(s, 0) for s in same_text}) == 1
    learned.save(tmp_path / "abs")
    loaded = EmbeddingClusterAbstraction.load(tmp_path / "abs")
    assert [loaded.signature(s, 4) for s in states] == sigs
    with_learned = gym.make(
        "mvpo/ALFWorld-v0",
        data_dir=env.unwrapped.games[0].game_file.parents[3].parent,
        split="valid_seen",
        abstraction=loaded,
    )
    _, info = with_learned.reset(seed=0)
    assert info["signature"].startswith("c") and set(info["progress"]) == set(
        env.unwrapped.abstraction.milestone_names
    )


def test_unfitted_or_too_small_fit_raise_clear_errors(states_and_env):
    states, _ = states_and_env
    with pytest.raises(RuntimeError, match="not fitted"):
        EmbeddingClusterAbstraction(k=3).signature(states[0], 0)
    with pytest.raises(ValueError, match="distinct texts"):
        EmbeddingClusterAbstraction(k=1000).fit(states[:3])


def _embed_in_child(queue, texts):
    import torch

    from mvpo_abstraction.learned import shared_encoder

    queue.put((shared_encoder().encode(texts), torch.get_num_threads()))


def test_a_process_forked_after_the_encoder_ran_embeds_instead_of_hanging():
    """An async env worker forked after its parent ran the encoder on a torch thread team
    (GNU OpenMP) used to hang forever on its first embedding; it now embeds on one thread,
    the same vectors as the parent's."""
    import multiprocessing as mp

    import torch

    from mvpo_abstraction.learned import shared_encoder

    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # a thread team in the parent, whatever earlier tests set
    try:
        encoder = shared_encoder()
        encoder.encode([f"you arrive at cabinet {i}" for i in range(64)])
        fresh = ["a text the parent has not embedded", "nor this one, before the fork"]
        ctx = mp.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_embed_in_child, args=(queue, fresh))
        child.start()
        child.join(120)
        hung = child.is_alive()
        if hung:
            child.kill()
        assert not hung, "the forked child hung on its first embedding"
        vectors, child_threads = queue.get(timeout=10)
        assert child_threads == 1
        np.testing.assert_allclose(vectors, encoder.encode(fresh), atol=1e-5)
    finally:
        torch.set_num_threads(threads)
