"""Estimator registry: name -> factory (docs/estimators.md §1-§4; docs/architecture.md "one registry").

Built-in names: ``grpo``, ``gigpo``, ``mvpo``, ``ecpo``, ``progpo``, ``beacon``, ``rloo``,
``reinforce``. Register your own from your own package with :func:`register_estimator` (as a
decorator or a call), or expose it under the entry-point group ``mvpo.estimators``; see
docs/estimators.md.

:func:`get_estimator` checks the config values before it builds (docs/training.md,
"Reliability"): no number anywhere in them may be NaN or infinite (nor an integer too large
for a float where a float field takes it), and a field of the factory's ``Config`` dataclass
with a natural range (probabilities and discounts in [0, 1], ``eps > 0``, non-negative
weights) refuses a value outside it. A ``Config`` field declares its range in its metadata
(``field(default=..., metadata={"ge": 0, "le": 1})``; keys ``gt``, ``ge``, ``lt``, ``le``);
the built-in fields without one use :data:`FIELD_BOUNDS`.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

__all__ = [
    "BUILTIN_MODULES",
    "ENTRY_POINT_GROUP",
    "FIELD_BOUNDS",
    "Estimator",
    "ReportsAlignment",
    "available_estimators",
    "check_config_values",
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


@runtime_checkable
class ReportsAlignment(Protocol):
    """An optional capability of an estimator: step-level alignment metrics of its last call.

    The trainer logs what :meth:`alignment_metrics` returns (``align/*``, docs/alignment.md "In
    training") for any estimator that has it, so the loop names no estimator. MVPO has it.
    """

    def alignment_metrics(self, batch: Any, advantages: np.ndarray) -> dict[str, Any]:
        """Metrics of the last call on ``batch`` (whose advantages were ``advantages``); ``{}``
        when the batch carries no known label."""
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
    ``TypeError`` listing the valid ones; a non-finite number or a value outside a field's
    range raises ``ValueError`` naming the field (:func:`check_config_values`).
    """
    _load_builtins()
    if name not in _REGISTRY:
        _load_entry_point(name)
    if name not in _REGISTRY:
        raise KeyError(f"unknown estimator '{name}'; available: {available_estimators()}")
    factory = _REGISTRY[name]
    config_cls = getattr(factory, "Config", None)
    check_config_values(name, config)  # before the factory: a 400-digit int must not reach it
    estimator = factory(**config)  # its own checks first, with their own messages
    check_config_values(name, config, config_cls)
    return estimator


_UNIT = ("gamma", "gamma_m", "gamma_phi", "gamma_ms", "beta", "eta", "w_min", "kappa_min",
         "kappa_constant")  # fmt: skip
_NON_NEGATIVE = ("omega", "c_succ", "lambda_L", "lambda_F", "k", "c")
#: natural ranges of the built-in estimators' config fields (docs/estimators.md) that their
#: ``Config`` dataclasses do not declare in field metadata: ``{field: {"ge"|"gt"|"le"|"lt":
#: bound}}``. Applied only to ``Config`` classes defined in ``mvpo_train.credit``.
FIELD_BOUNDS: dict[str, dict[str, float]] = {
    **{name: {"ge": 0.0, "le": 1.0} for name in _UNIT},  # discounts, EMA, AMP step, kappa
    **{name: {"ge": 0.0} for name in _NON_NEGATIVE},  # weights and scales
    "similarity_threshold": {"gt": 0.0, "le": 1.0},
    "eps": {"gt": 0.0},
}

_OPS: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    "gt": (">", lambda v, b: v > b),
    "ge": (">=", lambda v, b: v >= b),
    "lt": ("<", lambda v, b: v < b),
    "le": ("<=", lambda v, b: v <= b),
}


def check_config_values(name: str, config: Mapping[str, Any], config_cls: Any = None) -> None:
    """Refuse a non-finite number anywhere in ``config`` and, for the fields of the dataclass
    ``config_cls``, a value outside the field's range; raises ``ValueError`` naming the
    estimator and the field, e.g. ``estimator 'mvpo': config field 'lambda_L' must be a finite
    number, got nan``."""
    fields = (
        {f.name: f for f in dataclasses.fields(config_cls)}
        if dataclasses.is_dataclass(config_cls)
        else {}
    )
    builtin = getattr(config_cls, "__module__", "").startswith("mvpo_train.credit.")
    for key, value in config.items():
        where = f"estimator '{name}': config field '{key}'"
        _check_finite(value, where)
        f = fields.get(key)
        if f is None or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        bounds = {k: f.metadata[k] for k in _OPS if k in f.metadata}
        if not bounds and builtin:
            bounds = FIELD_BOUNDS.get(key, {})
        if any(not _OPS[op][1](value, b) for op, b in bounds.items()):
            allowed = " and ".join(f"{_OPS[op][0]} {b:g}" for op, b in bounds.items())
            raise ValueError(f"{where} must be {allowed}, got {value!r}")


def _check_finite(value: Any, where: str, depth: int = 0) -> None:
    if isinstance(value, bool) or depth > 100:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} must be a finite number, got {value!r}")
    if isinstance(value, int) and abs(value) > 2**63:  # no float field, counter or seed needs it
        raise ValueError(
            f"{where} must be at most 2**63 in size, got a {value.bit_length()}-bit integer"
        )
    if isinstance(value, Mapping):
        for v in value.values():
            _check_finite(v, where, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            _check_finite(v, where, depth + 1)


def available_estimators() -> list[str]:
    """Registered names, sorted."""
    _load_builtins()
    return sorted(_REGISTRY)
