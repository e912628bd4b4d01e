"""Reading the PDDL of a ``game.tw-pddl`` file (docs/alfworld_engine.md,
"How the fast engine works").

A small s-expression reader, enough for ALFWorld's ``alfred.pddl`` domain and its problems:
the problem's typed objects, its ``:init`` atoms and its ``:goal`` formula. Names are
lower-cased, as Fast Downward's translator (ALFWorld's reference engine) does.

It also refuses, for both engines (:func:`check_task`), a task nobody could play or win:
unknown sections, a domain without actions, an action using an unbound variable, ``:init``
or ``:goal`` atoms over undeclared predicates or objects (docs/alfworld_engine.md, "Bad game
files").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from mvpo_envs.alfworld.fast.errors import UnsupportedGameError
from mvpo_envs.alfworld.game_file import GameFileError

SExpr = str | list  # a name or a list of s-expressions
_TOKEN = re.compile(r"[()]|[^\s()]+")
_COMMENT = re.compile(r";[^\n]*")


#: deepest nesting of parentheses accepted (ALFWorld's PDDL nests at most 10 deep)
MAX_DEPTH = 64


def parse_sexpr(text: str, what: str = "PDDL text") -> list[SExpr]:
    """All top-level s-expressions of ``text`` (comments removed, names lower-cased)."""
    stack: list[list[SExpr]] = [[]]
    for tok in _TOKEN.findall(_COMMENT.sub(" ", text).lower()):
        if tok == "(":
            if len(stack) > MAX_DEPTH:
                raise GameFileError(f"{what} is nested deeper than {MAX_DEPTH} levels")
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise UnsupportedGameError(f"{what} has an unbalanced ')'")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1:
        raise UnsupportedGameError(f"{what} has an unbalanced '('")
    return stack[0]


def _section(define: list[SExpr], key: str) -> list[SExpr] | None:
    for part in define:
        if isinstance(part, list) and part and part[0] == key:
            return part
    return None


def typed_list(items: list[SExpr]) -> list[tuple[str, str]]:
    """``[a, b, -, t, c]`` -> ``[(a, t), (b, t), (c, "object")]`` (PDDL typed-list syntax)."""
    out: list[tuple[str, str]] = []
    pending: list[str] = []
    i = 0
    while i < len(items):
        item = items[i]
        if not isinstance(item, str):
            raise UnsupportedGameError(f"PDDL typed list has a nested expression {item!r}")
        if item == "-":
            if i + 1 >= len(items) or not isinstance(items[i + 1], str):
                raise UnsupportedGameError("PDDL typed list has '-' without a type name")
            out.extend((name, str(items[i + 1])) for name in pending)
            pending = []
            i += 2
            continue
        pending.append(item)
        i += 1
    out.extend((name, "object") for name in pending)
    return out


@dataclass
class Problem:
    """A PDDL problem: object types, positive ``:init`` atoms, ``:goal`` formula."""

    types: dict[str, str]
    init: list[tuple[str, ...]]
    goal: SExpr


#: sections of a problem's ``(define ...)`` (``problem`` is its name)
PROBLEM_SECTIONS = ("problem", ":domain", ":requirements", ":objects", ":init", ":goal", ":metric")
#: sections of a domain's ``(define ...)``; ``:derived`` / ``:durative-action`` are PDDL but
#: not ALFWorld's (the fast engine refuses them as unsupported)
DOMAIN_SECTIONS = (
    "domain", ":requirements", ":types", ":constants", ":predicates", ":functions", ":action",
    ":derived", ":durative-action",
)  # fmt: skip


def _define(text: str, what: str, sections: tuple[str, ...]) -> list[SExpr]:
    """The parts of ``(define ...)``, each a known section (else :class:`GameFileError`)."""
    exprs = parse_sexpr(text, what)
    if len(exprs) != 1 or not isinstance(exprs[0], list) or exprs[0][:1] != ["define"]:
        raise GameFileError(f"{what} is not one (define ...)")
    for part in exprs[0][1:]:
        head = part[0] if isinstance(part, list) and part else part
        if not isinstance(head, str) or head not in sections:
            raise GameFileError(
                f"{what} has an unknown section {str(head)[:40]!r} (known: {', '.join(sections)})"
            )
    return exprs[0]


def _problem_sections(text: str) -> tuple[dict[str, str], list[SExpr], SExpr]:
    """A ``pddl_problem``'s objects (name -> type), ``:init`` entries and goal; a missing
    ``:init`` or a missing or doubled ``:goal`` is a :class:`GameFileError`."""
    define = _define(text, "pddl_problem", PROBLEM_SECTIONS)
    objects = _section(define, ":objects")
    init = _section(define, ":init")
    goal = _section(define, ":goal")
    if init is None or goal is None or len(goal) != 2:
        raise GameFileError("pddl_problem lacks an (:init ...) or a single (:goal ...)")
    return dict(typed_list(objects[1:] if objects else [])), init[1:], goal[1]


def parse_problem(text: str) -> Problem:
    """Parse ALFWorld's ``pddl_problem``; numeric ``(= ...)`` init entries are ignored as
    TextWorld ignores them (distances, ``total-cost``)."""
    types, init, goal = _problem_sections(text)
    atoms: list[tuple[str, ...]] = []
    for atom in init:
        if not isinstance(atom, list) or not atom or not isinstance(atom[0], str):
            raise UnsupportedGameError(f"pddl_problem :init entry {atom!r:.60} is not an atom")
        if atom[0] == "=":
            continue  # numeric fluents (distance, total-cost): TextWorld drops them
        if atom[0] == "not":
            raise UnsupportedGameError("pddl_problem :init has a negated atom")
        if not all(isinstance(a, str) for a in atom):
            raise UnsupportedGameError(f"pddl_problem :init atom {atom!r:.60} has a nested term")
        for arg in atom[1:]:
            if arg not in types:
                raise UnsupportedGameError(f"pddl_problem :init uses undeclared object {arg!r}")
        atoms.append(tuple(str(a) for a in atom))
    return Problem(types=types, init=atoms, goal=goal)


@dataclass
class Domain:
    """A PDDL domain: its actions (name -> (fingerprint, parameters)), its predicates'
    arities and its types."""

    actions: dict[str, tuple[str, list[tuple[str, str]]]]
    predicates: dict[str, int]
    types: set[str]
    unsupported: str | None = None


def parse_domain(text: str) -> Domain:
    """Parse ``pddl_domain``: every section known, at least one action, predicates declared.

    Action fingerprints are the SHA-256 of the action's comment-free, whitespace-normalised,
    lower-cased text; parameters are (name, type) pairs without the ``?``. A ``:derived``
    predicate or durative action is recorded in ``unsupported`` (the fast engine refuses it).
    """
    define = _define(text, "pddl_domain", DOMAIN_SECTIONS)
    actions: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    predicates: dict[str, int] = {}
    types = {"object"}
    unsupported = None
    for part in define[1:]:
        head = part[0]
        if head == ":action":
            if len(part) < 2 or not isinstance(part[1], str):
                raise GameFileError("pddl_domain has an (:action ...) without a name")
            name = part[1]
            params: list[tuple[str, str]] = []
            if ":parameters" in part:
                raw = part[part.index(":parameters") + 1 :][:1]
                if not raw or not isinstance(raw[0], list):
                    raise GameFileError(f"pddl_domain action {name!r}: :parameters is not a list")
                params = [(n.lstrip("?"), t) for n, t in typed_list(raw[0])]
            _check_action_variables(name, part, {"?" + n for n, _ in params})
            actions[name] = (hashlib.sha256(_flat(part).encode()).hexdigest()[:16], params)
        elif head == ":predicates":
            for pred in part[1:]:
                if not isinstance(pred, list) or not pred or not isinstance(pred[0], str):
                    raise GameFileError(
                        f"pddl_domain :predicates entry {pred!r:.60} is not a predicate"
                    )
                predicates[pred[0]] = len(typed_list(pred[1:]))
        elif head == ":types":
            types.update(n for pair in typed_list(part[1:]) for n in pair)
        elif head in (":derived", ":durative-action"):
            unsupported = unsupported or head
    if not actions:
        raise GameFileError("pddl_domain has no (:action ...): no command could ever be played")
    return Domain(actions, predicates, types, unsupported)


def _check_action_variables(name: str, action: list[SExpr], params: set[str]) -> None:
    """Every ``?variable`` of an action's body is a parameter or bound by ``exists`` /
    ``forall`` (TextWorld fails mid-game on one that is not)."""
    todo: list[tuple[SExpr, frozenset[str]]] = [
        (part, frozenset(params)) for part in action[2:] if isinstance(part, list)
    ]
    parameters = action[action.index(":parameters") + 1] if ":parameters" in action else None
    while todo:
        f, bound = todo.pop()
        if f is parameters:
            continue
        if isinstance(f, str):
            if f.startswith("?") and f not in bound:
                raise GameFileError(f"pddl_domain action {name!r} uses unbound variable {f!r}")
            continue
        if f and f[0] in ("exists", "forall") and len(f) == 3 and isinstance(f[1], list):
            bound = bound | {v for v, _ in typed_list(f[1])}
            todo.append((f[2], bound))
            continue
        todo.extend((g, bound) for g in f)


def _check_arity(section: str, pred: str, n_args: int, domain: Domain) -> None:
    """Refuse an atom of the problem's ``section`` (``:init``, ``:goal``) whose predicate the
    domain does not declare, or declares with another number of arguments."""
    arity = domain.predicates.get(pred)
    if arity is None:
        raise GameFileError(
            f"pddl_problem {section} uses predicate {pred!r}, which the domain does not declare"
        )
    if arity != n_args:
        raise GameFileError(
            f"pddl_problem {section} atom {pred!r} has {n_args} arguments, "
            f"the domain declares {arity}"
        )


def check_init(atoms: list[SExpr], domain: Domain, types: dict[str, str]) -> None:
    """Refuse an ``:init`` atom of a predicate the domain does not declare, with another
    number of arguments or over an object the problem does not declare (Fast Downward's
    translator would exit the process, or TextWorld fail mid-reset, on it)."""
    for atom in atoms:
        if isinstance(atom, list) and atom and atom[0] == "not" and len(atom) == 2:
            atom = atom[1]
        if not isinstance(atom, list) or not atom or not isinstance(atom[0], str):
            raise GameFileError(f"pddl_problem :init entry {atom!r:.60} is not an atom")
        if atom[0] == "=":
            continue
        _check_arity(":init", atom[0], len(atom) - 1, domain)
        for arg in atom[1:]:
            if not isinstance(arg, str) or arg not in types:
                raise GameFileError(f"pddl_problem :init uses undeclared object {arg!r:.60}")


def check_goal(problem: Problem, domain: Domain) -> None:
    """Refuse a goal nobody could reach: an atom of a predicate the domain does not declare
    (or with another number of arguments), an object the problem does not declare, a
    variable not bound by ``exists`` / ``forall`` or of an unknown type."""
    todo: list[tuple[SExpr, frozenset[str]]] = [(problem.goal, frozenset())]
    while todo:
        f, bound = todo.pop()
        if not isinstance(f, list) or not f or not isinstance(f[0], str):
            raise GameFileError(f"pddl_problem :goal: cannot read {f!r:.60}")
        head = f[0]
        if head in ("and", "or", "not", "imply"):
            if len(f) < 2 or (head == "not" and len(f) != 2):
                raise GameFileError(f"pddl_problem :goal: ({head} ...) without its operands")
            todo.extend((g, bound) for g in f[1:])
        elif head in ("exists", "forall"):
            if len(f) != 3 or not isinstance(f[1], list):
                raise GameFileError(f"pddl_problem :goal: malformed ({head} ...)")
            variables = typed_list(f[1])
            for var, ty in variables:
                if not var.startswith("?"):
                    raise GameFileError(
                        f"pddl_problem :goal: {head} binds {var!r}, not a ?variable"
                    )
                if ty not in domain.types:
                    raise GameFileError(f"pddl_problem :goal: {var} has unknown type {ty!r}")
            todo.append((f[2], bound | {v for v, _ in variables}))
        else:
            if head != "=":
                _check_arity(":goal", head, len(f) - 1, domain)
            for term in f[1:]:
                if not isinstance(term, str):
                    raise GameFileError(f"pddl_problem :goal atom {head!r} has a nested term")
                if term.startswith("?"):
                    if term not in bound:
                        raise GameFileError(f"pddl_problem :goal: variable {term} is not bound")
                elif term not in problem.types:
                    raise GameFileError(
                        f"pddl_problem :goal uses object {term!r}, which the problem does not declare"
                    )


def check_task(domain_text: str, problem_text: str) -> None:
    """The checks both engines run on a game's PDDL (:func:`parse_domain`,
    :func:`parse_problem`'s sections, :func:`check_init`, :func:`check_goal`), without the
    fast engine's limits."""
    domain = parse_domain(domain_text)
    types, init, goal = _problem_sections(problem_text)
    check_init(init, domain, types)
    check_goal(Problem(types, [], goal), domain)


def domain_actions(text: str) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """Action name -> (fingerprint, parameters) of a domain the fast engine can play."""
    domain = parse_domain(text)
    if domain.unsupported:
        raise UnsupportedGameError(f"pddl_domain uses {domain.unsupported}")
    return domain.actions


def _flat(expr: SExpr) -> str:
    if isinstance(expr, str):
        return expr
    return "(" + " ".join(_flat(e) for e in expr) + ")"
