"""``mvpo-fit-abstraction`` on each environment: seeded rollouts, a loadable folder, clear errors."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_abstraction.learned import EmbeddingClusterAbstraction
from mvpo_envs.play import fill_template
from mvpo_train.fit_abstraction import main, policy_rollouts, random_rollouts

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


def test_fill_template_fills_query_slots_with_the_task():
    """docs/abstractions.md, "Fit and use": random play fills a query slot with the task text
    (whitespace collapsed); a slot with no natural filler, and an empty task, leave it."""
    info = {"task": "  find me\nred  shoes "}
    assert fill_template("search[<query>]", info) == "search[find me red shoes]"
    assert fill_template("<search> query </search>", info) == "<search> find me red shoes </search>"
    assert fill_template("<answer> text </answer>", info) == "<answer> text </answer>"
    assert fill_template("ask[<question>]", info) == "ask[<question>]"
    assert fill_template("click[next >]", info) == "click[next >]"
    assert fill_template("search[<query>]", {"task": " "}) == "search[<query>]"


def test_random_play_searches_the_task_and_reaches_result_pages():
    """WebShop's template used to be sent as it is: a search for "<query>", an empty results
    page. Filled with the instruction, random play sees products, and plays exactly as over
    ``search_query="instruction"``'s list; SearchQA searches the question, not "query"."""
    eps, rets = random_rollouts("mvpo/WebShop-v0", 4, seed=0, max_steps=4)
    states = [s for ep in eps for s in ep]
    assert any(s["page"] == "results" and s["visible_asins"] for s in states)
    assert not any(s["page"] == "results" and not s["total_results"] for s in states)
    filled, frets = random_rollouts(
        "mvpo/WebShop-v0", 4, seed=0, max_steps=4, env_kwargs={"search_query": "instruction"}
    )
    assert [[s["observation"] for s in ep] for ep in eps] == [
        [s["observation"] for s in ep] for ep in filled
    ] and rets == frets
    eps, _ = random_rollouts("mvpo/SearchQA-v0", 6, seed=0, max_steps=3)
    assert any(ep[-1]["queries"] for ep in eps)
    assert all(set(ep[-1]["queries"]) == {ep[0]["question"]} for ep in eps if ep[-1]["queries"])


def test_rollouts_are_seeded():
    a, ra = random_rollouts("mvpo/WebShop-v0", 3, seed=5, max_steps=5)
    b, rb = random_rollouts("mvpo/WebShop-v0", 3, seed=5, max_steps=5)
    c, _ = random_rollouts("mvpo/WebShop-v0", 3, seed=6, max_steps=5)
    obs = [[s["observation"] for s in ep] for ep in a]
    assert obs == [[s["observation"] for s in ep] for ep in b] and ra == rb
    assert obs != [[s["observation"] for s in ep] for ep in c]
    # reset state + 5 steps, or fewer when a random click bought (the search now finds items)
    assert all(len(ep) == 6 or (len(ep) < 6 and ep[-1]["purchased"]) for ep in a)


def test_default_milestones_fall_back_to_the_rules_and_say_so(tmp_path, capsys):
    """The user path ``mvpo-fit-abstraction ENV --episodes N --out DIR`` with a random policy
    (which wins nothing here): learned signatures, the env's rule milestones, and a line that
    says so, instead of an error."""
    out = tmp_path / "abs"
    args = ["mvpo/ALFWorld-v0", "--episodes", "3", "--k", "3", "--max-steps", "4"]
    assert main([*args, "--env-kwargs", '{"preset": "mini"}', "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "milestones (alfworld)" in printed and "--policy RUN_DIR" in printed
    meta = json.loads((out / "abstraction.json").read_text())
    assert meta["fit"]["milestones"] == "auto" and meta["fit"]["mean_return"] == 0.0
    assert meta["config"]["milestones_from"] == "alfworld"
    rules = gym.make("mvpo/ALFWorld-v0").unwrapped.abstraction
    _, info = gym.make("mvpo/ALFWorld-v0", abstraction=f"learned:{out}").reset(seed=0)
    assert list(info["progress"]) == rules.milestone_names


def test_default_milestones_are_learned_when_some_episode_succeeds(tmp_path, capsys):
    """``--milestones auto`` with returns that differ (seed 4: the second of 4 random episodes
    on the mini rooms wins within 20 steps) uses the milestone learner, not the rules."""
    eps, returns = random_rollouts("mvpo/ALFWorld-v0", 4, 4, {"preset": "mini"}, max_steps=20)
    assert len(set(returns)) > 1  # the premise: a success among failures
    out = tmp_path / "abs"
    args = ["mvpo/ALFWorld-v0", "--episodes", "4", "--seed", "4", "--k", "4", "--max-steps"]
    args += ["20", "--min-support", "1", "--env-kwargs", '{"preset": "mini"}', "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "milestones (learned)" in printed and "same return" not in printed
    meta = json.loads((out / "abstraction.json").read_text())
    assert meta["config"]["milestones_from"] == "learned" and meta["fit"]["milestones"] == "auto"
    loaded = EmbeddingClusterAbstraction.load(out)
    assert loaded.milestone_names == [m["name"] for m in meta["milestones"]]
    # one success in four episodes: the bootstrap lower bound keeps no event here (an
    # honest empty list, printed); the choice of the learner is what auto decides
    assert f"milestones (learned): {loaded.milestone_names}" in printed


def test_errors_are_one_clear_line(tmp_path, capsys):
    base = ["mvpo/SearchQA-v0", "--episodes", "6", "--k", "2", "--out", str(tmp_path / "x")]
    base.append("--no-progress")  # the bar is tested in ..._show_progress_per_episode_...
    # a random policy never answers right: no event can predict success
    assert main([*base, "--milestones", "learned"]) == 2
    err = capsys.readouterr().err
    assert "the same return (0)" in err and "--milestones rules" in err
    assert len(err.strip().splitlines()) == 1  # no progress bar or warning around it
    # more clusters than distinct observations: names --k and --episodes
    assert main([*base[:3], "--k", "500", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--k 500" in err and "raise --episodes" in err and len(err.strip().splitlines()) == 1
    assert main([*base, "--policy", str(tmp_path / "no-run")]) == 2
    assert "not a mvpo-train run folder" in capsys.readouterr().err
    assert main([*base, "--env-kwargs", "{bad"]) == 2
    unknown = ["mvpo/Nope-v0", "--episodes", "2", "--out", str(tmp_path / "x")]
    assert main(unknown) == 2
    assert "Nope" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing half-written


def test_fit_on_a_trained_runs_rollouts(micro, tmp_path, capsys):
    from mvpo_train.config import TrainConfig
    from mvpo_train.trainer import train

    run = tmp_path / "run"
    train(
        TrainConfig(
            run_dir=str(run), model=str(micro), device="cpu", threads=1, progress=False,
            tensorboard=False, num_groups=1, group_size=2, max_steps=3, iterations=1,
            micro_batch_size=16, save_every=0, tasks=[13], env_kwargs={"preset": "mini"},
        )
    )  # fmt: skip
    eps, rets = policy_rollouts(run, "mvpo/ALFWorld-v0", 4, seed=0)
    assert len(eps) == 4 and len(rets) == 4
    assert all(1 <= len(ep) <= 3 for ep in eps)  # max_steps=3 of the run's config
    assert eps == policy_rollouts(run, "mvpo/ALFWorld-v0", 4, seed=0)[0]  # seeded
    out = tmp_path / "abs"
    args = ["mvpo/ALFWorld-v0", "--episodes", "4", "--k", "2", "--milestones", "rules"]
    assert main([*args, "--policy", str(run), "--out", str(out)]) == 0
    assert '"policy": "' + str(run) in (out / "abstraction.json").read_text()
    assert main(["mvpo/WebShop-v0", "--episodes", "2", "--policy", str(run), "--out", "x"]) == 2
    assert "trained on mvpo/ALFWorld-v0" in capsys.readouterr().err


def test_async_vector_env_loads_the_folder_after_a_fit_in_this_process(tmp_path):
    """Fit (the encoder runs here), then async workers forked from this process load
    ``learned:DIR`` and label as a sync env does (they used to hang on their first embedding)."""
    import torch

    from mvpo_envs.vector import GroupedVectorEnv

    out = tmp_path / "abs"
    args = ["mvpo/ALFWorld-v0", "--episodes", "3", "--k", "3", "--max-steps", "4"]
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # a thread team in this process, as a user's session has
    try:
        assert main([*args, "--env-kwargs", '{"preset": "mini"}', "--out", str(out)]) == 0
        signatures = {}
        for mode, bound in (("sync", {}), ("async", {"call_timeout": 120})):
            with GroupedVectorEnv(
                "mvpo/ALFWorld-v0", 1, 2, mode, vector_kwargs=bound, preset="mini",
                abstraction=f"learned:{out}",
            ) as venv:  # fmt: skip
                _, infos = venv.reset_groups([1])
                _, _, _, _, step = venv.step([str(a[0]) for a in infos["admissible_actions"]])
                signatures[mode] = list(infos["signature"]) + list(step["signature"])
    finally:
        torch.set_num_threads(threads)
    assert signatures["async"] == signatures["sync"]
    assert all(s.startswith("c") for s in signatures["sync"])


def test_random_rollouts_show_progress_per_episode_or_nothing(capsys):
    from mvpo_train.fit_abstraction import random_rollouts

    eps, _ = random_rollouts("mvpo/ALFWorld-v0", 3, 0, {"preset": "mini"}, 2, progress=True)
    err = capsys.readouterr().err
    assert len(eps) == 3 and "random episodes" in err and "/3 [" in err, err
    random_rollouts("mvpo/ALFWorld-v0", 3, 0, {"preset": "mini"}, 2, progress=False)
    assert "random episodes" not in capsys.readouterr().err
