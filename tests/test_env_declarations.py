"""Envs declare themselves once (docs/architecture.md, "A new environment").

The trainer names no env: no env id and no env family name appears in a string of
``mvpo_train``'s code (docstrings aside), and it imports no CLI module of ``mvpo_envs``. A fifth
env declared by one :class:`~mvpo_envs.declaration.EnvDeclaration` is then known everywhere:
Gymnasium, the info contract, the abstraction registry, the prompts, the config defaults and
the score-mode check.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path
from typing import TypedDict

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs import declaration as decl_module
from mvpo_envs.base import Info
from mvpo_envs.declaration import (
    DeclarationError,
    EnvDeclaration,
    PromptTemplate,
    declarations,
    declare_env,
    default_env_id,
)

REPO = Path(__file__).resolve().parents[1]
#: the family names of the built-in envs, however spelled (ids are checked from the declarations)
FAMILIES = re.compile(r"alfworld|webshop|searchqa|milestone[_ -]?chain", re.IGNORECASE)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def env_names_in_code(path: Path, root: Path) -> list[str]:
    """``file:line: text`` of every string constant (docstrings aside) that names an env."""
    ids = [d.id for d in declarations().values()]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _docstring_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
            if FAMILIES.search(text) or any(i in text for i in ids):
                found.append(
                    (node.lineno, f"{path.relative_to(root)}:{node.lineno}: {text[:60]!r}")
                )
    return [hit for _, hit in sorted(found)]


def test_the_trainer_names_no_env():
    found = [
        hit
        for p in sorted((REPO / "mvpo_train").rglob("*.py"))
        for hit in env_names_in_code(p, REPO)
    ]
    assert found == [], "mvpo_train names an env; read it from its declaration:\n" + "\n".join(
        found
    )


def test_the_scan_finds_an_env_branch_but_not_a_docstring(tmp_path):
    src = tmp_path / "mod.py"
    src.write_text(
        textwrap.dedent(
            '''
            """Module doc mentioning mvpo/WebShop-v0 as an example."""
            def fix(env_id):
                """Say WebShop's fix."""
                return "keyword" if "webshop" in env_id.lower() else ""
            DEFAULT = "mvpo/ALFWorld-v0"
            '''
        )
    )
    assert [h.split(": ", 1)[0] for h in env_names_in_code(src, tmp_path)] == [
        "mod.py:5",
        "mod.py:6",
    ]


def test_the_trainer_imports_no_cli_module_of_the_envs():
    bad = []
    for path in sorted((REPO / "mvpo_train").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            bad += [f"{path.name}:{node.lineno}" for n in names if n in ("mvpo_envs.play",)]
    assert bad == []


def test_every_builtin_env_is_declared_once_with_its_class_abstraction():
    found = declarations()
    assert {"mvpo/ALFWorld-v0", "mvpo/WebShop-v0", "mvpo/SearchQA-v0"} <= set(found)
    assert "mvpo/MilestoneChain-v0" in found and default_env_id() == "mvpo/ALFWorld-v0"
    for env_id, d in found.items():
        assert env_id in gym.registry and gym.spec(env_id).max_episode_steps == d.max_episode_steps
        module, _, name = d.entry_point.partition(":")
        cls = getattr(__import__(module, fromlist=[name]), name)
        assert cls.default_abstraction == d.abstraction, env_id


def test_a_bad_declaration_is_one_line_naming_the_field():
    with pytest.raises(DeclarationError, match=r"'x/Y-v0': max_episode_steps"):
        EnvDeclaration(id="x/Y-v0", entry_point="m:C", max_episode_steps=0)
    with pytest.raises(DeclarationError, match=r"train_defaults\['cpu-tiny'\]: unknown"):
        EnvDeclaration(
            id="x/Y-v0",
            entry_point="m:C",
            max_episode_steps=3,
            train_defaults={"cpu-tiny": {"lr": 1}},
        )
    d = declarations()["mvpo/WebShop-v0"]
    with pytest.raises(DeclarationError, match="declared twice"):
        declare_env(EnvDeclaration(id=d.id, entry_point=d.entry_point, max_episode_steps=1))


# ------------------------------------------------------------------ a fifth env


class FifthState(TypedDict):
    observation: str
    count: int


class FifthInfo(Info):
    pass


FAKE_ENV = '''
from mvpo_envs.base import TextEnv, Transition


class FifthEnv(TextEnv):
    """Count to three: "step" three times wins."""

    default_abstraction = "fifth-count"

    def __init__(self, split="train", render_mode=None, abstraction=None):
        super().__init__(["t0", "t1", "t2"], abstraction, render_mode)
        self.count = 0

    def _state(self, obs):
        return {"observation": obs, "count": self.count}

    def _start(self, task_index):
        self.count = 0
        return Transition("You are at 0.", ["step", "search[<query>]"], self._state("You are at 0."))

    def _act(self, command):
        self.count += 1
        obs = f"You are at {self.count}."
        won = self.count >= 3
        return Transition(obs, ["step"], self._state(obs), float(won), won, won)

    def task_text(self):
        return "count to three"
'''

FAKE_ABSTRACTION = """
from mvpo_abstraction.base import Abstraction
from mvpo_abstraction.registry import register_abstraction


class Count(Abstraction):
    name = "fifth-count"

    def signature(self, state, t):
        return f"c{state['count']}"


register_abstraction("fifth-count", lambda **kw: Count({"two": lambda p, s, a: s["count"] >= 2}))
"""


@pytest.fixture
def fifth_env(tmp_path, monkeypatch):
    pkg = tmp_path / "fifth_env"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(FAKE_ENV)
    (pkg / "abstraction.py").write_text(FAKE_ABSTRACTION)
    monkeypatch.syspath_prepend(str(tmp_path))
    from mvpo_abstraction import plugins

    monkeypatch.setattr(decl_module, "_DECLARATIONS", dict(declarations()))
    monkeypatch.setattr(plugins, "_EXTRA_MODULES", list(plugins._EXTRA_MODULES))
    seed = PromptTemplate(
        name="seed", first="Count! {task} | {observation} | {admissible}", step="{history}",
        history_item="{action}",
    )  # fmt: skip
    d = EnvDeclaration(
        id="test/Fifth-v0",
        entry_point="fifth_env:FifthEnv",
        max_episode_steps=7,
        info_type=FifthInfo,
        state_type=FifthState,
        abstraction="fifth-count",
        abstraction_module="fifth_env.abstraction",
        prompts={"seed": seed},
        score_template_hint="pass fill=1 to fill the query",
        train_defaults={"cpu-tiny": {"tasks": [0, 2], "env_kwargs": {"split": "train"}}},
    )
    try:
        yield declare_env(d)
    finally:
        gym.registry.pop(d.id, None)
        for name in ("fifth_env", "fifth_env.abstraction"):
            sys.modules.pop(name, None)


def test_one_declaration_registers_a_fifth_env_everywhere(fifth_env):
    from mvpo_abstraction.registry import available_abstractions
    from mvpo_envs.info_contract import INFO_TYPES, contract_errors
    from mvpo_envs.registration import ENV_SPECS
    from mvpo_train.config import ConfigError, TrainConfig, preset
    from mvpo_train.prompts import COMPACT, env_family, get_template
    from mvpo_train.rollout import check_score_candidates

    env_id = fifth_env.id
    assert ENV_SPECS[env_id] == ("fifth_env:FifthEnv", 7)
    assert INFO_TYPES[env_id] == (FifthInfo, FifthState)
    assert "fifth-count" in available_abstractions()
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    assert info["signature"] == "c0" and contract_errors(info, env_id) == []
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step("step")
        assert contract_errors(info, env_id) == []
    assert terminated and info["won"] and info["progress"] == {"two": True}
    assert env_family(env_id) == "fifth"
    assert get_template(env_id, "seed").first.startswith("Count!")
    assert get_template(env_id, "compact") == COMPACT  # the generic style where none declared
    cfg = preset("cpu-tiny", env_id=env_id)
    assert cfg.tasks == [0, 2] and cfg.env_kwargs == {"split": "train"}
    assert TrainConfig(env_id=env_id).tasks == [0, 2]
    assert preset("gpu-qwen2.5-1.5b", env_id=env_id).tasks == []
    with pytest.raises(ConfigError, match="pass fill=1 to fill the query"):
        check_score_candidates(["step", "search[<query>]"], env_id)


def test_a_prompt_style_and_an_answer_format_added_from_user_code(fifth_env, monkeypatch):
    """docs/architecture.md, "The five common changes" (add a prompt template): a style
    registered for an env id and a new answer format reach the prompt builder and the parser
    without a change to mvpo_train; the declared style stays."""
    from mvpo_train import projection, prompts
    from mvpo_train.projection import Projected, get_projection, register_projection
    from mvpo_train.prompts import PromptBuilder, get_template, register_template

    monkeypatch.setattr(prompts, "_TEMPLATES", dict(prompts._TEMPLATES))
    monkeypatch.setattr(projection, "_PROJECTIONS", dict(projection._PROJECTIONS))

    def count_answer(text, admissible, require_think=False):
        word = text.strip().lower()
        return Projected(word, True) if word in admissible else Projected("", False, "no word")

    register_projection("count_answer", count_answer)
    terse = PromptTemplate(
        name="terse", first="{task}: {observation} [{admissible}]", step="{history} {observation}",
        history_item="{action}", projection="count_answer",
    )  # fmt: skip
    register_template(fifth_env.id, "terse", terse)
    assert get_template(fifth_env.id, "terse") is terse
    assert get_template(fifth_env.id, "seed").first.startswith("Count!")
    builder = PromptBuilder(get_template(fifth_env.id, "terse"), num_envs=1)
    builder.reset(0, "You are at 0.", "count to three")
    first = builder.prompt(0, ["step"])
    assert first.text == "count to three: You are at 0. ['step']" and first.task == "count to three"
    builder.record(0, "step", "You are at 1.")
    later = builder.prompt(0, ["step"])
    assert later.text == "step You are at 1." and later.previous_action == "step"
    parse = get_projection(get_template(fifth_env.id, "terse").projection)
    assert parse(" STEP ", ["step"]) == Projected("step", True)
    assert not parse("jump", ["step"]).valid
