"""The exact progress oracle (docs/alignment.md, "The progress oracle").

Exactness is checked against a plain breadth-first search over the fast engine's *full*
states (every fact, ``checked`` included; every admissible command) on small games, at reset
and at seeded mid-episode states; then against the bundled walkthroughs (the shortest plan is
never longer, and every step of an optimal walkthrough is labelled 1), and the reduced model's
transitions against the engine's on random play.
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.alfworld.data import project_data_dir
from mvpo_envs.alfworld.fast.engine import FastEngine, load_game
from mvpo_envs.alfworld.oracle import (
    UNREACHABLE,
    OracleUnsupportedError,
    ProgressOracle,
    clone_engine,
    progress_label,
    walkthrough_labels,
)
from mvpo_envs.info_contract import contract_errors

DATA = project_data_dir() / "alfworld"


def _games(preset: str, split: str) -> list[Path]:
    return sorted((DATA / preset / split).glob("*/*/game.tw-pddl"))


def _game(preset: str, split: str, prefix: str) -> Path:
    return next(p for p in _games(preset, split) if p.parts[-3].startswith(prefix))


def plain_bfs(engine: FastEngine, limit: int = 200_000) -> int:
    """Shortest plan by breadth-first search over the engine's full states (its exact state
    key: every fact of a changing predicate), trying every admissible command."""
    if engine._won:
        return 0
    seen = {engine._state}
    frontier = [engine]
    depth = 0
    while frontier:
        depth += 1
        nxt = []
        for e in frontier:
            for cmd in list(e._commands):
                c = clone_engine(e)
                won = c.step(cmd).won
                if c._state in seen:
                    continue
                seen.add(c._state)
                if won:
                    return depth
                nxt.append(c)
                if len(seen) > limit:
                    raise AssertionError("plain BFS: too many states for a test")
        frontier = nxt
    return UNREACHABLE


def _engine(path: Path) -> FastEngine:
    e = FastEngine()
    e.load(path)
    e.reset()
    return e


# small games whose full state space a plain BFS covers in well under a second
SMALL = [
    ("mini", "train", "look_at_obj_in_light-CD"),
    ("mini", "train", "pick_and_place_simple-RemoteControl"),
    ("mini", "train", "pick_and_place_simple-Cloth-None-Cabinet"),
    ("mini", "train", "pick_clean_then_place_in_recep-Cloth-None-SideTable"),
    ("mini", "eval", "look_at_obj_in_light-BaseballBat"),
]


@pytest.mark.parametrize("preset,split,prefix", SMALL)
def test_distance_equals_plain_bfs_at_reset_and_mid_episode(preset, split, prefix):
    path = _game(preset, split, prefix)
    engine = _engine(path)
    oracle = ProgressOracle(engine.game)
    rng = random.Random(7)
    checked = 0
    for episode in range(3):
        engine.reset()
        for _ in range(6 * episode):  # reset, then states after 6 and 12 random commands
            engine.step(rng.choice(sorted(engine._commands)))
        if engine._won:
            continue
        assert oracle.distance(engine._store) == plain_bfs(engine), (path, episode)
        checked += 1
    assert checked >= 2


def test_distance_equals_plain_bfs_with_an_irrelevant_object_in_hand():
    path = _game("mini", "train", "pick_and_place_simple-Cloth-None-Cabinet")
    engine = _engine(path)
    oracle = ProgressOracle(engine.game)
    relevant = set(oracle.relevant)
    for cmd in sorted(engine._commands):  # walk until an irrelevant object can be taken
        if cmd.startswith("go to "):
            probe = clone_engine(engine)
            probe.step(cmd)
            takes = [
                c
                for c, g in probe._commands.items()
                if g[0] == "pickupobject" and g[1][2] not in relevant
            ]
            if takes:
                probe.step(takes[0])
                d = oracle.distance(probe._store)
                assert d == plain_bfs(probe)
                assert d > oracle.distance(engine._store) - 1  # the hands must be freed
                return
    pytest.skip("no irrelevant object to take in this game")


def test_walkthroughs_are_never_shorter_and_optimal_ones_are_all_progress():
    for path in _games("alfworld", "train"):
        engine = _engine(path)
        oracle = ProgressOracle(engine.game)
        walk = json.loads(path.read_text())["walkthrough"]
        d0 = oracle.distance(engine._store)
        assert 0 < d0 <= len(walk), path
        labels = walkthrough_labels(oracle, engine, walk)
        assert engine._won and oracle.distance(engine._store) == 0
        if d0 == len(walk):
            assert labels == [1] * len(walk), path
        else:
            assert 0 in labels and labels.count(1) >= d0  # d moves by one per step at most


def test_a_detour_is_labelled_zero_and_an_optimal_step_one():
    path = _game("alfworld", "train", "pick_and_place_simple-DishSponge")
    engine = _engine(path)
    oracle = ProgressOracle(engine.game)
    d0 = oracle.distance(engine._store)
    best = oracle.optimal_actions(engine)
    assert best and all(a in engine._commands for a in best)
    detours = [c for c in sorted(engine._commands) if c not in best]
    assert "look" in detours and "inventory" in detours
    for cmd in [best[0], *detours[:8]]:
        probe = clone_engine(engine)
        probe.step(cmd)
        label = progress_label(d0, oracle.distance(probe._store))
        assert label == (1 if cmd in best else 0), cmd


def test_the_reduced_model_follows_the_engine_on_random_play():
    rng = random.Random(3)
    for path in _games("alfworld", "train")[::4]:
        engine = _engine(path)
        oracle = ProgressOracle(engine.game)
        state = oracle.state_of(engine._store)
        for _ in range(40):
            cmd = rng.choice(sorted(engine._commands))
            predicted = oracle.successor(state, engine._commands[cmd])
            won = engine.step(cmd).won
            state = oracle.state_of(engine._store)
            assert predicted == state, (path, cmd)
            assert oracle.goal_holds(state) == won
            if won:
                break


def test_progress_label_rule():
    assert progress_label(5, 4) == 1
    assert progress_label(5, 5) == 0
    assert progress_label(5, 6) == 0
    assert progress_label(1, 0) == 1
    assert progress_label(0, 0) == 0
    assert progress_label(UNREACHABLE, 3) == -1
    assert progress_label(3, UNREACHABLE) == 0


def test_a_goal_outside_the_model_is_refused():
    path = _games("mini", "train")[0]
    data = json.loads(path.read_text())
    problem = data["pddl_problem"]
    start = problem.index("(:goal")
    end = problem.rindex(")")
    data["pddl_problem"] = problem[:start] + "(:goal (exists (?r - receptacle) (checked ?r))))"
    assert end > start
    with pytest.raises(OracleUnsupportedError, match="checked"):
        ProgressOracle(load_game(data))


# -- through the env ----------------------------------------------------------------------------
def test_env_labels_steps_when_asked_and_reports_minus_one_otherwise():
    env = gym.make("mvpo/ALFWorld-v0", progress_oracle=True)
    _, info = env.reset(seed=3)
    assert info["oracle_progress"] == -1
    assert contract_errors(info, "mvpo/ALFWorld-v0") == []
    u = env.unwrapped
    walk = u.expert_actions(u._task_index)
    best = u.optimal_actions()
    assert best and set(best) <= set(info["admissible_actions"])
    _, _, _, _, info = env.step("xyzzy")  # inadmissible: nothing changes
    assert info["oracle_progress"] == 0 and info["invalid_action"]
    _, _, _, _, info = env.step("inventory")
    assert info["oracle_progress"] == 0
    labels = []
    for a in walk:
        _, _, terminated, _, info = env.step(a)
        labels.append(info["oracle_progress"])
        assert contract_errors(info, "mvpo/ALFWorld-v0") == []
    assert terminated and labels[-1] == 1
    _, _, _, _, info = env.step("look")  # after the win: ALFWorld repeats the last step
    assert info["oracle_progress"] == 0
    assert u.optimal_actions() == []

    off = gym.make("mvpo/ALFWorld-v0")
    _, info = off.reset(seed=3)
    _, _, _, _, info = off.step(walk[0])
    assert info["oracle_progress"] == -1
    with pytest.raises(RuntimeError, match="progress_oracle=True"):
        off.unwrapped.optimal_actions()


@pytest.mark.skipif(
    importlib.util.find_spec("fast_downward") is None,
    reason="ALFWorld's reference engine (fast-downward-textworld) is not installed",
)
def test_env_labels_are_the_same_on_the_reference_engine():
    rng = random.Random(5)
    envs = [gym.make("mvpo/ALFWorld-v0", progress_oracle=True, engine=e) for e in ("fast", "pddl")]
    infos = [env.reset(seed=11)[1] for env in envs]
    for _ in range(8):
        cmd = rng.choice(infos[0]["admissible_actions"])
        infos = [env.step(cmd)[4] for env in envs]
        assert infos[0]["oracle_progress"] == infos[1]["oracle_progress"]


def test_optimal_actions_are_exactly_the_commands_that_shorten_the_plan():
    rng = random.Random(11)
    for path in _games("alfworld", "train")[1::6]:
        engine = _engine(path)
        fast, brute = ProgressOracle(engine.game), ProgressOracle(engine.game)
        for _ in range(3):
            for _ in range(rng.randrange(8)):
                engine.step(rng.choice(sorted(engine._commands)))
            if engine._won:
                break
            state = brute.state_of(engine._store)
            d = brute.distance_of(state)
            expected = sorted(
                c
                for c, g in engine._commands.items()
                if brute.distance_of(brute.successor(state, g)) == d - 1
            )
            assert fast.optimal_actions(engine) == expected, path
            # and the real engine agrees: each such command leaves a plan of d - 1 steps
            for cmd in expected[:3]:
                probe = clone_engine(engine)
                probe.step(cmd)
                assert brute.distance(probe._store) == d - 1


def test_the_oracle_reproduces_a_trained_runs_recorded_plan_decreases():
    """On a trained policy's own episodes (committed by benchmarks/alfworld_oracle_speed.py:
    states a uniform policy rarely reaches), every step's plan decrease equals the one the
    training run recorded with the oracle of its day."""
    import json
    from pathlib import Path

    from mvpo_envs.bench.oracle_replay import replay

    root = Path(__file__).resolve().parents[3]
    data = json.loads((root / "benchmarks/results/alfworld_oracle_speed_episodes.json").read_text())
    last = [ep for ep in data["episodes"] if ep["iteration"] == max(data["iterations"])]
    episodes = [last[0], last[6], last[11]]  # one that runs out of steps, two that end early
    assert (
        len(episodes[0]["plan_decrease"]) == 50 > max(len(e["plan_decrease"]) for e in episodes[1:])
    )
    got = replay(episodes)["plan_decrease"]
    assert sum(len(g) for g in got) > 100
    for ep, dec in zip(episodes, got, strict=True):
        assert dec == ep["plan_decrease"][: len(dec)]
        assert None not in ep["plan_decrease"] and 1 in ep["plan_decrease"]
