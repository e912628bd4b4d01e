"""A scripted oracle agent for the bundled set: search the question, search the bridge, answer.

docs/environments.md, "mvpo/SearchQA-v0".

Used by the tests and ``benchmarks/searchqa_env.py`` to show that the environment and each
retriever make the bundled questions solvable. The agent knows the question's metadata (its
bridge entity, the relation path) but reads every fact from the ``<information>`` text it was
shown, with the generator's own sentence templates (:func:`mvpo_envs.searchqa.world.read_passage`),
so its EM is bounded by what the retriever returned:

1. ``<search> {question} </search>``
2. ``<search> {second} </search>`` with ``second`` the bridge entity (bridge questions), the
   compared entity whose passage is still missing (comparisons), or the subject (single-hop)
3. ``<answer> {value read from the passages, or "unknown"} </answer>``
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mvpo_envs.searchqa.generate import number
from mvpo_envs.searchqa.world import read_passage

_INFORMATION = re.compile(r"<information>(.*?)</information>", re.DOTALL)
_DOC = re.compile(r"Doc \d+\(Title: (.*?)\) (.*?)(?=\nDoc \d+\(Title: |\Z)", re.DOTALL)
UNKNOWN = "unknown"


def read_observations(observations: Iterable[str]) -> dict[str, dict[str, str]]:
    """Title -> facts read from every passage shown in ``<information>`` blocks so far."""
    facts: dict[str, dict[str, str]] = {}
    for observation in observations:
        for block in _INFORMATION.findall(observation):
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


class OracleAgent:
    """Stateful per episode: call :meth:`reset` with the question's metadata, then :meth:`act`."""

    def __init__(self) -> None:
        self.metadata: dict[str, Any] = {}
        self.question = ""
        self.observations: list[str] = []
        self.turn = 0

    def reset(self, question: str, metadata: dict[str, Any]) -> None:
        self.question, self.metadata = question, metadata
        self.observations, self.turn = [], 0

    def act(self, observation: str) -> str:
        self.observations.append(observation)
        self.turn += 1
        facts = read_observations(self.observations)
        if self.turn == 1:
            return f"<search> {self.question} </search>"
        if self.turn == 2:
            return f"<search> {second_query(self.metadata, facts)} </search>"
        return f"<answer> {answer_from_facts(facts, self.metadata)} </answer>"


def run_oracle(env: Any, task_index: int) -> dict[str, Any]:
    """Play one episode of ``env`` (the unwrapped or wrapped SearchQA env) with the oracle."""
    base = env.unwrapped
    obs, info = env.reset(options={"task_index": task_index})
    item = base.items[task_index]
    agent = OracleAgent()
    agent.reset(item.question, item.metadata)
    reward, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        steps += 1
    return {"em": info["em"], "f1": info["f1"], "reward": reward, "steps": steps, "info": info}
