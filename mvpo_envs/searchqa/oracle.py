"""Scripted oracle agents: they show that the environment and a retriever make questions solvable.

docs/searchqa.md ("Numbers"). Used by the tests and ``benchmarks/searchqa_env.py``. Every fact
an oracle answers with must have been shown to it in an ``<information>`` block, so its EM is
bounded by what the retriever returned. :class:`OracleAgent` picks one of two by the question:

**reader** (the bundled generated set: ``metadata`` has ``relations`` and ``entities``) knows the
relation path and reads every fact with the generator's own sentence templates
(:func:`mvpo_envs.searchqa.world.read_passage`):

1. ``<search> {question} </search>``
2. ``<search> {second} </search>`` with ``second`` the bridge entity (bridge questions), the
   compared entity whose passage is still missing (comparisons), or the subject (single-hop)
3. ``<answer> {value read from the passages, or "unknown"} </answer>``

**golden** (any FlashRAG question file: only ``question`` and ``golden_answers`` needed) is the
retrieve-and-answer oracle of retrieval recall:

1. ``<search> {question} </search>``
2. if no passage shown so far holds a golden answer (FlashRAG's ``has_answer``), ``<search>
   {first golden answer} </search>``
3. ``<answer> {the first golden answer some shown passage holds, or "unknown"} </answer>``
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mvpo_envs.searchqa.generate import number
from mvpo_envs.searchqa.metrics import has_answer
from mvpo_envs.searchqa.protocol import information_blocks
from mvpo_envs.searchqa.world import read_passage

_DOC = re.compile(r"Doc \d+\(Title: (.*?)\) (.*?)(?=\nDoc \d+\(Title: |\Z)", re.DOTALL)
UNKNOWN = "unknown"


def read_observations(observations: Iterable[str]) -> dict[str, dict[str, str]]:
    """Title -> facts read from every passage shown in ``<information>`` blocks so far."""
    facts: dict[str, dict[str, str]] = {}
    for observation in observations:
        for block in information_blocks(observation):
            for title, text in _DOC.findall(block):
                title = title.strip().strip('"')
                for key, value in read_passage(title, text).items():
                    facts.setdefault(title, {}).setdefault(key, value)
    return facts


def answer_from_facts(facts: dict[str, dict[str, str]], metadata: dict[str, Any]) -> str:
    """Follow ``metadata["relations"]`` through ``facts``; ``"unknown"`` when a fact is missing."""
    relations, entities = metadata["relations"], metadata["entities"]
    if metadata.get("type") == "comparison":
        values = [facts.get(e, {}).get(relations[0]) for e in entities]
        if any(v is None for v in values):
            return UNKNOWN
        nums = [number(v) for v in values]
        best = min(nums) if metadata.get("compare") == "min" else max(nums)
        return entities[nums.index(best)]
    current = entities[0]
    for relation in relations:
        value = facts.get(current, {}).get(relation)
        if value is None:
            return UNKNOWN
        current = value
    return current


def second_query(metadata: dict[str, Any], facts: dict[str, dict[str, str]]) -> str:
    if metadata.get("type") == "bridge" and metadata.get("bridge"):
        return str(metadata["bridge"])
    entities = metadata["entities"]
    if metadata.get("type") == "comparison":
        missing = [e for e in entities if metadata["relations"][0] not in facts.get(e, {})]
        return missing[0] if missing else entities[-1]
    return entities[0]


def uses_reader(metadata: dict[str, Any]) -> bool:
    """Whether a question carries the bundled set's relation path (the reader oracle's input)."""
    return bool(metadata.get("relations")) and bool(metadata.get("entities"))


def golden_answer_seen(observations: Iterable[str], golden_answers: list[str]) -> str | None:
    """The first golden answer that some passage shown so far holds (``has_answer``), if any."""
    blocks = [b for obs in observations for b in information_blocks(obs)]
    for gold in golden_answers:
        if any(has_answer(block, [gold]) for block in blocks):
            return gold
    return None


class OracleAgent:
    """Stateful per episode: call :meth:`reset` with the question, its metadata and (for the
    golden oracle) its golden answers, then :meth:`act` with each observation."""

    def __init__(self) -> None:
        self.metadata: dict[str, Any] = {}
        self.golden_answers: list[str] = []
        self.question = ""
        self.observations: list[str] = []
        self.turn = 0

    def reset(
        self,
        question: str,
        metadata: dict[str, Any] | None = None,
        golden_answers: Iterable[str] = (),
    ) -> None:
        self.question, self.metadata = question, dict(metadata or {})
        self.golden_answers = [str(g) for g in golden_answers]
        if not uses_reader(self.metadata) and not self.golden_answers:
            raise ValueError(
                "the oracle needs the bundled set's metadata (relations, entities) or the "
                "question's golden_answers"
            )
        self.observations, self.turn = [], 0

    @property
    def kind(self) -> str:
        """``"reader"`` or ``"golden"`` (see the module docstring)."""
        return "reader" if uses_reader(self.metadata) else "golden"

    def act(self, observation: str) -> str:
        self.observations.append(observation)
        self.turn += 1
        if self.turn == 1:
            return f"<search> {self.question} </search>"
        if self.kind == "golden":
            seen = golden_answer_seen(self.observations, self.golden_answers)
            if self.turn == 2 and seen is None:
                return f"<search> {self.golden_answers[0]} </search>"
            return f"<answer> {seen if seen is not None else UNKNOWN} </answer>"
        facts = read_observations(self.observations)
        if self.turn == 2:
            return f"<search> {second_query(self.metadata, facts)} </search>"
        return f"<answer> {answer_from_facts(facts, self.metadata)} </answer>"


def run_oracle(env: Any, task_index: int) -> dict[str, Any]:
    """Play one episode of ``env`` (the unwrapped or wrapped SearchQA env) with the oracle."""
    base = env.unwrapped
    obs, info = env.reset(options={"task_index": task_index})
    item = base.items[task_index]
    agent = OracleAgent()
    agent.reset(item.question, item.metadata, item.golden_answers)
    reward, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        steps += 1
    return {
        "em": info["em"],
        "f1": info["f1"],
        "reward": reward,
        "steps": steps,
        "kind": agent.kind,
        "info": info,
    }
