"""The WebShop learning study (``benchmarks/learning.py --env webshop``, docs/learning_study.md
"WebShop study"): the arms' flags, the reward the runs train on, the held-out split (the
original's 500 test goals), that nothing is chosen on it, WebShop's score in the evaluation
files, and the results table."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from mvpo_train.study import learning_runs

from .helpers import study_module

learning_env = study_module("learning_env")

ROOT = Path(__file__).resolve().parents[2]
ASIN = re.compile(r"click\[[a-z0-9]{10}\]")  # a product of the results page


@pytest.fixture(scope="module")
def lm():
    return study_module("learning")


@pytest.fixture(scope="module")
def ws():
    mod = study_module("learning_webshop")
    mod.register()
    return mod


def _flag(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_defaults_are_the_seeds_regime(lm):
    args = lm.parse_args(["--env", "webshop"])
    assert args.study_env is learning_env.WEBSHOP
    assert args.arms == ["gigpo", "mvpo", "mvpo-no-anchor", "mvpo-no-kappa-decay"]
    assert (args.num_groups, args.group_size) == (16, 8)
    assert args.iterations >= 60 and len(args.seeds) >= 5
    assert learning_env.final_evals(args) == (("test", 2),)
    assert (args.eval_every, args.eval_episodes) == (20, 1)
    assert json.loads(args.env_kwargs) == {"search_query": "instruction"}
    assert "webshop" in args.base and args.out.endswith("learning_webshop.md")
    # ALFWorld's defaults are untouched by --env
    alf = lm.parse_args([])
    assert alf.study_env is learning_env.ALFWORLD and alf.iterations == 30 and alf.num_groups == 8
    assert learning_env.final_evals(alf) == learning_env.FINAL_EVALS and alf.arms == list(
        learning_env.DEFAULT_ARMS
    )


def test_arm_flags_reward_steps_and_the_test_split(lm, tmp_path):
    args = lm.parse_args(["--env", "webshop", "--base", str(tmp_path)])
    cmds = {arm: learning_runs.train_cmd(tmp_path / arm, arm, 0, args) for arm in args.arms}
    for cmd in cmds.values():
        # every run goes through the child that registers the success-reward env
        assert cmd[1] == str(learning_env.WEBSHOP_CHILD) and cmd[2] == "train_main"
        assert _flag(cmd, "--env-id") == learning_env.WEBSHOP_SUCCESS_ID
        assert _flag(cmd, "--max-steps") == "15"
        assert (_flag(cmd, "--num-groups"), _flag(cmd, "--group-size")) == ("16", "8")
        assert _flag(cmd, "--eval-split") == "test"
        assert _flag(cmd, "--model") == args.warm
        assert json.loads(_flag(cmd, "--env-kwargs")) == {"search_query": "instruction"}
    est = {arm: (_flag(c, "--estimator"), c.count("--estimator-kwargs")) for arm, c in cmds.items()}
    assert est == {"gigpo": ("gigpo", 0), "mvpo": ("mvpo", 0),
                   "mvpo-no-anchor": ("mvpo", 1),
                   "mvpo-no-kappa-decay": ("mvpo", 1)}  # fmt: skip
    kw = json.loads(_flag(cmds["mvpo-no-kappa-decay"], "--estimator-kwargs"))
    assert kw == {"kappa_schedule": "none"}
    kw = json.loads(_flag(cmds["mvpo-no-anchor"], "--estimator-kwargs"))
    assert kw == {"anchor_credit": False}  # tests/mvpo_train/credit/test_mvpo_anchor.py
    # the final evaluation: the test split, played on mvpo/WebShop-v0 (its return = the score)
    ev = learning_runs.eval_cmd(tmp_path / "mvpo", "test", 2, env=learning_env.WEBSHOP)
    assert ev[1:3] == [str(learning_env.WEBSHOP_CHILD), "eval_main"]
    assert _flag(ev, "--split") == "test" and _flag(ev, "--env-id") == "mvpo/WebShop-v0"
    # ALFWorld's commands do not change
    alf = lm.parse_args(["--base", str(tmp_path)])
    cmd = learning_runs.train_cmd(tmp_path / "g", "gigpo", 0, alf)
    assert cmd[1] == "-c" and "--env-id" not in cmd and _flag(cmd, "--max-steps") == "50"
    assert "--env-id" not in learning_runs.eval_cmd(
        tmp_path / "g", "valid_unseen", 8, learning_env.ALFWORLD
    )


def test_the_heldout_split_is_the_500_test_goals_and_disjoint_from_train(lm):
    kwargs = learning_env.WEBSHOP.env_kwargs
    assert learning_env.count_tasks(kwargs, "test", "mvpo/WebShop-v0") == 500
    envs = {s: gym.make("mvpo/WebShop-v0", split=s, search_query="instruction") for s in
            ("train", "test")}  # fmt: skip
    try:
        ids = {s: set(e.unwrapped.task_ids) for s, e in envs.items()}
    finally:
        for e in envs.values():
            e.close()
    assert len(ids["test"]) == 500 and not ids["test"] & ids["train"]
    assert all("-test-" in t for t in ids["test"]) and all("-train-" in t for t in ids["train"])


def test_success_reward_pays_only_a_win_and_keeps_the_pages(ws):
    """The runs' env: 1.0 on the winning purchase, 0 on a purchase WebShop scores below 1.0;
    observations and infos are mvpo/WebShop-v0's step for step."""
    kw = {"split": "train", "search_query": "instruction"}
    ours, orig = gym.make(ws.SUCCESS_ENV_ID, **kw), gym.make(ws.WEBSHOP_ID, **kw)
    try:
        assert ours.spec.max_episode_steps == orig.spec.max_episode_steps == 15
        from mvpo_train.prompts import get_template

        for style in ("compact", "seed"):  # the same prompts, so the warm start fits the runs
            assert get_template(ws.SUCCESS_ENV_ID, style) == get_template(ws.WEBSHOP_ID, style)
        plan = orig.unwrapped.expert_actions(0)
        assert plan
        for env in (ours, orig):
            env.reset(options={"task_index": 0})
        for action in plan:
            o1, r1, t1, _, i1 = ours.step(action)
            o2, r2, t2, _, i2 = orig.step(action)
            assert o1 == o2 and i1["admissible_actions"] == i2["admissible_actions"]
        assert t1 and t2 and i1["won"] and r1 == 1.0 and r2 == 1.0
        # a partial purchase: the first listed product that is not the goal's, bought as shown
        partial = None
        for task in range(40):
            for env in (ours, orig):
                _, info = env.reset(options={"task_index": task})
            search = info["admissible_actions"][0]
            for env in (ours, orig):
                _, _, _, _, info = env.step(search)
            other = [a for a in info["admissible_actions"] if ASIN.fullmatch(a)
                     and a != f"click[{info['goal_asin'].lower()}]"]  # fmt: skip
            for action in (other[0], "click[buy now]"):
                _, r1, t1, _, i1 = ours.step(action)
                _, r2, t2, _, i2 = orig.step(action)
            if t1 and 0.0 < r2 < 1.0:
                partial = (r1, r2, i1["won"], i1["task_score"])
                break
        assert partial is not None, "no partial purchase in 40 train goals"
        r1, r2, won, score = partial
        assert r1 == 0.0 and not won and score == r2  # the score stays in info
    finally:
        ours.close()
        orig.close()


def test_no_kappa_decay_keeps_kappa_at_one(lm, ws):
    from mvpo_train.batch import StepBatch
    from mvpo_train.credit import get_estimator

    wins = StepBatch.from_trajectories([dict(group=0, rewards=[1]) for _ in range(4)])
    flags = learning_env.WEBSHOP.arm("mvpo-no-kappa-decay")
    kw = json.loads(_flag(flags, "--estimator-kwargs"))
    fixed, decaying = get_estimator("mvpo", **kw), get_estimator("mvpo")
    for _ in range(3):
        k_fixed, k_decay = fixed(wins)[1]["kappa"], decaying(wins)[1]["kappa"]
    assert k_fixed == 1.0 and k_decay < 0.8


def test_nothing_is_chosen_on_the_test_split(lm, tmp_path, monkeypatch):
    """The warm start clones train plans; its candidates are measured on train only."""
    calls: list[list[str]] = []

    def fake_run(cmd, **kw):
        calls.append(list(cmd))
        if "--out" in cmd and "eval_main" in cmd:
            Path(cmd[cmd.index("--out") + 1]).write_text(
                json.dumps({"episodes": 4, "success": 0.25, "score": 0.5})
            )
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    args = lm.parse_args(["--env", "webshop", "--base", str(tmp_path), "--warm",
                          str(tmp_path / "warm"), "--warm-candidates", "0", "50",
                          "--candidate-tasks", "4"])  # fmt: skip
    rows = lm.warm_candidates(args, tmp_path, ROOT)
    assert [r["steps"] for r in rows] == [0, 50] and rows[1]["score"] == 0.5
    warm = [c for c in calls if "mvpo_train.encoder_policy" in c]
    evals = [c for c in calls if "eval_main" in c]
    assert len(warm) == 1 and len(evals) == 2
    assert "--split" not in warm[0] or _flag(warm[0], "--split") == "train"
    assert _flag(warm[0], "--env-id") == "mvpo/WebShop-v0" and warm[0][-2:] == ["--steps", "50"]
    assert all(_flag(c, "--split") == "train" for c in evals)
    cfg = json.loads((tmp_path / "warm-candidates" / "config.json").read_text())
    assert cfg["env_id"] == "mvpo/WebShop-v0" and cfg["max_steps"] == 15
    assert not {"split", "eval_split"} & set(cfg)  # the split is mvpo-eval's --split train
    # the study's warm start: the same cloning, on train
    full = learning_runs.warm_cmd(args, args.warm)
    assert "--split" not in full and _flag(full, "--env-id") == "mvpo/WebShop-v0"


def test_eval_writes_webshops_score_of_every_episode(ws, tmp_path):
    """The real mvpo-eval through the child on 9 test goals (8 + 1 padded chunk): one score
    per kept episode, in [0, 1], a win exactly where the score is 1.0."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"env_id": "mvpo/WebShop-v0", "max_steps": 15, "tasks": [],
                               "env_kwargs": {"search_query": "instruction"}, "threads": 1}))  # fmt: skip
    out = tmp_path / "eval.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "learning_webshop.py"), "eval_main",
           "--config", str(cfg), "--split", "test", "--max-tasks", "9", "--episodes", "1",
           "--sampled", "--seed", "0", "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ev = json.loads(out.read_text())
    scores = np.array(ev["scores"])
    assert ev["episodes"] == len(scores) == 9
    assert np.all((scores >= 0) & (scores <= 1)) and scores.max() > 0  # random play buys
    assert ev["score"] == pytest.approx(scores.mean())
    assert ev["success"] == pytest.approx(np.mean(scores == 1.0))


def _write_run(path: Path, success: list[float], held: float, score: float) -> None:
    path.mkdir(parents=True)
    rows = [
        {"iteration": i + 1, "success": s, "adv/zero_adv_ratio": 0.5, "time/total": 6.0}
        for i, s in enumerate(success)
    ]
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "eval-test.json").write_text(json.dumps({"success": held, "score": score}))


def test_table_reports_test_success_and_score(lm, tmp_path):
    n = 6
    for seed in (0, 1):
        _write_run(tmp_path / f"gigpo-seed{seed}", [0.1] * n, 0.1, 0.40)
        _write_run(tmp_path / f"mvpo-seed{seed}", [0.2] * n, 0.2, 0.50 + 0.1 * seed)
    (tmp_path / "warm-start").mkdir()
    (tmp_path / "warm-start" / "eval-test.json").write_text(
        json.dumps({"success": 0.05, "score": 0.3})
    )
    runs = lm.load_runs(tmp_path, ["gigpo", "mvpo"], [0, 1], n)
    table = lm.summarize(runs, tmp_path, 0.2, n, env=learning_env.WEBSHOP)
    m = table["arms"]["mvpo"]
    assert np.isclose(m["test"][0], 0.2) and np.isclose(m["test_score"][0], 0.55)
    assert "valid_unseen" not in m and table["warm_start"] == {"test": 0.05, "test_score": 0.3}
    pair = table["pairs"]["mvpo - gigpo"]
    assert np.isclose(pair["test"][0], 0.1) and np.isclose(pair["test_score"][0], 0.15)
    args = lm.parse_args(["--env", "webshop", "--base", str(tmp_path), "--seeds", "0", "1"])
    args.argv = ["--env", "webshop"]
    out = tmp_path / "learning_webshop.md"
    (tmp_path / "warm-candidates").mkdir()
    rows = [{"steps": 50, "episodes": 4, "success": 0.25, "score": 0.5, "seconds": 9.0}]
    (tmp_path / "warm-candidates" / "candidates.json").write_text(json.dumps(rows))
    lm.write_markdown(table, args, out, out.with_suffix(".png"))
    text = out.read_text()
    assert "held-out test | test score |" in text and learning_env.WEBSHOP_SUCCESS_ID in text
    assert (
        'candidates (train split only; `--warm-candidates`, docs/learning_study.md, "WebShop'
        in text
    )
    assert "| 50 | 4 | 0.250 | 0.500 | 9 |" in text
    assert "| mvpo - gigpo | 2 |" in text and "0.150" in text
    assert "per task type" not in text
    assert "arms differ only in `gigpo`: `--estimator gigpo`" in text
    # an arm's own flags are in the settings sentence (they win over the study's --lr)
    args.arm_flags = ["mvpo=--lr 0.0003 --kl-coef 0.05"]
    lm.write_markdown(table, args, out, out.with_suffix(".png"))
    text = out.read_text()
    assert "an arm's `--lr` or `--kl-coef` wins) " in text
    assert "`mvpo`: `--estimator mvpo --lr 0.0003 --kl-coef 0.05`" in text


def test_a_failed_score_evaluation_leaves_the_package_alone(ws, tmp_path):
    """``eval_main`` keeps the returns through ``mvpo-eval``'s ``on_batch`` hook
    (tests/mvpo_train/study/test_eval_scores.py): a failed evaluation returns its status and
    leaves ``mvpo_train.evaluation`` as it was."""
    from mvpo_train import evaluation

    before = dict(vars(evaluation))
    argv = ["--config", str(tmp_path / "missing.json"), "--out", str(tmp_path / "e.json")]
    assert ws.eval_with_scores(argv) == 2
    assert vars(evaluation) == before
