"""SearchQA's paper abstraction: signatures, the five milestones, exact vs string-rule variants."""

from __future__ import annotations

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_abstraction import available_abstractions, make_abstraction
from mvpo_abstraction.searchqa import MILESTONES, SearchQAStateAbstraction, SearchQATextAbstraction
from mvpo_abstraction.wrapper import AbstractionWrapper
from mvpo_envs.searchqa.oracle import OracleAgent


def _env(bm25, abstraction: str = "searchqa"):
    return gym.make("mvpo/SearchQA-v0", split="test", retriever=bm25, abstraction=abstraction)


def _index_of(env, qtype: str) -> int:
    return next(i for i, item in enumerate(env.unwrapped.items) if item.type == qtype)


def test_registered_and_default() -> None:
    assert {"searchqa", "searchqa-text"} <= set(available_abstractions())
    assert isinstance(make_abstraction("searchqa"), SearchQAStateAbstraction)
    assert isinstance(make_abstraction("searchqa-text"), SearchQATextAbstraction)
    assert make_abstraction("searchqa").milestone_names == list(MILESTONES)


@pytest.mark.parametrize("abstraction", ["searchqa", "searchqa-text"])
def test_bridge_episode_milestones_in_order(bm25, abstraction: str) -> None:
    env = _env(bm25, abstraction)
    index = _index_of(env, "bridge")
    item = env.unwrapped.items[index]
    _, info = env.reset(options={"task_index": index})
    assert info["signature"] == "s0|none" and info["milestones"] == []
    # a search that finds nothing: first search only, no information arrived
    *_, info = env.step("<search>zzzz qqqq</search>")
    assert info["milestones"] == ["first_search"] and info["signature"] == "s1|none"
    # the bridge entity's own passage (a search after an empty one is not a follow-up)
    *_, info = env.step(f"<search>{item.metadata['bridge']}</search>")
    assert "bridge_retrieved" in info["milestones"] and "followup_search" not in info["milestones"]
    assert info["signature"] in ("s2|bridge", "s2|ans")
    *_, info = env.step(f"<search>{item.question}</search>")
    assert "followup_search" in info["milestones"]
    assert info["progress"]["answer_retrieved"] and info["signature"] == "s3|ans"
    *_, info = env.step(f"<answer>{item.golden_answers[0]}</answer>")
    assert info["milestones"] == ["answered"] and all(info["progress"].values())
    assert info["signature"] == "s3|ans"


@pytest.mark.parametrize("abstraction", ["searchqa", "searchqa-text"])
def test_invalid_actions_change_nothing(bm25, abstraction: str) -> None:
    env = _env(bm25, abstraction)
    env.reset(seed=0)
    *_, info = env.step("<search>a</answer>")  # invalid under both parse modes
    assert info["invalid_action"]
    assert info["milestones"] == [] and info["signature"] == "s0|none"
    assert not info["progress"]["answered"]


def test_single_hop_never_fires_bridge(bm25) -> None:
    env = _env(bm25)
    index = _index_of(env, "single")
    item = env.unwrapped.items[index]
    env.reset(options={"task_index": index})
    *_, info = env.step(f"<search>{item.question}</search>")
    *_, info = env.step(f"<answer>{item.golden_answers[0]}</answer>")
    assert not info["progress"]["bridge_retrieved"] and info["progress"]["answered"]


def test_comparison_needs_both_passages(bm25) -> None:
    env = _env(bm25)
    index = _index_of(env, "comparison")
    a, b = env.unwrapped.items[index].metadata["entities"]
    env.reset(options={"task_index": index})
    *_, info = env.step(f"<search>{a}</search>")
    assert info["state"]["bridge_seen"] == (b in info["state"]["retrieved_titles"])
    *_, info = env.step(f"<search>{b}</search>")
    assert info["progress"]["bridge_retrieved"]


def test_exact_and_text_variants_agree_on_oracle_and_random_play(bm25) -> None:
    """Both variants over the same transitions (the wrapper swaps the abstraction)."""
    exact = _env(bm25, "searchqa")
    text = AbstractionWrapper(_env(bm25, "searchqa"), "searchqa-text")
    for index in range(0, 200, 4):
        item = exact.unwrapped.items[index]
        infos = []
        for env in (exact, text):
            agent = OracleAgent()
            agent.reset(item.question, item.metadata)
            obs, info = env.reset(options={"task_index": index})
            trace = [(info["signature"], tuple(info["milestones"]))]
            actions = ["<search>nonsense words here</search>", "oops"] if index % 8 == 0 else []
            for action in actions:
                obs, _, _, _, info = env.step(action)
                trace.append((info["signature"], tuple(info["milestones"])))
            done = False
            while not done:
                obs, _, terminated, truncated, info = env.step(agent.act(obs))
                trace.append((info["signature"], tuple(info["milestones"])))
                done = terminated or truncated
            infos.append(trace)
        assert infos[0] == infos[1], item.id


def test_signature_has_no_depth_bin() -> None:
    abstraction = make_abstraction("searchqa")
    state = {
        "num_searches": 2,
        "retrieved_ids": ["1"],
        "answer_seen": False,
        "bridge_seen": True,
        "answered": False,
    }
    assert abstraction.signature(state, 0) == abstraction.signature(state, 9) == "s2|bridge"
