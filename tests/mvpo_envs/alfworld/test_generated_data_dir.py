"""``mvpo-alfworld-generate --out OUT`` output loads with ``data_dir=OUT`` by the split names the
generator writes (docs/alfworld_generator.md, "Playing generated games"); ALFWorld's own layout
and mode names keep working, and an unknown split names the folders found."""

from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the envs)
from mvpo_envs.alfworld import generate as gen
from mvpo_envs.alfworld.data import collect_games


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gen") / "mini"
    argv = ["--out", str(folder), "--preset", "mini", "--split-sizes", "train=1,eval=2"]
    assert gen.main([*argv, "--seed", "5", "--quiet"]) == 0
    return folder


def _task_ids(**kwargs) -> list[str]:
    env = gym.make("mvpo/ALFWorld-v0", **kwargs)
    try:
        return list(env.unwrapped.task_ids)
    finally:
        env.close()


def test_the_generators_splits_load_by_their_names(out):
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["eval", "train"]
    ids = _task_ids(data_dir=str(out), split="eval")
    assert ids == [g.task_id for g in collect_games(out / "eval")] and len(ids) == 2
    assert len(_task_ids(data_dir=str(out), split="train")) == 1
    env = gym.make("mvpo/ALFWorld-v0", data_dir=str(out), split="eval")
    try:
        _, info = env.reset(seed=1)
        assert info["task_id"] == ids[1] and info["admissible_actions"]
    finally:
        env.close()


def test_alfworlds_layout_and_mode_names_still_load(out, tmp_path):
    real = tmp_path / "alfworld" / "json_2.1.1"
    shutil.copytree(out / "eval", real / "valid_unseen")
    expected = [g.task_id for g in collect_games(out / "eval")]
    root = str(tmp_path / "alfworld")
    assert _task_ids(data_dir=root, split="valid_unseen") == expected
    assert _task_ids(data_dir=root, split="eval_out_of_distribution") == expected


def test_an_unknown_split_names_the_folders_found(out):
    with pytest.raises(
        ValueError, match=r"unknown ALFWorld split 'valid_seen' in .*\(eval, train\)"
    ):
        _task_ids(data_dir=str(out), split="valid_seen")
    with pytest.raises(ValueError, match="unknown ALFWorld split '../mini'"):
        _task_ids(data_dir=str(out), split="../mini")
