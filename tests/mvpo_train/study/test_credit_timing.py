"""Advantage construction timing (:mod:`mvpo_train.study.credit_timing`): the variants, the
ratio to GiGPO and the table."""

from __future__ import annotations

from mvpo_train.study.credit_timing import make, time_build, time_estimators, timing_rows
from mvpo_train.study.synthetic import synthetic_batch


def test_a_variant_is_its_estimator_with_its_config():
    batch = synthetic_batch(1)
    adv_paper, _ = make("mvpo-paper")(batch)
    adv_default, _ = make("mvpo")(batch)
    assert adv_paper.shape == adv_default.shape == (len(batch),)
    assert make("mvpo-paper").config.form == "paper"


def test_gigpo_is_the_reference_of_the_ratios_and_the_table_has_a_row_per_name():
    batch = synthetic_batch(1)
    med, ratio = time_estimators(["grpo", "gigpo"], batch, repeats=2)
    assert ratio["gigpo"] == 1.0 and med["grpo"] > 0 and med["gigpo"] > 0
    assert time_build(batch, repeats=1) > 0
    res = {"6,400": {"grpo": 0.002}, "64,000": {"grpo": 0.03}}
    rows = timing_rows(["grpo"], res, {"6,400": {"grpo": 0.5}, "64,000": {"grpo": 0.25}})
    assert rows[2] == "| grpo | 2.00 | 30.0 | 0.50 | 0.25 | 0.00059% |"
