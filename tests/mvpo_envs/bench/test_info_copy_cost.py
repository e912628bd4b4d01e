"""``mvpo_envs.bench.info_copy_cost``: each play runs with the info copy swapped in and given back,
and two copies that play differently stop the comparison."""

from __future__ import annotations

import pytest

from mvpo_envs import base
from mvpo_envs.bench.info_copy_cost import compare, page, rate
from mvpo_envs.bench.step_rate import StepRun
from mvpo_envs.info_copy import copy_plain


def test_rate_swaps_the_copy_in_and_back() -> None:
    seen = []
    run = rate(lambda: seen.append(base.copy_plain) or StepRun(4, 2.0, b""), len)
    assert seen == [len] and base.copy_plain is copy_plain and run.rate == 2.0


def test_compare_takes_medians_and_checks_the_traces() -> None:
    def play() -> StepRun:  # as fast with either copy, the same trace
        return StepRun(10, 0.5, b"trace")

    rows = compare({"env": play}, repeats=3)
    assert rows == [("env", 20.0, 20.0)]
    lines = page(rows, "python x.py", type("A", (), {"repeats": 3, "steps": 5, "vector_steps": 2}))
    assert "| env | 20 | 20 | x1.00 |" in lines

    def differs() -> StepRun:  # a trace that names the copy in use
        return StepRun(1, 1.0, repr(base.copy_plain).encode())

    with pytest.raises(SystemExit, match="env played differently with the two copies"):
        compare({"env": differs}, repeats=1)
