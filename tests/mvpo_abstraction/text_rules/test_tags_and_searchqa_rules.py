"""The shared text rules: linear tag scanning equals the regex it replaces; Search-R1's parse."""

from __future__ import annotations

import re
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from mvpo_abstraction.text_rules.searchqa import (
    information_blocks,
    parse_action,
    passage_titles,
)
from mvpo_abstraction.text_rules.tags import tag_pairs

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


def _worst_time(fn, text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def test_parsing_is_linear_on_adversarial_text() -> None:
    # the regex took 34.6 s on "<action>" * 32000 and grows with the square of the length
    # (5.8 s at 8000 here, so minutes at 128000); linear scanning takes milliseconds. The bound
    # is loose on purpose (a busy machine), yet orders of magnitude under the quadratic time.
    for text in ("<search>" * 128_000, "<answer>" * 128_000 + "</search>", "<answer>" * 128_000):
        for mode in ("search-r1", "strict"):
            assert _worst_time(lambda t, m=mode: parse_action(t, m), text) < 5.0
    assert _worst_time(lambda t: tag_pairs(t, ("search",)), "<search>" * 128_000) < 5.0


def test_information_blocks_and_titles() -> None:
    obs = '\n\n<information>Doc 1(Title: "Gilholm") Gilholm is a town.\nDoc 2(Title: B) b</information>\n\n'
    assert information_blocks(obs) == [obs.strip()[len("<information>") : -len("</information>")]]
    assert passage_titles(information_blocks(obs)[0]) == ["Gilholm", "B"]
    # an observation cut to its token budget lost its closing tag: the block runs to the end
    assert information_blocks('\n\n<information>Doc 1(Title: "Gil') == ['Doc 1(Title: "Gil']
    assert information_blocks("\nMy previous action is invalid.\n") == []
