"""ALFWorld's text grammar, read from the game file and derived natively.

docs/alfworld_engine.md, "How the fast engine works". The ``grammar`` entry of a
``game.tw-pddl`` is TextWorld's logic document (``alfred.twl2`` with the task filled in): a
top-level ``grammar :: \"\"\"{json}\"\"\";``
and one ``action Name { template :: "..."; feedback :: "#...#"; grammar :: \"\"\"{json}\"\"\"; }``
per action. Each rule's right-hand side is a sequence of symbols in TextWorld's
context-sensitive-grammar syntax: literal text, ``#rule#``, ``{expr}``, ``{expr | query}`` and
``[{... | query}]`` (a list joined with ``#list_separator#`` / ``#list_last_separator#``).
Derivation follows ``textworld.envs.pddl.textgen.ContextSensitiveGrammar.derive``: a stack of
symbols, the first rule whose condition holds, query results in TextWorld's order, except
that ``{expr}`` is never ``eval``'d: it must pass the whitelist of
:mod:`~mvpo_envs.alfworld.fast.expressions` (docs/alfworld_engine.md, "Grammar expressions"),
checked for the whole grammar at load (:meth:`Grammar.check`).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from mvpo_envs.alfworld.fast.errors import UnsupportedGameError
from mvpo_envs.alfworld.fast.expressions import Expression, compile_expression
from mvpo_envs.alfworld.fast.facts import FactStore, Literal, Placeholder, parse_query
from mvpo_envs.alfworld.game_file import GameFileError
from mvpo_envs.data_files import DataFileError, loads_json

# -- the logic document -------------------------------------------------------------------------
_DOC_TOKEN = re.compile(
    r'\s*(?:(?P<triple>"""(?:.|\n)*?""")|(?P<str>"[^"\n]*")|(?P<word>[\w\-]+)|(?P<op>::|[{};]))'
)


@dataclass
class ActionText:
    """An action's command template and feedback rule (from ``action Name {...}``)."""

    name: str
    template: str
    feedback: str


def _tokens(text: str):
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _DOC_TOKEN.match(text, pos)
        if m is None:
            raise UnsupportedGameError(f"grammar document: cannot read {text[pos : pos + 40]!r}")
        pos = m.end()
        kind = m.lastgroup
        yield kind, m.group(kind)


def _json_block(triple: str, strip_comments: bool) -> dict[str, Any]:
    body = textwrap.dedent(triple[3:-3])
    if strip_comments:
        body = "\n".join(ln for ln in body.split("\n") if not ln.lstrip().startswith("#"))
    try:
        data = loads_json(body, "grammar document: a grammar block")
    except DataFileError as exc:
        raise GameFileError(str(exc)) from None
    if not isinstance(data, dict):
        raise UnsupportedGameError("grammar document: a grammar block is not a JSON object")
    return data


def parse_document(text: str) -> tuple[dict[str, ActionText], dict[str, list[dict[str, Any]]]]:
    """Actions (by lower-cased name) and the merged rule table, as TextWorld's ``GameLogic``."""
    toks = list(_tokens(text))
    actions: dict[str, ActionText] = {}
    rules: dict[str, list[dict[str, Any]]] = {}
    i = 0

    def expect(kind: str, value: str | None = None) -> str:
        nonlocal i
        if i >= len(toks) or toks[i][0] != kind or (value is not None and toks[i][1] != value):
            got = toks[i][1] if i < len(toks) else "end of text"
            raise UnsupportedGameError(f"grammar document: expected {value or kind}, got {got!r}")
        i += 1
        return toks[i - 1][1]

    while i < len(toks):
        word = expect("word")
        if word == "grammar":
            expect("op", "::")
            rules.update(_json_block(expect("triple"), strip_comments=False))
            expect("op", ";")
        elif word == "action":
            name = expect("word")
            expect("op", "{")
            fields: dict[str, str] = {}
            while i < len(toks) and toks[i] != ("op", "}"):
                key = expect("word")
                expect("op", "::")
                kind, value = toks[i] if i < len(toks) else ("end", "")
                if kind not in ("str", "triple"):
                    raise UnsupportedGameError(f"grammar document: action {name} {key} value")
                i += 1
                expect("op", ";")
                fields[key] = value
            expect("op", "}")
            if "template" not in fields or "feedback" not in fields:
                raise UnsupportedGameError(f"grammar document: action {name} lacks a template")
            actions[name.lower()] = ActionText(
                name, fields["template"][1:-1], fields["feedback"][1:-1]
            )
            if "grammar" in fields:
                block = fields["grammar"]
                if not block.startswith('"""'):
                    block = '"""' + block[1:-1] + '"""'
                rules.update(_json_block(block, strip_comments=True))
        else:
            raise UnsupportedGameError(f"grammar document: unsupported entry {word!r}")
    return actions, rules


# -- symbols ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sym:
    """A grammar symbol: ``kind`` in {"t" terminal, "n" nonterminal, "e" eval, "c" conditional,
    "l" list}; ``text`` the literal, rule name or expression; ``sub`` a conditional's
    expression; ``given`` its query."""

    kind: str
    text: str = ""
    sub: Sym | None = None
    given: tuple[Literal, ...] | None = None


_TAG = re.compile(r"[\w()/!<>\-\s,.]+")
_GIVEN = re.compile(r"[^;|{}\n\[\]#]+")
_STATEMENT = re.compile(r"[^|\[\]{}\n<>]+")
_LITERAL = re.compile(r'[^;|"<>\[\]#{}]*')
_BAR = re.compile(r"\s*\|\s*")
_EOL_COMMENT = re.compile(r"(//.*|\s*)\n?")
_LIST_RULES = ("list_empty", "list_separator", "list_last_separator")


def parse_symbols(text: str) -> tuple[Sym, ...]:
    """Parse a right-hand side as TextWorld's ``symbols`` rule (stops where no symbol matches)."""
    if "\t" in text:
        raise UnsupportedGameError(f"grammar rule {text[:40]!r} contains a tab")
    out: list[Sym] = []
    pos = 0
    while pos < len(text):
        if pos == 0 or text[pos - 1] == "\n":
            # TextWorld's parser skips an "end-of-line comment" ``^(//.*|\s*)\n?`` before a
            # symbol that starts a line: a leading newline of a rule is dropped
            pos = _EOL_COMMENT.match(text, pos).end()
            if pos >= len(text):
                break
        sym, end = _symbol(text, pos)
        if sym is None or end == pos:
            break
        out.append(sym)
        pos = end
    return tuple(out)


def _symbol(text: str, pos: int) -> tuple[Sym | None, int]:
    ch = text[pos]
    if ch == "[":
        sym, end = _conditional(text, pos + 1)
        if sym is not None and end < len(text) and text[end] == "]":
            return Sym("l", sub=sym), end + 1
        return None, pos
    if ch == "{":
        return _conditional(text, pos)
    if ch == "#":
        return _nonterminal(text, pos)
    if ch == '"':
        m = _LITERAL.match(text, pos + 1)
        end = m.end()
        if end < len(text) and text[end] == '"':
            return Sym("t", m.group()), end + 1
        return None, pos
    m = _LITERAL.match(text, pos)
    return (Sym("t", m.group()), m.end()) if m.end() > pos else (None, pos)


def _nonterminal(text: str, pos: int) -> tuple[Sym | None, int]:
    m = _TAG.match(text, pos + 1)
    if m is None or m.end() >= len(text) or text[m.end()] != "#":
        return None, pos
    return Sym("n", m.group()), m.end() + 1


def _conditional(text: str, pos: int) -> tuple[Sym | None, int]:
    if pos >= len(text) or text[pos] != "{":
        return None, pos
    p = pos + 1
    expr, end = (None, p)
    if p < len(text) and text[p] == "#":
        expr, end = _nonterminal(text, p)
    if expr is None:
        m = _STATEMENT.match(text, p)
        if m is None:
            return None, pos
        expr, end = Sym("e", m.group()), m.end()
    given = None
    m = _BAR.match(text, end)
    if m is not None:
        g = _GIVEN.match(text, m.end())
        if g is not None:
            given = parse_query(g.group())
            end = g.end()
    if end >= len(text) or text[end] != "}":
        return None, pos
    return Sym("c", sub=expr, given=given), end + 1


# -- derivation ---------------------------------------------------------------------------------
class Entity:
    """What a grammar expression sees for an entity (TextWorld's ``EntityInfo`` fields)."""

    __slots__ = ("id", "name", "type", "definite", "indefinite")

    def __init__(self, id_: str, name: str, type_: str):
        self.id = id_
        self.name = name
        self.type = type_
        self.definite = "the"
        self.indefinite = "a"

    def __str__(self) -> str:
        return self.name


@dataclass
class Rule:
    condition: tuple[Literal, ...] | None
    rhs: tuple[Sym, ...]


@dataclass
class Grammar:
    """The merged rule table with parsed right-hand sides, and cached expression code."""

    rules: dict[str, list[Rule]]
    _code: dict[str, Expression] = field(default_factory=dict)
    _parsed: dict[str, tuple[Sym, ...]] = field(default_factory=dict)

    @classmethod
    def from_table(cls, table: dict[str, Any]) -> Grammar:
        """Rules from the JSON table: ``{name: [{"rhs": str, "condition": str?}, ...]}``."""
        rules: dict[str, list[Rule]] = {}
        for name, alternatives in table.items():
            if not isinstance(alternatives, list) or not alternatives:
                raise GameFileError(f"grammar: rule {name!r} is not a non-empty list")
            rules[name] = []
            for i, alt in enumerate(alternatives):
                where = f"grammar: rule {name!r} alternative {i}"
                if not isinstance(alt, dict) or not isinstance(alt.get("rhs"), str):
                    raise GameFileError(f"{where}: expected an object with a string 'rhs'")
                condition = alt.get("condition")
                if condition is not None and not isinstance(condition, str):
                    raise GameFileError(f"{where}: 'condition' is not a string")
                rules[name].append(
                    Rule(parse_query(condition) if condition else None, parse_symbols(alt["rhs"]))
                )
        return cls(rules)

    def expression(self, text: str) -> Expression:
        """The checked expression of ``{text}`` (compiled once)."""
        code = self._code.get(text)
        if code is None:
            code = self._code[text] = compile_expression(text)
        return code

    def check(self, texts: dict[str, ActionText]) -> None:
        """Refuse at load what no derivation may use: every ``{expr}`` of every rule, command
        template and feedback must pass the whitelist (:mod:`.expressions`), and every
        ``#rule#`` they name must exist (``#intro#`` too)."""
        sources: list[tuple[str, tuple[Sym, ...]]] = [("rule '#intro#'", self.symbols("#intro#"))]
        for name, alts in self.rules.items():
            sources.extend((f"rule {'#' + name + '#'!r}", rule.rhs) for rule in alts)
        for text in texts.values():
            sources.append((f"action {text.name} template", self.symbols(text.template)))
            sources.append((f"action {text.name} feedback", self.symbols(text.feedback)))
        for where, syms in sources:
            todo = list(syms)
            while todo:
                s = todo.pop()
                if s.kind == "l":
                    todo.extend(Sym("n", n) for n in _LIST_RULES)
                    todo.append(s.sub)  # type: ignore[arg-type]
                elif s.kind == "c":
                    if s.sub is not None:
                        todo.append(s.sub)
                elif s.kind == "n" and s.text not in self.rules:
                    raise GameFileError(
                        f"grammar: {where} uses {'#' + s.text + '#'!r}, a rule that does not exist"
                    )
                elif s.kind == "e":
                    try:
                        self._code[s.text] = compile_expression(s.text)
                    except GameFileError as err:
                        raise GameFileError(f"grammar: {where}: {err}") from None

    def symbols(self, text: str) -> tuple[Sym, ...]:
        parsed = self._parsed.get(text)
        if parsed is None:
            parsed = self._parsed[text] = parse_symbols(text)
        return parsed

    def _reachable(self, text: str) -> tuple[list[tuple[Literal, ...] | None], list[str]]:
        """What deriving ``text`` can reach, whichever alternatives apply (list separators
        included): the conditions (of every rule it can reach, and the queries of its
        conditionals) and the code of its ``{expr}`` symbols."""
        seen: set[str] = set()
        conditions: list[tuple[Literal, ...] | None] = []
        expressions: list[str] = []
        todo = list(self.symbols(text))
        while todo:
            s = todo.pop()
            if s.kind == "n":
                if s.text not in seen:
                    seen.add(s.text)
                    for rule in self.rules.get(s.text, []):
                        conditions.append(rule.condition)
                        todo.extend(rule.rhs)
            elif s.kind == "e":
                expressions.append(s.text)
            elif s.kind in ("c", "l"):
                cond = s if s.kind == "c" else s.sub
                assert cond is not None
                if s.kind == "l":
                    todo.extend(Sym("n", n) for n in _LIST_RULES)
                conditions.append(cond.given)
                if cond.sub is not None:
                    todo.append(cond.sub)
        return conditions, expressions

    def predicates_read(self, text: str) -> frozenset[str]:
        """Every predicate deriving ``text`` may read: rule conditions and queries of every
        rule it can reach (whichever alternatives apply), list separators included."""
        conditions, _ = self._reachable(text)
        return frozenset(p for given in conditions for p, _ in given or ())

    def context_read(self, text: str) -> tuple[frozenset[Placeholder], frozenset[str]]:
        """What deriving ``text`` can read of its context: the placeholders of every query and
        rule condition it can reach, and every name its ``{expr}`` code can look up."""
        conditions, expressions = self._reachable(text)
        placeholders = {ph for given in conditions for _, phs in given or () for ph in phs}
        names = {n for code in expressions for n in self.expression(code).names}
        return frozenset(placeholders), frozenset(names)

    def static_predicates_only(self, text: str, fluents: set[str]) -> bool:
        """Whether deriving ``text`` can only read predicates outside ``fluents``."""
        seen: set[str] = set()

        def walk(syms: tuple[Sym, ...]) -> bool:
            for s in syms:
                if s.kind == "n":
                    if s.text in seen:
                        continue
                    seen.add(s.text)
                    for rule in self.rules.get(s.text, []):
                        if rule.condition and any(p in fluents for p, _ in rule.condition):
                            return False
                        if not walk(rule.rhs):
                            return False
                elif s.kind in ("c", "l"):
                    if s.kind == "l":
                        lists = tuple(Sym("n", n) for n in _LIST_RULES)
                        if not walk(lists):
                            return False
                    inner = s.sub if s.kind == "c" else s.sub.sub  # type: ignore[union-attr]
                    given = s.given if s.kind == "c" else s.sub.given  # type: ignore[union-attr]
                    if given and any(p in fluents for p, _ in given):
                        return False
                    if inner is not None and not walk((inner,)):
                        return False
            return True

        return walk(self.symbols(text))

    def derive(
        self,
        text: str,
        store: FactStore,
        entities: dict[str, Entity],
        mapping: dict[Placeholder, str],
    ) -> str:
        """``ContextSensitiveGrammar.derive(text, context)`` with the context's mapping."""
        variables = {ph[0]: entities[v] for ph, v in mapping.items()}
        stack: list[tuple[Sym, dict, dict]] = [
            (s, mapping, variables) for s in reversed(self.symbols(text))
        ]
        out: list[str] = []
        while stack:
            sym, mp, vs = stack.pop()
            kind = sym.kind
            if kind == "t":
                out.append(sym.text)
            elif kind == "n":
                stack.extend((s, mp, vs) for s in reversed(self._replace(sym.text, store, mp)))
            elif kind == "e":
                out.append(str(self._eval(sym.text, vs)))
            elif kind == "c":
                stack.extend(reversed(self._conditional(sym, store, entities, mp, vs)))
            else:  # list
                items = self._conditional(sym.sub, store, entities, mp, vs)  # type: ignore[arg-type]
                stack.extend(reversed(self._display_list(items, mp, vs)))
        return "".join(out)

    def _replace(self, name: str, store: FactStore, mapping: dict) -> tuple[Sym, ...]:
        rules = self.rules.get(name)
        if not rules:
            raise UnsupportedGameError(f"grammar has no rule {'#' + name + '#'!r}")
        for rule in rules:
            if rule.condition is None or store.holds(rule.condition, mapping):
                return rule.rhs
        raise UnsupportedGameError(f"grammar rule {'#' + name + '#'!r}: no alternative applies")

    @staticmethod
    def _conditional(sym: Sym, store, entities, mapping, variables) -> list:
        assert sym.sub is not None
        if not sym.given:
            return [(sym.sub, mapping, variables)]
        out = []
        for m in store.assignments(sym.given, mapping):
            vs = dict(variables)
            for ph, v in m.items():
                if ph not in mapping:
                    vs[ph[0]] = entities[v]
            out.append((sym.sub, m, vs))
        return out

    @staticmethod
    def _display_list(items: list, mapping, variables) -> list:
        if not items:
            return [(Sym("n", "list_empty"), mapping, variables)]
        if len(items) == 1:
            return items
        sep = (Sym("n", "list_separator"), mapping, variables)
        last = (Sym("n", "list_last_separator"), mapping, variables)
        out = []
        for item in items[:-1]:
            out.append(item)
            out.append(sep)
        out[-1] = last
        out.append(items[-1])
        return out

    def _eval(self, expr: str, variables: dict[str, Entity]) -> Any:
        return self.expression(expr)(variables)
