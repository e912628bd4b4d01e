"""Search-R1 action parsing (strict and Search-R1 modes) and the exact observation strings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mvpo_envs.searchqa.protocol import (
    INVALID_FEEDBACK,
    format_information,
    make_prompt,
    parse_action,
)


@pytest.mark.parametrize(
    "text, kind, content",
    [
        ("<search> capital of France </search>", "search", "capital of France"),
        ("<think>I need facts.</think>\n<search>Ostra River</search>", "search", "Ostra River"),
        ("<answer> Beijing </answer>", "answer", "Beijing"),
        ("<answer>multi\nline</answer>", "answer", "multi\nline"),
        ("Reasoning first. <answer>42</answer> done", "answer", "42"),
    ],
)
def test_strict_valid(text: str, kind: str, content: str) -> None:
    for mode in ("strict", "search-r1"):
        parsed = parse_action(text, mode)
        assert (parsed.kind, parsed.content) == (kind, content) and parsed.valid


@pytest.mark.parametrize(
    "text",
    [
        "",  # empty output
        "just text, no tag",
        "<search></search>",  # empty query
        "<answer>   </answer>",  # empty answer
        "<search>a</search><answer>b</answer>",  # both tags
        "<search>outer <search>inner</search></search>",  # nested
        "<search>one</search> <search>two</search>",  # repeated
        "<search>unclosed",
        "answer</answer>",
        "</search>x<search>",
        "<search>x</answer>",
        "<SEARCH>case</SEARCH>",  # tags are case-sensitive, as in Search-R1
    ],
)
def test_strict_invalid(text: str) -> None:
    parsed = parse_action(text, "strict")
    assert parsed.kind is None and not parsed.valid and parsed.error


def test_search_r1_mode_reproduces_reference_rule() -> None:
    # Search-R1 cuts after the first </search>, then takes the first complete tag pair
    assert parse_action("<search>a</search><answer>b</answer>").kind == "search"  # the default
    assert parse_action("<answer>a</answer><search>q</search>", "search-r1").kind == "answer"
    assert parse_action("<search>q</search><answer>a</answer>", "search-r1").content == "q"
    assert parse_action("<search></search>", "search-r1").kind == "search"  # empty allowed
    assert parse_action("<search>one</search> <search>two</search>", "search-r1").content == "one"
    assert parse_action("no tags", "search-r1").kind is None
    with pytest.raises(ValueError):
        parse_action("x", "lenient")


@given(st.text(max_size=200))
def test_parse_never_raises(text: str) -> None:
    for mode in ("strict", "search-r1"):
        parsed = parse_action(text, mode)
        assert parsed.kind in (None, "search", "answer")


def test_information_format_is_search_r1s() -> None:
    hits = [
        {"id": "1", "contents": '"Gilholm"\nGilholm is a town.', "score": 2.0},
        {"id": "2", "contents": '"Motra River"\nThe Motra River\nflows.', "score": 1.0},
    ]
    expected = (
        '\n\n<information>Doc 1(Title: "Gilholm") Gilholm is a town.\n'
        'Doc 2(Title: "Motra River") The Motra River\nflows.</information>\n\n'
    )
    assert format_information(hits) == expected
    assert format_information([]) == "\n\n<information></information>\n\n"


def test_prompt_and_invalid_text() -> None:
    prompt = make_prompt("who wrote the silent tide")
    assert prompt.startswith("Answer the given question. You must conduct reasoning inside <think>")
    assert prompt.endswith(
        "For example, <answer> Beijing </answer>. Question: who wrote the silent tide?\n"
    )
    assert INVALID_FEEDBACK == (
        "\nMy previous action is invalid. If I want to search, I should put the query between "
        "<search> and </search>. If I want to give the final answer, I should put the answer "
        "between <answer> and </answer>. Let me try again.\n"
    )
