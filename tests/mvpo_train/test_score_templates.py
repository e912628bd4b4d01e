"""Score mode and admissible templates (docs/webshop.md, "Score mode"): WebShop's bare
``search[<query>]`` is refused before training with one line naming ``search_query``; the
filled list trains (tests/mvpo_train/test_train_each_env.py); the encoder warm start clones WebShop's expert plans (``expert_actions``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvpo_envs.vector import GroupedVectorEnv
from mvpo_envs.webshop.env import WebShopEnv
from mvpo_train.cli import train_main
from mvpo_train.config import ConfigError, TrainConfig
from mvpo_train.encoder_policy import main as warm_start_main
from mvpo_train.prompts import get_template
from mvpo_train.rollout import RolloutCollector, RolloutConfig, check_score_candidates
from mvpo_train.trainer import load_policy, make_venv, train

WEBSHOP = "mvpo/WebShop-v0"
FIX = '"search_query": "instruction"'


def _cfg(micro: Path, run: Path, **kw) -> TrainConfig:
    base = dict(
        run_dir=str(run), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, env_id=WEBSHOP, num_groups=1, group_size=2, max_steps=3,
        iterations=1, save_every=0, seed=0,
    )  # fmt: skip
    return TrainConfig(**{**base, **kw})


def test_check_score_candidates():
    check_score_candidates(["search[red shirt]", "click[next >]"], WEBSHOP)
    check_score_candidates(["<search> query </search>"], "mvpo/SearchQA-v0")  # not `x[<y>]`
    with pytest.raises(ConfigError, match=r"'search\[<query>\]'.*nothing fills <query>") as err:
        check_score_candidates(["click[back to search]", "search[<query>]"], WEBSHOP)
    assert FIX in str(err.value) and "--action-mode generate" in str(err.value)
    with pytest.raises(ConfigError) as err:
        check_score_candidates(["search[<query>]"], WEBSHOP, generate_hint=False)
    assert FIX in str(err.value) and "generate" not in str(err.value)
    with pytest.raises(ConfigError, match="use an env keyword that fills the template"):
        check_score_candidates(["ask[<question>]"], "my/Env-v0")


def test_webshop_template_is_refused_before_anything_is_written(micro, tmp_path, capsys):
    run = tmp_path / "run"
    with pytest.raises(ConfigError, match="search_query"):
        train(_cfg(micro, run))
    assert not run.exists()
    argv = ["--model", str(micro), "--run-dir", str(run), "--env-id", WEBSHOP, "--threads", "1",
            "--no-progress", "--no-tensorboard", "--iterations", "1"]  # fmt: skip
    capsys.readouterr()
    assert train_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mvpo-train: error: env_kwargs: score mode")
    assert f"add {FIX} to --env-kwargs" in err and not run.exists()
    # generate mode writes its own text: the template is an instruction there, not refused
    make_venv(_cfg(micro, run, action_mode="generate", prompt_style="seed"), "train", 1, 1).close()


def test_the_collector_refuses_a_template_it_meets(micro, tmp_path):
    """Code that builds its own vector env (not through the trainer) gets the same line."""
    cfg = _cfg(micro, tmp_path)
    venv = GroupedVectorEnv(WEBSHOP, 1, 2, max_episode_steps=3)
    try:
        collector = RolloutCollector(
            venv, load_policy(cfg), get_template(WEBSHOP, "seed"), RolloutConfig()
        )
        with pytest.raises(ConfigError, match="search_query"):
            collector.collect([0])
    finally:
        venv.close()


def test_encoder_warm_start_on_webshop(tmp_path, capsys):
    """The expert plans of 4 test goals, 3 cloning steps: deterministic; the bare
    template is one line naming the fix, and nothing is written."""
    kwargs = {"num_test_goals": 4, "search_query": "instruction"}
    args = ["--env-id", WEBSHOP, "--split", "test", "--steps", "3", "--batch-size", "4",
            "--threads", "1"]  # fmt: skip
    for out in ("a", "b"):
        argv = ["--out", str(tmp_path / out), *args, "--env-kwargs", json.dumps(kwargs)]
        assert warm_start_main(argv) == 0
    a, b = ((tmp_path / k / "model.safetensors").read_bytes() for k in "ab")
    assert a == b
    meta = json.loads((tmp_path / "a" / "warm_start.json").read_text())
    env = WebShopEnv(split="test", **kwargs)
    plans = [env.expert_actions(i) for i in range(4)]
    assert meta["demonstrations"] == sum(len(p) for p in plans if p) > 0  # no step cut
    capsys.readouterr()
    argv = ["--out", str(tmp_path / "t"), *args, "--env-kwargs", '{"num_test_goals": 4}']
    assert warm_start_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and FIX in err and "generate" not in err
    assert not (tmp_path / "t").exists()
