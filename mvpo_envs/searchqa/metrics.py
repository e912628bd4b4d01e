"""Answer metrics of Search-R1 / FlashRAG (docs/searchqa.md, "Metrics").

The rules live in :mod:`mvpo_abstraction.text_rules.searchqa`, their one home, shared with the
abstraction; this module re-exports them under the environment's name.
"""

from __future__ import annotations

from mvpo_abstraction.text_rules.searchqa import (
    exact_match,
    f1_score,
    has_answer,
    normalize_answer,
    score_answer,
    substring_exact_match,
)

__all__ = [
    "exact_match",
    "f1_score",
    "has_answer",
    "normalize_answer",
    "score_answer",
    "substring_exact_match",
]
