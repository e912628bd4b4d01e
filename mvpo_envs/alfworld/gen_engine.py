"""Play generated games on ALFWorld's real TextWorld PDDL engine to verify their walkthroughs.

The engine is exactly ALFWorld's: ``textworld.envs.PddlEnv`` wrapped in ``AlfredDemangler``
(display names such as ``potato 2``) and ``AlfredInfos``. A game passes when, from reset
(not already won), every walkthrough command is admissible when it is sent and the game is
won on the last command and not before. The engine's own planner (``policy_commands``) can
also be asked at reset, to confirm that it finds the game solvable.

Trap: the planner's PDDL translator overwrites ``sys.argv``; it is restored around each call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import textworld
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
from textworld.envs import PddlEnv

from mvpo_envs.alfworld.engine import CachedPddlEnv, restored_argv


class VerificationError(RuntimeError):
    """A walkthrough that does not win on the engine."""


@dataclass
class PlayReport:
    """What one verified game did on the engine."""

    commands: list[str]
    planner_commands: list[str] | None
    load_s: float
    reset_s: float
    steps_s: float
    feedback: list[str] = field(default_factory=list)


class _NoReplanTranslations:
    """Translator for an engine that never plans: the planner's copy reuses the plain one.

    ``PddlState`` translates every problem twice: once to play it, once more (``optimize=True``)
    only for the planner behind ``policy_commands``. Play (admissible commands, effects, goal
    check) reads the first translation only, so an engine that never asks the planner can hand
    the planner the same translation and save half of each load.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def pddl2sas(self, domain: str, problem: str, verbose: bool = False, optimize: bool = False):
        return self._inner.pddl2sas(domain, problem, verbose=verbose, optimize=False)


class Engine:
    """One ALFWorld PDDL engine, reused from game to game.

    ``cached=True`` (default) uses :class:`mvpo_envs.alfworld.engine.CachedPddlEnv`, ALFWorld's
    ``PddlEnv`` with the translation and command-text caches (same observations, about twice
    as fast on whole rooms); ``cached=False`` the plain ``PddlEnv``. ``planner=False`` makes
    an engine that cannot be asked for the planner's plan and loads games faster
    (:class:`_NoReplanTranslations`).
    """

    def __init__(self, cached: bool = True, planner: bool = True) -> None:
        if not planner and not cached:
            raise ValueError("planner=False needs cached=True")
        self.planner = planner
        self.infos = textworld.EnvInfos(
            won=True,
            admissible_commands=True,
            facts=False,
            policy_commands=False,
            extras=["gamefile"],
        )
        with restored_argv():
            base = CachedPddlEnv(self.infos) if cached else PddlEnv(self.infos)
            if not planner:
                base._translations = _NoReplanTranslations(base._translations)
            self.env = AlfredInfos(AlfredDemangler(base, shuffle=False))

    def play(
        self,
        game: Mapping[str, Any] | str,
        commands: Sequence[str] | Callable[[dict[str, str]], list[str]],
        ask_planner: bool = False,
    ) -> PlayReport:
        """Load ``game`` (a game dict or a ``game.tw-pddl`` path) and play ``commands``.

        ``commands`` may be a function of the engine's id -> display-name map (ids are the
        lower-cased PDDL names), for walkthroughs built before the names are known.
        Raises :class:`VerificationError` unless the last command, and only it, wins.
        """
        if ask_planner and not self.planner:
            raise ValueError("this engine was built with planner=False")
        with restored_argv():
            t0 = time.perf_counter()
            self.env.load(game if isinstance(game, str) else dict(game))
            t1 = time.perf_counter()
            self.infos.policy_commands = ask_planner
            try:
                state = self.env.reset()
            finally:
                self.infos.policy_commands = False
            t2 = time.perf_counter()
        planner = list(state["policy_commands"]) if ask_planner else None
        if state["won"]:
            raise VerificationError("the game is won before any command")
        if callable(commands):
            names = {key: info.name for key, info in state["_entity_infos"].items()}
            commands = commands(names)
        commands = list(commands)
        if not commands:
            raise VerificationError("empty walkthrough")
        feedback = [state.feedback]
        with restored_argv():
            for i, command in enumerate(commands):
                if command not in state["admissible_commands"]:
                    raise VerificationError(
                        f"step {i + 1} {command!r} is not admissible; "
                        f"admissible: {state['admissible_commands']}"
                    )
                state, _, _ = self.env.step(command)
                feedback.append(state.feedback)
                last = i == len(commands) - 1
                if bool(state["won"]) != last:
                    where = "not won after the last" if last else f"won early at step {i + 1} of"
                    raise VerificationError(f"{where} {len(commands)} commands")
        t3 = time.perf_counter()
        return PlayReport(commands, planner, t1 - t0, t2 - t1, t3 - t2, feedback)
