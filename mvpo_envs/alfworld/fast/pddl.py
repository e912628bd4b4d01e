"""Reading the PDDL of a ``game.tw-pddl`` file (docs/alfworld_engine.md, "Loading a game").

A small s-expression reader, enough for ALFWorld's ``alfred.pddl`` domain and its problems:
the problem's typed objects, its ``:init`` atoms and its ``:goal`` formula. Names are
lower-cased, as Fast Downward's translator (ALFWorld's reference engine) does.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from mvpo_envs.alfworld.fast.errors import UnsupportedGameError

SExpr = str | list  # a name or a list of s-expressions
_TOKEN = re.compile(r"[()]|[^\s()]+")
_COMMENT = re.compile(r";[^\n]*")


def parse_sexpr(text: str) -> list[SExpr]:
    """All top-level s-expressions of ``text`` (comments removed, names lower-cased)."""
    stack: list[list[SExpr]] = [[]]
    for tok in _TOKEN.findall(_COMMENT.sub(" ", text).lower()):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise UnsupportedGameError("PDDL text has an unbalanced ')'")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1:
        raise UnsupportedGameError("PDDL text has an unbalanced '('")
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


def parse_problem(text: str) -> Problem:
    """Parse ALFWorld's ``pddl_problem``; numeric ``(= ...)`` init entries are ignored as
    TextWorld ignores them (distances, ``total-cost``)."""
    exprs = parse_sexpr(text)
    if not exprs or not isinstance(exprs[0], list) or exprs[0][:1] != ["define"]:
        raise UnsupportedGameError("pddl_problem does not start with (define ...)")
    define = exprs[0]
    objects = _section(define, ":objects")
    init = _section(define, ":init")
    goal = _section(define, ":goal")
    if init is None or goal is None or len(goal) != 2:
        raise UnsupportedGameError("pddl_problem lacks an (:init ...) or a single (:goal ...)")
    types = dict(typed_list(objects[1:] if objects else []))
    atoms: list[tuple[str, ...]] = []
    for atom in init[1:]:
        if not isinstance(atom, list) or not atom or not isinstance(atom[0], str):
            raise UnsupportedGameError(f"pddl_problem :init entry {atom!r} is not an atom")
        if atom[0] == "=":
            continue  # numeric fluents (distance, total-cost): TextWorld drops them
        if atom[0] == "not":
            raise UnsupportedGameError("pddl_problem :init has a negated atom")
        if not all(isinstance(a, str) for a in atom):
            raise UnsupportedGameError(f"pddl_problem :init atom {atom!r} has a nested term")
        for arg in atom[1:]:
            if arg not in types:
                raise UnsupportedGameError(f"pddl_problem :init uses undeclared object {arg!r}")
        atoms.append(tuple(str(a) for a in atom))
    return Problem(types=types, init=atoms, goal=goal[1])


def domain_actions(text: str) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """Action name -> (fingerprint, parameters): the fingerprint is the SHA-256 of the action's
    comment-free, whitespace-normalised, lower-cased text; parameters are (name, type) pairs
    without the ``?``."""
    exprs = parse_sexpr(text)
    if not exprs or not isinstance(exprs[0], list) or exprs[0][:1] != ["define"]:
        raise UnsupportedGameError("pddl_domain does not start with (define ...)")
    out: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    for part in exprs[0]:
        if isinstance(part, list) and part and part[0] == ":action":
            name = str(part[1])
            params: list[tuple[str, str]] = []
            if ":parameters" in part:
                raw = part[part.index(":parameters") + 1]
                params = [
                    (n.lstrip("?"), t) for n, t in typed_list(raw if isinstance(raw, list) else [])
                ]
            out[name] = (hashlib.sha256(_flat(part).encode()).hexdigest()[:16], params)
        elif isinstance(part, list) and part and part[0] in (":derived", ":durative-action"):
            raise UnsupportedGameError(f"pddl_domain uses {part[0]}")
    return out


def _flat(expr: SExpr) -> str:
    if isinstance(expr, str):
        return expr
    return "(" + " ".join(_flat(e) for e in expr) + ")"
