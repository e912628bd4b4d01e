"""Play generated games on an ALFWorld engine to verify their walkthroughs.

Two engines (docs/alfworld_generator.md, "Verification"):

* ``fast`` (:class:`FastVerifier`, the default where no planner is asked): the native engine of
  :mod:`mvpo_envs.alfworld.fast`, which returns, step for step, what ALFWorld's stack returns
  (the same admissible commands and ``won``; docs/alfworld_engine.md). No TextWorld, no planner.
* ``pddl`` (:class:`Engine`): exactly ALFWorld's stack, ``textworld.envs.PddlEnv`` wrapped in
  ``AlfredDemangler`` (display names such as ``potato 2``) and ``AlfredInfos``. Its own planner
  (``policy_commands``) can also be asked at reset, to confirm that it finds the game solvable.

A game passes when, from reset (not already won), every walkthrough command is admissible when
it is sent and the game is won on the last command and not before.

Trap: the planner's PDDL translator overwrites ``sys.argv``; it is restored around each call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mvpo_envs.alfworld.engine import restored_argv
from mvpo_envs.alfworld.fast.engine import FastEngine
from mvpo_envs.alfworld.fast.errors import UnsupportedGameError
from mvpo_envs.alfworld.game_file import GameFileError

#: the engines a walkthrough can be verified on
VERIFY_ENGINES = ("fast", "pddl")


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


Commands = Sequence[str] | Callable[[dict[str, str]], list[str]]
#: a game to verify: its game dict, or the path of its ``game.tw-pddl``
GameSource = Mapping[str, Any] | str


class Verifier(Protocol):
    """What the generator needs of an engine: play a walkthrough, report or raise."""

    planner: bool

    def play(
        self, game: GameSource, commands: Commands, ask_planner: bool = False
    ) -> PlayReport: ...


def _check_play(
    won_at_reset: bool,
    commands: Commands,
    names: Mapping[str, str],
    admissible: Sequence[str],
    step: Callable[[str], tuple[bool, str, Sequence[str]]],
    feedback: list[str],
) -> list[str]:
    """The walkthrough rule shared by both engines; ``step`` returns (won, feedback, admissible)."""
    if won_at_reset:
        raise VerificationError("the game is won before any command")
    if callable(commands):
        commands = commands(dict(names))
    commands = list(commands)
    if not commands:
        raise VerificationError("empty walkthrough")
    for i, command in enumerate(commands):
        if command not in admissible:
            raise VerificationError(
                f"step {i + 1} {command!r} is not admissible; admissible: {list(admissible)}"
            )
        won, text, admissible = step(command)
        feedback.append(text)
        last = i == len(commands) - 1
        if won != last:
            where = "not won after the last" if last else f"won early at step {i + 1} of"
            raise VerificationError(f"{where} {len(commands)} commands")
    return commands


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
    """One ALFWorld PDDL engine (the reference, ``pddl``), reused from game to game.

    ``cached=True`` (default) uses :class:`mvpo_envs.alfworld.engine.CachedPddlEnv`, ALFWorld's
    ``PddlEnv`` with the translation and command-text caches (same observations, about twice
    as fast on whole rooms); ``cached=False`` the plain ``PddlEnv``. ``planner=False`` makes
    an engine that cannot be asked for the planner's plan and loads games faster
    (:class:`_NoReplanTranslations`). TextWorld is imported when the first one is built.
    """

    def __init__(self, cached: bool = True, planner: bool = True) -> None:
        if not planner and not cached:
            raise ValueError("planner=False needs cached=True")
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        from textworld.envs import PddlEnv

        from mvpo_envs.alfworld.engine import CachedPddlEnv

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

    def play(self, game: GameSource, commands: Commands, ask_planner: bool = False) -> PlayReport:
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
        feedback = [state.feedback]

        def step(command: str) -> tuple[bool, str, Sequence[str]]:
            nonlocal state
            state, _, _ = self.env.step(command)
            return bool(state["won"]), state.feedback, state["admissible_commands"]

        names = {key: info.name for key, info in state["_entity_infos"].items()}
        with restored_argv():
            played = _check_play(
                bool(state["won"]), commands, names, state["admissible_commands"], step, feedback
            )
        t3 = time.perf_counter()
        return PlayReport(played, planner, t1 - t0, t2 - t1, t3 - t2, feedback)


class FastVerifier:
    """The native engine (``fast``) behind :class:`Engine`'s ``play``; it has no planner.

    A game the native engine refuses (:class:`UnsupportedGameError`, a bad game file) is an
    error of the generator, not a failed draw: it is raised, never redrawn around, so the games
    cannot depend on which engine verified them.
    """

    planner = False

    def __init__(self) -> None:
        self.engine = FastEngine()

    def play(self, game: GameSource, commands: Commands, ask_planner: bool = False) -> PlayReport:
        """As :meth:`Engine.play`; ``ask_planner`` is refused (no planner)."""
        if ask_planner:
            raise ValueError("the fast engine has no planner; verify on the 'pddl' engine")
        t0 = time.perf_counter()
        try:
            if isinstance(game, str):
                self.engine.load(game)
            else:
                self.engine.load_data(dict(game))
            t1 = time.perf_counter()
            state = self.engine.reset()
        except (UnsupportedGameError, GameFileError) as err:
            raise RuntimeError(f"the fast engine cannot play a generated game: {err}") from err
        t2 = time.perf_counter()
        feedback = [state.feedback]

        def step(command: str) -> tuple[bool, str, Sequence[str]]:
            out = self.engine.step(command)
            return out.won, out.feedback, out.admissible

        played = _check_play(
            state.won, commands, state.entity_names, state.admissible, step, feedback
        )
        t3 = time.perf_counter()
        return PlayReport(played, None, t1 - t0, t2 - t1, t3 - t2, feedback)


def make_verifier(kind: str, planner: bool = False) -> Verifier:
    """The engine ``kind`` (``fast`` or ``pddl``); ``planner``: it must be able to plan."""
    if kind == "fast":
        if planner:
            raise ValueError(
                "the fast engine has no planner, and this preset checks the planner's plan: "
                "use --verify-engine pddl"
            )
        return FastVerifier()
    if kind == "pddl":
        return Engine(planner=planner)
    raise ValueError(f"unknown verify engine {kind!r}; use one of {list(VERIFY_ENGINES)}")
