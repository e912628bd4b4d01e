"""Imports follow the one-way data flow of docs/architecture.md ("Layers and imports").

Every module of the three packages is parsed (``ast``, nothing is imported) and each import
statement, at any depth (lazy imports inside functions count), plus every
``importlib.import_module("...")`` with a literal name, is checked against the layering:

* ``mvpo_abstraction`` imports neither ``mvpo_envs`` nor ``mvpo_train``;
* ``mvpo_envs`` may import ``mvpo_abstraction`` but not ``mvpo_train``;
* ``mvpo_train`` may import both, but knows no specific environment: none of the
  per-environment sub-packages of ``mvpo_envs`` and none of the benchmark engines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mvpo_abstraction", "mvpo_envs", "mvpo_train")

#: package -> top-level packages it must not import
FORBIDDEN = {
    "mvpo_abstraction": ("mvpo_envs", "mvpo_train"),
    "mvpo_envs": ("mvpo_train",),
    "mvpo_train": (),
}
#: packages that implement one benchmark's engine; the trainer reaches them only via gym ids
ENGINES = ("alfworld", "textworld", "web_agent_site", "pyserini")


def env_specific_packages(root: Path) -> list[str]:
    """The sub-packages of ``mvpo_envs`` that hold one environment each (``mvpo_envs.alfworld``)."""
    return sorted(
        f"mvpo_envs.{d.name}"
        for d in (root / "mvpo_envs").iterdir()
        if (d / "__init__.py").is_file()
    )


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path = REPO) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in the file (relative ones resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
            # ``from pkg import submodule`` imports pkg.submodule too
            found.extend((node.lineno, f"{name}.{alias.name}") for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(package: str, root: Path = REPO) -> list[str]:
    """``file:line imports module`` for every import of ``package`` against the flow."""
    forbidden = list(FORBIDDEN[package])
    if package == "mvpo_train":
        forbidden += list(ENGINES) + env_specific_packages(root)
    out = []
    for path in sorted((root / package).rglob("*.py")):
        for line, name in imported_modules(path, root):
            if any(_within(name, f) for f in forbidden):
                out.append(f"{path.relative_to(root)}:{line} imports {name}")
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_follow_the_data_flow(package):
    bad = violations(package)
    assert not bad, "imports against docs/architecture.md's flow:\n" + "\n".join(bad)


def test_the_checker_sees_relative_lazy_and_dynamic_imports(tmp_path):
    """The parser is what the layering test relies on: it must resolve every import form."""
    pkg = tmp_path / "mvpo_abstraction"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "mod.py").write_text(
        "import importlib\n"
        "from .. import base\n"
        "from ..other import thing\n"
        "def lazy():\n"
        "    from mvpo_train.credit import mvpo\n"
        "    import mvpo_envs.searchqa.metrics\n"
        "    return importlib.import_module('mvpo_train.trainer')\n"
    )
    names = [n for _, n in imported_modules(pkg / "sub" / "mod.py", tmp_path)]
    assert "mvpo_abstraction.base" in names
    assert "mvpo_abstraction.other" in names
    assert "mvpo_train.credit" in names and "mvpo_envs.searchqa.metrics" in names
    assert "mvpo_train.trainer" in names
    assert violations("mvpo_abstraction", tmp_path) == [
        "mvpo_abstraction/sub/mod.py:5 imports mvpo_train.credit",
        "mvpo_abstraction/sub/mod.py:5 imports mvpo_train.credit.mvpo",
        "mvpo_abstraction/sub/mod.py:6 imports mvpo_envs.searchqa.metrics",
        "mvpo_abstraction/sub/mod.py:7 imports mvpo_train.trainer",
    ]


def test_the_trainer_may_use_only_env_neutral_modules(tmp_path):
    pkg = tmp_path / "mvpo_train"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import mvpo_envs\n"
        "from mvpo_envs.vector import GroupedVectorEnv\n"
        "from mvpo_envs.alfworld.env import AlfworldEnv\n"
        "from alfworld.gen import constants\n"
    )
    (tmp_path / "mvpo_envs" / "alfworld").mkdir(parents=True)
    (tmp_path / "mvpo_envs" / "alfworld" / "__init__.py").write_text("")
    (tmp_path / "mvpo_envs" / "vector.py").write_text("")
    assert violations("mvpo_train", tmp_path) == [
        "mvpo_train/__init__.py:3 imports mvpo_envs.alfworld.env",
        "mvpo_train/__init__.py:3 imports mvpo_envs.alfworld.env.AlfworldEnv",
        "mvpo_train/__init__.py:4 imports alfworld.gen",
        "mvpo_train/__init__.py:4 imports alfworld.gen.constants",
    ]
