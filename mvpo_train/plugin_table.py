"""One name -> entry table per kind of plug-in: the policies (:mod:`mvpo_train.policies`), the
generation backends (:mod:`mvpo_train.backends`) and the trackers (:mod:`mvpo_train.tracking`).

docs/architecture.md, "A new policy, backend or tracker". Each kind's ``register_<kind>``
function is a :meth:`PluginTable.register` call, usable as ``register_x("name", factory)`` or as
the decorator ``@register_x("name")``; a taken name needs ``overwrite=True``; an unknown name is
one :class:`~mvpo_train.errors.ConfigError` line naming the config field and listing the
registered names, in registration order (the built-in ones first).

A package of the user's reaches the command line through an entry point of the kind's group
(``mvpo.policies``, ``mvpo.backends``, ``mvpo.trackers``), named as it is selected: the entry
point is loaded the first time its name is asked for (:meth:`PluginTable.known`); a module whose
import registers the name itself, or a factory, registered with the kind's defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from mvpo_train.errors import ConfigError

__all__ = ["PluginTable"]

E = TypeVar("E")
F = TypeVar("F", bound=Callable[..., Any])


class PluginTable(Generic[E]):
    """The registered entries of one kind of plug-in (``kind``, e.g. ``"policy"``), named in
    errors after the config field that selects one (``field``); ``group`` is the entry-point
    group whose factories ``default(name, factory)`` turns into entries."""

    def __init__(self, kind: str, field: str, group: str, default: Callable[[str, Any], E]):
        self.kind, self.field, self.group, self.default = kind, field, group, default
        self._entries: dict[str, E] = {}
        self._factories: dict[str, Callable[..., Any]] = {}

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

    def _entry_points(self) -> dict[str, EntryPoint]:
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def names(self) -> list[str]:
        """Registered names, in registration order, then the entry points' names not loaded
        yet."""
        return [*self._entries, *(n for n in self._entry_points() if n not in self._entries)]

    def known(self, name: str) -> bool:
        """Whether ``name`` is registered, loading the entry point of that name if there is
        one (entry points are read only for a name not registered)."""
        if not isinstance(name, str):
            return False
        if name not in self._entries:
            ep = self._entry_points().get(name)
            if ep is None:
                return False
            try:  # a module that registers the name itself, or a factory
                loaded = ep.load()
            except Exception as err:  # the user's package: its own message, on one line
                first = " ".join(str(err).split()) or type(err).__name__
                raise ConfigError(
                    f"{self.field}: the {self.group} entry point {name!r} ({ep.value}) does not "
                    f"load: {first}"
                ) from err
            if name not in self._entries and callable(loaded):
                self.register(name, loaded, lambda f: self.default(name, f))
        return name in self._entries

    def get(self, name: str) -> E:
        """The entry of ``name``; an unknown one is one :class:`ConfigError` line, e.g.
        ``policy: unknown policy 'x'; registered: lm, encoder``."""
        entry = self._entries.get(name) if self.known(name) else None
        if entry is None:
            raise ConfigError(
                f"{self.field}: unknown {self.kind} {name!r}; registered: {', '.join(self.names())}"
            )
        return entry
