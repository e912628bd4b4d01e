"""End-to-end user paths: what a new user types first, run as written (fast, offline).

Each check drives a public entry point the way README.md and docs/environments.md show it:
the console scripts of ``pyproject.toml``, ``mvpo-demo`` and ``mvpo-play`` on every env,
``gym.make`` / ``GroupedVectorEnv`` in both vectorization modes, and bad input answered with
one line.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.vector import GroupedVectorEnv, unbatch_infos

REPO = Path(__file__).resolve().parents[1]
ENV_IDS = ["mvpo/ALFWorld-v0", "mvpo/WebShop-v0", "mvpo/SearchQA-v0"]


def test_every_console_script_resolves_to_a_callable():
    text = (REPO / "pyproject.toml").read_text()  # (tomllib is 3.11+; we support 3.10)
    section = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    scripts = dict(re.findall(r'^([\w-]+) = "([\w.:]+)"$', section, re.M))
    assert {"mvpo-train", "mvpo-eval", "mvpo-play", "mvpo-demo", "mvpo-inspect"} <= set(scripts)
    for name, target in scripts.items():
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), name


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_demo_of_each_env_wins_scripted(env_id, capsys):
    from mvpo_envs.demo import main

    assert main(["--env-id", env_id, "--seed", "1"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("=== ")]
    assert len(lines) == 2 and '"policy": "scripted"' in lines[0] and '"won": true' in lines[0]


def test_play_driven_through_stdin_as_a_user_would():
    """``mvpo-play`` reading a number, a typed command and a garbled line, then end of input."""

    def play(seed: str, typed: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "mvpo_envs.play", "mvpo/ALFWorld-v0", "--seed", seed]
        return subprocess.run(
            cmd, input=typed, capture_output=True, text=True, timeout=120, cwd=REPO
        )

    proc = play("0", "1\nlook\nflap the wings\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Nothing happens.") == 1 and "step 3" in proc.stdout
    bad = play("-2", "")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_grouped_vector_env_as_documented(mode):
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", num_groups=2, group_size=2, vectorization_mode=mode)
    try:
        _, infos = venv.reset_groups([3, 5])
        ids = [i["task_id"] for i in unbatch_infos(infos, 4)]
        task_ids = venv.env.get_attr("task_ids")[0]
        assert ids == [task_ids[3]] * 2 + [task_ids[5]] * 2
        actions = [i["admissible_actions"][0] for i in unbatch_infos(infos, 4)]
        _, rewards, *_ = venv.step(actions)
        assert rewards.shape == (4,)
        with pytest.raises(ValueError, match="expected a task index"):
            venv.reset_groups([len(task_ids), 0])
    finally:
        venv.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_vec_async_as_the_readme_shows(env_id):
    venv = gym.make_vec(env_id, num_envs=2, vectorization_mode="async")
    try:
        _, infos = venv.reset(seed=[0, 0])
        first = [list(a)[0] for a in infos["admissible_actions"]]
        _, rewards, terminated, truncated, _ = venv.step(tuple(first))
        assert rewards.dtype == np.float64 and not truncated.any()
    finally:
        venv.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_bad_actions_are_the_documented_no_op_or_type_error(env_id):
    env = gym.make(env_id)
    _, info = env.reset(seed=0)
    for action in ["", "x" * 100_000, "réfrigérateur 冰箱 🙂", "look\x00"]:
        _, reward, terminated, truncated, info = env.step(action)
        assert reward == 0.0 and not truncated
        assert info["invalid_action"] or env_id == "mvpo/SearchQA-v0"  # SearchQA: empty search
    for action in (None, 3, b"look", ["look"]):
        with pytest.raises(TypeError, match="expects a text action"):
            env.step(action)
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"task_idx": 1})
    env.close()
