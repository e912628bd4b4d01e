"""Name -> factory registries for abstractions and milestone extractors.

docs/architecture.md: "one registry per kind of plug-in ... each with a documented way for a user to
add their own from outside the package". Three ways to plug in, none of which edits this
package:

1. ``register_abstraction("my-abs", factory)`` / ``register_milestone("my-ms", fn)`` from your
   own code (both work as decorators);
2. an import path ``"my_pkg.my_module:my_factory_or_object"`` wherever a name is accepted;
3. a Python entry point in the group ``mvpo.abstractions`` (or ``mvpo.milestones``) of your
   package's metadata, loaded lazily the first time an unknown name is asked for.

The built-in abstractions are found, not listed: :mod:`mvpo_abstraction.plugins` imports every
public module of this package (and the ``abstraction_module`` of each env declaration) the
first time a name is looked up. The milestone registry lives in that bottom module too, so
this module imports :mod:`mvpo_abstraction.base` and ``base`` does not import it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mvpo_abstraction.base import Abstraction
from mvpo_abstraction.plugins import (
    available_milestones,
    from_entry_points,
    get_milestone,
    import_path,
    load_builtins,
    register_milestone,
)

__all__ = [
    "available_abstractions",
    "available_milestones",
    "get_milestone",
    "make_abstraction",
    "register_abstraction",
    "register_milestone",
]

_ABSTRACTIONS: dict[str, Callable[..., Abstraction]] = {}


def register_abstraction(name: str, factory: Callable[..., Abstraction] | None = None):
    """Register ``factory(**kwargs) -> Abstraction`` under ``name`` (usable as a decorator)."""

    def _register(f: Callable[..., Abstraction]) -> Callable[..., Abstraction]:
        _ABSTRACTIONS[name] = f
        return f

    return _register(factory) if factory is not None else _register


def available_abstractions() -> list[str]:
    load_builtins()
    return sorted(_ABSTRACTIONS)


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
    load_builtins()
    if spec in _ABSTRACTIONS:
        return _checked(_ABSTRACTIONS[spec](**kwargs), spec)
    scheme, _, rest = spec.partition(":")  # "NAME:PATH": a registered factory's saved state
    if hasattr(_ABSTRACTIONS.get(scheme), "load"):
        if not rest.strip():
            raise ValueError(f"abstraction {spec!r}: {scheme}: needs a folder: {scheme}:DIR")
        return _checked(_ABSTRACTIONS[scheme].load(rest, **kwargs), spec)
    target = import_path(spec) if ":" in spec else from_entry_points("mvpo.abstractions", spec)
    if target is None:
        raise KeyError(f"unknown abstraction {spec!r}; registered: {sorted(_ABSTRACTIONS)}")
    return make_abstraction(target, **kwargs)


def _checked(obj: Any, spec: Any) -> Abstraction:
    if not isinstance(obj, Abstraction):
        raise TypeError(
            f"abstraction factory {spec!r} returned {type(obj).__name__}, not Abstraction"
        )
    return obj
