"""The native ALFWorld engine: ALFWorld's game rules and text without TextWorld or a planner.

docs/alfworld_engine.md. :class:`FastEngine` has the interface of
:class:`mvpo_envs.alfworld.engine.AlfworldEngine` (``load`` / ``reset`` / ``step`` returning an
``EngineStep``) and reproduces, step for step, what ALFWorld's stack returns
(``PddlEnv`` + ``AlfredDemangler`` + ``AlfredInfos``): the same feedback text, the same
admissible commands (sorted, without duplicates), the same ``won`` and the same facts.
A game is parsed once per process (:func:`load_game`, cached by content); a reset copies the
initial fact store.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from dataclasses import dataclass, field

from mvpo_envs.alfworld.fast.actions import (
    EXACT_NEGATIONS,
    FLUENTS,
    ActionModel,
    Grounding,
    check_domain,
)
from mvpo_envs.alfworld.fast.errors import UnsupportedGameError
from mvpo_envs.alfworld.fast.facts import Fact, FactStore, Placeholder
from mvpo_envs.alfworld.fast.goal import Goal
from mvpo_envs.alfworld.fast.grammar import ActionText, Entity, Grammar, parse_document
from mvpo_envs.alfworld.fast.names import demangle_all
from mvpo_envs.alfworld.fast.pddl import (
    Domain,
    check_goal,
    check_init,
    parse_domain,
    parse_problem,
)
from mvpo_envs.alfworld.game_file import GameFileError, read_game_file

NOTHING_HAPPENS = "Nothing happens."


@dataclass
class Logic:
    """What a (domain, grammar) pair gives: the action texts, their parameters, the grammar."""

    texts: dict[str, ActionText]
    params: dict[str, list[tuple[str, str]]]
    grammar: Grammar
    static_templates: set[str]
    domain: Domain


@dataclass
class Game:
    """A parsed game: its logic, initial facts, entities, goal and action model."""

    logic: Logic
    initial: FactStore
    entities: dict[str, Entity]
    names: dict[str, str]
    goal: Goal
    model: ActionModel
    walkthrough: list[str] | None
    #: (first step, its command table, its goal key), filled by the first reset
    start: tuple | None = None
    #: command text of each grounded action whose template reads only constant facts,
    #: shared by every engine of the process playing this game; keyed by the action and the
    #: arguments its template reads (see ``_text_key``)
    command_text: dict = field(default_factory=dict)
    #: action -> positions of the arguments its template reads, or None: all of them
    text_args: dict = field(default_factory=dict)
    #: (agent, location) -> {"go to ..." text: grounding}
    goto_commands: dict = field(default_factory=dict)
    #: memo of the state-determined outputs (docs/alfworld_engine.md, "Speed"): each fact of a
    #: changing predicate gets a bit; a state is the int of its facts' bits, an exact key
    bits: dict = field(default_factory=dict)
    #: state -> (command table, sorted admissible tuple, won)
    states: dict = field(default_factory=dict)
    #: (feedback text, grounding, the state's facts of the changing predicates the text reads)
    #: -> feedback (after the action)
    feedbacks: dict = field(default_factory=dict)
    #: predicate -> the bits of its facts seen so far
    pred_bits: dict = field(default_factory=dict)
    #: text -> the changing predicates deriving it may read
    reads: dict = field(default_factory=dict)
    #: grounding -> its effects as (atom, positive, bit of the atom, bit of its negation)
    effects: dict = field(default_factory=dict)


#: entries (states + feedbacks) the memos of all cached games may hold before they are cleared
MEMO_LIMIT = 32_768
#: ``False`` turns the memo off (every state derived anew; the benchmark's "cold" line)
MEMO_ENABLED = True
_memo_entries = 0

_LOGICS: OrderedDict[str, Logic] = OrderedDict()
_GAMES: OrderedDict[tuple[str, str], Game] = OrderedDict()
MAX_CACHED_GAMES = 256


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


#: one reader and one error for both engines (the module imports no TextWorld at load time)
read_game = read_game_file


def build_logic(domain: str, grammar_text: str) -> Logic:
    """Check the domain against ALFWorld's and parse the grammar (cached per content)."""
    key = _digest(domain) + _digest(grammar_text)
    logic = _LOGICS.get(key)
    if logic is not None:
        _LOGICS.move_to_end(key)
        return logic
    parsed = parse_domain(domain)
    if parsed.unsupported:
        raise UnsupportedGameError(f"pddl_domain uses {parsed.unsupported}")
    actions = parsed.actions
    check_domain(actions)
    texts, table = parse_document(grammar_text)
    for name in actions:
        if name not in texts:
            raise UnsupportedGameError(f"grammar has no action {name!r} of the PDDL domain")
    grammar = Grammar.from_table(table)
    grammar.check(texts)
    for rules in grammar.rules.values():
        for rule in rules:
            _check_negations(rule.condition)
    static = set()
    for name, text in texts.items():
        if grammar.static_predicates_only(text.template, FLUENTS | {"not_" + f for f in FLUENTS}):
            static.add(name)
    logic = Logic(texts, {n: p for n, (_, p) in actions.items()}, grammar, static, parsed)
    _LOGICS[key] = logic
    while len(_LOGICS) > 16:
        _LOGICS.popitem(last=False)
    return logic


def _check_negations(query) -> None:
    for pred, _ in query or ():
        if pred.startswith("not_") and pred not in EXACT_NEGATIONS:
            raise UnsupportedGameError(
                f"grammar reads {pred!r}, a negated fact the fast engine does not track exactly"
            )


def _bit(game: Game, key: tuple[str, ...]) -> int:
    bit = game.bits.get(key)
    if bit is None:
        bit = game.bits[key] = 1 << len(game.bits)
        game.pred_bits[key[0]] = game.pred_bits.get(key[0], 0) | bit
    return bit


def _projection(game: Game, text: str, state: int) -> int:
    """The part of ``state`` that deriving ``text`` can read: exactly the facts of the changing
    predicates it reads (the constant facts and the entities are the game's)."""
    preds = game.reads.get(text)
    if preds is None:
        preds = game.reads[text] = tuple(
            sorted(
                p
                for p in game.logic.grammar.predicates_read(text)
                if p in FLUENTS or p.startswith("not_")
            )
        )
    mask = 0
    for p in preds:
        mask |= game.pred_bits.get(p, 0)
    return state & mask


def _memo_room(n: int) -> None:
    """Count ``n`` new memo entries; clear every game's memo past :data:`MEMO_LIMIT`."""
    global _memo_entries
    _memo_entries += n
    if _memo_entries > MEMO_LIMIT:
        for game in _GAMES.values():
            game.states.clear()
            game.feedbacks.clear()
        _memo_entries = n


def load_game(data: dict, source: str = "game data") -> Game:
    """Parse a game's data once per process (cached by content); an error names ``source``
    (the game file) and what is wrong, in one line."""
    try:
        return _load_game(data)
    except (UnsupportedGameError, GameFileError) as err:
        raise type(err)(f"{source}: {err}") from None


def _load_game(data: dict) -> Game:
    missing = [
        k for k in ("pddl_domain", "grammar", "pddl_problem") if not isinstance(data.get(k), str)
    ]
    if missing:
        raise GameFileError(f"missing or non-string key(s) {missing}")
    key = (_digest(data["pddl_domain"] + data["grammar"]), _digest(data["pddl_problem"]))
    game = _GAMES.get(key)
    if game is not None:
        _GAMES.move_to_end(key)
        return game
    logic = build_logic(data["pddl_domain"], data["grammar"])
    problem = parse_problem(data["pddl_problem"])
    check_init([list(atom) for atom in problem.init], logic.domain, problem.types)
    check_goal(problem, logic.domain)
    store = FactStore(problem.types)
    for atom in problem.init:
        store.add(atom)
    store.mutable = frozenset(FLUENTS)
    ids = {a for atom in problem.init for a in atom[1:]}
    agents = sorted(n for n, t in problem.types.items() if t == "agent")
    if not agents or not set(agents) <= ids:
        raise GameFileError(
            "pddl_problem has no agent, or an agent in no :init fact: nobody could play it"
        )
    names = demangle_all(ids)
    entities = {i: Entity(i, names[i], problem.types[i]) for i in ids}
    model = ActionModel(problem.types, set(logic.params), store)
    game = Game(
        logic, store, entities, names, Goal(problem.goal, problem.types), model,
        data.get("walkthrough"),
    )  # fmt: skip
    # queries of the grammar read these predicates: refuse mixed-type facts now, not mid-game
    _GAMES[key] = game
    while len(_GAMES) > MAX_CACHED_GAMES:
        _GAMES.popitem(last=False)
    return game


@dataclass
class FastStep:
    """What one engine call returns to the environment (the fields of ``EngineStep``)."""

    feedback: str
    won: bool
    admissible: list[str]
    facts: list[Fact]
    entity_names: dict[str, str]


class FastEngine:
    """One game engine on the native rules; the interface of ``AlfworldEngine``."""

    def __init__(self) -> None:
        self._game: Game | None = None
        self._loaded: str | None = None
        self._store: FactStore | None = None
        self._commands: dict[str, Grounding] = {}
        self._won = False
        #: versions of the goal's predicates when ``_goal_won`` was computed (this store only)
        self._goal_key: tuple | None = None
        self._goal_won = False
        self._state = 0
        self.moves = 0

    @property
    def game(self) -> Game:
        if self._game is None:
            raise RuntimeError("FastEngine: load a game first")
        return self._game

    def load(self, game_file: str | os.PathLike) -> None:
        game_file = str(game_file)
        if game_file != self._loaded:
            self._game = load_game(read_game(game_file), game_file)
            self._loaded = game_file
            self._store = None

    def load_data(self, data: dict) -> None:
        """Load a game from its already-read JSON data."""
        self._game = load_game(data)
        self._loaded = None
        self._store = None

    def reset(self) -> FastStep:
        try:
            return self._reset()
        except (UnsupportedGameError, GameFileError) as err:
            raise type(err)(f"{self._loaded or 'game data'}: {err}") from None

    def step(self, command: str) -> FastStep:
        try:
            return self._step(command)
        except (UnsupportedGameError, GameFileError) as err:
            raise type(err)(f"{self._loaded or 'game data'}: {err}") from None

    def _reset(self) -> FastStep:
        game = self.game
        self._store = game.initial.copy()
        self._goal_key = None
        self.moves = 0
        if game.start is None:
            mutable = game.initial.mutable or frozenset()
            self._state = 0
            for key in game.initial.keys():
                if key[0] in mutable or key[0].startswith("not_"):
                    self._state |= _bit(game, key)
            # the intro and the first admissible list depend only on the initial state
            feedback = game.logic.grammar.derive("#intro#", self._store, game.entities, {})
            step = self._pack(feedback)
            game.start = (step, self._commands, self._state)
            return step
        step, commands, self._state = game.start
        self._commands = commands
        self._won = step.won
        return FastStep(
            step.feedback, step.won, list(step.admissible), self._store.fact_list(), game.names
        )

    def _step(self, command: str) -> FastStep:
        if self._store is None:
            raise RuntimeError("FastEngine: reset before step")
        command = command.strip()
        grounding = self._commands.get(command)
        if grounding is None:
            return self._pack(NOTHING_HAPPENS)
        game = self.game
        effects = game.effects.get(grounding)
        if effects is None:
            effects = game.effects[grounding] = tuple(
                (atom, positive, _bit(game, atom), _bit(game, ("not_" + atom[0],) + atom[1:]))
                for atom, positive in game.model.effects(*grounding)
            )
        state = self._state
        store = self._store
        for atom, positive, bit, neg_bit in effects:
            # as FactStore.apply: a positive effect adds p(x) and drops not_p(x), and back
            store.apply(atom, positive)
            state = (state | bit) & ~neg_bit if positive else (state | neg_bit) & ~bit
        self._state = state
        self.moves += 1
        text = game.logic.texts[grounding[0]].feedback
        key = (text, grounding, _projection(game, text, state)) if MEMO_ENABLED else None
        feedback = game.feedbacks.get(key) if MEMO_ENABLED else None
        if feedback is None:
            feedback = game.logic.grammar.derive(
                text, store, game.entities, self._mapping(grounding)
            )
            if MEMO_ENABLED:
                game.feedbacks[key] = feedback
                _memo_room(1)
        return self._pack(feedback)

    # -- helpers --------------------------------------------------------------------------------
    def _mapping(self, grounding: Grounding) -> dict[Placeholder, str]:
        name, args = grounding
        return {ph: a for ph, a in zip(self.game.logic.params[name], args, strict=True)}

    def _text_key(self, grounding: Grounding) -> tuple:
        """A static template's text depends on the constant facts and on the arguments it reads:
        those of its queries and ``{expr}`` names. When every query placeholder is an action
        parameter (no new binding, so the other arguments exclude no entity), the text is
        keyed by those arguments only: "go to sinkbasin 1" is one text from every place."""
        game = self.game
        name, args = grounding
        try:
            positions = game.text_args[name]
        except KeyError:
            params = game.logic.params[name]
            placeholders, names = game.logic.grammar.context_read(game.logic.texts[name].template)
            positions = None
            if placeholders <= set(params):
                positions = tuple(
                    i for i, ph in enumerate(params) if ph in placeholders or ph[0] in names
                )
            game.text_args[name] = positions
        if positions is None:
            return grounding
        return name, tuple(args[i] for i in positions)

    def _text(self, grounding: Grounding) -> str:
        game = self.game
        text = game.command_text.get(grounding)
        if text is not None:
            return text
        name = grounding[0]
        static = name in game.logic.static_templates
        key = self._text_key(grounding) if static else None
        text = game.command_text.get(key) if static else None
        if text is None:
            text = game.logic.grammar.derive(
                game.logic.texts[name].template,
                self._store,
                game.entities,
                self._mapping(grounding),
            )
            if static:
                game.command_text[key] = text
        if static:
            game.command_text[grounding] = text
        return text

    def _pack(self, feedback: str) -> FastStep:
        game = self.game
        store = self._store
        assert store is not None
        memo = game.states.get(self._state) if MEMO_ENABLED else None
        if memo is None:
            memo = self._compute_state()
            if MEMO_ENABLED:
                game.states[self._state] = memo
                _memo_room(1)
        self._commands, admissible, self._won = memo
        return FastStep(
            feedback=feedback,
            won=self._won,
            admissible=list(admissible),
            facts=store.fact_list(),
            entity_names=game.names,
        )

    def _compute_state(self) -> tuple[dict[str, Grounding], tuple[str, ...], bool]:
        """The command table, the sorted admissible commands and ``won`` of the current state."""
        game = self.game
        store = self._store
        assert store is not None
        model = game.model
        cached_goto = "gotolocation" in game.logic.static_templates
        commands: dict[str, Grounding] = {}
        if cached_goto:
            # "go to" commands depend only on where the agents stand: one table per place
            for place in model.agent_locations(store):
                table = game.goto_commands.get(place)
                if table is None:
                    table = {self._text(g): g for g in model.gotos(store, *place)}
                    if len(table) != sum(1 for _ in model.gotos(store, *place)):
                        raise UnsupportedGameError(
                            f"two 'go to' actions share a command at {place}"
                        )
                    game.goto_commands[place] = table
                commands.update(table)
        for grounding in model.applicable(store, with_goto=not cached_goto):
            text = self._text(grounding)
            first = commands.get(text)
            if first is None:
                commands[text] = grounding
            elif first != grounding and model.effects(*first) != model.effects(*grounding):
                raise UnsupportedGameError(
                    f"command {text!r} names two actions with different effects "
                    f"({first[0]}{first[1]} and {grounding[0]}{grounding[1]})"
                )
        key = tuple(store.versions[p] for p in game.goal.predicates)
        if key != self._goal_key:  # the goal is re-evaluated only when a fact it reads changed
            self._goal_won, self._goal_key = game.goal.holds(store), key
        return commands, tuple(sorted(commands)), self._goal_won

    def facts_by_predicate(self) -> dict[str, list[tuple[str, ...]]]:
        """The current facts grouped by predicate (raw ids), without building fact objects:
        what ``state_from_facts`` groups the fact list into, ready-made."""
        if self._store is None:
            raise RuntimeError("FastEngine: reset first")
        return self._store.by_predicate()

    def close(self) -> None:
        self._store = None
