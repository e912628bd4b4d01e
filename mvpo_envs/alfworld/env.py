"""``mvpo/ALFWorld-v0``: ALFWorld's text games on a native engine equal to ALFWorld's own.

docs/environments.md, "mvpo/ALFWorld-v0". The default engine (``engine="fast"``) is a native
re-implementation of ALFWorld's TextWorld PDDL engine; ``engine="pddl"`` runs ALFWorld's own
engine, the reference, and the two agree step for step (docs/alfworld_engine.md). Observations
are exactly the engine's feedback text
(the intro with the room and the task at reset, the action feedback after each step);
actions are ALFWorld commands (``go to countertop 1``, ``take apple 1 from countertop 1``,
...). Reward 1 and ``terminated`` when the goal is reached; Gymnasium's ``TimeLimit``
truncates at 50 steps (``max_episode_steps=`` in ``gym.make`` changes it).

Data: the bundled ALFWorld-scale generated games by default (``preset="alfworld"``, splits
``"train" | "valid_seen" | "valid_unseen"``, ``"eval"`` = ``"valid_unseen"``; ``num_games=N``
or ``"full"`` generates the first N games of a split once into a cache; the small
``preset="mini"`` and ``"standard"`` sets have ``"train" | "eval"``), or real ALFWorld data with ``data_dir=`` /
``$ALFWORLD_DATA`` (``split="train" | "valid_seen" | "valid_unseen"``), see
:mod:`mvpo_envs.alfworld.data` and docs/alfworld_generator.md.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mvpo_abstraction.base import Abstraction
from mvpo_abstraction.extras import require_extra
from mvpo_envs.alfworld.data import (
    DEFAULT_PRESET,
    TASK_TYPES,
    AlfworldGame,
    collect_games,
    real_split_dir,
    select_split_dir,
    user_real_data_dir,
)
from mvpo_envs.alfworld.engine import DEFAULT_ENGINE, EngineStep, make_engine
from mvpo_envs.alfworld.game_file import read_json_object
from mvpo_envs.alfworld.oracle import OracleTracker
from mvpo_envs.alfworld.state import state_from_facts
from mvpo_envs.alfworld.text_view import TextView
from mvpo_envs.base import TextEnv, Transition

START_LOCATION = "middle of room"
TASK_PREFIX = "Your task is to: "
#: ``protocol=``: ALFWorld's command handling, or mvpo-v0's lenient one (docs/fidelity.md)
PROTOCOLS = ("original", "lenient")


class AlfworldEnv(TextEnv):
    """ALFWorld's text games (``mvpo/ALFWorld-v0``) on the fast native engine by default, or on
    ALFWorld's own TextWorld PDDL engine (``engine="pddl"``).

    ## Description
    A household task ("put a clean apple in fridge.") in a room of numbered receptacles; the
    agent walks to receptacles, opens them, takes, cleans, heats, cools, slices or examines
    objects until the goal holds. Six task types (``info["task_type"]``); every rule is
    ALFWorld's unless an opt-in says otherwise (docs/fidelity.md).

    ## Action space
    Free text (:class:`mvpo_envs.spaces.AnyText`): an ALFWorld command. With
    ``protocol="original"`` (default) it is handled as ALFWorld does: leading and trailing
    whitespace stripped, then an exact, case-sensitive match against the admissible commands
    (``GO TO CABINET 1`` and ``go  to  cabinet  1`` are ``Nothing happens.``).
    ``info["admissible_actions"]`` lists ALFWorld's ``admissible_commands``.

    ## Observation space
    Free text: the engine's feedback (the room and task intro at reset); an inadmissible
    command gives ``Nothing happens.`` (reward 0, ``invalid_action=True``).

    ## Rewards
    1.0 on the step that reaches the goal, else 0.

    ## Starting state
    The game chosen by ``reset(seed=..., options=...)`` (see
    :func:`mvpo_envs.base.select_task_index`), at its initial state.

    ## Episode end
    Termination: the goal holds (``won``). Truncation: Gymnasium's ``TimeLimit`` at 50 steps.
    With ``protocol="original"`` a step after the win repeats the final step as ALFWorld's
    batch env does: the same observation and info, reward (score) 1.0, ``terminated=True``
    (no milestone fires again).

    ## Arguments
    ``split``, ``data_dir`` (or ``$ALFWORLD_DATA``), ``preset``, ``task_types``,
    ``abstraction``, ``render_mode``, ``max_cached_games`` (see the module docstring) and
    ``protocol``: ``"original"`` or ``"lenient"`` (commands compared after lower-casing and
    collapsing spaces; after a win, ``Nothing happens.`` with ``invalid_action=True``);
    ``engine``: ``"fast"`` (native, default) or ``"pddl"`` (ALFWorld's own TextWorld engine,
    the reference), identical step for step (docs/alfworld_engine.md);
    ``progress_oracle``: ``True`` adds the exact shortest-plan label
    ``info["oracle_progress"]`` (1 when the step shortened the shortest plan to the goal, else 0;
    -1 at reset or when off), ``info["oracle_plan_length"]`` (the length of the shortest plan
    from the current state to the goal, as the control task reports it: 0 once won, unchanged
    by an inadmissible command, -1 where no plan exists; the key is absent when off, so the
    default infos are unchanged) and :meth:`optimal_actions` (docs/alignment.md).

    ## Version history
    * v0: ALFWorld's command matching and after-win behaviour by default;
      ``protocol="lenient"`` keeps the earlier mvpo behaviour as an opt-in.
    """

    invalid_feedback = "Nothing happens."
    default_abstraction = "alfworld"

    def __init__(
        self,
        split: str = "train",
        data_dir: str | os.PathLike | None = None,
        preset: str = DEFAULT_PRESET,
        task_types: Sequence[str] = TASK_TYPES,
        abstraction: str | Abstraction | None = None,
        render_mode: str | None = None,
        max_cached_games: int = 64,
        protocol: str = "original",
        num_games: int | str | None = None,
        engine: str = DEFAULT_ENGINE,
        progress_oracle: bool = False,
    ):
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
        self.protocol = protocol
        self._raw_action = ""
        if isinstance(task_types, str) or not task_types:  # tuple("pick...") is its letters
            raise ValueError(
                f"task_types must be a non-empty list of task types, e.g. "
                f"['pick_and_place_simple'], got {task_types!r}"
            )
        if isinstance(data_dir, str) and not data_dir.strip():  # not a silent "bundled data"
            raise ValueError("data_dir is empty: give a folder, or omit it for the bundled data")
        data_dir = data_dir if data_dir is not None else user_real_data_dir()
        if data_dir:
            split_dir = real_split_dir(data_dir, split)
        else:
            split_dir = select_split_dir(split, preset, num_games)
        self.split = split
        self.games: list[AlfworldGame] = collect_games(split_dir, tuple(task_types))
        super().__init__([g.task_id for g in self.games], abstraction, render_mode)
        self._engine = make_engine(engine, max_cached_games=max_cached_games)
        # opt-in exact shortest-plan labels and lengths, info["oracle_progress"] and
        # info["oracle_plan_length"] (docs/alignment.md)
        self._oracle = OracleTracker(self._engine) if progress_oracle else None
        self._label = -1
        self._game: AlfworldGame | None = None
        self._task = ""
        self._location = START_LOCATION
        self._text_view = TextView()

    @property
    def task_type_list(self) -> list[str]:
        """The task type of each task, in task order (``mvpo-eval --max-tasks`` stratifies)."""
        return [g.task_type for g in self.games]

    # -- Gymnasium API ---------------------------------------------------------------------------
    def step(self, action: str):
        """Gymnasium's ``step``; ALFWorld's command handling with ``protocol="original"``."""
        if self.protocol == "original" and self._done and isinstance(action, str):
            # ALFWorld's batch env copies the final step over once the game has ended
            info = copy.deepcopy(self._last_info)
            label = -1 if self._oracle is None else 0  # nothing changes after the win
            info.update(milestones=[], invalid_action=False, oracle_progress=label)
            return self._last.observation, float(self._last.reward), True, False, info
        self._raw_action = action if isinstance(action, str) else ""
        return super().step(action)

    def _command(self, command: str) -> str:
        """What the engine receives: ALFWorld strips the typed text, lenient canonicalises."""
        return self._raw_action.strip() if self.protocol == "original" else command

    # -- TextEnv hooks ---------------------------------------------------------------------------
    def _is_admissible(self, command: str) -> bool:
        return self._command(command) in self._admissible_set

    def _start(self, task_index: int) -> Transition:
        self._game = self.games[task_index]
        self._engine.load(self._game.game_file)
        result = self._engine.reset()
        self._task = _task_from_intro(result.feedback)
        self._location = START_LOCATION
        self._text_view = TextView()
        self._label = -1 if self._oracle is None else self._oracle.reset(str(self._game.game_file))
        return self._transition(result, "")

    def _act(self, command: str) -> Transition:
        command = self._command(command)
        result = self._engine.step(command)
        if command.startswith("go to "):
            self._location = command[len("go to ") :]
        self._label = -1 if self._oracle is None else self._oracle.step(command)
        return self._transition(result, command)

    def _invalid(self, command: str) -> Transition:
        transition = super()._invalid(command)  # the state is unchanged: no progress
        transition.extras["oracle_progress"] = -1 if self._oracle is None else 0
        return transition

    def optimal_actions(self) -> list[str]:
        """The admissible commands that start a shortest plan to the goal (needs
        ``progress_oracle=True``; docs/alignment.md)."""
        if self._oracle is None:
            raise RuntimeError("optimal_actions() needs gym.make(..., progress_oracle=True)")
        return self._oracle.optimal_actions()

    def task_text(self) -> str:
        return self._task

    # -- optional hooks read by mvpo_train.tiny_model.env_corpus (docs/training.md) ----------
    def expert_actions(self, task_index: int) -> list[str]:
        """The game's verified walkthrough (the tiny model's corpus plays it first)."""
        game = read_json_object(Path(self.games[task_index].game_file))
        return [str(a) for a in game.get("walkthrough", [])]

    def vocabulary(self) -> list[str]:
        """ALFRED's object and receptacle names, lower-case, sorted."""
        require_extra("alfworld", "pddl", "AlfworldEnv.vocabulary() (ALFRED's names)")
        from alfworld.gen import constants

        names = ("OBJECTS", "RECEPTACLES", "MOVABLE_RECEPTACLES")
        return sorted({str(n).lower() for a in names for n in getattr(constants, a, [])})

    # -- helpers -------------------------------------------------------------------------------
    def _transition(self, result: EngineStep, command: str) -> Transition:
        if self._game is None:
            raise RuntimeError("call reset() first")
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
            extras=self._extras(self._game),
        )

    def _extras(self, game: AlfworldGame) -> dict[str, Any]:
        """The env-specific info keys of a step (the oracle's distance only when it is on)."""
        extras: dict[str, Any] = {
            "task_type": game.task_type,
            "gamefile": str(game.game_file),
            "oracle_progress": self._label,
        }
        if self._oracle is not None:  # d(s) after the step: what mvpo_train.rollout differences
            extras["oracle_plan_length"] = self._oracle.d
        return extras

    def close(self) -> None:
        self._engine.close()
        super().close()


def _task_from_intro(intro: str) -> str:
    """The task line of ALFWorld's intro text (``"put a clean apple in fridge."``)."""
    idx = intro.rfind(TASK_PREFIX)
    return intro[idx + len(TASK_PREFIX) :].strip() if idx >= 0 else ""


def make_alfworld(**kwargs: Any) -> AlfworldEnv:
    return AlfworldEnv(**kwargs)
