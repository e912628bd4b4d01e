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


def test_an_opaque_phase_holds_what_runs_inside_it():
    bench = load_benchmark("cpu_cost")
    ph = bench.Phases()

    class Work:
        def embed(self) -> None:
            _burn(0.04)

        def evaluate(self) -> None:
            _burn(0.02)
            self.embed()

    ph.wrap(Work, "embed", "minilm")
    ph.wrap(Work, "evaluate", "eval")
    Work().evaluate()  # an evaluation before the first iteration (the showcase's start)
    ph.enter("rollout")
    Work().embed()
    ph.exit()
    assert 0.055 <= ph.seconds["eval"] < 0.1  # the nested embedding stays inside eval
    assert 0.035 <= ph.seconds["minilm"] < 0.07  # only the call outside the evaluation
    assert sum(ph.marks[0].values()) == ph.seconds["eval"]  # what ran before iteration 1


def test_showcase_estimate_adds_the_missing_iterations_at_the_last_ones_cost():
    bench = load_benchmark("cpu_cost")

    def result(scale: float) -> dict:
        its = [{"rollout": 50.0 * scale, "update": 10.0 * scale}, {"rollout": 30.0 * scale}]
        return {"setup": 5.0, "eval": 40.0 * scale, "iterations": its, "total": 200.0 * scale}

    lines = bench.showcase_lines({"before": result(1.0), "after": result(0.5)}, 2)
    row = next(x for x in lines if x.startswith("| make run estimate"))
    assert row == "| make run estimate | 440.0 | 220.0 | x0.50 |"  # 200 + 8 x 30
    assert "| iteration 1 | 60.0 | 30.0 | x0.50 |" in lines
    assert "| setup | 5.0 | 5.0 | x1.00 |" in lines
