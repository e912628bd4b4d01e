"""``mvpo/SearchQA-v0``: Search-R1's search-and-answer protocol (docs/environments.md).

Modules: :mod:`.protocol` (prompt, parsing, ``<information>`` text), :mod:`.metrics` (EM, F1,
substring EM), :mod:`.data` (FlashRAG corpus / QA jsonl), :mod:`.retrievers` (bm25s, faiss dense,
pyserini, HTTP), :mod:`.server` (``POST /retrieve``), :mod:`.generate` + :mod:`.world` (the bundled
invented corpus), :mod:`.oracle` (a scripted reader agent), :mod:`.env` (``SearchQAEnv``).
Importing this package loads no retrieval model.
"""

from mvpo_envs.searchqa.metrics import (
    exact_match,
    f1_score,
    normalize_answer,
    substring_exact_match,
)
from mvpo_envs.searchqa.protocol import ACTION_TEMPLATES, INVALID_FEEDBACK, parse_action

__all__ = [
    "ACTION_TEMPLATES",
    "INVALID_FEEDBACK",
    "exact_match",
    "f1_score",
    "normalize_answer",
    "parse_action",
    "substring_exact_match",
]
