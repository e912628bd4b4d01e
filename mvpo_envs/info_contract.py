"""The info contract of each env id as ``TypedDict`` s, and a checker (docs/environments.md,
"Info contract").

:class:`mvpo_envs.base.Info` holds the keys every env sets; each env's declaration
(``mvpo_envs/<env>/spec.py``, :mod:`mvpo_envs.declaration`) names the classes that add its
extras and its ``info["state"]``. One rule holds everywhere: **every key has one Python type**
(``bool`` is not ``int``, ``int`` is not ``float``), whatever the page or the episode phase, and a
value that can be absent has a sentinel instead of ``None``: ``""`` for text, ``-1`` / ``-1.0``
for numbers, an empty list or dict for collections. Gymnasium's vector envs merge infos into
arrays typed by the first env that reports a key, so a ``None`` or an ``int`` where another env
has a ``float`` breaks (or silently truncates) the merge.

:func:`contract_errors` checks an info against its declaration; the contract test runs it on
every info of many random episodes of each env.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from mvpo_envs.declaration import declarations

__all__ = ["INFO_TYPES", "contract_errors"]


class _InfoTypes(Mapping[str, tuple[type, type]]):
    """env id -> ``(info TypedDict, state TypedDict)``, read from the env declarations."""

    def __getitem__(self, env_id: str) -> tuple[type, type]:
        d = declarations()[env_id]
        if d.info_type is None or d.state_type is None:
            raise KeyError(env_id)
        return d.info_type, d.state_type

    def __iter__(self) -> Iterator[str]:
        return (k for k, d in declarations().items() if d.info_type and d.state_type)

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: env id -> (info TypedDict, state TypedDict), from each env's declaration (its ``spec.py``)
INFO_TYPES: Mapping[str, tuple[type, type]] = _InfoTypes()


def __getattr__(name: str) -> Any:
    """The ``TypedDict`` s moved to the env packages' ``spec.py`` stay importable from here."""
    for d in declarations().values():
        for tp in (d.info_type, d.state_type):
            module = sys.modules.get(getattr(tp, "__module__", ""))
            if module is not None and isinstance(getattr(module, name, None), type):
                return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def contract_errors(info: dict[str, Any], env_id: str) -> list[str]:
    """Every way ``info`` breaks the declared contract of ``env_id`` (``[]``: none).

    Checks exact types (``type(x) is int``, so ``True`` is not an ``int``), list elements,
    dict values, missing required keys and keys that are not declared.
    """
    info_type, state_type = INFO_TYPES[env_id]
    errors = _errors({k: v for k, v in info.items() if k != "state"}, info_type, "info", {"state"})
    if "state" in info:
        errors += _errors(info["state"], state_type, "info['state']", set())
    return errors


def _errors(value: Any, tp: Any, path: str, skip: set[str]) -> list[str]:
    if tp is Any:
        return []
    if typing.is_typeddict(tp):
        if type(value) is not dict:
            return [f"{path}: expected a dict, got {type(value).__name__}"]
        hints = typing.get_type_hints(tp)
        out = [
            f"{path}: missing key {k!r}"
            for k in sorted(tp.__required_keys__ - set(value) - skip)  # type: ignore[attr-defined]
        ]
        for key, item in value.items():
            if key in skip:
                continue
            if key not in hints:
                out.append(f"{path}: undeclared key {key!r} ({type(item).__name__})")
            else:
                out += _errors(item, hints[key], f"{path}[{key!r}]", set())
        return out
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list:
        if type(value) is not list:
            return [f"{path}: expected a list, got {type(value).__name__}"]
        return [e for i, x in enumerate(value) for e in _errors(x, args[0], f"{path}[{i}]", set())]
    if origin is dict:
        if type(value) is not dict:
            return [f"{path}: expected a dict, got {type(value).__name__}"]
        return [e for k, x in value.items() for e in _errors(x, args[1], f"{path}[{k!r}]", set())]
    if type(value) is not tp:
        return [f"{path}: expected {tp.__name__}, got {type(value).__name__} ({value!r:.40})"]
    return []
