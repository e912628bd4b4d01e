"""The Search-R1 text protocol: prompt, action parsing, ``<information>`` formatting.

docs/searchqa.md ("Protocol"). Strings are those of Search-R1
(``search_r1/llm_agent/generation.py`` and ``scripts/data_process/nq_search.py``):

* the agent writes ``<search> query </search>`` or ``<answer> text </answer>``;
* a search is answered with
  ``"\\n\\n<information>Doc 1(Title: T) text\\nDoc 2(...)...</information>\\n\\n"``, where
  ``T`` is the first line of the passage's ``contents`` (quotes included, as Search-R1 does);
* anything else gets Search-R1's fixed invalid-action text, :data:`INVALID_FEEDBACK`.

The parsing and formatting rules (:func:`parse_action` with its modes ``"search-r1"``, the
default, and ``"strict"``) live in :mod:`mvpo_abstraction.text_rules.searchqa`, shared with the
abstraction, and are re-exported here. This module adds the prompt.
"""

from __future__ import annotations

from mvpo_abstraction.text_rules.searchqa import (
    INVALID_FEEDBACK,
    PARSE_MODES,
    ParsedAction,
    format_information,
    format_passages,
    information_blocks,
    parse_action,
    search_r1_cut,
    split_contents,
)

__all__ = [
    "ACTION_TEMPLATES",
    "INVALID_FEEDBACK",
    "PARSE_MODES",
    "SEARCH_R1_PROMPT",
    "ParsedAction",
    "format_information",
    "format_passages",
    "information_blocks",
    "make_prompt",
    "parse_action",
    "search_r1_cut",
    "search_r1_question",
    "split_contents",
]

#: the action templates listed in ``info["admissible_actions"]``
ACTION_TEMPLATES = ("<search> query </search>", "<answer> text </answer>")

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


def search_r1_question(question: str) -> str:
    """Search-R1's question clean-up: strip, and end with ``?``."""
    question = question.strip()
    return question if question.endswith("?") else question + "?"


def make_prompt(question: str) -> str:
    """The first observation in ``prompt="search-r1"`` mode: instruction + question."""
    return SEARCH_R1_PROMPT.format(question=search_r1_question(question))
