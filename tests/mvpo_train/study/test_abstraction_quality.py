"""A learned abstraction against the rules (:mod:`mvpo_train.study.abstraction_quality`):
labels replayed from states, milestone agreement, grouping, Phi separation and the table, on
hand-made episodes of a counter whose milestone fires at 2."""

from __future__ import annotations

from mvpo_abstraction.base import Abstraction
from mvpo_train.study.abstraction_quality import (
    agreement,
    grouping,
    label,
    markdown,
    phi_separation,
)


def _counter(at: int, name: str) -> Abstraction:
    return Abstraction.from_functions(
        lambda s, t: f"c{s['n']}", {name: lambda prev, s, a: s["n"] >= at}, name=name
    )


def _episode(top: int, won: bool, group: int = 0, expert: bool = True) -> dict:
    states = [{"n": k} for k in range(top + 1)]
    return {"states": states, "return": float(won), "won": won, "group": group, "expert": expert}


EPISODES = [_episode(3, True), _episode(1, False), _episode(3, True, 1), _episode(1, False, 1)]


def test_labels_are_the_state_before_each_action_and_what_the_step_fired():
    (lab,) = label([_episode(3, True)], _counter(2, "two"))
    assert lab["signature"] == ["c0", "c1", "c2"]
    assert lab["milestones"] == [(), ("two",), ()]  # fires once, on the step that reaches 2


def test_agreement_grouping_and_separation():
    rules, early = label(EPISODES, _counter(2, "two")), label(EPISODES, _counter(1, "one"))
    assert agreement(EPISODES, rules, rules) == {
        "precision": 1.0, "recall": 1.0, "expert_eps_with_firing": 0.5,
    }  # fmt: skip
    got = agreement(EPISODES, rules, early)  # fires a step earlier: never at a rule step
    assert got["precision"] == 0.0 and got["recall"] == 0.0
    assert grouping(EPISODES, rules) == {"steps_per_class": 8 / 6, "signatures": 3}
    sep = phi_separation(EPISODES, rules, ["two"])
    assert sep["auc"] == 1.0 and sep["gap"] > 0  # the won episodes reach the milestone


def test_the_table_formats_floats_and_lists_the_learned_milestones():
    rows = [{"env": "E", "abstraction": "rules (r)", "milestones": 1, "auc": float("nan")},
            {"env": "E", "abstraction": "learned", "milestones": 2, "auc": 0.75,
             "names": ["a", "b"], "fit_s": 3.2}]  # fmt: skip
    text = markdown(rows, {"E": (4, 2, 0.5)}, "python x.py --k 2")
    assert "Command: `python x.py --k 2`" in text and "E 4 / 2, 0.50" in text
    assert "| E | rules (r) | 1 | - | - | n/a |" in text and "| 0.750 |" in text
    assert "- E: `a`, `b`\n  (fit time 3 s, encoder on CPU)" in text
