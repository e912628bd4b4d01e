"""The ``{expr}`` expressions of an ALFWorld grammar, evaluated over a whitelist.

docs/alfworld_engine.md, "Grammar expressions". TextWorld evaluates a grammar's ``{expr}``
with Python's ``eval``; a game file is data, so here an expression is parsed
(``ast.parse(mode="eval")``) and accepted only if it is built from what ALFWorld's grammars
use:

* a placeholder name (an entity: ``o``, ``r``, ``lend``, ...): letters and digits, not the name
  of a Python builtin;
* one of :data:`ENTITY_ATTRIBUTES` of a placeholder (``r.name``, ``o.indefinite``, ``r.id``);
* a string literal;
* ``+`` between strings and ``or`` / ``and`` between such terms.

Anything else (a call, a subscript, another attribute, a number, a lambda, ...) is refused
with one line naming the expression, and nothing of it is run. :func:`compile_expression`
turns an accepted expression into a small closure, so evaluating it never calls ``eval``.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mvpo_envs.alfworld.game_file import GameFileError

#: attributes of an entity an expression may read (TextWorld's ``EntityInfo`` fields that
#: ALFWorld's grammars use, and ``type`` / ``definite``)
ENTITY_ATTRIBUTES = frozenset({"id", "name", "type", "definite", "indefinite"})
#: longer expressions are refused (ALFWorld's longest is 45 characters)
MAX_EXPRESSION_LENGTH = 200
#: a placeholder name (letters and digits; no ``_``, so no dunder)
_PLACEHOLDER = re.compile(r"[A-Za-z][A-Za-z0-9]*")
#: names that are never placeholders
_BUILTINS = frozenset(dir(builtins))

Evaluator = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Expression:
    """An accepted grammar expression: its text, the placeholder names it reads, its closure."""

    text: str
    names: frozenset[str]
    evaluate: Evaluator

    def __call__(self, variables: dict[str, Any]) -> Any:
        return self.evaluate(variables)


def _refuse(text: str, why: str) -> GameFileError:
    return GameFileError(
        f"grammar expression {{{text.strip()}}} is refused ({why}); a grammar expression may "
        f"only be a placeholder, placeholder.{'/'.join(sorted(ENTITY_ATTRIBUTES))}, a string, "
        "'+' and 'or'/'and'"
    )


def compile_expression(text: str, reserved: frozenset[str] = frozenset()) -> Expression:
    """Parse and check ``text``; :class:`GameFileError` naming it if it is not whitelisted.

    ``reserved`` are more names that are not placeholders (the reference engine passes the
    globals of TextWorld's grammar module, where its ``eval`` looks names up).
    """
    source = text.strip()
    if len(source) > MAX_EXPRESSION_LENGTH:
        raise _refuse(source[:40] + "...", f"longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise _refuse(source, f"not an expression: {type(err).__name__}") from None
    names: set[str] = set()
    try:
        evaluate = _compile(tree.body, source, names, reserved)
    except RecursionError:
        raise _refuse(source, "nested too deeply") from None
    return Expression(source, frozenset(names), evaluate)


def _compile(node: ast.AST, text: str, names: set[str], reserved: frozenset[str]) -> Evaluator:
    if isinstance(node, ast.Name):
        return _name(node.id, text, names, reserved)
    if isinstance(node, ast.Attribute):
        if not isinstance(node.value, ast.Name):
            raise _refuse(text, "an attribute of something other than a placeholder")
        if node.attr not in ENTITY_ATTRIBUTES:
            raise _refuse(text, f"attribute {node.attr!r}")
        get = _name(node.value.id, text, names, reserved)
        attr = node.attr
        return lambda v: getattr(get(v), attr)
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, str):
            raise _refuse(text, f"a {type(node.value).__name__} constant")
        value = node.value
        return lambda v: value
    if isinstance(node, ast.BinOp):
        if not isinstance(node.op, ast.Add):
            raise _refuse(text, f"operator {type(node.op).__name__}")
        left = _compile(node.left, text, names, reserved)
        right = _compile(node.right, text, names, reserved)

        def add(v: dict[str, Any]) -> str:
            a, b = left(v), right(v)
            if not isinstance(a, str) or not isinstance(b, str):
                raise GameFileError(f"grammar expression {{{text}}}: '+' of a non-string")
            return a + b

        return add
    if isinstance(node, ast.BoolOp):
        parts = [_compile(n, text, names, reserved) for n in node.values]
        if isinstance(node.op, ast.Or):

            def either(v: dict[str, Any]) -> Any:
                value = None
                for part in parts:
                    value = part(v)
                    if value:
                        return value
                return value

            return either

        def both(v: dict[str, Any]) -> Any:
            value = None
            for part in parts:
                value = part(v)
                if not value:
                    return value
            return value

        return both
    raise _refuse(text, f"{type(node).__name__} is not allowed")


def _name(name: str, text: str, names: set[str], reserved: frozenset[str]) -> Evaluator:
    if not _PLACEHOLDER.fullmatch(name) or name in _BUILTINS or name in reserved:
        raise _refuse(text, f"{name!r} is not a placeholder name")
    names.add(name)

    def get(v: dict[str, Any]) -> Any:
        try:
            return v[name]
        except KeyError:
            raise GameFileError(f"grammar expression {{{text}}}: {name!r} is not bound") from None

    return get
