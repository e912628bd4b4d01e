"""``mvpo_envs.bench.alfworld_game_stats``: room sizes read from the PDDL problem, and seeded
random-policy wins that a rerun repeats."""

from __future__ import annotations

import shutil
from pathlib import Path

from mvpo_envs.alfworld.data import bundled_split_dir
from mvpo_envs.bench.alfworld_game_stats import measure_set, problem_counts

PROBLEM = """(define (problem p) (:objects ...)
(:init
 (receptacleType Drawer_1 DrawerType) (receptacleType Shelf_2 ShelfType)
 (receptacleType Sink_3 SinkBasinType)
 (inReceptacle Mug_1 Drawer_1) (inReceptacle Pen_2 Drawer_1) (inReceptacle Key_3 Shelf_2)
)
(:goal (and)))"""


def test_problem_counts() -> None:
    # 3 receptacles, 3 objects, most on one: 2, mean over receptacles: 3 / 3
    assert problem_counts(PROBLEM) == (3, 3, 2, 1.0)


def test_measure_set_is_seeded(tmp_path: Path) -> None:
    folder = tmp_path / "split"  # three games of the bundled mini set
    for game in sorted(bundled_split_dir("eval", "mini").iterdir())[:12:4]:
        shutil.copytree(game, folder / game.name)
    first = measure_set("mini", [folder], episodes=2, steps=30, seed=0)
    assert len(first.games) == 3 and all(g.random_episodes == 2 for g in first.games)
    assert all(g.receptacles >= 1 and g.admissible > 0 and g.walkthrough > 0 for g in first.games)
    assert measure_set("mini", [folder], episodes=2, steps=30, seed=0) == first
    none = measure_set("mini", [folder], episodes=0, steps=30, seed=0)
    assert all(g.random_episodes == 0 for g in none.games)
