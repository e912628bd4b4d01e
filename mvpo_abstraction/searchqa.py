"""SearchQA's paper abstraction, in two variants (docs/estimators.md §3.1, docs/searchqa.md).

No depth bin: the signature is the number of searches so far and the best thing retrieved,
``s{n}|ans`` (a passage holding a golden answer has been retrieved), ``s{n}|bridge`` (the bridge
entity's passage, not yet an answer), else ``s{n}|none``; e.g. ``s0|none`` at reset, ``s2|ans``.

Five milestones:

``first_search``      a search was made
``answer_retrieved``  a retrieved passage holds a golden answer (FlashRAG's has-answer test)
``bridge_retrieved``  bridge question: the bridge entity's passage was retrieved; comparison:
                      every compared entity's passage was retrieved; single-hop: never
``followup_search``   a search made after an earlier search had returned passages
``answered``          an ``<answer>`` was given (right or wrong)

``searchqa`` (default, exact) reads the structured fields of ``info["state"]`` that the
environment fills from the retriever's hits (``num_searches``, ``retrieved_ids``,
``answer_seen``, ``bridge_seen``, ``answered``), bridge passages by id. ``searchqa-text`` reads
only ``state["transcript"]`` (each raw action and the observation it got) with string rules:
an ``<information>`` observation is a search, ``Doc i(Title: T)`` gives the titles, a golden
answer inside an information block is an answer seen, an ``<answer>`` action that did not get the
invalid-action text is an answer given. Where they differ: the text variant matches the bridge
by title string, not by passage id (two passages with the bridge's name both count), and it
tests the golden answer against the whole formatted block rather than passage by passage (an
answer split across two passages' boundary could match; on the bundled set they agree, tested).
Questions, golden answers, the bridge name and compared entities come from ``state`` in both.
The string rules (``<information>`` blocks, ``Doc i(Title: T)`` headers, the has-answer test,
the invalid-action text) are Search-R1's, from :mod:`mvpo_abstraction.text_rules.searchqa`,
the one home the environment imports them from too.
"""

from __future__ import annotations

from typing import Any

from mvpo_abstraction.base import Abstraction, State
from mvpo_abstraction.registry import register_abstraction
from mvpo_abstraction.text_rules.searchqa import (
    INVALID_FEEDBACK,
    has_answer,
    information_blocks,
    normalize_answer,
    passage_titles,
)
from mvpo_abstraction.text_rules.tags import tag_pairs

MILESTONES = ("first_search", "answer_retrieved", "bridge_retrieved", "followup_search", "answered")


class _SearchQAAbstraction(Abstraction):
    """Shared logic; subclasses say where the facts come from (structured state or text)."""

    def __init__(self) -> None:
        super().__init__({name: getattr(self, f"_ms_{name}") for name in MILESTONES})

    def view(self, state: State) -> dict[str, Any]:
        """``num_searches``, ``had_info`` (a search returned passages), ``answer_seen``,
        ``bridge_seen``, ``answered``."""
        raise NotImplementedError

    def signature(self, state: State, t: int) -> str:
        v = self.view(state)
        seen = "ans" if v["answer_seen"] else "bridge" if v["bridge_seen"] else "none"
        return f"s{v['num_searches']}|{seen}"

    def _ms_first_search(self, prev: State | None, state: State, action: str | None) -> bool:
        return self.view(state)["num_searches"] >= 1

    def _ms_answer_retrieved(self, prev: State | None, state: State, action: str | None) -> bool:
        return bool(self.view(state)["answer_seen"])

    def _ms_bridge_retrieved(self, prev: State | None, state: State, action: str | None) -> bool:
        return bool(self.view(state)["bridge_seen"])

    def _ms_followup_search(self, prev: State | None, state: State, action: str | None) -> bool:
        if prev is None:
            return False
        before, now = self.view(prev), self.view(state)
        return now["num_searches"] > before["num_searches"] and bool(before["had_info"])

    def _ms_answered(self, prev: State | None, state: State, action: str | None) -> bool:
        return bool(self.view(state)["answered"])


@register_abstraction("searchqa")
class SearchQAStateAbstraction(_SearchQAAbstraction):
    """Exact variant: the environment's structured state (retrieved passage ids and contents)."""

    name = "searchqa"

    def view(self, state: State) -> dict[str, Any]:
        return {
            "num_searches": int(state["num_searches"]),
            "had_info": bool(state["retrieved_ids"]),
            "answer_seen": bool(state["answer_seen"]),
            "bridge_seen": bool(state["bridge_seen"]),
            "answered": bool(state["answered"]),
        }


@register_abstraction("searchqa-text")
class SearchQATextAbstraction(_SearchQAAbstraction):
    """String-rule variant: reads only ``state["transcript"]`` (actions and observations)."""

    name = "searchqa-text"

    def view(self, state: State) -> dict[str, Any]:
        blocks, answered = [], False
        for turn in state.get("transcript", []):
            observation = turn["observation"]
            found = information_blocks(observation)
            if found:
                blocks.append(found[0])
            elif observation != INVALID_FEEDBACK and tag_pairs(turn["action"], ("answer",)):
                answered = True
        titles = {normalize_answer(t) for b in blocks for t in passage_titles(b)}
        return {
            "num_searches": len(blocks),
            "had_info": bool(titles),
            "answer_seen": any(has_answer(b, state["golden_answers"]) for b in blocks),
            "bridge_seen": _bridge_seen_text(state, titles),
            "answered": answered,
        }


def _bridge_seen_text(state: State, titles: set[str]) -> bool:
    if state.get("question_type") == "comparison":
        entities = state.get("entities") or []
        return bool(entities) and all(normalize_answer(e) in titles for e in entities)
    bridge = state.get("bridge")
    return bool(bridge) and normalize_answer(bridge) in titles
