"""The abstraction interface: histories -> prefix signatures and milestones.

Implements the contract of ``docs/architecture.md`` ("An abstraction is data-in,
data-out") and the ``signature``/``milestones``/``progress`` keys of the info contract in
``docs/environments.md``; the signatures feed the viability regions of docs/estimators.md §3.1 and the
milestones the AMP weights of §3.2.

An :class:`Abstraction` reads only ``info["state"]`` (a plain dict the environment fills from
its engine) and the step index ``t``. It never sees the optimizer, so swapping it changes no
line of ``mvpo_train``.

Milestone extractors are callables ``(prev_state, state, action) -> bool`` that say whether the
milestone is reached in ``state`` (after ``action`` was taken in ``prev_state``). The tracker
reports a milestone only the first time it fires in an episode. At ``reset`` the extractors
are evaluated with ``prev_state=None, action=None``: a milestone already true in the initial
state is marked in ``progress`` but never reported in ``milestones`` (no action earned it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mvpo_abstraction.plugins import MilestoneFn, SignatureFn, State, get_milestone

__all__ = [
    "Abstraction",
    "AbstractionTracker",
    "FunctionAbstraction",
    "MilestoneFn",
    "SignatureFn",
    "State",
    "depth_bin",
]


def depth_bin(t: int, width: int = 3) -> str:
    """Depth-bin token ``d{width*floor(t/width)}`` used by the paper's signatures."""
    if width <= 0:
        raise ValueError(f"depth bin width must be positive, got {width}")
    return f"d{width * (t // width)}"


class Abstraction:
    """A signature function plus an ordered set of named milestone extractors.

    Subclass and override :meth:`signature`, or build one from plain functions with
    :meth:`from_functions`. ``milestones`` maps each name to its extractor; the order is the
    order in which ``progress`` lists them.
    """

    name: str = "abstraction"

    def __init__(
        self, milestones: Mapping[str, MilestoneFn] | None = None, name: str | None = None
    ):
        self.milestones: dict[str, MilestoneFn] = dict(milestones or {})
        if name is not None:
            self.name = name

    # -- to override -------------------------------------------------------------------------
    def signature(self, state: State, t: int) -> str:
        """Prefix signature of the history whose latest state is ``state`` at step ``t``."""
        raise NotImplementedError

    def fit(self, states: list[State]) -> Abstraction:  # pragma: no cover - default no-op
        """Learned abstractions fit themselves on rollout states; rule-based ones do nothing."""
        return self

    # -- composition --------------------------------------------------------------------------
    @property
    def milestone_names(self) -> list[str]:
        return list(self.milestones)

    def with_milestone(self, name: str, fn: MilestoneFn | str) -> Abstraction:
        """A copy of this abstraction with one more (or one replaced) milestone extractor.

        ``fn`` may be a callable or the name of a registered milestone extractor.
        """
        extractor = get_milestone(fn) if isinstance(fn, str) else fn
        if not callable(extractor):
            raise TypeError(f"milestone {name!r}: extractor must be callable, got {type(fn)!r}")
        clone = _shallow_copy(self)
        clone.milestones = {**self.milestones, name: extractor}
        return clone

    def without_milestone(self, name: str) -> Abstraction:
        if name not in self.milestones:
            raise KeyError(f"{self.name} has no milestone {name!r}; it has {self.milestone_names}")
        clone = _shallow_copy(self)
        clone.milestones = {k: v for k, v in self.milestones.items() if k != name}
        return clone

    @classmethod
    def from_functions(
        cls, signature: SignatureFn, milestones: Mapping[str, MilestoneFn], name: str = "custom"
    ) -> Abstraction:
        """Build an abstraction from a signature function and milestone extractors."""
        return FunctionAbstraction(signature, milestones, name=name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, milestones={self.milestone_names})"


class FunctionAbstraction(Abstraction):
    """An :class:`Abstraction` made of plain functions."""

    def __init__(self, signature: SignatureFn, milestones: Mapping[str, MilestoneFn], name: str):
        super().__init__(milestones, name=name)
        self._signature = signature

    def signature(self, state: State, t: int) -> str:
        return self._signature(state, t)


def _shallow_copy(obj: Abstraction) -> Abstraction:
    clone = object.__new__(type(obj))
    clone.__dict__.update(obj.__dict__)
    return clone


@dataclass
class AbstractionTracker:
    """Per-episode bookkeeping that turns states into the info fields.

    ``reset(state)`` and ``step(state, action)`` return
    ``{"signature": str, "milestones": list[str], "progress": dict[str, bool]}``.
    One tracker per environment instance; it keeps the previous state and what has fired.
    """

    abstraction: Abstraction
    _prev: State | None = field(default=None, init=False, repr=False)
    _fired: dict[str, bool] = field(default_factory=dict, init=False, repr=False)
    _t: int = field(default=0, init=False, repr=False)

    def reset(self, state: State) -> dict[str, Any]:
        self._t = 0
        self._prev = state
        self._fired = {
            name: bool(fn(None, state, None)) for name, fn in self.abstraction.milestones.items()
        }
        return self._fields(state, [])

    def step(self, state: State, action: str) -> dict[str, Any]:
        self._t += 1
        new: list[str] = []
        for name, fn in self.abstraction.milestones.items():
            if not self._fired.get(name, False) and fn(self._prev, state, action):
                self._fired[name] = True
                new.append(name)
        self._prev = state
        return self._fields(state, new)

    def _fields(self, state: State, new: list[str]) -> dict[str, Any]:
        return {
            "signature": str(self.abstraction.signature(state, self._t)),
            "milestones": new,
            "progress": dict(self._fired),
        }
