"""Per-game statistics of a set of ALFWorld games: how big a room is and how hard it is to win.

For each game of some folders (generated or real ALFWorld,
:func:`~mvpo_envs.alfworld.data.collect_games`): receptacles, objects in receptacles, objects
per receptacle (mean and most on one), from the PDDL problem's ``:init``; admissible commands at
reset and the stored walkthrough's length; and the wins of a uniform-random policy over the
admissible commands (seeded per game), played on ALFWorld's engine.
``benchmarks/alfworld_stats.py`` tabulates them against real ALFWorld
(docs/alfworld_generator.md, "Statistics"). A measuring tool, so it sits beside the layered
``mvpo_envs.alfworld`` package (docs/architecture.md), not in it.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mvpo_envs.alfworld.data import collect_games
from mvpo_envs.alfworld.engine import AlfworldEngine, read_game_file

__all__ = ["GameStats", "SetStats", "measure_set", "problem_counts", "random_policy"]


@dataclass
class GameStats:
    """One game's numbers (``random_*``: the random policy's wins of its episodes)."""

    task_type: str
    receptacles: int
    objects: int
    per_receptacle_max: int
    per_receptacle_mean: float
    admissible: int
    walkthrough: int
    random_wins: int = 0
    random_episodes: int = 0


@dataclass
class SetStats:
    """The games of one named set."""

    name: str
    games: list[GameStats] = field(default_factory=list)


def problem_counts(problem: str) -> tuple[int, int, int, float]:
    """Receptacles, objects in receptacles, most and mean objects per receptacle (from :init)."""
    init = problem.split("(:init", 1)[1].split("(:goal", 1)[0]
    recs = set(re.findall(r"\(receptacleType (\S+) \S+\)", init))
    held = re.findall(r"\(inReceptacle (\S+) (\S+)\)", init)
    per = Counter(r for _, r in held)
    objects = {o for o, _ in held}
    return len(recs), len(objects), max(per.values(), default=0), len(held) / max(1, len(recs))


def random_policy(
    engine: AlfworldEngine, episodes: int, steps: int, seed: int, key: str
) -> tuple[int, int]:
    """Wins of a uniform-random policy over the admissible commands in at most ``steps``
    steps, and the episodes played (the generator seeded by ``seed`` and ``key``)."""
    rng = random.Random(f"{seed}:{key}")
    wins = 0
    for _ in range(episodes):
        state = engine.reset()
        for _ in range(steps):
            state = engine.step(rng.choice(sorted(state.admissible)))
            if state.won:
                wins += 1
                break
    return wins, episodes


def measure_set(
    name: str, folders: Iterable[Path], episodes: int, steps: int, seed: int
) -> SetStats:
    """The statistics of every game under ``folders`` (``episodes`` random-policy episodes of
    ``steps`` steps each, seeded by ``seed``, the set's name and the game's id; 0: none)."""
    out = SetStats(name)
    engine = AlfworldEngine(cached=True)
    for folder in folders:
        for game in collect_games(folder):
            data = read_game_file(game.game_file)
            recs, objs, most, mean = problem_counts(data["pddl_problem"])
            engine.load(game.game_file)
            stats = GameStats(
                task_type=game.task_type,
                receptacles=recs,
                objects=objs,
                per_receptacle_max=most,
                per_receptacle_mean=mean,
                admissible=len(engine.reset().admissible),
                walkthrough=len(data.get("walkthrough") or []),
            )
            if episodes:
                key = f"{name}:{game.task_id}"
                stats.random_wins, stats.random_episodes = random_policy(
                    engine, episodes, steps, seed, key
                )
            out.games.append(stats)
    engine.close()
    return out
