"""One name -> entry table per kind of plug-in: the policies (:mod:`mvpo_train.policies`), the
generation backends (:mod:`mvpo_train.backends`) and the trackers (:mod:`mvpo_train.tracking`).

docs/architecture.md, "A new policy, backend or tracker". Each kind's ``register_<kind>``
function is a :meth:`PluginTable.register` call, usable as ``register_x("name", factory)`` or as
the decorator ``@register_x("name")``; a taken name needs ``overwrite=True``; an unknown name is
one :class:`~mvpo_train.errors.ConfigError` line naming the config field and listing the
registered names, in registration order (the built-in ones first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from mvpo_train.errors import ConfigError

__all__ = ["PluginTable"]

E = TypeVar("E")
F = TypeVar("F", bound=Callable[..., Any])


class PluginTable(Generic[E]):
    """The registered entries of one kind of plug-in (``kind``, e.g. ``"policy"``), named in
    errors after the config field that selects one (``field``)."""

    def __init__(self, kind: str, field: str):
        self.kind, self.field = kind, field
        self._entries: dict[str, E] = {}
        self._factories: dict[str, Callable[..., Any]] = {}

    def copy(self) -> PluginTable[E]:
        """A table with the same entries (a test registers into it and drops it)."""
        out: PluginTable[E] = PluginTable(self.kind, self.field)
        out._entries, out._factories = dict(self._entries), dict(self._factories)
        return out

    def register(
        self, name: str, factory: F | None, entry: Callable[[F], E], *, overwrite: bool = False
    ) -> Any:
        """Store ``entry(factory)`` under ``name``; without ``factory``, the decorator that does.
        Refuses a name that is not a non-empty word, a factory that is not callable, and a
        taken name (another factory) unless ``overwrite``."""
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise ValueError(f"register_{self.kind}: name must be a non-empty word, got {name!r}")

        def _add(f: F) -> F:
            if not callable(f):
                raise TypeError(f"register_{self.kind}({name!r}): factory must be callable")
            if self._factories.get(name, f) is not f and not overwrite:
                raise ValueError(
                    f"{self.kind} {name!r} is already registered; pass overwrite=True to replace it"
                )
            self._entries[name], self._factories[name] = entry(f), f
            return f

        return _add if factory is None else _add(factory)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._entries)

    def get(self, name: str) -> E:
        """The entry of ``name``; an unknown one is one :class:`ConfigError` line, e.g.
        ``policy: unknown policy 'x'; registered: lm, encoder``."""
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            raise ConfigError(
                f"{self.field}: unknown {self.kind} {name!r}; registered: {', '.join(self.names())}"
            )
        return entry
