"""docs/architecture.md is a contract: its import table, layers and names are checked here.

Every module of the three packages is parsed (``ast``, nothing is imported) and each import
statement, at any depth (lazy imports inside functions count), plus every
``importlib.import_module("...")`` with a literal name, is checked against the layering
("Layers and imports"):

* ``mvpo_abstraction`` imports neither ``mvpo_envs`` nor ``mvpo_train``, and of the third-party
  packages only those the page lists;
* ``mvpo_envs`` may import ``mvpo_abstraction`` but not ``mvpo_train``;
* ``mvpo_train`` may import both, but knows no specific environment: of ``mvpo_envs`` only the
  env-neutral modules the page lists, and none of the benchmark engines;
* no module imports itself back, and ``mvpo_envs.alfworld``'s layers point down.

The last part ("the page's names") imports the packages: every path, dotted name, command and
API name the page gives must exist.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
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
#: the only modules of ``mvpo_envs`` the trainer may import (the page's import table)
ENV_NEUTRAL = (
    "action_templates", "base", "cache_files", "cli_args", "data_files", "declaration",
    "registration", "vector",
)  # fmt: skip
#: third-party import name -> the name the page's import table gives it (``mvpo_abstraction``)
ABSTRACTION_DEPS = {
    "numpy": "NumPy",
    "gymnasium": "Gymnasium",
    "rapidfuzz": "rapidfuzz",
    "sklearn": "scikit-learn",
    "torch": "torch",
    "transformers": "transformers",
    "sentence_transformers": "sentence-transformers",
}
PAGE = REPO / "docs" / "architecture.md"


def page_text() -> str:
    return PAGE.read_text(encoding="utf-8")


def table_row(package: str) -> str:
    """The row of the page's import table that starts with ``package``."""
    rows = [line for line in page_text().splitlines() if line.startswith(f"| `{package}` |")]
    assert len(rows) == 1, f"docs/architecture.md: no single import-table row for {package}"
    return rows[0]


def _env_neutral(name: str) -> bool:
    return name == "mvpo_envs" or any(_within(name, f"mvpo_envs.{m}") for m in ENV_NEUTRAL)


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
        forbidden += list(ENGINES)
    out = []
    for path in sorted((root / package).rglob("*.py")):
        for line, name in imported_modules(path, root):
            other_env_module = (
                package == "mvpo_train" and _within(name, "mvpo_envs") and not _env_neutral(name)
            )
            if other_env_module or any(_within(name, f) for f in forbidden):
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
        "from mvpo_envs import play, declaration\n"
    )
    assert violations("mvpo_train", tmp_path) == [
        "mvpo_train/__init__.py:3 imports mvpo_envs.alfworld.env",
        "mvpo_train/__init__.py:3 imports mvpo_envs.alfworld.env.AlfworldEnv",
        "mvpo_train/__init__.py:4 imports alfworld.gen",
        "mvpo_train/__init__.py:4 imports alfworld.gen.constants",
        "mvpo_train/__init__.py:5 imports mvpo_envs.play",
    ]


def test_the_import_table_lists_what_the_test_allows():
    """The page's table names exactly the env-neutral modules the trainer may import and the
    third-party packages ``mvpo_abstraction`` imports (none outside that list)."""
    listed = set(re.findall(r"`\.(\w+)`", table_row("mvpo_train").split("|")[2]))
    assert listed == set(ENV_NEUTRAL)
    used = {
        name.split(".")[0]
        for path in sorted((REPO / "mvpo_abstraction").rglob("*.py"))
        for _, name in imported_modules(path)
    }
    third_party = used - set(sys.stdlib_module_names) - set(PACKAGES) - {""}
    assert third_party <= set(ABSTRACTION_DEPS), sorted(third_party - set(ABSTRACTION_DEPS))
    row = table_row("mvpo_abstraction").split("|")[2]
    assert [
        ABSTRACTION_DEPS[m] for m in sorted(third_party) if ABSTRACTION_DEPS[m] not in row
    ] == []


# ------------------------------------------------------------------ no import cycles


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """module -> the modules of the three packages it imports (any depth, lazy included).

    An imported name resolves to the longest module that holds it (``mvpo_train.update`` for
    ``from mvpo_train.update import ppo_update``; a package's ``__init__`` for a name defined
    there)."""
    modules = {
        module_name(p, root): p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))
    }
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        for _, name in imported_modules(path, root):
            parts = name.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            target = ".".join(parts)
            if target and target != mod:
                graph[mod].add(target)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> dict[frozenset[str], list[str]]:
    """Every strongly connected set of two or more modules (Tarjan) -> one import cycle
    through its members (``[a, b, ..., a]``): each module of the set imports itself back."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    sccs: list[set[str]] = []

    def visit(v: str) -> None:  # recursion depth <= number of modules (a few hundred)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.add(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(scc)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return {frozenset(scc): _cycle_through(graph, scc) for scc in sorted(sccs, key=min)}


def _cycle_through(graph: dict[str, set[str]], scc: set[str]) -> list[str]:
    """One closed path inside ``scc``, from its first module back to it (breadth-first)."""
    start = min(scc)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & scc):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"not a cycle: {sorted(scc)}")  # pragma: no cover


def test_no_import_cycles():
    """No module of the three packages imports itself back through others (lazy imports
    included): a cycle hidden in a function body is still one module that cannot be read,
    tested or loaded without the others."""
    cycles = import_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(p) for p in cycles.values())


#: the layers of ``mvpo_envs.alfworld``, bottom first (docs/architecture.md, "Layers and
#: imports"): a module may import modules of its own layer or of a layer below, never above
ALFWORLD_LAYERS = (
    ("game_file", "provenance", "state", "text_view", "spec"),
    ("fast",),
    ("engine", "oracle"),
    ("gen_scene", "gen_room", "gen_problem", "gen_alfworld", "gen_engine", "generate"),
    ("data",),
    ("env",),
)


def _alfworld_layer(module: str) -> int:
    name = module.removeprefix("mvpo_envs.alfworld.").split(".")[0]
    return next(i for i, layer in enumerate(ALFWORLD_LAYERS) if name in layer)


def test_alfworld_layers_point_down():
    """The game-file reader is the bottom of the ALFWorld package: it, the engines and the
    generator never import upwards (the cycle the data loader, generator and engines formed
    through the reader, when it lived in the reference engine's module, cannot come back)."""
    graph = import_graph()
    modules = [m for m in graph if m.startswith("mvpo_envs.alfworld.")]
    assert {m.removeprefix("mvpo_envs.alfworld.").split(".")[0] for m in modules} == {
        name for layer in ALFWORLD_LAYERS for name in layer
    }, "a new mvpo_envs.alfworld module: give it a layer in ALFWORLD_LAYERS"
    up = [
        f"{m} imports {t}"
        for m in modules
        for t in sorted(graph[m])
        if t.startswith("mvpo_envs.alfworld.") and _alfworld_layer(t) > _alfworld_layer(m)
    ]
    assert not up, "imports against the ALFWorld layers:\n" + "\n".join(up)
    bottom = ("mvpo_envs.alfworld.game_file", "mvpo_envs.alfworld.provenance")
    for m in bottom:
        assert not {t for t in graph[m] if t.startswith("mvpo_envs.alfworld")}, m
    paragraph = page_text().split("`mvpo_envs/alfworld/` is layered too", 1)[1].split("\n\n")[0]
    named = {n for layer in ALFWORLD_LAYERS for n in layer if f"`{n}.py`" in paragraph}
    named |= {"fast"} if "`fast/`" in paragraph else set()
    named |= {n for n in ALFWORLD_LAYERS[3] if "`gen_*.py`" in paragraph and n.startswith("gen_")}
    assert named == {n for layer in ALFWORLD_LAYERS for n in layer}, "the page's layers"


def test_the_import_chains_the_page_describes():
    """ "Layers and imports": ``cli`` -> ``trainer`` -> its five parts -> ``distributed``,
    ``checkpoint``, ``config`` -> ``errors`` (which imports nothing of the package); in
    ``mvpo_abstraction``, ``plugins`` at the bottom, ``registry`` over ``base``."""

    def deps(module: str, package: str) -> set[str]:
        return {
            t.removeprefix(package + ".")
            for t in graph[f"{package}.{module}"]
            if _within(t, package)
        }

    graph = import_graph()
    assert "trainer" in deps("cli", "mvpo_train")
    parts = ("factories", "update", "evaluation", "train_state", "run_folder")
    assert set(parts) <= deps("trainer", "mvpo_train")
    assert [
        p for p in parts if not deps(p, "mvpo_train") & {"distributed", "checkpoint", "config"}
    ] == []
    assert "errors" in deps("config", "mvpo_train") and deps("errors", "mvpo_train") == set()
    assert deps("plugins", "mvpo_abstraction") == set()
    assert {"plugins"} <= deps("base", "mvpo_abstraction")
    assert {"plugins", "base"} <= deps("registry", "mvpo_abstraction")
    assert "registry" not in deps("base", "mvpo_abstraction")


def test_the_cycle_finder_sees_lazy_cycles_and_only_cycles(tmp_path):
    pkg = tmp_path / "mvpo_train"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from mvpo_train.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from mvpo_train import c\n")
    (pkg / "c.py").write_text("def g():\n    import mvpo_train.a.thing\n")
    (pkg / "d.py").write_text("from mvpo_train import a, b\n")  # imports into a cycle: fine
    graph = import_graph(tmp_path)
    assert graph["mvpo_train.c"] == {"mvpo_train.a"}
    assert graph["mvpo_train.d"] == {"mvpo_train", "mvpo_train.a", "mvpo_train.b"}
    assert import_cycles(graph) == {
        frozenset({"mvpo_train.a", "mvpo_train.b", "mvpo_train.c"}): [
            "mvpo_train.a", "mvpo_train.b", "mvpo_train.c", "mvpo_train.a"
        ]
    }  # fmt: skip
    (pkg / "c.py").write_text("")
    assert import_cycles(import_graph(tmp_path)) == {}


# ------------------------------------------------------------------ the page's names

#: top-level folders a path on the page starts from
TOP = ("mvpo_envs", "mvpo_abstraction", "mvpo_train", "tests", "docs", "benchmarks", "data",
       "examples", "scripts", ".ci")  # fmt: skip
#: the page's API names that are not dotted: module -> attributes (``Class.method`` allowed)
PAGE_API = {
    "mvpo_abstraction.base": ("Abstraction", "Abstraction.with_milestone"),
    "mvpo_abstraction.extras": ("require_extra",),
    "mvpo_abstraction.plugins": ("register_milestone",),
    "mvpo_abstraction.registry": ("register_abstraction",),
    "mvpo_abstraction.wrapper": ("AbstractionWrapper",),
    "mvpo_envs.base": ("TextEnv", "Transition", "TextEnv._start", "TextEnv._act",
                       "TextEnv.task_text", "TextEnv.default_abstraction"),
    "mvpo_envs.declaration": ("EnvDeclaration", "PromptTemplate", "Prompt", "declarations",
                              "get_declaration", "declare_env", "default_env_id"),
    "mvpo_envs.serve.client": ("MvpoEnvClient",),
    "mvpo_envs.serve.remote_env": ("RemoteTextEnv",),
    "mvpo_envs.vector": ("GroupedVectorEnv",),
    "mvpo_train.backends": ("make_backend", "Backend.generate", "Backend.sync_weights",
                            "Backend.close"),
    "mvpo_train.batch": ("StepBatch",),
    "mvpo_train.credit.common": ("BaseEstimator",),
    "mvpo_train.credit.mvpo": ("register_kappa_schedule",),
    "mvpo_train.credit.registry": ("register_estimator", "BUILTIN_MODULES"),
    "mvpo_train.distributed": ("DistContext",),
    "mvpo_train.errors": ("ConfigError",),
    "mvpo_train.projection": ("register_projection",),
    "mvpo_train.prompts": ("register_template", "PromptBuilder", "PromptBuilder.prompt"),
    "mvpo_train.train_state": ("TrainState", "TrainState.save", "TrainState.restore"),
}  # fmt: skip


def page_paths(text: str) -> list[tuple[str, Path | None]]:
    """``(token, folder it is relative to)`` of every file or folder the page names in
    backticks. A block (a paragraph, a list item, a table row) resolves ``regions.py`` or ``backends/``
    against the last full path before it; ``<placeholders>`` and globs are left out."""
    out: list[tuple[str, Path | None]] = []
    for block in re.split(r"\n\s*\n|\n(?=[|-] )", text):
        base: Path | None = None
        for token in re.findall(r"`([^`]+)`", block):
            if not re.fullmatch(r"[\w./-]+", token) or not ("/" in token or token.endswith(".py")):
                continue
            if token.split("/")[0] in TOP:
                out.append((token, None))
                base = REPO / (token if token.endswith("/") else token.rsplit("/", 1)[0])
            elif base is not None:
                out.append((token, base))
    return out


def test_every_path_the_page_names_exists():
    text = page_text()
    missing = [t for t, base in page_paths(text) if not ((base or REPO) / t).exists()]
    missing += [n for n in ("pyproject.toml", "Makefile", "LICENSE") if not (REPO / n).exists()]
    assert missing == [], f"docs/architecture.md names what does not exist: {missing}"


def test_the_path_finder_resolves_siblings_and_skips_placeholders():
    found = page_paths(
        "`mvpo_train/credit/segments.py`, `regions.py`\n\n`mvpo_envs/<env>/spec.py`, "
        "`run_dir/metrics.jsonl`\n| `mvpo_train/policy.py`, `backends/` | x |"
    )
    assert found == [
        ("mvpo_train/credit/segments.py", None),
        ("regions.py", REPO / "mvpo_train" / "credit"),
        ("mvpo_train/policy.py", None),
        ("backends/", REPO / "mvpo_train"),
    ]


def _resolve(dotted: str) -> object:
    """The object a dotted name means: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_every_dotted_and_api_name_the_page_gives_exists():
    text = page_text()
    dotted = set(re.findall(r"`(mvpo_(?:envs|abstraction|train)(?:\.[A-Za-z_]\w*)+)`", text))
    assert dotted, "no dotted name found on the page"
    for name in sorted(dotted):
        _resolve(name)  # raises on a name that does not exist
    for module, names in PAGE_API.items():
        for name in names:
            assert f"{name.split('.')[-1]}" in text, f"the page no longer names {name}"
            _resolve(f"{module}.{name}")


def test_the_page_lists_the_real_estimators_prompt_pieces_and_declaration_fields():
    import dataclasses

    from mvpo_envs.base import Info
    from mvpo_envs.declaration import EnvDeclaration, Prompt
    from mvpo_train.credit.registry import available_estimators
    from mvpo_train.tiny_model import EXPERT_HOOK, VOCABULARY_HOOK

    text = page_text()
    (listed,) = re.findall(r"\((grpo, [\w, ]+)\)", text)
    assert sorted(listed.split(", ")) == available_estimators()
    pieces = text.split("returns a `Prompt`:", 1)[1].split("The LM policy", 1)[0]
    derived = {name for name, value in vars(Prompt).items() if isinstance(value, property)}
    assert (
        set(re.findall(r"`(\w+)`", pieces))
        == {f.name for f in dataclasses.fields(Prompt)} | derived
    )
    (call,) = re.findall(r"`DECLARATION = EnvDeclaration\((.*?)\)`", text, re.DOTALL)
    fields = {f.name for f in dataclasses.fields(EnvDeclaration)}
    assert set(re.findall(r"(\w+)=", call)) <= fields
    read = set(re.findall(r'`info\["(\w+)"\]`', text.split("## Layers and imports")[0]))
    trainer_code = "\n".join(
        p.read_text(encoding="utf-8") for p in (REPO / "mvpo_train").rglob("*.py")
    )
    assert read and read <= set(Info.__annotations__)
    assert [k for k in sorted(read) if f'["{k}"]' not in trainer_code] == []
    assert f"`{EXPERT_HOOK}(task_index)`" in text and f"`{VOCABULARY_HOOK}()`" in text


def test_every_command_the_page_names_is_a_console_script():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    text = page_text()
    named = set(re.findall(r"\bmvpo-[a-z][a-z-]*[a-z]\b", text))
    assert named and named <= set(scripts), sorted(named - set(scripts))
    (diagram,) = re.findall(r"cli\.py \(([^)]*)\)", text)
    assert all(scripts[c.strip()].startswith("mvpo_train.cli:") for c in diagram.split("/"))
