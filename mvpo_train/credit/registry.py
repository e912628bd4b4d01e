"""Estimator registry: name -> factory (docs/estimators.md §1-§4; docs/architecture.md "one registry").

Built-in names: ``grpo``, ``gigpo``, ``mvpo``, ``ecpo``, ``progpo``, ``beacon``, ``rloo``,
``reinforce``. Register your own from your own package with :func:`register_estimator` (as a
decorator or a call), or expose it under the entry-point group ``mvpo.estimators``; see
docs/estimators.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

__all__ = [
    "BUILTIN_MODULES",
    "ENTRY_POINT_GROUP",
    "Estimator",
    "available_estimators",
    "get_estimator",
    "register_estimator",
]

ENTRY_POINT_GROUP = "mvpo.estimators"
BUILTIN_MODULES = ("beacon", "ecpo", "gigpo", "grpo", "mvpo", "progpo", "rloo")
"""Modules of ``mvpo_train.credit`` whose import registers the built-in estimators."""


@runtime_checkable
class Estimator(Protocol):
    """What the trainer calls: a pure function of a StepBatch plus a small state."""

    name: str

    def __call__(self, batch: Any) -> tuple[np.ndarray, dict[str, Any]]:
        """Float64 advantage per row (caller's row order) and diagnostics."""
        ...

    def state_dict(self) -> dict:
        """JSON-serialisable carried state ({} when stateless)."""
        ...

    def load_state_dict(self, d: dict) -> None:
        """Restore :meth:`state_dict`."""
        ...


F = TypeVar("F", bound=Callable[..., Any])
_REGISTRY: dict[str, Callable[..., Estimator]] = {}
_loaded = False


def register_estimator(
    name: str, factory: Callable[..., Estimator] | None = None, *, overwrite: bool = False
) -> Any:
    """Register ``factory`` (a class or a function taking config keywords) under ``name``.

    Usable as ``register_estimator("x", MyEstimator)`` or as the decorator
    ``@register_estimator("x")``. Re-registering a taken name needs ``overwrite=True``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("register_estimator: name must be a non-empty str")

    def _add(f: F) -> F:
        if not callable(f):
            raise TypeError(f"register_estimator('{name}'): factory must be callable")
        if not getattr(f, "__module__", "").startswith("mvpo_train.credit."):
            _load_builtins()  # a user's name must not silently shadow a built-in loaded later
        if name in _REGISTRY and _REGISTRY[name] is not f and not overwrite:
            raise ValueError(
                f"estimator '{name}' is already registered; pass overwrite=True to replace it"
            )
        _REGISTRY[name] = f
        return f

    return _add if factory is None else _add(factory)


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN_MODULES:  # each module registers its estimators on import
        importlib.import_module(f"mvpo_train.credit.{module}")


def _load_entry_point(name: str) -> None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name and name not in _REGISTRY:
            register_estimator(name, ep.load())


def get_estimator(name: str, **config: Any) -> Estimator:
    """A new estimator ``name`` built with config fields ``config``.

    Unknown names raise ``KeyError`` listing the available ones; unknown config fields raise
    ``TypeError`` listing the valid ones.
    """
    _load_builtins()
    if name not in _REGISTRY:
        _load_entry_point(name)
    if name not in _REGISTRY:
        raise KeyError(f"unknown estimator '{name}'; available: {available_estimators()}")
    return _REGISTRY[name](**config)


def available_estimators() -> list[str]:
    """Registered names, sorted."""
    _load_builtins()
    return sorted(_REGISTRY)
