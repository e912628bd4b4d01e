"""Answer metrics of Search-R1 / FlashRAG: SQuAD normalisation, EM, substring EM, token F1.

docs/environments.md, "mvpo/SearchQA-v0": the reward is exact match after SQuAD normalisation
(lower-case, strip punctuation, drop the articles a/an/the, collapse white space) against any
golden answer, as in Search-R1's ``qa_em.em_check``; ``info`` also reports substring EM
(``subem_check``: a normalised golden answer inside the normalised prediction) and FlashRAG's
token-level F1 (max over golden answers; ``yes``/``no``/``noanswer`` must match exactly).

:func:`has_answer` is FlashRAG's retrieval-recall test: a passage "holds" a golden answer when the
normalised answer is a substring of the normalised passage.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

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
