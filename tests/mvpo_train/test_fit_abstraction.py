"""``mvpo-fit-abstraction`` on each environment: seeded rollouts, a loadable folder, clear errors."""

from __future__ import annotations

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_train.fit_abstraction import main, random_rollouts

ENVS = ["mvpo/ALFWorld-v0", "mvpo/WebShop-v0", "mvpo/SearchQA-v0"]


@pytest.mark.parametrize("env_id", ENVS)
def test_fit_then_make_with_learned_dir(env_id, tmp_path, capsys):
    out = tmp_path / "abs"
    args = [env_id, "--episodes", "3", "--k", "3", "--milestones", "rules", "--max-steps", "4"]
    assert main([*args, "--seed", "1", "--out", str(out)]) == 0
    assert f"learned:{out}" in capsys.readouterr().out
    env = gym.make(env_id, abstraction=f"learned:{out}")
    rules = gym.make(env_id).unwrapped.abstraction
    _, info = env.reset(seed=0)
    assert info["signature"].startswith("c") and info["signature"].endswith("|d0")
    assert list(info["progress"]) == rules.milestone_names  # --milestones rules keeps the env's
    # same seed, same bytes
    assert main([*args, "--seed", "1", "--out", str(tmp_path / "again")]) == 0
    for name in ("abstraction.json", "centroids.npy"):
        assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes()


def test_rollouts_are_seeded():
    a, ra = random_rollouts("mvpo/WebShop-v0", 3, seed=5, max_steps=5)
    b, rb = random_rollouts("mvpo/WebShop-v0", 3, seed=5, max_steps=5)
    c, _ = random_rollouts("mvpo/WebShop-v0", 3, seed=6, max_steps=5)
    obs = [[s["observation"] for s in ep] for ep in a]
    assert obs == [[s["observation"] for s in ep] for ep in b] and ra == rb
    assert obs != [[s["observation"] for s in ep] for ep in c]
    assert all(len(ep) == 6 for ep in a)  # reset state + 5 steps (no purchase by chance here)


def test_errors_are_one_clear_line(tmp_path, capsys):
    base = ["mvpo/SearchQA-v0", "--episodes", "6", "--k", "2", "--out", str(tmp_path / "x")]
    # a random policy never answers right: no event can predict success
    assert main(base) == 2
    assert "same outcome" in capsys.readouterr().err
    assert main([*base, "--policy", "runs/some-run"]) == 2
    assert "only 'random'" in capsys.readouterr().err
    assert main([*base, "--env-kwargs", "{bad"]) == 2
    assert not (tmp_path / "x").exists()  # nothing half-written
