"""The abstraction registries without an import cycle, and built-ins found without a list
(docs/architecture.md, "Layers and imports")."""

from __future__ import annotations

import ast
from pathlib import Path

import mvpo_abstraction
from mvpo_abstraction import plugins
from mvpo_abstraction.registry import available_abstractions, make_abstraction

PACKAGE = Path(mvpo_abstraction.__file__).parent


def _imports(path: Path) -> set[str]:
    """The ``mvpo_abstraction`` modules a file imports anywhere (lazy imports included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return {m for m in out if m.startswith("mvpo_abstraction.")}


def import_cycles(package: Path, name: str) -> list[list[str]]:
    graph = {f"{name}.{p.stem}": _imports(p) for p in package.glob("*.py") if p.stem != "__init__"}
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_no_import_cycle_in_the_abstraction_package():
    assert import_cycles(PACKAGE, "mvpo_abstraction") == []


def test_the_cycle_check_sees_a_lazy_import(tmp_path):
    (tmp_path / "a.py").write_text("from mvpo_abstraction.b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    from mvpo_abstraction.a import y\n")
    assert import_cycles(tmp_path, "mvpo_abstraction") == [
        ["mvpo_abstraction.a", "mvpo_abstraction.b", "mvpo_abstraction.a"]
    ]


def test_builtins_are_the_package_modules_and_each_env_abstraction_loads():
    modules = plugins.builtin_modules()
    assert "mvpo_abstraction.alfworld" in modules and "mvpo_abstraction.learned" in modules
    assert {"alfworld", "webshop", "searchqa", "milestone-chain", "learned"} <= set(
        available_abstractions()
    )
    assert make_abstraction("alfworld").name == "alfworld"


def test_a_milestone_name_resolves_through_base_without_the_registry():
    from mvpo_abstraction.base import Abstraction

    plugins.register_milestone("always-test", lambda prev, state, action: True)
    abs_ = Abstraction.from_functions(lambda s, t: "x", {}).with_milestone("m", "always-test")
    assert abs_.milestones["m"](None, {}, None) is True
