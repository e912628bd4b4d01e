"""Score mode and admissible templates (docs/webshop.md, "Score mode"; docs/searchqa.md,
"Training"): WebShop's bare ``search[<query>]`` is refused before training with one line naming
``search_query``, SearchQA's ``<search> query </search>`` with one naming ``--action-mode
generate``; the filled list trains (tests/mvpo_train/test_train_each_env.py); the encoder warm start clones WebShop's expert plans (``expert_actions``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvpo_envs.vector import GroupedVectorEnv
from mvpo_envs.webshop.env import WebShopEnv
from mvpo_train.cli import train_main
from mvpo_train.config import ConfigError, TrainConfig
from mvpo_train.prompts import get_template
from mvpo_train.rollout import RolloutCollector, RolloutConfig, check_score_candidates
from mvpo_train.trainer import load_policy, make_venv, train
from mvpo_train.warm_start import main as warm_start_main

WEBSHOP = "mvpo/WebShop-v0"
SEARCHQA = "mvpo/SearchQA-v0"
SEARCHQA_ADM = ["<search> query </search>", "<answer> text </answer>"]
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
    check_score_candidates(
        ["<search> Who wrote it? </search>", "<answer> Paris </answer>"], SEARCHQA
    )
    with pytest.raises(ConfigError, match=r"'search\[<query>\]'.*nothing fills <query>") as err:
        check_score_candidates(["click[back to search]", "search[<query>]"], WEBSHOP)
    assert FIX in str(err.value) and "--action-mode generate" in str(err.value)
    with pytest.raises(ConfigError) as err:
        check_score_candidates(["search[<query>]"], WEBSHOP, generate_hint=False)
    assert FIX in str(err.value) and "generate" not in str(err.value)
    with pytest.raises(ConfigError, match="use an env keyword that fills the template"):
        check_score_candidates(["ask[<question>]"], "my/Env-v0")
    # SearchQA's tag templates: answers are free text, so the fix is generate mode
    for adm in (SEARCHQA_ADM, SEARCHQA_ADM[1:]):  # the final turn lists only the answer
        with pytest.raises(ConfigError, match=r"^action_mode: .*free text") as err:
            check_score_candidates(adm, SEARCHQA)
        assert f"the template {adm[0]!r}" in str(err.value)
        assert str(err.value).endswith(": use --action-mode generate --prompt-style paper "
                                       "(Search-R1's prompt: the model writes the query and "
                                       "the answer)")  # fmt: skip
        assert "search_query" not in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(
        ConfigError, match="train it with the LM policy: mvpo-train --action-mode generate --"
    ):
        check_score_candidates(SEARCHQA_ADM, SEARCHQA, generate_hint=False)


def test_searchqa_score_mode_is_refused_before_anything_is_written(micro, tmp_path, capsys):
    """The cpu-tiny preset's default score mode on SearchQA sent the templates literally (a
    search for "query", the answer "text": EM 0 forever, silently): now one line, exit 2."""
    run = tmp_path / "run"
    argv = ["--model", str(micro), "--run-dir", str(run), "--env-id", SEARCHQA, "--threads", "1",
            "--no-progress", "--no-tensorboard", "--iterations", "1"]  # fmt: skip
    capsys.readouterr()
    assert train_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mvpo-train: error: action_mode: score mode")
    assert "'<search> query </search>'" in err and "use --action-mode generate --prompt" in err
    assert not run.exists()
    with pytest.raises(ConfigError, match="score mode cannot play it"):  # encoder: no generate
        make_venv(_cfg(micro, run, env_id=SEARCHQA, policy="encoder"), "train", 1, 1)
    make_venv(_cfg(micro, run, env_id=SEARCHQA, action_mode="generate"), "train", 1, 1).close()
    assert not run.exists()


def test_webshop_template_is_refused_before_anything_is_written(micro, tmp_path, capsys):
    run = tmp_path / "run"
    with pytest.raises(ConfigError, match="search_query"):
        train(_cfg(micro, run))
    assert not run.exists()
    # env kwargs given without search_query: the CPU preset's declared default does not apply
    argv = ["--model", str(micro), "--run-dir", str(run), "--env-id", WEBSHOP, "--threads", "1",
            "--no-progress", "--no-tensorboard", "--iterations", "1", "--env-kwargs", "{}"]  # fmt: skip
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
