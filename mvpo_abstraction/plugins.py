"""The bottom layer of the abstraction registries: milestone extractors and plug-in loading.

docs/architecture.md ("One registry per kind of plug-in"). This module imports nothing else
of :mod:`mvpo_abstraction`, so :mod:`mvpo_abstraction.base` (which resolves a milestone given
by name) and :mod:`mvpo_abstraction.registry` (which builds abstractions) both import it and
not each other. The built-in plug-ins are found, not listed: every public module of this
package is imported once, lazily, the first time a name is looked up, plus any module an
environment declaration names (:func:`add_plugin_module`, used by
:mod:`mvpo_envs.declaration`).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

__all__ = [
    "MilestoneFn",
    "SignatureFn",
    "State",
    "add_plugin_module",
    "available_milestones",
    "from_entry_points",
    "get_milestone",
    "import_path",
    "load_builtins",
    "register_milestone",
]

State = Mapping[str, Any]
MilestoneFn = Callable[[State | None, State, str | None], bool]
SignatureFn = Callable[[State, int], str]

_MILESTONES: dict[str, MilestoneFn] = {}
_PACKAGE = __name__.rpartition(".")[0]
#: modules named by env declarations outside this package, imported with the built-ins
_EXTRA_MODULES: list[str] = []
_LOADED: set[str] = set()


def register_milestone(name: str, fn: MilestoneFn | None = None):
    """Register a milestone extractor ``(prev_state, state, action) -> bool`` under ``name``."""

    def _register(f: MilestoneFn) -> MilestoneFn:
        _MILESTONES[name] = f
        return f

    return _register(fn) if fn is not None else _register


def available_milestones() -> list[str]:
    load_builtins()
    return sorted(_MILESTONES)


def import_path(spec: str) -> Any:
    """The object at ``"pkg.module:attr.sub"``."""
    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def from_entry_points(group: str, name: str) -> Any | None:
    for ep in entry_points(group=group):
        if ep.name == name:
            return ep.load()
    return None


def get_milestone(name: str) -> MilestoneFn:
    """Look a milestone extractor up by registered name, import path or entry point."""
    load_builtins()
    if name in _MILESTONES:
        return _MILESTONES[name]
    if ":" in name:
        return import_path(name)
    found = from_entry_points("mvpo.milestones", name)
    if found is None:
        raise KeyError(f"unknown milestone {name!r}; registered: {sorted(_MILESTONES)}")
    _MILESTONES[name] = found
    return found


def add_plugin_module(module: str) -> None:
    """Import ``module`` (which registers abstractions or milestones) with the built-ins."""
    if module and module not in _EXTRA_MODULES:
        _EXTRA_MODULES.append(module)
        if _PACKAGE in _LOADED:  # the built-ins are loaded already: load this one now
            _import_plugin(module)


def builtin_modules() -> list[str]:
    """The public modules of this package, sorted (each may register plug-ins)."""
    package = importlib.import_module(_PACKAGE)
    return sorted(
        f"{_PACKAGE}.{m.name}"
        for m in pkgutil.iter_modules(package.__path__)
        if not m.ispkg and not m.name.startswith("_")
    )


def load_builtins() -> None:
    """Import every module that registers built-in plug-ins (lazily, each once)."""
    if _PACKAGE in _LOADED:
        return
    _LOADED.add(_PACKAGE)
    for module in [*builtin_modules(), *_EXTRA_MODULES]:
        _import_plugin(module)


def _import_plugin(module: str) -> None:
    if module in _LOADED:
        return
    _LOADED.add(module)
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as err:  # the module itself is gone; a missing dependency raises
        if err.name is None or not module.startswith(err.name):
            raise
