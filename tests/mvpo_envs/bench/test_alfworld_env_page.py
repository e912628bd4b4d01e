"""``mvpo_envs.bench.alfworld_env_page``: the engine comparison's page, its speed-ups against
ALFWorld's own loop and whether the traces agreed."""

from __future__ import annotations

from mvpo_envs.bench.alfworld_env_page import page


def _measurements(identical: bool) -> dict:
    def engine(steps: int, seconds: float) -> tuple:  # trace, steps, time, warm resets, firsts
        return (["s"] * 4, steps, seconds, [0.001, 0.003], [0.2, 0.4])

    return {
        "own": engine(10, 1.0), "pddl": engine(100, 1.0), "cold": engine(500, 1.0),
        "fast": engine(2000, 1.0), "identical": identical, "env_identical": True,
        "env_pddl": (["e"], 90.0, 9.0), "env_cold": (["e"], 400.0, 40.0),
        "env_fast": (["e"], 1500.0, 150.0), "mem_fast": (0.25, 0.1), "mem_pddl": (12.0, 3.0),
        "sizes": [("mini", 20.0, 3000.0, 900.0, 50.0)], "vec": [("sync", 10.0, 2500.0)],
    }  # fmt: skip


def test_page_reports_speedups_and_agreement() -> None:
    text = page(_measurements(True), False, 8, "alfworld", "valid_unseen", 2, 15)
    assert text.startswith("# mvpo/ALFWorld-v0: fast and pddl engines vs ALFWorld's own loop")
    assert "Command: `python benchmarks/alfworld_env.py` (8 bundled `alfworld/valid_unseen`" in text
    assert "(own loop, pddl, fast): **True** (4 states compared)" in text
    assert "| **fast** | **2000** | **200x** | 2.000 | 300.0 |" in text
    assert "| pddl (cached) | 100.0 | 10x | 2.00 | 300 |" in text
    assert "| mini | 20 | 3000 | 900 | 50.0 |" in text and "| sync | 10.0 | 2500.0 |" in text
    quick = page(_measurements(False), True, 3, "alfworld", "valid_unseen", 1, 5)
    assert "alfworld_env.py --quick`" in quick and "**False**" in quick
