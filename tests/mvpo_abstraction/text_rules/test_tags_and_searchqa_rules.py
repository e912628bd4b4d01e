"""The shared text rules: linear tag scanning equals the regex it replaces; Search-R1's parse."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from mvpo_abstraction.text_rules.searchqa import (
    information_blocks,
    parse_action,
    passage_titles,
)
from mvpo_abstraction.text_rules.tags import _tag_regex, tag_pairs

# text made mostly of tag pieces, so that pairs, nesting and dangling tags are common
_PIECES = st.sampled_from(
    ["<search>", "</search>", "<answer>", "</answer>", "<Search>", "</ANSWER>", "a", " ", "\n", "<"]
)
_TEXT = st.lists(_PIECES, max_size=30).map("".join)


def _regex_pairs(text: str, ignore_case: bool) -> list[tuple[int, int, int, int]]:
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return [
        (m.start(), m.start(2), m.end(2), m.end())
        for m in re.finditer(r"<(search|answer)>(.*?)</\1>", text, flags)
    ]


@settings(max_examples=400)
@given(_TEXT, st.booleans())
def test_tag_pairs_equal_the_regex(text: str, ignore_case: bool) -> None:
    got = [
        (p.start, p.inner_start, p.inner_end, p.end)
        for p in tag_pairs(text, ("search", "answer"), ignore_case=ignore_case)
    ]
    assert got == _regex_pairs(text, ignore_case)


def _search_r1_reference(text: str) -> tuple[str | None, str]:
    """Search-R1's rule, re-implemented from its description (generation.py)."""
    if "</search>" in text:
        text = text.split("</search>")[0] + "</search>"
    elif "</answer>" in text:
        text = text.split("</answer>")[0] + "</answer>"
    m = re.search(r"<(search|answer)>(.*?)</\1>", text, re.DOTALL)
    return (m.group(1), m.group(2).strip()) if m else (None, "")


@settings(max_examples=400)
@given(_TEXT)
def test_search_r1_parse_equals_the_reference_rule(text: str) -> None:
    parsed = parse_action(text, "search-r1")
    assert (parsed.kind, parsed.content) == _search_r1_reference(text)


def _python_lines(fn, text: str) -> int:
    """Lines of Python executed by ``fn(text)`` (a deterministic count of the work done in
    Python; the one regex ``tag_pairs`` runs, ``<(/?)(names)>``, has no repetition and so
    scans in linear time, checked below)."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn(text)
    finally:
        sys.settrace(None)
    return count


def test_parsing_is_linear_on_adversarial_text() -> None:
    # the former regex, <(search|answer)>(.*?)</\1>, took 34.6 s on "<action>" * 32000 and
    # grew with the square of the length. Now the only regex is the tag pattern (no
    # repetition: linear in C), and the Python work is counted: doubling the text about
    # doubles it (a few lines of the regex cache's or the collector's aside), where a
    # quadratic scan would quadruple it.
    assert re.fullmatch(r"<\(/\?\)\((\w|\|)+\)>", _tag_regex(("search", "answer"), False).pattern)
    cases = [
        *[(lambda t, m=mode: parse_action(t, m), unit, tail)
          for unit, tail in (("<search>", ""), ("<answer>", "</search>"), ("<answer>", ""))
          for mode in ("search-r1", "strict")],
        (lambda t: tag_pairs(t, ("search",)), "<search>", ""),
        (lambda t: tag_pairs(t, ("search",)), "<search>", "</search>"),
    ]  # fmt: skip
    for fn, unit, tail in cases:
        small = _python_lines(fn, unit * 2_000 + tail)
        large = _python_lines(fn, unit * 4_000 + tail)
        assert large < 3 * small, (unit, tail, small, large)


def test_information_blocks_and_titles() -> None:
    obs = '\n\n<information>Doc 1(Title: "Gilholm") Gilholm is a town.\nDoc 2(Title: B) b</information>\n\n'
    assert information_blocks(obs) == [obs.strip()[len("<information>") : -len("</information>")]]
    assert passage_titles(information_blocks(obs)[0]) == ["Gilholm", "B"]
    # an observation cut to its token budget lost its closing tag: the block runs to the end
    assert information_blocks('\n\n<information>Doc 1(Title: "Gil') == ['Doc 1(Title: "Gil']
    assert information_blocks("\nMy previous action is invalid.\n") == []
