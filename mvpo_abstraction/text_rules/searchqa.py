"""Search-R1's text rules: action parsing, ``<information>`` text, answer metrics (one home).

docs/searchqa.md ("Protocol", "Metrics") and docs/architecture.md ("Layers and imports"). Both
``mvpo_envs.searchqa`` (the environment) and ``mvpo_abstraction.searchqa`` (its abstraction)
import these rules from here; the environment's ``protocol`` and ``metrics`` modules re-export
them. Strings and rules are those of Search-R1 (``search_r1/llm_agent/generation.py``,
``verl/utils/reward_score/qa_em.py``) and FlashRAG (token F1, has-answer).

Parsing (:func:`parse_action`), two modes:

``"search-r1"`` (default)
    Search-R1's rule: cut the text after the first ``</search>`` (else after the first
    ``</answer>``), then take the first ``<(search|answer)>(.*?)</\\1>`` match (case-sensitive),
    content stripped; empty content is accepted (an empty query, an empty answer).
``"strict"`` (opt-in)
    exactly one ``<search>``/``<answer>`` tag pair, not nested, not both kinds, with non-empty
    content; free text around it (``<think>...</think>``) is allowed.

Both run in linear time (:func:`~mvpo_abstraction.text_rules.tags.tag_pairs`).

Metrics: the reward is exact match after SQuAD normalisation (lower-case, strip punctuation,
drop the articles a/an/the, collapse white space) against any golden answer (``em_check``);
substring EM (``subem_check``); FlashRAG's token F1 (max over golden answers; ``yes``/``no``/
``noanswer`` must match exactly); :func:`has_answer`, FlashRAG's retrieval-recall test.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mvpo_abstraction.text_rules.tags import tag_pairs

__all__ = [
    "INVALID_FEEDBACK",
    "PARSE_MODES",
    "ParsedAction",
    "exact_match",
    "f1_score",
    "format_information",
    "format_passages",
    "has_answer",
    "information_blocks",
    "normalize_answer",
    "parse_action",
    "passage_titles",
    "score_answer",
    "split_contents",
    "substring_exact_match",
]

#: Search-R1's feedback for an output with no valid action (generation.py, execute_predictions)
INVALID_FEEDBACK = (
    "\nMy previous action is invalid. "
    "If I want to search, I should put the query between <search> and </search>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. "
    "Let me try again.\n"
)

PARSE_MODES = ("search-r1", "strict")
_KINDS = ("search", "answer")
_TAG = re.compile(r"<(/?)(search|answer)>")
_TITLE = re.compile(r"Doc \d+\(Title: (.*?)\) ")


# -- parsing ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParsedAction:
    """One parsed model output: ``kind`` is ``"search"``, ``"answer"`` or ``None`` (invalid)."""

    kind: str | None
    content: str = ""
    error: str = ""

    @property
    def valid(self) -> bool:
        return self.kind is not None


def parse_action(text: str, mode: str = "search-r1") -> ParsedAction:
    """Parse a model output into a search, an answer, or an invalid action (never raises on
    text; an unknown ``mode`` is a ``ValueError``). Linear time in ``len(text)``."""
    if mode == "search-r1":
        return _parse_search_r1(text)
    if mode != "strict":
        raise ValueError(f"parse mode must be one of {PARSE_MODES}, got {mode!r}")
    tags = [(m.group(1) == "/", m.group(2), m) for m in _TAG.finditer(text)]
    if not tags:
        return ParsedAction(None, error="no <search> or <answer> tag")
    if len({kind for _, kind, _ in tags}) > 1:
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


def search_r1_cut(text: str) -> str:
    """Search-R1's ``_postprocess_responses``: keep the text up to the first ``</search>``
    (else the first ``</answer>``), closing tag included; else the text unchanged."""
    for close in ("</search>", "</answer>"):
        at = text.find(close)
        if at >= 0:
            return text[: at + len(close)]
    return text


def _parse_search_r1(text: str) -> ParsedAction:
    text = search_r1_cut(text)
    pairs = tag_pairs(text, _KINDS, limit=1)
    if not pairs:
        return ParsedAction(None, error="no complete <search> or <answer> tag pair")
    return ParsedAction(pairs[0].name, pairs[0].content(text).strip())


# -- the <information> text ---------------------------------------------------------------------
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


def information_blocks(observation: str) -> list[str]:
    """The contents of the ``<information>...</information>`` blocks of an observation.

    An observation cut to its token budget (``max_obs_tokens``) can lose the closing tag: an
    opening tag with no closing tag after it then holds the rest of the text.
    """
    pairs = tag_pairs(observation, ("information",))
    blocks = [p.content(observation) for p in pairs]
    rest = observation.find("<information>", pairs[-1].end if pairs else 0)
    if rest >= 0:
        blocks.append(observation[rest + len("<information>") :])
    return blocks


def passage_titles(block: str) -> list[str]:
    """The ``T`` of every ``Doc i(Title: T)`` header in an information block, quotes stripped."""
    return [t.strip().strip('"') for t in _TITLE.findall(block)]


# -- metrics ------------------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)
_SPECIAL = ("yes", "no", "noanswer")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower, strip punctuation, drop articles, collapse white space."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(golden_answers: str | Iterable[str]) -> list[str]:
    golds = [golden_answers] if isinstance(golden_answers, str) else list(golden_answers)
    return [normalize_answer(g) for g in golds]


def exact_match(prediction: str, golden_answers: str | Iterable[str]) -> float:
    """1.0 when the normalised prediction equals a normalised golden answer, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == gold for gold in _golds(golden_answers)))


def substring_exact_match(prediction: str, golden_answers: str | Iterable[str]) -> float:
    """1.0 when a (non-empty) normalised golden answer occurs inside the normalised prediction."""
    pred = normalize_answer(prediction)
    return float(any(gold and gold in pred for gold in _golds(golden_answers)))


def f1_score(prediction: str, golden_answers: str | Iterable[str]) -> float:
    """Token-level F1 (FlashRAG's ``F1_Score``), the maximum over golden answers."""
    pred = normalize_answer(prediction)
    best = 0.0
    for gold in _golds(golden_answers):
        if (pred in _SPECIAL or gold in _SPECIAL) and pred != gold:
            continue
        pred_tokens, gold_tokens = pred.split(), gold.split()
        same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
        if same == 0:
            continue
        precision, recall = same / len(pred_tokens), same / len(gold_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def has_answer(text: str, golden_answers: str | Iterable[str]) -> bool:
    """FlashRAG's retrieval-recall test: a normalised golden answer inside the normalised text."""
    norm = normalize_answer(text)
    return any(gold and gold in norm for gold in _golds(golden_answers))


def score_answer(prediction: str, golden_answers: str | Iterable[str]) -> dict[str, float]:
    """``{"em", "f1", "substring_em"}`` of one prediction."""
    return {
        "em": exact_match(prediction, golden_answers),
        "f1": f1_score(prediction, golden_answers),
        "substring_em": substring_exact_match(prediction, golden_answers),
    }
