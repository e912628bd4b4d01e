"""Task selection of :class:`mvpo_envs.base.TextEnv`: reset options are checked, never guessed."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.base import select_task_index

IDS = [f"t{i}" for i in range(5)]


def test_numpy_integer_task_index_is_accepted():
    rng = np.random.default_rng(0)
    assert select_task_index(5, IDS, None, {"task_index": np.int64(3)}, rng) == 3
    assert type(select_task_index(5, IDS, None, {"task_index": np.int32(4)}, rng)) is int


@pytest.mark.parametrize(
    ("bad", "error"),
    [(True, TypeError), (3.0, TypeError), ("3", TypeError), (5, IndexError), (-1, IndexError)],
)
def test_bool_float_str_or_out_of_range_task_index_is_an_error(bad, error):
    with pytest.raises(error, match=r"task_index must be an int in \[0, 5\)"):
        select_task_index(5, IDS, None, {"task_index": bad}, np.random.default_rng(0))


def test_misspelt_reset_option_is_an_error_not_a_seeded_task():
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['task_idx'\]"):
        select_task_index(5, IDS, 0, {"task_idx": 3}, np.random.default_rng(0))


def test_env_reset_checks_options():
    env = gym.make("mvpo/SearchQA-v0")
    _, info = env.reset(options={"task_index": np.int64(2)})
    assert info["task_id"] == env.unwrapped.task_ids[2]
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(seed=0, options={"taskid": info["task_id"]})
    env.close()


@pytest.mark.parametrize("env_id", ["mvpo/ALFWorld-v0", "mvpo/WebShop-v0"])
def test_empty_data_dir_is_an_error_not_the_bundled_data(env_id):
    with pytest.raises(ValueError, match="data_dir is empty"):
        gym.make(env_id, data_dir=" ")


def test_empty_abstraction_name_is_an_error_not_the_default():
    with pytest.raises(ValueError, match="abstraction is empty"):
        gym.make("mvpo/SearchQA-v0", abstraction="")


@pytest.mark.parametrize(
    ("env_id", "other"), [("mvpo/ALFWorld-v0", "webshop"), ("mvpo/WebShop-v0", "searchqa")]
)
def test_an_abstraction_of_another_env_is_named_at_reset(env_id, other):
    env = gym.make(env_id, abstraction=other)  # was a bare KeyError('page') from the tracker
    with pytest.raises(ValueError, match=f"the abstraction '{other}' reads the state key"):
        env.reset(seed=0)
    env.close()
