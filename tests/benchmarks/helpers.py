"""Shared helper of the benchmark tests: a script of ``benchmarks/`` loaded as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
# the study scripts import their sibling modules (learning_env, diagnostics_data, ...) as a
# script run from benchmarks/ does
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))


def study_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported by name, once per process (as its sibling scripts see it)."""
    return importlib.import_module(name)


def load_benchmark(script: str, name: str | None = None, register: bool = False) -> ModuleType:
    """``benchmarks/<script>.py`` as a fresh module named ``name`` (default: ``script``);
    ``register`` puts it in ``sys.modules`` before it runs (its dataclasses look it up there)."""
    spec = importlib.util.spec_from_file_location(
        name or script, ROOT / "benchmarks" / f"{script}.py"
    )
    assert spec is not None and spec.loader is not None, script
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
