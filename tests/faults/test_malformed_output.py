"""Malformed model output (docs/training.md, "Reliability"): never a crash, never a hang.

Adversarial generations go through the projections of the ``generate`` mode and the SearchQA
env's own parser. Each must finish in linear time (the regexes they replaced took 34.6 s on
``"<action>" * 32000``) and turn into the invalid action, never an exception.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mvpo_envs.searchqa.env import SearchQAEnv
from mvpo_envs.searchqa.protocol import INVALID_FEEDBACK
from mvpo_train.projection import INVALID_ACTION, action_tag, search_answer

ADVERSARIAL = {
    "open action tags": "<action>" * 64_000,
    "open think + action": "<think>" * 32_000 + "<action>" * 32_000,
    "open search tags": "<search>" * 64_000,
    "open answers then a close search": "<answer>" * 64_000 + "</search>",
    "nested": "<action><action>" * 32_000 + "</action>",
    "one huge word": "a" * 500_000,
}


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_projections_are_fast_on_adversarial_text(name: str) -> None:
    text = ADVERSARIAL[name]
    for projection in (action_tag, search_answer):
        out, seconds = _timed(projection, text, ["look"], True)
        assert seconds < 5.0, f"{projection.__name__} took {seconds:.2f} s on {name}"
        if name != "nested" or projection is search_answer:
            assert not out.valid and out.action == INVALID_ACTION and out.reason


def test_action_tag_projection_on_a_long_adversarial_text() -> None:
    # quadratic before (5.8 s at 8000 tags here, minutes at 128000); a loose bound for busy hosts
    out, seconds = _timed(action_tag, "<action>" * 128_000)
    assert seconds < 5.0 and not out.valid


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_projections_never_raise(text: str) -> None:
    for projection in (action_tag, search_answer):
        out = projection(text, ["look"], False)
        assert out.valid != bool(out.reason)
        assert out.valid or out.action == INVALID_ACTION


def test_env_answers_adversarial_text_with_the_invalid_text_quickly() -> None:
    env = SearchQAEnv(split="test", max_items=2)
    for mode_env in (env, SearchQAEnv(split="test", max_items=2, parse_mode="strict")):
        for text in (
            ADVERSARIAL["open search tags"],
            ADVERSARIAL["open answers then a close search"],
        ):
            mode_env.reset(seed=0)
            (obs, reward, terminated, truncated, info), seconds = _timed(mode_env.step, text)
            assert seconds < 5.0
            assert obs == INVALID_FEEDBACK and info["invalid_action"] and reward == 0.0
            assert not terminated and not truncated
