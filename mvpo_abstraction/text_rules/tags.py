"""``<tag>...</tag>`` pairs in linear time.

docs/architecture.md ("Layers and imports"). A pattern such as ``<(a|b)>(.*?)</\\1>`` (as
Search-R1 and verl-agent parse model outputs) takes quadratic time on adversarial text: on
``"<action>" * 32000`` with no closing tag, every start position scans to the end of the text
(34.6 s measured). :func:`tag_pairs` returns exactly what ``re.finditer`` of that pattern (with
``re.DOTALL``) returns, but reads every tag once: one ``finditer`` over the tags themselves, then
one left-to-right walk with a pointer per tag name into that name's closing tags.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["TagPair", "tag_pairs"]


@dataclass(frozen=True)
class TagPair:
    """One ``<name>content</name>`` match: ``text[start:end]`` is the whole match,
    ``text[inner_start:inner_end]`` the content, ``name`` the tag name as written."""

    name: str
    start: int
    inner_start: int
    inner_end: int
    end: int

    def content(self, text: str) -> str:
        return text[self.inner_start : self.inner_end]


@lru_cache(maxsize=64)
def _tag_regex(names: tuple[str, ...], ignore_case: bool) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(f"<(/?)({alternatives})>", re.IGNORECASE if ignore_case else 0)


def tag_pairs(
    text: str, names: Sequence[str], *, ignore_case: bool = False, limit: int | None = None
) -> list[TagPair]:
    """The matches of ``<(n1|n2|...)>(.*?)</\\1>`` (``re.DOTALL``) in ``text``, in linear time.

    Same semantics as ``re.finditer``: scanning left to right, an opening tag starts a match
    when a closing tag of the same name follows it (case-insensitively with ``ignore_case``,
    as a back-reference is under ``re.IGNORECASE``); the match ends at the *first* such closing
    tag, and the scan resumes after it (matches never overlap). Opening tags inside a match are
    content. ``limit`` stops after that many matches.
    """
    key = (lambda s: s.lower()) if ignore_case else (lambda s: s)
    opens: list[tuple[int, int, str]] = []
    closes: dict[str, list[tuple[int, int]]] = {}
    for m in _tag_regex(tuple(names), ignore_case).finditer(text):
        if m.group(1):
            closes.setdefault(key(m.group(2)), []).append((m.start(), m.end()))
        else:
            opens.append((m.start(), m.end(), m.group(2)))
    pointer = dict.fromkeys(closes, 0)
    found: list[TagPair] = []
    cursor = 0
    for start, inner_start, name in opens:
        if start < cursor:
            continue  # inside the previous match
        k = key(name)
        ends = closes.get(k)
        if not ends:
            continue
        j = pointer[k]
        while j < len(ends) and ends[j][0] < inner_start:
            j += 1
        pointer[k] = j
        if j == len(ends):
            continue  # no closing tag of this name after this point
        inner_end, end = ends[j]
        found.append(TagPair(name, start, inner_start, inner_end, end))
        cursor = end
        if limit is not None and len(found) >= limit:
            break
    return found
