"""Retrieval recall and oracle EM on a question set (docs/searchqa.md, the benchmark).

docs/environments.md, "mvpo/SearchQA-v0".

* ``answer_recall@k``: FlashRAG's ``retrieval_recall_top{k}``: the question as the query, and
  whether any of the top ``k`` passages holds a golden answer (:func:`has_answer`);
* ``support_recall@k``: whether the question's first supporting passage (the entity it names)
  is in the top ``k`` (needs the bundled set's ``supporting_ids``);
* ``bridge_recall@k``: bridge questions only, the bridge entity's name as the query, whether the
  bridge passage is in the top ``k``;
* :func:`oracle_em`: mean EM of :class:`~mvpo_envs.searchqa.oracle.OracleAgent`, per type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mvpo_envs.searchqa.data import QAItem
from mvpo_envs.searchqa.metrics import has_answer
from mvpo_envs.searchqa.oracle import run_oracle
from mvpo_envs.searchqa.retrievers.base import Retriever


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def retrieval_recall(
    retriever: Retriever, items: Sequence[QAItem], k: int = 3, batch: int = 64
) -> dict[str, float]:
    """``answer_recall@k``, ``support_recall@k`` and ``bridge_recall@k`` over ``items``."""
    answer, support, bridge = [], [], []
    for start in range(0, len(items), batch):
        chunk = list(items[start : start + batch])
        rows = retriever.search([q.question for q in chunk], k)
        for item, hits in zip(chunk, rows, strict=True):
            answer.append(float(any(has_answer(h["contents"], item.golden_answers) for h in hits)))
            ids = item.metadata.get("supporting_ids") or []
            if ids:
                support.append(float(str(ids[0]) in {h["id"] for h in hits}))
        bridges = [q for q in chunk if q.type == "bridge" and q.metadata.get("bridge")]
        if bridges:
            rows = retriever.search([str(q.metadata["bridge"]) for q in bridges], k)
            for item, hits in zip(bridges, rows, strict=True):
                bridge.append(
                    float(str(item.metadata["supporting_ids"][1]) in {h["id"] for h in hits})
                )
    return {
        f"answer_recall@{k}": _mean(answer),
        f"support_recall@{k}": _mean(support),
        f"bridge_recall@{k}": _mean(bridge),
    }


def oracle_em(env: Any, indices: Sequence[int] | None = None) -> dict[str, Any]:
    """Play the oracle on ``indices`` (default: every task); EM overall and per question type."""
    base = env.unwrapped
    indices = range(len(base.items)) if indices is None else indices
    per_type: dict[str, list[float]] = {}
    steps = 0
    for i in indices:
        out = run_oracle(env, i)
        steps += out["steps"]
        per_type.setdefault(str(base.items[i].type), []).append(float(out["em"]))
    every = [v for vs in per_type.values() for v in vs]
    return {
        "em": _mean(every),
        "episodes": len(every),
        "steps": steps,
        "by_type": {t: _mean(vs) for t, vs in sorted(per_type.items())},
    }
