"""A small mutation pass over the credit machinery: do the tests notice a wrong formula?

Each mutant changes one operator or constant in one module of ``mvpo_train/credit/`` (the
estimators, the Union-Find regions, the AMP weights and potentials, the trajectory scans;
docs/estimators.md): ``+``/``-``, ``*``/``/``, ``<``/``<=``, ``>``/``>=``, ``==``/``!=``,
``and``/``or``, a dropped ``not``, ``0``/``1`` swapped, other numbers plus one, ``True``/``False``.
The candidates are enumerated from the syntax tree (docstrings and strings untouched), a seeded
sample of at most ``--max-mutants`` is drawn, and each is run against the credit tests in a
private copy of the repository (the working tree is never modified), so a mutant is "killed"
when the tests fail or time out. Survivors are listed with file, line and change.

    nice -n 15 python scripts/mutation_check.py --max-mutants 150 --seed 0

Prints ``killed/total`` and writes the survivors to ``--out`` when given.
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = "mvpo_train/credit"
TESTS = ("tests/mvpo_train/credit",)
COPY = ("mvpo_train", "mvpo_abstraction", "mvpo_envs", "tests", "pyproject.toml")

SWAPS: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.And: ast.Or,
    ast.Or: ast.And,
}


@dataclass(frozen=True)
class Mutant:
    """One change: the ``index``-th mutable site of ``path``."""

    path: str
    index: int
    line: int
    change: str


def _docstring_ids(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                ids.add(id(body[0].value))
    return ids


def _sites(tree: ast.AST) -> Iterator[tuple[ast.AST, str, int]]:
    """``(node, description, line)`` of every mutable site, in a fixed (walk) order."""
    skip = _docstring_ids(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in SWAPS:
            yield node, f"{type(node.op).__name__} -> {SWAPS[type(node.op)].__name__}", line
        elif isinstance(node, ast.BoolOp):
            yield node, f"{type(node.op).__name__} -> {SWAPS[type(node.op)].__name__}", line
        elif isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in SWAPS:
                    yield (node, k), f"{type(op).__name__} -> {SWAPS[type(op)].__name__}", line
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "drop not", line
        elif isinstance(node, ast.Constant) and id(node) not in skip:
            v = node.value
            if isinstance(v, bool):
                yield node, f"{v} -> {not v}", line
            elif isinstance(v, int | float) and not isinstance(v, bool):
                yield node, f"{v!r} -> {_new_number(v)!r}", line


def _new_number(v: float) -> float:
    return {0: 1, 1: 0}.get(v, v + 1) if isinstance(v, int) else (1.0 if v == 0 else v + 1.0)


def _apply(site: object) -> None:
    if isinstance(site, tuple):
        node, k = site
        node.ops[k] = SWAPS[type(node.ops[k])]()
    elif isinstance(site, ast.BinOp | ast.AugAssign | ast.BoolOp):
        site.op = SWAPS[type(site.op)]()
    elif isinstance(site, ast.UnaryOp):
        site.op = ast.UAdd()  # `+x` on a bool keeps the value: the `not` is gone
    elif isinstance(site, ast.Constant):
        v = site.value
        site.value = (not v) if isinstance(v, bool) else _new_number(v)


def enumerate_mutants(root: Path = REPO) -> list[Mutant]:
    out = []
    for path in sorted((root / TARGETS).glob("*.py")):
        rel = str(path.relative_to(root))
        tree = ast.parse(path.read_text())
        for index, (_, change, line) in enumerate(_sites(tree)):
            out.append(Mutant(rel, index, line, change))
    return out


def mutated_source(root: Path, m: Mutant) -> str:
    tree = ast.parse((root / m.path).read_text())
    tree = copy.deepcopy(tree)
    site = list(_sites(tree))[m.index][0]
    _apply(site)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def run_tests(work: Path, timeout: float) -> int:
    env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
    cmd += ["--hypothesis-seed=0", *TESTS]
    try:
        return subprocess.run(
            cmd, cwd=work, env=env, capture_output=True, timeout=timeout
        ).returncode
    except subprocess.TimeoutExpired:
        return 124


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-mutants", type=int, default=150, help="sample size (all when larger)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per test run")
    p.add_argument("--out", default=None, help="write the summary and survivors here")
    args = p.parse_args(argv)

    mutants = enumerate_mutants()
    sample = sorted(
        random.Random(args.seed).sample(mutants, min(args.max_mutants, len(mutants))),
        key=lambda m: (m.path, m.index),
    )
    with tempfile.TemporaryDirectory(prefix="mvpo-mutants-") as tmp:
        work = Path(tmp)
        for name in COPY:
            src = REPO / name
            if src.is_dir():
                shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(src, work / name)
        if run_tests(work, args.timeout) != 0:
            print("the credit tests fail without any mutation; fix them first", file=sys.stderr)
            return 2
        survivors, start = [], time.monotonic()
        for k, m in enumerate(sample, 1):
            original = (work / m.path).read_text()
            (work / m.path).write_text(mutated_source(work, m))
            killed = run_tests(work, args.timeout) != 0
            (work / m.path).write_text(original)
            if not killed:
                survivors.append(m)
            print(f"[{k}/{len(sample)}] {'killed ' if killed else 'SURVIVED'} "
                  f"{m.path}:{m.line} {m.change}", flush=True)  # fmt: skip
    killed = len(sample) - len(survivors)
    lines = [
        f"mutants: {len(sample)} sampled of {len(mutants)} (seed {args.seed}) over {TARGETS}/",
        f"killed: {killed}/{len(sample)} = {killed / max(len(sample), 1):.1%}"
        f" ({time.monotonic() - start:.0f} s)",
        "survivors:",
        *(f"  {m.path}:{m.line} {m.change}" for m in survivors),
    ]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
