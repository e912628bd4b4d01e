"""The uniform random policy's rows and page (mvpo_envs/bench/uniform_policy.py)."""

from __future__ import annotations

from mvpo_envs.bench.uniform_policy import report, uniform_episodes
from mvpo_envs.milestone_chain.layout import DEFAULT_DIFFICULTY


def test_a_row_counts_the_wins_and_the_expert_always_wins() -> None:
    row = uniform_episodes(0, 6)
    assert row["difficulty"] == 0 and row["places"] == 5
    assert row["success"] == row["wins"] / 6 and 0 <= row["wins"] <= 6
    assert row["expert"] == 1.0
    assert 0.0 <= row["optimal_share"] <= 1.0 and row["plan_max"] >= row["plan_mean"]
    assert uniform_episodes(0, 6)["wins"] == row["wins"]  # seeded play


def test_the_page_marks_the_default_difficulty_and_shows_the_interval() -> None:
    row = {"difficulty": DEFAULT_DIFFICULTY, "places": 15, "actions": 5.06, "success": 0.5,
           "low": 0.25, "high": 0.75, "milestones": 2.0, "optimal_share": 0.2, "plan_mean": 14.4,
           "plan_max": 23, "expert": 1.0, "steps_per_s": 1000.0}  # fmt: skip
    page = report([row], 4, 2.0)
    line = next(x for x in page.splitlines() if x.startswith(f"| {DEFAULT_DIFFICULTY} "))
    assert "(default)" in line and "[0.250, 0.750]" in line and "| 0.996 |" in line
    assert "`python benchmarks/control_uniform.py --episodes 4`" in page
