"""Bad ALFWorld data: a game file never runs code, and every problem is one line naming the file.

docs/alfworld_engine.md, "Grammar expressions" and "Bad game files". A hostile or broken
``game.tw-pddl`` / ``traj_data.json`` must fail at load with a ``ValueError``
(:class:`GameFileError`, :class:`UnsupportedGameError` or :class:`DataFileError`) whose one-line
message names the file and what is wrong, on both engines; a grammar expression outside the
whitelist is refused before anything of it is evaluated.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.alfworld.data import bundled_split_dir, collect_games
from mvpo_envs.alfworld.engine import AlfworldEngine, GameFileError
from mvpo_envs.alfworld.fast import FastEngine
from mvpo_envs.alfworld.fast.expressions import compile_expression
from mvpo_envs.alfworld.fast.grammar import Entity
from mvpo_envs.data_files import DataFileError

needs_reference = pytest.mark.skipif(
    importlib.util.find_spec("fast_downward") is None,
    reason="ALFWorld's reference engine (fast-downward-textworld) is not installed",
)
GOTO_FEEDBACK = '"rhs": "You arrive at {r.name}. #examineReceptacle.feedback#"'


@pytest.fixture
def game(tmp_path: Path) -> Path:
    """A copy of a bundled game folder in a real-data layout; returns its game file."""
    src = collect_games(bundled_split_dir("train", "mini"))[0].game_file.parent
    dst = tmp_path / "data" / "json_2.1.1" / "valid_seen" / src.parent.name / src.name
    shutil.copytree(src, dst)
    return dst / "game.tw-pddl"


def _edit(game: Path, **changes) -> dict:
    data = json.loads(game.read_text())
    data.update(changes)
    game.write_text(json.dumps(data))
    return data


def _play(engine, game: Path, steps: int = 4) -> list[str]:
    """Load, reset and play the first few ``go to`` commands; the texts seen."""
    engine.load(game)
    step = engine.reset()
    seen = [step.feedback, *step.admissible]
    for command in [c for c in step.admissible if c.startswith("go to")][:steps]:
        step = engine.step(command)
        seen += [step.feedback, *step.admissible]
    return seen


def _one_line(err: pytest.ExceptionInfo, *names: str) -> str:
    message = str(err.value)
    assert "\n" not in message, message
    for name in names:
        assert name in message, message
    return message


def _reference_refuses(game: Path, needle: str) -> None:
    """The reference engine refuses ``game`` with one ``GameFileError`` line naming the file
    and ``needle``."""
    with pytest.raises(GameFileError) as err:
        _play(AlfworldEngine(), game)
    _one_line(err, str(game), needle)


# -- data never runs code -------------------------------------------------------------------
def _inject(game: Path, expression: str) -> None:
    grammar = json.loads(game.read_text())["grammar"]
    assert GOTO_FEEDBACK in grammar
    _edit(
        game, grammar=grammar.replace(GOTO_FEEDBACK, GOTO_FEEDBACK.replace("{r.name}", expression))
    )


def test_grammar_code_execution_is_refused_at_load(game, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _inject(game, "{__import__('os').system('touch pwned') or r.name}")
    env = gym.make("mvpo/ALFWorld-v0", data_dir=game.parents[4], split="valid_seen")
    with pytest.raises(GameFileError) as err:
        env.reset(seed=0)
        for command in [c for c in env.unwrapped._admissible if c.startswith("go to")][:3]:
            env.step(command)
    _one_line(err, str(game), "__import__", "refused")
    assert not (tmp_path / "pwned").exists()


def test_grammar_file_read_is_refused_and_leaks_nothing(game, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    _inject(game, f"{{open({str(secret)!r}).read()}}")
    seen: list[str] = []
    with pytest.raises(GameFileError) as err:
        seen = _play(FastEngine(), game)
    message = _one_line(err, str(game), "open(")
    assert "TOP-SECRET" not in message + "".join(seen)


@pytest.mark.parametrize(
    "expression",
    [
        "{__builtins__}",
        "{open}",
        "{r.__class__}",
        "{r.name.upper()}",
        "{getattr(r, 'name')}",
        "{r.name * 3}",
        "{1 + 1}",
        "{(lambda: r.name)()}",
        "{r.name if r else r.id}",
        "{'%s' % r.name}",
        "{-r.id}",
        "{r.nam}",
        "{" + "+".join(["r.name"] * 150) + "}",
    ],
)
def test_grammar_expressions_outside_the_whitelist_are_refused(game, expression):
    _inject(game, expression)
    with pytest.raises(GameFileError) as err:
        _play(FastEngine(), game)
    _one_line(err, str(game), "grammar expression", "refused")


def test_the_evaluator_itself_never_runs_code(tmp_path):
    # the load-time check and the evaluator are the same whitelist: a text derived at run time
    # (not part of the game's grammar) is checked too, and nothing of it is evaluated
    marker = tmp_path / "ran"
    with pytest.raises(GameFileError, match="refused"):
        compile_expression(f"__import__('pathlib').Path({str(marker)!r}).touch()")
    assert not marker.exists()
    engine = FastEngine()
    engine.load(collect_games(bundled_split_dir("train", "mini"))[0].game_file)
    engine.reset()
    grammar = engine.game.logic.grammar
    with pytest.raises(GameFileError, match="refused"):
        grammar.derive("{globals()}", engine._store, engine.game.entities, {})
    # what ALFWorld's grammars use is accepted and evaluates as Python would
    apple = Entity("apple_bar_1", "apple 1", "object")
    assert compile_expression("o.indefinite + ' ' + o.name ")({"o": apple}) == "a apple 1"
    assert compile_expression("r.name or r.id")({"r": apple}) == "apple 1"
    assert compile_expression("o")({"o": apple}) is apple


@needs_reference
def test_reference_engine_refuses_the_same_expressions(game, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    original = game.read_text()
    _inject(game, "{__import__('os').system('touch pwned') or r.name}")
    _reference_refuses(game, "__import__")
    # TextWorld's eval looks names up in its grammar module: none may be a placeholder
    game.write_text(original)
    _inject(game, "{deepcopy}")
    with pytest.raises(GameFileError) as err:
        _play(AlfworldEngine(cached=False), game)
    _one_line(err, str(game), "deepcopy")
    assert not (tmp_path / "pwned").exists()


# -- data errors name the file and the field ------------------------------------------------
def test_traj_pddl_params_of_the_wrong_type_names_file_and_field(game):
    traj = game.parent / "traj_data.json"
    for field, value in [("pddl_params", [1, 2]), ("task_type", 7)]:
        data = json.loads(traj.read_text())
        data[field] = value
        traj.write_text(json.dumps(data))
        with pytest.raises(DataFileError) as err:
            gym.make("mvpo/ALFWorld-v0", data_dir=game.parents[4], split="valid_seen")
        _one_line(err, str(traj), field)
        shutil.copy(collect_games(bundled_split_dir("train", "mini"))[0].traj_file, traj)
    data = json.loads(traj.read_text())
    data["pddl_params"]["object_target"] = ["CD"]
    traj.write_text(json.dumps(data))
    with pytest.raises(DataFileError) as err:
        gym.make("mvpo/ALFWorld-v0", data_dir=game.parents[4], split="valid_seen")
    _one_line(err, str(traj), "pddl_params.object_target")


def test_truncated_grammar_names_the_file(game):
    grammar = json.loads(game.read_text())["grammar"]
    for cut in (0.1, 0.5, 0.9, 0.999):
        _edit(game, grammar=grammar[: int(len(grammar) * cut)])
        with pytest.raises(ValueError) as err:
            _play(FastEngine(), game)
        _one_line(err, str(game), "grammar")


def test_deeply_nested_and_non_utf8_game_files_name_the_file(game):
    game.write_text('{"pddl_domain": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(GameFileError) as err:
        FastEngine().load(game)
    _one_line(err, str(game), "nested deeper")
    game.write_bytes(b'{"pddl_domain": "\xff\xfe"}')
    with pytest.raises(GameFileError) as err:
        FastEngine().load(game)
    _one_line(err, str(game), "UTF-8")
    # deep PDDL nesting inside a valid file: no RecursionError, the file and field named
    data = json.loads(
        Path(collect_games(bundled_split_dir("train", "mini"))[0].game_file).read_text()
    )
    goal = "(:goal " + "(and " * 3000 + "(opened agent1)" + ")" * 3000 + ")"
    problem = re.sub(r"\(:goal.*\)\s*\)\s*$", goal + ")", data["pddl_problem"], flags=re.S)
    game.write_text(json.dumps({**data, "pddl_problem": problem}))
    with pytest.raises(ValueError) as err:
        FastEngine().load(game)
    _one_line(err, str(game), "pddl_problem", "nested deeper")


WRONG = (None, 5, [], {}, "", True)


def test_fuzz_every_top_level_field_removed_or_of_the_wrong_type(game):
    """Each variant of the game file either plays or fails in one line naming the file; a
    required field (the PDDL and the grammar) and a mistyped optional one always fail."""
    original = json.loads(game.read_text())
    cases = [(k, "removed") for k in original] + [(k, v) for k in original for v in WRONG]
    for key, value in cases:
        data = dict(original)
        if value == "removed":
            del data[key]
        else:
            data[key] = value
        game.write_text(json.dumps(data))
        optional_ok = key in ("solvable", "walkthrough") and (
            value == "removed" or value is None or (key == "solvable" and value is True)
        )
        if optional_ok:
            _play(FastEngine(), game, steps=1)
            continue
        with pytest.raises(ValueError) as err:
            _play(FastEngine(), game, steps=1)
        _one_line(err, str(game), key)
    text = json.dumps(original)
    for cut in (1, len(text) // 3, len(text) - 2):
        game.write_text(text[:cut])
        with pytest.raises(GameFileError) as err:
            FastEngine().load(game)
        _one_line(err, str(game), "JSON")


# -- tasks nobody can play or win are refused -----------------------------------------------
def _problem_goal(problem: str, atom: str) -> str:
    new, n = re.subn(r"\(:goal\s*\(and", "(:goal (and " + atom, problem, count=1)
    assert n == 1
    return new


@pytest.mark.parametrize(
    "field, change, expect",
    [
        ("pddl_domain", lambda d: d.replace("(:action", "(:actoin"), "unknown section ':actoin'"),
        ("pddl_domain", lambda d: d.replace("(:action", "(:actoin", 1), "unknown section"),
        ("pddl_domain", lambda d: d.replace("(:predicates", "(:predicate", 1), "unknown section"),
        (
            "pddl_domain",
            lambda d: "(define (domain alfred) (:requirements :typing) (:types agent))",
            "no (:action",
        ),
        ("pddl_problem", lambda p: p.replace("(:goal", "(:goall", 1), "unknown section ':goall'"),
        ("pddl_problem", lambda p: _problem_goal(p, "(isglowing agent1)"), "'isglowing'"),
        ("pddl_problem", lambda p: _problem_goal(p, "(opened ghost1)"), "object 'ghost1'"),
        ("pddl_problem", lambda p: _problem_goal(p, "(opened agent1 agent1)"), "2 arguments"),
        ("pddl_problem", lambda p: _problem_goal(p, "(opened ?zz)"), "not bound"),
        ("pddl_problem", lambda p: _problem_goal(p, "(not)"), "without its operands"),
        ("pddl_problem", lambda p: p.replace("(:init", "(:init (isglowing agent1)", 1), "'isglowing'"),
        ("pddl_problem", lambda p: p.replace("(:init", "(:init (opened agent1 agent1)", 1), "2 arguments"),
        ("pddl_problem", lambda p: re.sub(r"\(atLocation agent1 [^)]*\)", "", p), "agent in no :init fact"),
        ("pddl_domain", lambda d: d.replace("(checked ?l)", "(checked ?where)", 1), "unbound variable '?where'"),
        ("walkthrough", lambda w: [], "empty in a solvable game"),
        ("walkthrough", lambda w: [*w, 3], "walkthrough"),
        ("grammar", lambda g: g.replace("#examineReceptacle.feedback#", "#examineReceptacle.feedbak#", 1), "does not exist"),
    ],
)  # fmt: skip
def test_unplayable_tasks_are_refused_in_one_line(game, field, change, expect):
    data = json.loads(game.read_text())
    _edit(game, **{field: change(data[field])})
    with pytest.raises(ValueError) as err:
        _play(FastEngine(), game, steps=2)
    _one_line(err, str(game), expect)


@needs_reference
def test_reference_engine_refuses_unplayable_tasks(game):
    data = json.loads(game.read_text())
    _edit(game, pddl_domain=data["pddl_domain"].replace("(:action", "(:actoin"))
    _reference_refuses(game, "':actoin'")
    # Fast Downward's translator would sys.exit() the whole process on this one
    _edit(
        game,
        pddl_domain=data["pddl_domain"],
        pddl_problem=data["pddl_problem"].replace("(:init", "(:init (isglowing agent1)", 1),
    )
    _reference_refuses(game, "'isglowing'")
    # a domain action without its text in the grammar fails mid-reset in TextWorld
    grammar = data["grammar"].replace("action help {", "action helpless {", 1)
    assert grammar != data["grammar"]
    _edit(game, pddl_problem=data["pddl_problem"], grammar=grammar)
    _reference_refuses(game, "no action 'help'")
    _edit(game, grammar=data["grammar"])
    _edit(
        game,
        pddl_domain=data["pddl_domain"],
        pddl_problem=_problem_goal(data["pddl_problem"], "(opened ghost1)"),
    )
    _reference_refuses(game, "'ghost1'")
    _edit(
        game,
        pddl_problem=data["pddl_problem"],
        grammar=data["grammar"][: len(data["grammar"]) // 2],
    )
    _reference_refuses(game, "grammar")
