"""The ALFWorld engines: ``fast`` (native, the default) and ``pddl`` (ALFWorld's own, the reference).

:func:`make_engine` builds either; both return :class:`EngineStep`-shaped results and are
compared step for step by ``tests/mvpo_envs/alfworld/test_fast_engine*.py``
(docs/alfworld_engine.md). Both read game files with :mod:`mvpo_envs.alfworld.game_file`, the
layer below them. The ``fast`` engine lives in :mod:`mvpo_envs.alfworld.fast` and
never imports TextWorld or the GPL planner; this module imports them only when the ``pddl``
engine (or :class:`CachedPddlEnv`) is first used.

The ``pddl`` engine is ALFWorld's own TextWorld PDDL engine, with the two caches that make it
faster.

docs/environments.md, "mvpo/ALFWorld-v0": the engine is ``textworld.envs.PddlEnv`` wrapped in
ALFWorld's ``AlfredDemangler`` and ``AlfredInfos``, with the domain and grammar of the game file.
We subclass ``PddlEnv`` and change *how* two things are computed, never *what*:

1. **PDDL translation cache.** ``PddlEnv.reset`` rebuilds its ``PddlState``, which translates
   the PDDL problem to SAS twice (``fast_downward.pddl2sas``), the bulk of a reset. The
   translation is a pure function of (domain, problem), so we keep it per game and hand it to
   ``PddlState`` instead of recomputing it. The planner's habit of rewriting ``sys.argv`` is
   undone too.
2. **Command-text cache.** After every step ``PddlEnv`` derives the text of every applicable
   action through the grammar (a TatSu parse per action). The text of an action depends only
   on the action's template and its arguments (ALFWorld's templates read only constant facts
   such as ``receptacleAtLocation``), so we derive each grounded action once per game.

``benchmarks/alfworld_env.py`` checks that observations and admissible lists are identical
to the uncached engine on the same games, and measures the speed-up.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from mvpo_abstraction.extras import require_extra
from mvpo_envs.alfworld.game_file import GameFileError, read_game_file


def check_game_data(data: dict[str, Any], source: str) -> None:
    """The checks of a game's PDDL both engines run before playing it (docs/alfworld_engine.md,
    "Bad game files"): every section of the domain and problem known, at least one action,
    a goal over declared predicates and objects. :class:`GameFileError` naming ``source``."""
    from mvpo_envs.alfworld.fast.errors import UnsupportedGameError
    from mvpo_envs.alfworld.fast.pddl import check_task

    try:
        check_task(data["pddl_domain"], data["pddl_problem"])
    except (GameFileError, UnsupportedGameError) as err:
        raise GameFileError(f"{source}: {err}") from None


def _check_textworld_logic(logic: Any, domain: str, source: str) -> None:
    """Refuse, before TextWorld ``eval``s anything, a grammar with an expression outside the
    whitelist (:mod:`mvpo_envs.alfworld.fast.expressions`): every ``{expr}`` of TextWorld's
    own parse of the rules, command templates and feedback rules is checked, and no name may
    be one of the globals TextWorld's ``eval`` would find. Every action of the domain needs
    its text and every ``#rule#`` named must exist (TextWorld would fail mid-game)."""
    require_extra("textworld", "pddl", "checking a TextWorld grammar")
    import textworld.envs.pddl.textgen as textgen

    from mvpo_envs.alfworld.fast.expressions import compile_expression
    from mvpo_envs.alfworld.fast.pddl import parse_domain

    texts = {name.lower() for name in logic.actions}
    for name in parse_domain(domain).actions:
        if name not in texts:
            raise GameFileError(f"{source}: grammar has no action {name!r} of the PDDL domain")
    todo: list[Any] = [
        sym for rules in logic.grammar._rules.values() for r in rules for sym in r.rhs
    ]
    for action in logic.actions.values():
        for text in (action.template, action.feedback_rule):
            todo.extend(textgen._parse_and_convert(text, rule_name="symbols"))
    reserved = frozenset(vars(textgen))
    rules = logic.grammar._rules
    todo.append(textgen.NonterminalSymbol("intro"))
    while todo:
        sym = todo.pop()
        if isinstance(sym, textgen.NonterminalSymbol) and str(sym.symbol) not in rules:
            name = "#" + str(sym.symbol) + "#"
            raise GameFileError(f"{source}: grammar uses {name!r}, a rule that does not exist")
        if isinstance(sym, textgen.EvalSymbol):
            try:
                compile_expression(str(sym.expression), reserved)
            except GameFileError as err:
                raise GameFileError(f"{source}: grammar: {err}") from None
        elif isinstance(sym, textgen.ConditionalSymbol):
            todo.append(sym.expression)
        elif isinstance(sym, textgen.ListSymbol):
            todo.append(sym.symbol)
            todo.extend(textgen.NonterminalSymbol(n) for n in ("list_empty", "list_separator"))
            todo.append(textgen.NonterminalSymbol("list_last_separator"))


def _textworld_logic(data: dict[str, Any], source: str) -> Any:
    """TextWorld's ``GameLogic`` of a game, checked; a grammar TextWorld cannot parse is one
    :class:`GameFileError` line naming ``source``."""
    import tatsu.exceptions
    import textworld.envs.pddl.logic as pddl_logic

    try:
        logic = pddl_logic.GameLogic(domain=data["pddl_domain"], grammar=data["grammar"])
    except (tatsu.exceptions.ParseException, ValueError, KeyError, TypeError, RecursionError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise GameFileError(f"{source}: grammar: TextWorld cannot parse it ({first})") from None
    _check_textworld_logic(logic, data["pddl_domain"], source)
    return logic


@contextlib.contextmanager
def _planner_exit(source: str):
    """Fast Downward's translator calls ``sys.exit`` (or fails an ``assert``) on PDDL it
    cannot translate: a :class:`GameFileError` naming the file instead of the end of the
    process or a traceback from inside the planner."""
    try:
        yield
    except (SystemExit, AssertionError) as exc:
        why = f"exit code {exc.code}" if isinstance(exc, SystemExit) else "a failed assertion"
        raise GameFileError(
            f"{source}: Fast Downward's translator refused the PDDL ({why})"
        ) from None


@contextlib.contextmanager
def restored_argv():
    """fast_downward's translator overwrites ``sys.argv``; put it back."""
    saved = list(sys.argv)
    try:
        yield
    finally:
        sys.argv[:] = saved


@functools.cache
def _reference() -> SimpleNamespace:
    """Import TextWorld, ALFWorld and the planner, and build the cached reference classes."""
    for extra_module in ("textworld", "alfworld"):  # one line naming the extra if missing
        require_extra(extra_module, "pddl", "the pddl engine (engine='pddl')")
    import textworld
    import textworld.envs.pddl.logic as pddl_logic
    import textworld.envs.pddl.textgen as pddl_textgen
    import textworld.logic as tw_logic
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
    from textworld.envs import PddlEnv

    class _TranslationCache:
        """Memoises ``fast_downward.pddl2sas`` per (domain, problem, optimize).

        Installed as the ``fast_downward`` name of ``textworld.envs.pddl.logic`` only while one of
        our engines builds its ``PddlState`` (see :meth:`CachedPddlEnv._new_pddl_state`), so other
        users of TextWorld in the same process see the original module.
        """

        def __init__(self, module: Any, max_games: int):
            self._module = module
            self._memo: OrderedDict[tuple[int, int, bool], Any] = OrderedDict()
            self.max_games = max_games

        def __getattr__(self, name: str) -> Any:
            return getattr(self._module, name)

        def pddl2sas(
            self, domain: str, problem: str, verbose: bool = False, optimize: bool = False
        ):
            key = (hash(domain), hash(problem), bool(optimize))
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
            with restored_argv():
                result = self._module.pddl2sas(domain, problem, verbose=verbose, optimize=optimize)
            self._memo[key] = result
            while len(self._memo) > 2 * self.max_games:
                self._memo.popitem(last=False)
            return result

    _TRANSLATIONS = _TranslationCache(pddl_logic.fast_downward, max_games=64)
    _LOGIC_CACHE: OrderedDict[tuple[int, int], Any] = OrderedDict()

    class _ParseMemo:
        """Memoises TextWorld's TatSu parse of grammar snippets and logic queries.

        ``PddlEnv`` re-parses the same few template strings (``take {o} from {r}``, the feedback
        rules, the conditions of the grammar) at every derivation. A parse is a pure function of
        the string; we keep each result and hand out a deep copy, as the grammar itself does with
        its pre-parsed rules (``ContextSensitiveGrammar.replace`` deep-copies ``rule.rhs``).
        """

        def __init__(self, parse):
            self._parse = parse
            self._memo: dict[tuple, Any] = {}

        def __call__(self, *args, **kwargs):
            key = (args, tuple(sorted(kwargs.items())))
            if key not in self._memo:
                self._memo[key] = self._parse(*args, **kwargs)
            return copy.deepcopy(self._memo[key])

    _TEXTGEN_PARSE = _ParseMemo(pddl_textgen._parse_and_convert)
    _LOGIC_PARSE = _ParseMemo(tw_logic._parse_and_convert)

    def _copy_context(context: dict) -> dict:
        """``textgen.copy_context`` without deep-copying entity infos.

        The original deep-copies the ``variables`` and ``mapping`` dicts, entity infos included;
        derivations only ever add keys to these dicts (``query`` updates them) and never mutate the
        entity infos or variables, so copying the dicts is enough. Equality of every observation
        with the original engine is checked by ``benchmarks/alfworld_env.py`` and the tests.
        """
        return {
            "state": context["state"],
            "facts": context["facts"],
            "variables": dict(context["variables"]),
            "mapping": dict(context["mapping"]),
            "entity_infos": context["entity_infos"],
        }

    @contextlib.contextmanager
    def _memoised_parsing():
        originals = (
            pddl_textgen._parse_and_convert,
            tw_logic._parse_and_convert,
            pddl_textgen.copy_context,
        )
        pddl_textgen._parse_and_convert, tw_logic._parse_and_convert = _TEXTGEN_PARSE, _LOGIC_PARSE
        pddl_textgen.copy_context = _copy_context
        try:
            yield
        finally:
            (
                pddl_textgen._parse_and_convert,
                tw_logic._parse_and_convert,
                pddl_textgen.copy_context,
            ) = originals

    class CachedPddlEnv(PddlEnv):
        """``PddlEnv`` with a per-game translation cache and a command-text cache."""

        def __init__(self, infos: textworld.EnvInfos | None = None, max_cached_games: int = 64):
            super().__init__(infos)
            # one translation and game-logic cache per process, shared by every engine in it (a
            # sync vector env's G copies of a game translate it once); the size is the largest
            # asked for
            _TRANSLATIONS.max_games = max(_TRANSLATIONS.max_games, max_cached_games)
            self._translations = _TRANSLATIONS
            self._command_text: dict[str, str] = {}

        @contextlib.contextmanager
        def _cached_translation(self):
            original = pddl_logic.fast_downward
            pddl_logic.fast_downward = self._translations
            try:
                yield
            finally:
                pddl_logic.fast_downward = original

        def _new_pddl_state(self):
            with self._cached_translation():
                return pddl_logic.PddlState(
                    self.downward_lib, self._game_data["pddl_problem"], self._logic
                )

        def load(self, filename_or_data) -> None:
            data = filename_or_data
            if not isinstance(filename_or_data, dict):
                data = read_game_file(filename_or_data)
                self._game_file = str(filename_or_data)
            else:
                self._game_file = None
            source = self._game_file or "game data"
            check_game_data(data, source)
            self._game_data = data
            self.walkthrough = data.get("walkthrough")
            key = (hash(data["pddl_domain"]), hash(data["grammar"]))
            logic = _LOGIC_CACHE.get(key)
            if logic is None:
                logic = _textworld_logic(data, source)
                _LOGIC_CACHE[key] = logic
                while len(_LOGIC_CACHE) > self._translations.max_games:
                    _LOGIC_CACHE.popitem(last=False)
            else:
                _LOGIC_CACHE.move_to_end(key)
            self._logic = logic
            self._command_text = {}
            self._pddl_state = self._new_pddl_state()
            self._entity_infos = self._get_entity_infos()

        def reset(self):
            # PddlEnv.reset rebuilds its PddlState from the problem text; with the cache installed
            # that reuses the translation. Everything else is PddlEnv's own code path.
            with self._cached_translation(), _memoised_parsing():
                return super().reset()

        def step(self, command: str):
            with _memoised_parsing():
                return super().step(command)

        def _gather_infos(self):
            """Same infos as ``PddlEnv._gather_infos``; grounded command texts come from a cache."""
            self.state["command_templates"] = sorted(
                {a.template for a in self._logic.actions.values()}
            )
            self.state["won"] = self._pddl_state.check_goal()
            self.state["lost"] = False
            self.state["_entity_infos"] = dict(self._entity_infos)
            self.state["_facts"] = list(self._pddl_state.facts)
            if self.request_infos.facts:
                self.state["facts"] = [
                    self._get_human_readable_fact(f) for f in self.state["_facts"]
                ]
            self.state["last_action"] = None
            self.state["_last_action"] = self._last_action
            actions = list(self._pddl_state.all_applicable_actions())
            self.state["_valid_actions"] = actions
            mapping = {k: info.name for k, info in self._entity_infos.items()}
            commands = []
            for action in actions:
                key = action.name + "(" + ",".join(v.name for v in action.mapping.values()) + ")"
                text = self._command_text.get(key)
                if text is None:
                    context = {
                        "state": self._pddl_state,
                        "facts": list(self._pddl_state.facts),
                        "variables": {
                            ph.name: self._entity_infos[var.name]
                            for ph, var in action.mapping.items()
                        },
                        "mapping": action.mapping,
                        "entity_infos": self._entity_infos,
                    }
                    action.command_template = self._logic.grammar.derive(
                        action.command_template, context
                    )
                    text = action.format_command(mapping)
                    self._command_text[key] = text
                commands.append(text)
            self.state["_valid_commands"] = commands
            self.state["admissible_commands"] = sorted(set(commands))
            if self.request_infos.moves:
                self.state["moves"] = self._moves
            if self.request_infos.policy_commands:
                self.state["policy_commands"] = self._pddl_state.replan(self._entity_infos)

    return SimpleNamespace(
        CachedPddlEnv=CachedPddlEnv,
        PddlEnv=PddlEnv,
        AlfredDemangler=AlfredDemangler,
        AlfredInfos=AlfredInfos,
        EnvInfos=textworld.EnvInfos,
    )


def __getattr__(name: str) -> Any:
    """``CachedPddlEnv`` is built on first use, so importing this module needs no TextWorld."""
    if name == "CachedPddlEnv":
        return _reference().CachedPddlEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class EngineStep:
    """What one engine call returns to the environment."""

    feedback: str
    won: bool
    admissible: list[str]
    facts: list[Any]
    entity_names: dict[str, str]


class AlfworldEngine:
    """One ALFWorld game engine: ``CachedPddlEnv`` + ``AlfredDemangler`` + ``AlfredInfos``.

    ``cached=False`` builds ALFWorld's plain ``PddlEnv`` instead (used by the benchmark and
    the equivalence tests).
    """

    def __init__(self, cached: bool = True, max_cached_games: int = 64):
        ref = _reference()
        infos = ref.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        with restored_argv():
            base = ref.CachedPddlEnv(infos, max_cached_games) if cached else ref.PddlEnv(infos)
        self._cached = cached
        self._env = ref.AlfredInfos(ref.AlfredDemangler(base, shuffle=False))
        self._loaded: str | None = None

    def load(self, game_file: str | os.PathLike) -> None:
        game_file = str(game_file)
        if game_file != self._loaded:
            if not self._cached:  # the same checks and clear errors for the uncached engine
                data = read_game_file(game_file)
                check_game_data(data, game_file)
                _textworld_logic(data, game_file)
            with restored_argv(), _planner_exit(game_file):
                self._env.load(game_file)
            self._loaded = game_file

    def reset(self) -> EngineStep:
        with restored_argv(), _planner_exit(self._loaded or "game data"):
            return self._pack(self._env.reset())

    def step(self, command: str) -> EngineStep:
        game_state, _, _ = self._env.step(command)
        return self._pack(game_state)

    def _pack(self, gs) -> EngineStep:
        infos = gs["_entity_infos"]
        return EngineStep(
            feedback=gs["feedback"],
            won=bool(gs["won"]),
            admissible=list(gs["admissible_commands"]),
            facts=gs["_facts"],
            entity_names={k: v.name for k, v in infos.items()},
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._env.close()


#: the engines ``gym.make("mvpo/ALFWorld-v0", engine=...)`` accepts
ENGINES = ("fast", "pddl")
DEFAULT_ENGINE = "fast"


def make_engine(engine: str = DEFAULT_ENGINE, max_cached_games: int = 64) -> Any:
    """``"fast"``: :class:`mvpo_envs.alfworld.fast.FastEngine` (native, no planner);
    ``"pddl"``: :class:`AlfworldEngine` (ALFWorld's own TextWorld engine, the reference)."""
    if engine == "fast":
        from mvpo_envs.alfworld.fast.engine import FastEngine

        return FastEngine()
    if engine == "pddl":
        return AlfworldEngine(cached=True, max_cached_games=max_cached_games)
    raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
