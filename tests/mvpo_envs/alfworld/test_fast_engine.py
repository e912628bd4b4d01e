"""The fast engine against ALFWorld's own engine, step for step (docs/alfworld_engine.md).

Both engines play the same games and actions through the same env wrapper
(``gym.make("mvpo/ALFWorld-v0", engine=...)``): observation, reward, terminated, truncated
and the whole info dict (admissible commands in order, ``state``, signature, milestones, won)
must be equal, and so must the engines' own outputs (feedback, admissible list, won, facts,
entity names) on garbled and inadmissible commands that the env would not pass on.
The default run compares a few games; the ``slow`` test compares every bundled game (whatever
``data/alfworld`` holds) and the optional real ALFWorld samples (``$MVPO_REALDATA``, see
tests/conftest.py) when present.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.alfworld.data import BUNDLED_SPLITS, TASK_TYPES, project_data_dir
from mvpo_envs.alfworld.engine import AlfworldEngine, make_engine  # reference loads lazily
from mvpo_envs.alfworld.fast import FastEngine, UnsupportedGameError
from mvpo_envs.alfworld.fast.engine import read_game

#: the comparisons need ALFWorld's own engine (TextWorld + the GPL planner); an install without
#: the planner skips them and still runs the fast engine's own tests below
needs_reference = pytest.mark.skipif(
    importlib.util.find_spec("fast_downward") is None,
    reason="ALFWorld's reference engine (fast-downward-textworld) is not installed",
)
#: as tests/conftest.py locates the optional real samples
REALDATA = Path(os.environ.get("MVPO_REALDATA", Path(__file__).parents[4] / "shared" / "realdata"))
GARBLE = ("xyzzy", "go to nowhere 9", "take  {0}", "{0}!", "  {0}  ", "{0}".upper(), "Take {0}")


def _garbled(rng: random.Random, admissible: list[str]) -> str:
    """An inadmissible or malformed variant of a valid command (seeded)."""
    cmd = rng.choice(admissible) if admissible else "look"
    pattern = rng.choice(GARBLE)
    out = pattern.format(cmd)
    return out.upper() if pattern == "{0}".upper() else out


def _facts(step) -> list[tuple[str, ...]]:
    return sorted((f.name, *(a.name for a in f.arguments)) for f in step.facts)


def compare_engine_steps(ref, fast, where: str) -> None:
    assert fast.feedback == ref.feedback, where
    assert fast.admissible == ref.admissible, where
    assert fast.won == ref.won, where
    assert _facts(fast) == _facts(ref), where
    assert fast.entity_names == {k: v for k, v in ref.entity_names.items()}, where


def play_engines(game_file: Path, episodes: int, steps: int, seed: int) -> int:
    """Walkthrough, then seeded random episodes with ~10% garbled commands; returns #steps."""
    ref, fast = AlfworldEngine(cached=True), FastEngine()
    ref.load(game_file)
    fast.load(game_file)
    data = read_game(game_file)
    compared = 0
    rng = random.Random(seed)
    for episode in range(episodes + 1):
        r, f = ref.reset(), fast.reset()
        compare_engine_steps(r, f, f"{game_file} reset")
        if episode == 0:
            commands = list(data.get("walkthrough") or [])
        else:
            commands = [None] * steps
        for i, cmd in enumerate(commands):
            if cmd is None:
                cmd = (
                    _garbled(rng, r.admissible) if rng.random() < 0.1 else rng.choice(r.admissible)
                )
            r, f = ref.step(cmd), fast.step(cmd)
            compared += 1
            compare_engine_steps(r, f, f"{game_file} episode {episode} step {i} {cmd!r}")
        if episode == 0 and data.get("walkthrough"):
            assert r.won, f"{game_file}: the walkthrough does not win on the reference engine"
    ref.close()
    return compared


def _env(engine: str, **kwargs):
    return gym.make("mvpo/ALFWorld-v0", engine=engine, **kwargs)


def play_envs(env_kwargs: dict, task_indices, episodes: int, seed: int) -> tuple[int, set[str]]:
    """The same resets and actions on both envs; every output compared. Returns
    (#steps compared, game files played)."""
    envs = {name: _env(name, **env_kwargs) for name in ("pddl", "fast")}
    games = envs["fast"].unwrapped.games
    compared, played = 0, set()
    rng = random.Random(seed)
    try:
        for index in task_indices(len(games)):
            played.add(str(games[index].game_file))
            walkthrough = list(read_game(games[index].game_file).get("walkthrough") or [])
            for episode in range(episodes + 1):
                obs = {
                    n: e.reset(seed=seed, options={"task_index": index}) for n, e in envs.items()
                }
                assert obs["fast"] == obs["pddl"], f"reset {games[index].game_file}"
                info = obs["fast"][1]
                plan = list(walkthrough) if episode == 0 else []
                for i in range(60):
                    if plan:
                        action = plan.pop(0)
                    elif rng.random() < 0.1:
                        action = _garbled(rng, info["admissible_actions"])
                    else:
                        action = rng.choice(info["admissible_actions"] or ["look"])
                    out = {n: e.step(action) for n, e in envs.items()}
                    compared += 1
                    where = f"{games[index].game_file} episode {episode} step {i} {action!r}"
                    assert out["fast"] == out["pddl"], where
                    _, _, terminated, truncated, info = out["fast"]
                    if terminated or truncated:
                        if terminated:  # one step after the win: the wrapper's after-win path
                            again = {n: e.step(action) for n, e in envs.items()}
                            assert again["fast"] == again["pddl"], where + " (after the win)"
                            compared += 1
                        break
    finally:
        for e in envs.values():
            e.close()
    return compared, played


# -- default run: a few games, seconds ----------------------------------------------------------
@needs_reference
def test_fast_env_matches_pddl_env_on_bundled_games():
    compared, played = play_envs(
        {"split": "train", "preset": "mini"}, lambda n: [0, n // 2], episodes=1, seed=3
    )
    assert len(played) == 2 and compared >= 20


@needs_reference
def test_fast_engine_matches_pddl_engine_on_garbled_commands():
    games = sorted((project_data_dir() / "alfworld" / "mini").glob("*/*/game.tw-pddl"))
    games += sorted((project_data_dir() / "alfworld" / "mini").glob("*/*/*/game.tw-pddl"))
    assert games, "no bundled mini games"
    assert play_engines(games[-1], episodes=1, steps=40, seed=5) >= 40


@needs_reference
def test_fast_env_matches_pddl_env_on_the_real_game(realdata):
    compared, played = play_envs(
        {"data_dir": realdata / "alfworld", "split": "valid_seen"},
        lambda n: range(n),
        episodes=1,
        seed=0,
    )
    assert played and compared >= 6


def test_fast_engine_needs_no_textworld_or_planner():
    import subprocess

    code = (
        "import sys, gymnasium as gym, mvpo_envs\n"
        "env = gym.make('mvpo/ALFWorld-v0', split='train', preset='mini')\n"
        "obs, info = env.reset(seed=0)\n"
        "env.step(info['admissible_actions'][0])\n"
        "bad = [m for m in ('textworld', 'fast_downward', 'alfworld') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[3])


def test_unknown_engine_and_unsupported_domain_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="engine must be one of"):
        make_engine("ffast")
    game = sorted((project_data_dir() / "alfworld" / "mini").rglob("game.tw-pddl"))[0]
    data = read_game(game)
    # a changed action: refused by name, never played differently
    data["pddl_domain"] = data["pddl_domain"].replace("(checked ?l)", "(checked ?a)", 1)
    engine = FastEngine()
    with pytest.raises(UnsupportedGameError, match="'look' differs from ALFWorld"):
        engine.load_data(data)
    # a grammar that reads a negated fact the engine does not track
    data = read_game(game)
    data["grammar"] = data["grammar"].replace(
        '"condition": "iscool(o:object)"', '"condition": "not_iscool(o:object)"', 1
    )
    with pytest.raises(UnsupportedGameError, match="not_iscool"):
        engine.load_data(data)


def test_reset_restores_the_initial_state_and_command_order_is_sorted():
    game = sorted((project_data_dir() / "alfworld" / "mini").rglob("game.tw-pddl"))[0]
    engine = FastEngine()
    engine.load(game)
    first = engine.reset()
    assert first.admissible == sorted(set(first.admissible))
    walk = read_game(game)["walkthrough"]
    for cmd in walk:
        last = engine.step(cmd)
    assert last.won
    again = engine.reset()
    assert again.feedback == first.feedback and again.admissible == first.admissible
    assert _facts(again) == _facts(first) and not again.won
    grouped = sorted((p, *args) for p, lst in engine.facts_by_predicate().items() for args in lst)
    assert grouped == _facts(again)


# -- slow: every bundled game and the real one, >= 20,000 compared steps --------------------------
def _bundled_game_files() -> set[str]:
    return {str(p) for p in (project_data_dir() / "alfworld").rglob("game.tw-pddl")}


def _all_env_sets() -> Iterator[dict]:
    for preset, splits in BUNDLED_SPLITS.items():
        for split in splits:
            if (project_data_dir() / "alfworld" / preset / split).is_dir():
                yield {"preset": preset, "split": split, "task_types": TASK_TYPES}


@pytest.mark.slow
@needs_reference
def test_fast_engine_matches_pddl_engine_everywhere(capsys):
    total, played = 0, set()
    for kwargs in _all_env_sets():
        n, games = play_envs(kwargs, lambda n: range(n), episodes=2, seed=11)
        total, played = total + n, played | games
    real = []
    if REALDATA.is_dir():
        # every real game file: json_2.1.1's single-agent game and the multi-agent original
        real = sorted(str(p) for p in (REALDATA / "alfworld").rglob("game.tw-pddl"))
        n, games = play_envs(
            {"data_dir": REALDATA / "alfworld", "split": "valid_seen"},
            lambda n: range(n),
            episodes=4,
            seed=11,
        )
        total, played = total + n, played | games
    # games the env lists skip (ALFWorld's filters) or new folders: compared at engine level
    for game_file in sorted(_bundled_game_files() - played) + [g for g in real if g not in played]:
        total += play_engines(Path(game_file), episodes=2, steps=50, seed=11)
    # engine level on every game, with garbled commands the env never passes on
    for game_file in sorted(_bundled_game_files()) + real:
        total += play_engines(Path(game_file), episodes=1, steps=50, seed=13)
    with capsys.disabled():
        print(
            f"\nfast vs pddl: {total} compared steps on {len(_bundled_game_files())} bundled "
            f"game files and {len(real)} real ones"
        )
    assert total >= 20_000


# -- the memo and the grouped facts change no output (docs/alfworld_engine.md, "Speed") ----------
def _play_fast(game: Path, seed: int, steps: int) -> list[tuple]:
    """Two seeded random episodes (~10% garbled) of a fresh engine; every output and the
    ``info["state"]`` built from the grouped facts and from the plain fact list."""
    from mvpo_envs.alfworld.state import state_from_facts

    engine, rng, out = FastEngine(), random.Random(seed), []
    engine.load(game)
    goal = {"object": "apple", "receptacle": "fridge"}
    for _ in range(2):
        step = engine.reset()
        for _ in range(steps):
            adm = step.admissible
            cmd = _garbled(rng, adm) if rng.random() < 0.1 else rng.choice(adm)
            step = engine.step(cmd)
            args = (step.entity_names, "x", goal, step.feedback)
            grouped = state_from_facts(step.facts, *args)
            assert grouped == state_from_facts(list(step.facts), *args), cmd
            out.append(
                (cmd, step.feedback, tuple(step.admissible), step.won, _facts(step), grouped)
            )
    return out


def test_memo_and_grouped_facts_change_no_output(monkeypatch):
    from mvpo_envs.alfworld.fast import engine as fast_engine

    game = sorted((project_data_dir() / "alfworld" / "alfworld").rglob("game.tw-pddl"))[0]
    loaded = fast_engine.load_game(read_game(game))  # the process's shared Game of this file
    loaded.states.clear()  # earlier tests may have played this game with the memo on
    loaded.feedbacks.clear()
    monkeypatch.setattr(fast_engine, "MEMO_ENABLED", False)
    cold = _play_fast(game, seed=3, steps=40)
    assert fast_engine.load_game(read_game(game)) is loaded
    assert not loaded.states and not loaded.feedbacks
    monkeypatch.setattr(fast_engine, "MEMO_ENABLED", True)
    assert _play_fast(game, seed=3, steps=40) == cold  # filling the memo
    assert loaded.states and loaded.feedbacks
    assert _play_fast(game, seed=3, steps=40) == cold  # replayed from the memo
    # past the limit every game's memo is cleared, and the outputs stay the same
    monkeypatch.setattr(fast_engine, "MEMO_LIMIT", 5)
    loaded.states.clear()
    loaded.feedbacks.clear()
    assert _play_fast(game, seed=3, steps=40) == cold
    assert len(loaded.states) + len(loaded.feedbacks) <= 5


def test_predicates_read_by_a_text_agree_with_the_static_check():
    from mvpo_envs.alfworld.fast.actions import FLUENTS
    from mvpo_envs.alfworld.fast.engine import load_game

    game_file = sorted((project_data_dir() / "alfworld" / "alfworld").rglob("game.tw-pddl"))[0]
    game = load_game(read_game(game_file))
    grammar, fluents = game.logic.grammar, FLUENTS | {"not_" + f for f in FLUENTS}
    for name, text in game.logic.texts.items():
        for t in (text.template, text.feedback):
            static = grammar.static_predicates_only(t, fluents)
            assert static == (not grammar.predicates_read(t) & fluents), (name, t)
    # "You arrive at <r>. On the <r>, you see ..." reads what is in and whether it is open
    assert {"inreceptacle", "opened"} <= grammar.predicates_read(
        game.logic.texts["gotolocation"].feedback
    )


def test_an_old_steps_facts_stay_exact_after_the_engine_moves_on():
    from mvpo_envs.alfworld.state import state_from_facts

    game = sorted((project_data_dir() / "alfworld" / "alfworld").rglob("game.tw-pddl"))[0]
    engine = FastEngine()
    engine.load(game)
    engine.reset()
    walk = read_game(game)["walkthrough"]
    first = engine.step(walk[0])
    goal = {"object": "x", "receptacle": "y"}
    now = state_from_facts(first.facts, first.entity_names, "a", goal, "")
    assert first.facts.grouped is not None
    engine.step(walk[1])  # the store changed: the old grouping is no longer offered
    assert first.facts.grouped is None
    assert state_from_facts(first.facts, first.entity_names, "a", goal, "") == now
