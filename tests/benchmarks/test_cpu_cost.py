"""``benchmarks/cpu_cost.py``: phases are exclusive CPU time (a nested phase is not counted in
its parent; an opaque one holds what runs inside it), iterations are split at the trainer's
rollout phase, and the tables sum the trainer's phases into the iteration (setup apart).
The phases run on a fake clock that moves only when told to: no timing in these tests."""

from __future__ import annotations

from mvpo_train.study.phase_tables import table

from .helpers import load_benchmark


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


def test_phases_are_exclusive_and_split_per_iteration():
    bench = load_benchmark("cpu_cost")
    clock = Clock()
    ph = bench.Phases(clock=clock)

    class Work:
        def inner(self) -> str:
            clock.spend(5.0)
            return "vec"

    ph.wrap(Work, "inner", "minilm")
    for k in range(2):  # two iterations: rollout (with a nested minilm call), then update
        ph.enter("rollout")
        clock.spend(3.0)
        assert Work().inner() == "vec"
        clock.spend(1.0 + k)
        ph.exit()
        with ph.phase("update"):
            clock.spend(2.0)
    assert ph.iterations() == [
        {"rollout": 4.0, "minilm": 5.0, "update": 2.0},
        {"rollout": 5.0, "minilm": 5.0, "update": 2.0},
    ]
    assert ph.first == 100.0 and ph.stack == []
    md = "\n".join(table("t", {"a": {"setup": 1.0, **ph.iterations()[0]}}))
    assert "| **iteration** | **11.00** |" in md and "| setup | 1.00 |" in md


def test_an_opaque_phase_holds_what_runs_inside_it():
    bench = load_benchmark("cpu_cost")
    clock = Clock()
    ph = bench.Phases(clock=clock)

    class Work:
        def embed(self) -> None:
            clock.spend(4.0)

        def evaluate(self) -> None:
            clock.spend(2.0)
            self.embed()
            with ph.phase("rollout"):  # a rollout inside the evaluation: no iteration
                clock.spend(1.0)

    ph.wrap(Work, "embed", "minilm")
    ph.wrap(Work, "evaluate", "eval")
    Work().evaluate()  # an evaluation before the first iteration (the showcase's start)
    with ph.phase("rollout"):
        Work().embed()
    assert ph.seconds == {"eval": 7.0, "minilm": 4.0, "rollout": 0.0}
    assert ph.marks == [{"eval": 7.0}]  # what ran before iteration 1
    assert ph.first == 107.0
