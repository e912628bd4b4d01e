"""Arms given on the command line (:mod:`mvpo_train.study.arms`)."""

from __future__ import annotations

import pytest

from mvpo_train.study.arms import Arm, StudyError, parse_arm, parse_arms, parse_pair


def test_an_arm_spec_names_its_estimator_and_keywords():
    assert parse_arm("gigpo") == Arm("gigpo", "gigpo")
    arm = parse_arm("mvpo:form=paper,kappa_constant=0.25")
    assert arm == Arm("mvpo-form-paper-kappa_constant-0.25", "mvpo",
                      {"form": "paper", "kappa_constant": 0.25})  # fmt: skip
    assert arm.flags() == ["--estimator", "mvpo", "--estimator-kwargs",
                           '{"form": "paper", "kappa_constant": 0.25}']  # fmt: skip
    named = parse_arm('pooled=mvpo:{"region_stats": "pooled"}')
    assert named.name == "pooled" and named.spec() == {
        "estimator": "mvpo",
        "estimator_kwargs": {"region_stats": "pooled"},
    }


@pytest.mark.parametrize(
    ("specs", "match"),
    [
        (["Bad Name=mvpo"], "arm name"),
        (["x=MVPO"], "is not a name"),
        (["mvpo:form"], "expected KEY=VALUE"),
        (["mvpo:{not json"], "not a JSON object"),
        (["a=mvpo", "a=gigpo"], "given twice"),
    ],
)
def test_a_bad_arm_spec_is_one_line(specs, match):
    with pytest.raises(StudyError, match=match) as err:
        parse_arms(specs)
    assert "\n" not in str(err.value)


def test_a_pair_names_two_arms():
    assert parse_pair("mvpo-paper:mvpo") == ("mvpo-paper", "mvpo")
    for bad in ("mvpo", "mvpo:", ":grpo"):
        with pytest.raises(StudyError, match="expected A:B"):
            parse_pair(bad)
