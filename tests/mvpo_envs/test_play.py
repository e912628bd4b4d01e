"""mvpo-play and mvpo-demo: what is sent to the env, what is shown, and bad input."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.demo import run_episode
from mvpo_envs.play import env_kwargs, main, parse_args, play, resolve_action


class Recorder(gym.Wrapper):
    """Keeps every action the loop sends."""

    def __init__(self, env):
        super().__init__(env)
        self.sent: list[str] = []

    def step(self, action):
        self.sent.append(action)
        return self.env.step(action)


def _feed(lines):
    it = iter(lines)

    def read(prompt):
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return read


def test_play_by_numbers_and_text_until_won():
    env = Recorder(gym.make("mvpo/ALFWorld-v0", split="eval", preset="mini"))
    _, info = env.reset(seed=0)
    walkthrough = json.loads(open(info["gamefile"]).read())["walkthrough"]
    first = info["admissible_actions"].index(walkthrough[0])
    screens: list[str] = []
    lines = [str(first), "", "   ", "999", "gibberish", *walkthrough[1:]]
    total = play(env, seed=0, read=_feed(lines), write=screens.append)
    assert total == 1.0
    # the number became its action, blank lines and an index out of range sent nothing (no
    # step spent), the rest went as typed
    assert env.sent == [walkthrough[0], "gibberish", *walkthrough[1:]]
    text = "\n".join(screens)
    assert text.count("(nothing sent") == 2 and "(invalid action)" in text
    assert "(no action number 999 (admissible: 0.." in text and "; nothing sent)" in text
    assert "signature:" in screens[0] and "actions: [0]" in screens[0]
    assert "goal_reached" in screens[-2] and screens[-1].endswith("won ***")


def test_play_stops_at_end_of_input_and_quit():
    env = Recorder(gym.make("mvpo/ALFWorld-v0", split="eval", preset="mini"))
    assert play(env, seed=1, read=_feed(["look"]), write=lambda s: None) == 0.0
    assert env.sent == ["look"]
    assert play(env, seed=1, read=_feed(["quit", "look"]), write=lambda s: None) == 0.0
    assert env.sent == ["look"]


def test_webshop_search_template_asks_for_the_query():
    env = Recorder(gym.make("mvpo/WebShop-v0", split="test"))
    _, info = env.reset(seed=0)
    template = info["admissible_actions"].index("search[<query>]")
    prompts: list[str] = []
    answers = iter([str(template), "", "search[<query>]", "red shoes", "quit"])

    def read(prompt):
        prompts.append(prompt)
        return next(answers)

    screens: list[str] = []
    play(env, seed=0, read=read, write=screens.append)
    # the empty query sent nothing; the typed template asked again and sent the query
    assert env.sent == ["search[red shoes]"]
    assert prompts.count("query> ") == 2 and "(nothing sent" in "\n".join(screens)
    assert "Page 1 (Total results:" in screens[-1]


def test_resolve_action():
    admissible = ["go to desk 1", "search[<query>]"]
    assert resolve_action("0", admissible, _feed([])) == "go to desk 1"
    with pytest.raises(IndexError, match=r"no action number 7 \(admissible: 0\.\.1\)"):
        resolve_action("7", admissible, _feed([]))  # out of range: nothing sent
    assert resolve_action("1", admissible, _feed(["  lamp "])) == "search[lamp]"
    assert resolve_action("1", admissible, _feed([])) is None  # end of input: nothing
    assert resolve_action("search[<r>]", admissible, _feed([])) == "search[<r>]"  # a query
    assert resolve_action(" ", admissible, _feed([])) is None


def test_command_line_picks_data_and_keywords(tmp_path):
    args = parse_args(
        [
            "mvpo/WebShop-v0",
            "--split",
            "test",
            "--goal-source",
            "human",
            "--data-dir",
            str(tmp_path),
            "--kw",
            "protocol=strict",
            "--kw",
            "num_test_goals=20",
        ]
    )
    assert env_kwargs(args) == {
        "split": "test",
        "goal_source": "human",
        "data_dir": str(tmp_path),
        "protocol": "strict",
        "num_test_goals": 20,
    }
    assert env_kwargs(parse_args(["--preset", "mini"])) == {"preset": "mini"}


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["mvpo/Nope-v0"], "Nope"),
        (["mvpo/ALFWorld-v0", "--preset", "huge"], "huge"),
        (["mvpo/ALFWorld-v0", "--data-dir", "/nonexistent/alfworld", "--split", "train"], "/non"),
        (["mvpo/WebShop-v0", "--kw", "protocol=loose"], "protocol must be one of"),
        (["mvpo/WebShop-v0", "--kw", "colour=red"], "colour"),
        (["mvpo/WebShop-v0", "--kw", "novalue"], "KEY=VALUE"),
        (["mvpo/WebShop-v0", "--seed", "four"], "--seed"),
        (["mvpo/ALFWorld-v0", "--seed", "-1"], "--seed: expected an integer >= 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc_info:
        raise SystemExit(main(argv))
    assert exc_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mvpo-play: error:") and needle in err
    assert "Traceback" not in err


def test_main_plays_until_end_of_input(monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", _feed(["look", "quit"]))
    assert main(["mvpo/ALFWorld-v0", "--preset", "mini", "--split", "eval", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("=" * 72) == 2 and "step 1" in out


def test_demo_scripted_wins_and_random_runs():
    env = gym.make("mvpo/ALFWorld-v0", split="eval", preset="mini")
    out: list[str] = []
    scripted = run_episode(env, 1, "scripted", np.random.default_rng(0), write=out.append)
    assert scripted["won"] and "goal_reached" in scripted["milestones"]
    rand = run_episode(env, 1, "random", np.random.default_rng(0), write=out.append)
    assert rand["steps"] <= 50 and not (rand["won"] and rand["steps"] < 3)


@pytest.mark.parametrize(
    ("env_id", "split"), [("mvpo/WebShop-v0", "test"), ("mvpo/SearchQA-v0", "test")]
)
def test_demo_scripted_agent_of_each_env_wins(env_id, split):
    env = gym.make(env_id, split=split)
    out: list[str] = []
    scripted = run_episode(env, 2, "scripted", np.random.default_rng(0), write=out.append)
    assert scripted["won"] and scripted["return"] == 1.0
    rand = run_episode(env, 2, "random", np.random.default_rng(0), write=out.append)
    assert rand["steps"] >= 1 and out[-1].startswith("=== ")
    env.close()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--seed", "-1"], "--seed: expected an integer >= 0"),
        (["--split", "nope"], "'nope'"),
        (["--env-id", "mvpo/Nope-v0"], "invalid choice"),
    ],
)
def test_demo_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    from mvpo_envs.demo import main as demo_main

    with pytest.raises(SystemExit) as exc_info:
        raise SystemExit(demo_main(argv))
    assert exc_info.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_searchqa_tag_template_asks_for_its_text():
    admissible = ["<search> query </search>", "<answer> text </answer>"]
    # was: "0" sent the template itself, a search for the word "query" (one of 4 turns gone)
    assert resolve_action("0", admissible, _feed([" Zandyne Mills "])) == (
        "<search> Zandyne Mills </search>"
    )
    assert resolve_action("1", admissible, _feed(["1912"])) == "<answer> 1912 </answer>"
    assert resolve_action("1", admissible, _feed([""])) is None
    assert resolve_action("<search> x </search>", admissible, _feed([])) == "<search> x </search>"
