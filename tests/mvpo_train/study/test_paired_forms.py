"""Two forms compared on their success curves, paired by seed (mvpo_train/study/paired_forms.py)."""

from __future__ import annotations

from mvpo_train.study.paired_forms import form_lines


def test_identical_curves_give_a_zero_difference_and_are_counted() -> None:
    a = [[0.0] * 5 + [0.2] * 5, [0.1] * 10]
    lines = form_lines({"concat": a, "factored": [a[0], [0.3] * 10]}, "head")
    assert lines[:2] == ["| head | area | final |", "|---|---|---|"]
    assert lines[2] == "| concat | +0.100 [+0.100, +0.100] | +0.150 [+0.100, +0.200] |"
    assert lines[3].startswith("| factored | +0.200 [+0.100, +0.300] |")
    assert lines[-1].startswith("Paired factored - concat: area +0.100 [+0.000, +0.200]")
    assert lines[-1].endswith("success curves identical in 1 of 2 seeds.")
    # a t interval beside the bootstrap one: two seeds' differences 0 and 0.2, t(1) = 12.706
    assert "area +0.100 [+0.000, +0.200] (t: [-1.171, +1.371])" in lines[-1]
