"""Fresh copies of the plain data an env puts in its infos (``info["state"]`` and the extras).

Every info a :class:`mvpo_envs.base.TextEnv` returns holds objects of its own: users keep
infos (Gymnasium's env checker compares two resets' infos), and an engine may change its own
lists after a step. :func:`copy.deepcopy` gives that, but its generic dispatch (a memo, a
``__deepcopy__`` / ``__reduce_ex__`` look-up per object) made the copy 11-30% of a single
env's step. Env states are trees of plain data (docs/environments.md, "Info contract":
``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``), which :func:`copy_plain` copies
with a type check per node, about 3.5x faster, to equal values of the same types: steps per
CPU second x1.08 (ALFWorld) to x1.45 (WebShop), x1.02 through the trainer's vector env
(``benchmarks/results/info_copy_cost.md``).

What differs from :func:`copy.deepcopy`, and why it does not matter here:

* one container that appears twice in the same tree is copied twice (``deepcopy``'s memo
  would keep the two places one object): the copy has equal values and shares nothing with
  the original; no env state holds such an alias (tests/mvpo_envs/test_info_copy.py);
* dict keys are kept as they are (a key is hashable, so it is immutable in practice).

Anything else (a tuple, a set, a NumPy value, a dict or list subclass, an object) is handed to
:func:`copy.deepcopy`, and so is a tree too deep (or cyclic) for a recursive copy.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

__all__ = ["copy_plain"]

T = TypeVar("T")

#: immutable leaf types returned as they are (exact types: a subclass goes to ``deepcopy``)
_LEAVES = frozenset({str, int, float, bool, type(None)})


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    return copy.deepcopy(value)


def copy_plain(value: T) -> T:
    """A copy of ``value`` that shares no mutable object with it: plain ``dict`` / ``list``
    trees node by node, anything else (and a tree deeper than the recursion limit, or one
    with a cycle) by :func:`copy.deepcopy`."""
    try:
        return _copy(value)
    except RecursionError:  # a cycle or a very deep tree: deepcopy's memo handles both
        return copy.deepcopy(value)
