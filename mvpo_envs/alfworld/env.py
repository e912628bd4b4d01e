"""``mvpo/ALFWorld-v0``: ALFWorld's text games on ALFWorld's own TextWorld PDDL engine.

docs/environments.md, "mvpo/ALFWorld-v0". Observations are exactly the engine's feedback text
(the intro with the room and the task at reset, the action feedback after each step);
actions are ALFWorld commands (``go to countertop 1``, ``take apple 1 from countertop 1``,
...). Reward 1 and ``terminated`` when the goal is reached; Gymnasium's ``TimeLimit``
truncates at 50 steps (``max_episode_steps=`` in ``gym.make`` changes it).

Data: the bundled generated games by default (``split="train" | "eval"``, ``preset="mini"``),
or real ALFWorld data with ``data_dir=`` / ``$ALFWORLD_DATA`` (``split="train" | "valid_seen" |
"valid_unseen"``), see :mod:`mvpo_envs.alfworld.data`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from mvpo_abstraction.base import Abstraction
from mvpo_envs.alfworld.data import (
    TASK_TYPES,
    AlfworldGame,
    bundled_split_dir,
    collect_games,
    real_split_dir,
    user_real_data_dir,
)
from mvpo_envs.alfworld.engine import AlfworldEngine, EngineStep
from mvpo_envs.alfworld.state import state_from_facts
from mvpo_envs.alfworld.text_view import TextView
from mvpo_envs.base import TextEnv, Transition

START_LOCATION = "middle of room"
TASK_PREFIX = "Your task is to: "


class AlfworldEnv(TextEnv):
    """ALFWorld text environment on the real engine; see the module docstring."""

    invalid_feedback = "Nothing happens."
    default_abstraction = "alfworld"

    def __init__(
        self,
        split: str = "train",
        data_dir: str | os.PathLike | None = None,
        preset: str = "mini",
        task_types: Sequence[str] = TASK_TYPES,
        abstraction: str | Abstraction | None = None,
        render_mode: str | None = None,
        max_cached_games: int = 64,
    ):
        data_dir = data_dir if data_dir is not None else user_real_data_dir()
        if data_dir:
            split_dir = real_split_dir(data_dir, split)
        else:
            if split not in ("train", "eval"):
                raise ValueError(
                    f"the bundled ALFWorld set has splits 'train' and 'eval', not {split!r}"
                )
            split_dir = bundled_split_dir(split, preset)
        self.split = split
        self.games: list[AlfworldGame] = collect_games(split_dir, tuple(task_types))
        super().__init__([g.task_id for g in self.games], abstraction, render_mode)
        self._engine = AlfworldEngine(cached=True, max_cached_games=max_cached_games)
        self._game: AlfworldGame | None = None
        self._task = ""
        self._location = START_LOCATION
        self._text_view = TextView()

    # -- TextEnv hooks ---------------------------------------------------------------------------
    def _start(self, task_index: int) -> Transition:
        self._game = self.games[task_index]
        self._engine.load(self._game.game_file)
        result = self._engine.reset()
        self._task = _task_from_intro(result.feedback)
        self._location = START_LOCATION
        self._text_view = TextView()
        return self._transition(result, "")

    def _act(self, command: str) -> Transition:
        result = self._engine.step(command)
        if command.startswith("go to "):
            self._location = command[len("go to ") :]
        return self._transition(result, command)

    def task_text(self) -> str:
        return self._task

    # -- helpers -------------------------------------------------------------------------------
    def _transition(self, result: EngineStep, command: str) -> Transition:
        assert self._game is not None
        state = state_from_facts(
            result.facts, result.entity_names, self._location, self._game.goal, result.feedback
        )
        self._text_view.update(result.feedback)
        state["text_view"] = self._text_view.as_dict()
        state["won"] = result.won
        state["last_action"] = command
        return Transition(
            observation=result.feedback,
            admissible=result.admissible,
            state=state,
            reward=1.0 if result.won else 0.0,
            terminated=result.won,
            won=result.won,
            extras={"task_type": self._game.task_type, "gamefile": str(self._game.game_file)},
        )

    def close(self) -> None:
        self._engine.close()
        super().close()


def _task_from_intro(intro: str) -> str:
    """The task line of ALFWorld's intro text (``"put a clean apple in fridge."``)."""
    idx = intro.rfind(TASK_PREFIX)
    return intro[idx + len(TASK_PREFIX) :].strip() if idx >= 0 else ""


def make_alfworld(**kwargs: Any) -> AlfworldEnv:
    return AlfworldEnv(**kwargs)
