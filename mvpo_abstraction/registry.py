"""Name -> factory registries for abstractions and milestone extractors.

docs/architecture.md: "one registry per kind of plug-in ... each with a documented way for a user to
add their own from outside the package". Three ways to plug in, none of which edits this
package:

1. ``register_abstraction("my-abs", factory)`` / ``register_milestone("my-ms", fn)`` from your
   own code (both work as decorators);
2. an import path ``"my_pkg.my_module:my_factory_or_object"`` wherever a name is accepted;
3. a Python entry point in the group ``mvpo.abstractions`` (or ``mvpo.milestones``) of your
   package's metadata, loaded lazily the first time an unknown name is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from mvpo_abstraction.base import Abstraction, MilestoneFn

_ABSTRACTIONS: dict[str, Callable[..., Abstraction]] = {}
_MILESTONES: dict[str, MilestoneFn] = {}


def register_abstraction(name: str, factory: Callable[..., Abstraction] | None = None):
    """Register ``factory(**kwargs) -> Abstraction`` under ``name`` (usable as a decorator)."""

    def _register(f: Callable[..., Abstraction]) -> Callable[..., Abstraction]:
        _ABSTRACTIONS[name] = f
        return f

    return _register(factory) if factory is not None else _register


def register_milestone(name: str, fn: MilestoneFn | None = None):
    """Register a milestone extractor ``(prev_state, state, action) -> bool`` under ``name``."""

    def _register(f: MilestoneFn) -> MilestoneFn:
        _MILESTONES[name] = f
        return f

    return _register(fn) if fn is not None else _register


def available_abstractions() -> list[str]:
    _load_builtins()
    return sorted(_ABSTRACTIONS)


def available_milestones() -> list[str]:
    _load_builtins()
    return sorted(_MILESTONES)


def _import_path(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _from_entry_points(group: str, name: str) -> Any | None:
    for ep in entry_points(group=group):
        if ep.name == name:
            return ep.load()
    return None


def get_milestone(name: str) -> MilestoneFn:
    """Look a milestone extractor up by registered name, import path or entry point."""
    _load_builtins()
    if name in _MILESTONES:
        return _MILESTONES[name]
    if ":" in name:
        return _import_path(name)
    found = _from_entry_points("mvpo.milestones", name)
    if found is None:
        raise KeyError(f"unknown milestone {name!r}; registered: {sorted(_MILESTONES)}")
    _MILESTONES[name] = found
    return found


def make_abstraction(
    spec: str | Abstraction | Callable[..., Abstraction], **kwargs: Any
) -> Abstraction:
    """Resolve ``spec`` into an :class:`Abstraction`.

    ``spec`` is an Abstraction (returned as is), a factory (called with ``kwargs``), a
    registered name, ``"NAME:PATH"`` for a registered factory with a ``load`` attribute (e.g.
    ``"learned:runs/abs"``, docs/abstractions.md), an import path ``"pkg.module:attr"`` (an Abstraction or a factory), or an
    entry-point name in the group ``mvpo.abstractions``.
    """
    if isinstance(spec, Abstraction):
        return spec
    if callable(spec):
        return _checked(spec(**kwargs), spec)
    if not isinstance(spec, str):
        raise TypeError(f"abstraction must be a name, an Abstraction or a factory, got {spec!r}")
    _load_builtins()
    if spec in _ABSTRACTIONS:
        return _checked(_ABSTRACTIONS[spec](**kwargs), spec)
    scheme, _, rest = spec.partition(":")  # "NAME:PATH": a registered factory's saved state
    if hasattr(_ABSTRACTIONS.get(scheme), "load"):
        if not rest.strip():
            raise ValueError(f"abstraction {spec!r}: {scheme}: needs a folder: {scheme}:DIR")
        return _checked(_ABSTRACTIONS[scheme].load(rest, **kwargs), spec)
    target = _import_path(spec) if ":" in spec else _from_entry_points("mvpo.abstractions", spec)
    if target is None:
        raise KeyError(f"unknown abstraction {spec!r}; registered: {sorted(_ABSTRACTIONS)}")
    return make_abstraction(target, **kwargs)


def _checked(obj: Any, spec: Any) -> Abstraction:
    if not isinstance(obj, Abstraction):
        raise TypeError(
            f"abstraction factory {spec!r} returned {type(obj).__name__}, not Abstraction"
        )
    return obj


_BUILTINS_LOADED = False


def _load_builtins() -> None:
    """Import the modules that register the built-in abstractions (lazily, once)."""
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    _BUILTINS_LOADED = True
    for module in _BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:  # an environment package not written/installed yet
            if err.name is None or not module.startswith(err.name):
                raise


_BUILTIN_MODULES = (
    "mvpo_abstraction.alfworld",
    "mvpo_abstraction.webshop",
    "mvpo_abstraction.searchqa",
    "mvpo_abstraction.milestone_chain",
    "mvpo_abstraction.learned",
)
