"""``benchmarks/cpu_cost.py``: phases are exclusive process-CPU time (a nested phase is not
counted in its parent), iterations are split at the trainer's rollout phase, and the table
sums the trainer's phases into the iteration (setup apart)."""

from __future__ import annotations

import time

from .helpers import load_benchmark


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_phases_are_exclusive_and_split_per_iteration():
    bench = load_benchmark("cpu_cost")
    ph = bench.Phases()

    class Work:
        def inner(self) -> None:
            _burn(0.05)

    ph.wrap(Work, "inner", "minilm")
    for _ in range(2):  # two iterations: rollout (with a nested minilm call), then update
        ph.enter("rollout")
        _burn(0.03)
        Work().inner()
        ph.exit()
        ph.enter("update")
        _burn(0.02)
        ph.exit()
    its = ph.iterations()
    assert len(its) == 2
    for it in its:
        assert 0.045 <= it["minilm"] < 0.08
        assert 0.025 <= it["rollout"] < 0.05  # the nested call is not counted twice
        assert 0.015 <= it["update"] < 0.04
    md = "\n".join(bench.table("t", {"a": {"setup": 1.0, **its[0]}}))
    total = its[0]["minilm"] + its[0]["rollout"] + its[0]["update"]
    assert f"**{total:.2f}**" in md and "| setup | 1.00 |" in md
