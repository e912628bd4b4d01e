"""``mvpo_envs.searchqa.agreement``: overlap, top-1 and support means over queries."""

from __future__ import annotations

import pytest

from mvpo_envs.searchqa.agreement import overlap_at, rank_all, support_at, top1_agreement

A = [["1", "2", "3", "4"], ["5", "6", "7", "8"]]
B = [["2", "1", "9", "4"], ["5", "0", "0", "0"]]


def test_means_over_queries() -> None:
    assert overlap_at(A, B, 2) == pytest.approx((2 / 2 + 1 / 2) / 2)
    assert overlap_at(A, B, 4) == pytest.approx((3 / 4 + 1 / 4) / 2)
    assert top1_agreement(A, B) == 0.5
    assert top1_agreement([[]], [[]]) == 0.0  # no hit is no agreement
    assert support_at(A, [{"3"}, {"9"}], 3) == 0.5 and support_at(A, [{"3"}, {"9"}], 2) == 0.0
    with pytest.raises(ValueError):
        overlap_at(A, B[:1], 2)  # one ranking per query on both sides


def test_rank_all_is_the_retrievers_order(bm25) -> None:
    rows, ms = rank_all(bm25, ["Who founded the company?", "Which river is longer?"], 5)
    assert len(rows) == len(ms) == 2 and all(len(r) == 5 for r in rows)
    assert rows[0] == [h["id"] for h in bm25.search(["Who founded the company?"], 5)[0]]
    assert overlap_at(rows, rows, 5) == 1.0
