"""Projection: generated text -> environment action (the ``generate`` action mode).

docs/architecture.md, ``policy.py (HF / vLLM)`` -> env. The seeds' prompt asks for
``<think>...</think><action>...</action>``; a projection extracts the action and says whether
the output was well formed. A malformed output never crashes anything: it becomes an invalid
action (the env answers with its no-op, ``invalid_action=True``) and the trainer adds a
configurable format penalty, recorded separately from the env reward.

Projections are looked up by the name a prompt template carries (``action_tag`` for ALFWorld,
WebShop and generic envs, ``search_answer`` for Search-R1-style QA). Register your own with
:func:`register_projection`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "INVALID_ACTION",
    "Projected",
    "action_tag",
    "get_projection",
    "register_projection",
    "search_answer",
]

#: what a malformed output sends to the env: no env admits an empty command
INVALID_ACTION = ""

_ACTION = re.compile(r"<action>(.*?)</action>", re.DOTALL | re.IGNORECASE)
_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
_SEARCH_ANSWER = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Projected:
    """``action`` to send; ``valid`` = well formed; ``reason`` says why not (``""`` if valid)."""

    action: str
    valid: bool
    reason: str = ""


def action_tag(
    text: str, admissible: Sequence[str] | None = None, require_think: bool = False
) -> Projected:
    """Parse ``<think>..</think><action>..</action>``.

    Well formed: exactly one ``<action>`` block with non-empty content, no Chinese characters
    (as verl-agent's ALFWorld projection), and a ``<think>`` block when ``require_think``.
    Admissibility is *not* checked here: the env decides and flags ``invalid_action``. When
    ``admissible`` is given, a case/whitespace variant of an admissible action is mapped to it.
    """
    if not isinstance(text, str):
        return Projected(INVALID_ACTION, False, "not text")
    blocks = _ACTION.findall(text)
    if len(blocks) != 1:
        return Projected(
            INVALID_ACTION, False, "no <action> block" if not blocks else "several <action> blocks"
        )
    action = " ".join(blocks[0].split())
    if not action:
        return Projected(INVALID_ACTION, False, "empty action")
    if _CJK.search(text):
        return Projected(INVALID_ACTION, False, "non-latin text")
    if require_think and not _THINK.search(text):
        return Projected(INVALID_ACTION, False, "no <think> block")
    if admissible:
        table = {" ".join(a.lower().split()): a for a in admissible}
        action = table.get(action.lower(), action)
    return Projected(action, True)


def search_answer(
    text: str, admissible: Sequence[str] | None = None, require_think: bool = False
) -> Projected:
    """Search-R1 turns: the first ``<search>q</search>`` or ``<answer>a</answer>`` block.

    The env receives the block itself (``<search>q</search>``), as Search-R1's env parses it.
    """
    if not isinstance(text, str):
        return Projected(INVALID_ACTION, False, "not text")
    m = _SEARCH_ANSWER.search(text)
    if m is None or not m.group(2).strip():
        return Projected(INVALID_ACTION, False, "no <search> or <answer> block")
    if require_think and not _THINK.search(text[: m.start()]):
        return Projected(INVALID_ACTION, False, "no <think> block")
    tag = m.group(1).lower()
    return Projected(f"<{tag}>{' '.join(m.group(2).split())}</{tag}>", True)


ProjectionFn = Callable[..., Projected]
_PROJECTIONS: dict[str, ProjectionFn] = {"action_tag": action_tag, "search_answer": search_answer}


def register_projection(name: str, fn: ProjectionFn) -> None:
    """Register ``fn(text, admissible, require_think) -> Projected`` under ``name``."""
    _PROJECTIONS[name] = fn


def get_projection(name: str) -> ProjectionFn:
    if name not in _PROJECTIONS:
        raise KeyError(f"unknown projection {name!r}; available: {sorted(_PROJECTIONS)}")
    return _PROJECTIONS[name]
