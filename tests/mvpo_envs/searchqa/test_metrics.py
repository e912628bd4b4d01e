"""SQuAD normalisation, EM, substring EM, F1 and has-answer on hand-checked strings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mvpo_envs.searchqa.metrics import (
    exact_match,
    f1_score,
    has_answer,
    normalize_answer,
    score_answer,
    substring_exact_match,
)


@pytest.mark.parametrize(
    "raw, norm",
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  an  Apple, a day!  ", "apple day"),
        ("U.S.A.", "usa"),
        ("Theatre of the Absurd", "theatre of absurd"),  # 'the' inside a word stays
        ("A-ha", "aha"),
        ("12,345", "12345"),
        ("Wilhelm Conrad Röntgen", "wilhelm conrad röntgen"),
        ("", ""),
        ("the", ""),
        ("Tab\tand\nnewline", "tab and newline"),
    ],
)
def test_normalize_answer(raw: str, norm: str) -> None:
    assert normalize_answer(raw) == norm


def test_exact_match_any_golden_answer() -> None:
    golds = ["Ostra River", "Ostra"]
    assert exact_match("the ostra river.", golds) == 1.0
    assert exact_match("OSTRA", golds) == 1.0
    assert exact_match("Ostra river valley", golds) == 0.0
    assert exact_match("Beijing", "beijing") == 1.0  # a bare string is one golden answer
    assert exact_match("", ["x"]) == 0.0


def test_substring_em() -> None:
    assert substring_exact_match("It is the Ostra River, I think", ["Ostra River"]) == 1.0
    assert substring_exact_match("Ostra", ["Ostra River"]) == 0.0
    assert substring_exact_match("anything", [""]) == 0.0  # an empty golden answer never matches


def test_f1_hand_checked() -> None:
    # pred tokens: [ostra, river, valley]; gold: [ostra, river] -> P=2/3, R=1, F1=0.8
    assert f1_score("The Ostra River valley", ["Ostra River"]) == pytest.approx(0.8)
    # max over golden answers: "ostra" alone -> P=1/3, R=1 -> 0.5 < 0.8
    assert f1_score("Ostra River valley", ["Ostra", "Ostra River"]) == pytest.approx(0.8)
    assert f1_score("Paris", ["London"]) == 0.0
    # repeated tokens count with multiplicity: pred [a1, a1], gold [a1] -> P=1/2, R=1 -> 2/3
    assert f1_score("x1 x1", ["x1"]) == pytest.approx(2 / 3)
    # FlashRAG: yes/no/noanswer must match exactly
    assert f1_score("yes", ["yes it is"]) == 0.0
    assert f1_score("no", ["no"]) == 1.0


def test_has_answer_is_flashrag_substring_test() -> None:
    passage = '"Gilholm"\nGilholm is a town. The Motra River flows through Gilholm.'
    assert has_answer(passage, ["Motra River"])
    assert has_answer(passage, ["motra"])
    assert not has_answer(passage, ["Lake Orvane"])


def test_score_answer_keys() -> None:
    assert score_answer("Ostra", ["Ostra River", "Ostra"]) == {
        "em": 1.0,
        "f1": 1.0,
        "substring_em": 1.0,
    }


@given(st.text(max_size=40), st.lists(st.text(max_size=20), min_size=1, max_size=3))
def test_metric_properties(pred: str, golds: list[str]) -> None:
    assert normalize_answer(normalize_answer(pred)) == normalize_answer(pred)
    em, f1, sub = (
        exact_match(pred, golds),
        f1_score(pred, golds),
        substring_exact_match(pred, golds),
    )
    assert 0.0 <= f1 <= 1.0
    if em == 1.0 and normalize_answer(pred):
        assert f1 == 1.0 and sub == 1.0
