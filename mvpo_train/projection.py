"""Projection: generated text -> environment action (the ``generate`` action mode).

docs/architecture.md, ``policy.py (HF / vLLM)`` -> env, and docs/training.md (``generate``).
The MVPO paper's prompt asks for ``<think>...</think><action>...</action>``; a projection extracts
the action and says whether the output was well formed. A malformed output never crashes anything:
it becomes the invalid action ``""`` (the env answers with its no-op, ``invalid_action=True``).

**The invalid-action rule** (both action modes; applied by :mod:`mvpo_train.rollout`): a step's
action is *invalid* when the projection rejects the output (malformed: ``format_ok=False``) or
the env reports ``info["invalid_action"]`` (well formed but inadmissible, e.g. a command the
game does not know, or a search after the answer). An invalid step gets exactly one
``-invalid_penalty`` added to its env reward (never two), recorded apart in
``extras["format_penalty"]``. In ``score`` mode actions are drawn from the admissible list, so
only the env's flag can fire there.

Projections are looked up by the name a prompt template carries (``action_tag`` for ALFWorld,
WebShop and generic envs, ``search_answer`` for Search-R1-style QA). Register your own with
:func:`register_projection`. Both built-ins run in linear time
(:func:`mvpo_abstraction.text_rules.tags.tag_pairs`): a regex such as
``<action>(.*?)</action>`` is quadratic on ``"<action>" * 32000``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from mvpo_abstraction.text_rules.searchqa import parse_action
from mvpo_abstraction.text_rules.tags import tag_pairs

__all__ = [
    "INVALID_ACTION",
    "Projected",
    "action_tag",
    "first_non_latin_letter",
    "get_projection",
    "register_projection",
    "search_answer",
]

#: what a malformed output sends to the env: no env admits an empty command
INVALID_ACTION = ""


@dataclass(frozen=True)
class Projected:
    """``action`` to send; ``valid`` = well formed; ``reason`` says why not (``""`` if valid)."""

    action: str
    valid: bool
    reason: str = ""


@lru_cache(maxsize=4096)
def _is_latin_letter(ch: str) -> bool:
    # Unicode names carry the script of a letter ("LATIN SMALL LETTER E WITH ACUTE",
    # "CYRILLIC ...", "CJK UNIFIED IDEOGRAPH-4E00"); the two ordinal indicators are Latin
    # letters whose names do not say so
    return "LATIN" in unicodedata.name(ch, "") or ch in "\u00aa\u00ba"


def first_non_latin_letter(text: str) -> str | None:
    """The first letter (Unicode category ``L*``) of ``text`` outside the Latin script, if any.

    Digits, punctuation, symbols, emoji and combining marks of any script are not letters and
    pass; accented Latin letters (``é``, ``ß``, ``ﬁ``, full-width ``Ａ``) pass; CJK, Cyrillic,
    Greek, Arabic, Hebrew, Devanagari, Hangul, kana ... letters do not.
    """
    for ch in text:
        if ch.isascii():
            continue
        if unicodedata.category(ch).startswith("L") and not _is_latin_letter(ch):
            return ch
    return None


def action_tag(
    text: str, admissible: Sequence[str] | None = None, require_think: bool = False
) -> Projected:
    """Parse ``<think>..</think><action>..</action>``.

    Well formed: exactly one ``<action>`` block (tags case-insensitive) with non-empty content,
    no letter outside the Latin script anywhere in the output (:func:`first_non_latin_letter`;
    verl-agent rejects CJK ideographs only, our rule is the whole script check), and a
    ``<think>`` block when ``require_think``. Admissibility is *not* checked here: the env
    decides and flags ``invalid_action`` (see the module docstring for the penalty rule). When
    ``admissible`` is given, a case/whitespace variant of an admissible action is mapped to it.
    """
    if not isinstance(text, str):
        return Projected(INVALID_ACTION, False, "not text")
    blocks = tag_pairs(text, ("action",), ignore_case=True, limit=2)
    if len(blocks) != 1:
        return Projected(
            INVALID_ACTION, False, "no <action> block" if not blocks else "several <action> blocks"
        )
    action = " ".join(blocks[0].content(text).split())
    if not action:
        return Projected(INVALID_ACTION, False, "empty action")
    letter = first_non_latin_letter(text)
    if letter is not None:
        return Projected(INVALID_ACTION, False, f"non-Latin letter {letter!r}")
    if require_think and not tag_pairs(text, ("think",), ignore_case=True, limit=1):
        return Projected(INVALID_ACTION, False, "no <think> block")
    if admissible:
        table = {" ".join(a.lower().split()): a for a in admissible}
        action = table.get(action.lower(), action)
    return Projected(action, True)


def search_answer(
    text: str, admissible: Sequence[str] | None = None, require_think: bool = False
) -> Projected:
    """Search-R1 turns, with Search-R1's rule (:func:`~mvpo_abstraction.text_rules.searchqa.
    parse_action`, mode ``"search-r1"``): cut after the first ``</search>`` (else
    ``</answer>``), then the first ``<search>q</search>`` or ``<answer>a</answer>`` pair
    (case-sensitive; empty content allowed, as there).

    The env receives the block ``<kind>content</kind>`` (content stripped), which its own
    parser reads back to the same kind and content. With ``require_think`` a ``<think>`` block
    must come before that pair.
    """
    if not isinstance(text, str):
        return Projected(INVALID_ACTION, False, "not text")
    parsed = parse_action(text, "search-r1")
    if not parsed.valid:
        return Projected(INVALID_ACTION, False, "no <search> or <answer> block")
    if require_think:
        head = text[: text.find(f"<{parsed.kind}>")]
        if not tag_pairs(head, ("think",), ignore_case=True, limit=1):
            return Projected(INVALID_ACTION, False, "no <think> block")
    return Projected(f"<{parsed.kind}>{parsed.content}</{parsed.kind}>", True)


ProjectionFn = Callable[..., Projected]
_PROJECTIONS: dict[str, ProjectionFn] = {"action_tag": action_tag, "search_answer": search_answer}


def register_projection(name: str, fn: ProjectionFn) -> None:
    """Register ``fn(text, admissible, require_think) -> Projected`` under ``name``."""
    _PROJECTIONS[name] = fn


def get_projection(name: str) -> ProjectionFn:
    if name not in _PROJECTIONS:
        raise KeyError(f"unknown projection {name!r}; available: {sorted(_PROJECTIONS)}")
    return _PROJECTIONS[name]
