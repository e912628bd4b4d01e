"""The Search-R1 text protocol: prompt, action parsing, ``<information>`` formatting.

docs/environments.md, "mvpo/SearchQA-v0". Strings are those of Search-R1
(``search_r1/llm_agent/generation.py`` and ``scripts/data_process/nq_search.py``):

* the agent writes ``<search> query </search>`` or ``<answer> text </answer>``;
* a search is answered with
  ``"\\n\\n<information>Doc 1(Title: T) text\\nDoc 2(...)...</information>\\n\\n"``, where
  ``T`` is the first line of the passage's ``contents`` (quotes included, as Search-R1 does);
* anything else gets Search-R1's fixed invalid-action text, :data:`INVALID_FEEDBACK`.

Two parsing modes (:func:`parse_action`):

``"strict"`` (default)
    exactly one ``<search>``/``<answer>`` tag pair, not nested, not both kinds, with non-empty
    content; free text around it (``<think>...</think>``) is allowed.
``"search-r1"``
    Search-R1's own rule: cut the text after the first ``</search>`` (else the first
    ``</answer>``), then take the first ``<(search|answer)>(.*?)</\\1>`` match; empty content is
    accepted (an empty query, an empty answer).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: the action templates listed in ``info["admissible_actions"]``
ACTION_TEMPLATES = ("<search> query </search>", "<answer> text </answer>")

#: Search-R1's feedback for an output with no valid action (generation.py, execute_predictions)
INVALID_FEEDBACK = (
    "\nMy previous action is invalid. "
    "If I want to search, I should put the query between <search> and </search>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. "
    "Let me try again.\n"
)

#: Search-R1's instruction (nq_search.py ``make_prefix``, template "base"); ``{question}`` last
SEARCH_R1_PROMPT = (
    "Answer the given question. "
    "You must conduct reasoning inside <think> and </think> first every time you get new "
    "information. "
    "After reasoning, if you find you lack some knowledge, you can call a search engine by "
    "<search> query </search> and it will return the top searched results between "
    "<information> and </information>. "
    "You can search as many times as your want. "
    "If you find no further external knowledge needed, you can directly provide the answer "
    "inside <answer> and </answer>, without detailed illustrations. "
    "For example, <answer> Beijing </answer>. Question: {question}\n"
)

PARSE_MODES = ("strict", "search-r1")
_TAG = re.compile(r"<(/?)(search|answer)>")
_SEARCH_R1_ACTION = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)


@dataclass(frozen=True)
class ParsedAction:
    """One parsed model output: ``kind`` is ``"search"``, ``"answer"`` or ``None`` (invalid)."""

    kind: str | None
    content: str = ""
    error: str = ""

    @property
    def valid(self) -> bool:
        return self.kind is not None


def search_r1_question(question: str) -> str:
    """Search-R1's question clean-up: strip, and end with ``?``."""
    question = question.strip()
    return question if question.endswith("?") else question + "?"


def make_prompt(question: str) -> str:
    """The first observation in ``prompt="search-r1"`` mode: instruction + question."""
    return SEARCH_R1_PROMPT.format(question=search_r1_question(question))


def parse_action(text: str, mode: str = "strict") -> ParsedAction:
    """Parse a model output into a search, an answer, or an invalid action (never raises)."""
    if mode == "search-r1":
        return _parse_search_r1(text)
    if mode != "strict":
        raise ValueError(f"parse mode must be one of {PARSE_MODES}, got {mode!r}")
    tags = [(m.group(1) == "/", m.group(2), m) for m in _TAG.finditer(text)]
    if not tags:
        return ParsedAction(None, error="no <search> or <answer> tag")
    kinds = {kind for _, kind, _ in tags}
    if len(kinds) > 1:
        return ParsedAction(None, error="both <search> and <answer> tags")
    if len(tags) != 2 or tags[0][0] or not tags[1][0]:
        if len(tags) == 1:
            return ParsedAction(None, error="unclosed or unopened tag")
        return ParsedAction(None, error="nested or repeated tags")
    kind = tags[0][1]
    content = text[tags[0][2].end() : tags[1][2].start()].strip()
    if not content:
        return ParsedAction(None, error=f"empty <{kind}>")
    return ParsedAction(kind, content)


def _parse_search_r1(text: str) -> ParsedAction:
    if "</search>" in text:
        text = text.split("</search>")[0] + "</search>"
    elif "</answer>" in text:
        text = text.split("</answer>")[0] + "</answer>"
    match = _SEARCH_R1_ACTION.search(text)
    if match is None:
        return ParsedAction(None, error="no complete <search> or <answer> tag pair")
    return ParsedAction(match.group(1), match.group(2).strip())


def split_contents(contents: str) -> tuple[str, str]:
    """``(title, text)`` as Search-R1 splits a passage: first line, rest (quotes kept)."""
    title, _, text = contents.partition("\n")
    return title, text


def format_passages(hits: Sequence[Mapping[str, Any]]) -> str:
    """Search-R1's ``_passages2string``: ``Doc i(Title: T) text\\n`` per passage."""
    parts = []
    for i, hit in enumerate(hits):
        title, text = split_contents(str(hit["contents"]))
        parts.append(f"Doc {i + 1}(Title: {title}) {text}\n")
    return "".join(parts)


def format_information(hits: Sequence[Mapping[str, Any]]) -> str:
    """The observation after a search, exactly as Search-R1 appends it to the context."""
    return f"\n\n<information>{format_passages(hits).strip()}</information>\n\n"
