"""The goal test of the native ALFWorld engine (docs/alfworld_engine.md, "How the fast engine
works").

Evaluates the problem's ``:goal`` formula on the fact store, as Fast Downward's ``check_goal``
decides it on its state: ``and``, ``or``, ``not``, ``exists``, ``forall``, ``=`` and atoms over
variables and constants. An ``exists`` over a conjunction binds its variables from the facts
of its positive atoms (a join), so ALFWorld's two-object goals stay cheap.
"""

from __future__ import annotations

from mvpo_envs.alfworld.fast.errors import UnsupportedGameError
from mvpo_envs.alfworld.fast.facts import FactStore
from mvpo_envs.alfworld.fast.pddl import SExpr, typed_list

_CONNECTIVES = {"and", "or", "not", "exists", "forall", "imply", "when"}


class Goal:
    """A compiled goal formula; :meth:`holds` tests it on a fact store."""

    def __init__(self, formula: SExpr, types: dict[str, str]):
        self.formula = formula
        self.types = types
        self._check(formula)
        #: the predicates the goal reads: its value changes only when one of them does
        self.predicates = frozenset(self._predicates(formula))
        self._plans: dict[tuple, tuple] = {}

    def _predicates(self, f) -> set[str]:
        if f[0] in ("and", "or"):
            return set().union(*(self._predicates(g) for g in f[1:]))
        if f[0] == "not":
            return self._predicates(f[1])
        if f[0] in ("exists", "forall"):
            return self._predicates(f[2])
        return set() if f[0] == "=" else {f[0]}

    def _check(self, f: SExpr) -> None:
        if not isinstance(f, list) or not f or not isinstance(f[0], str):
            raise UnsupportedGameError(f"goal: cannot read {f!r}")
        head = f[0]
        if head in ("and", "or"):
            for sub in f[1:]:
                self._check(sub)
        elif head == "not":
            self._check(f[1])
        elif head in ("exists", "forall"):
            if not isinstance(f[1], list) or len(f) != 3:
                raise UnsupportedGameError(f"goal: malformed {head}")
            self._check(f[2])
        elif head in ("imply", "when"):
            raise UnsupportedGameError(f"goal uses '{head}'")
        elif not all(isinstance(a, str) for a in f[1:]):
            raise UnsupportedGameError(f"goal atom {f!r} has a nested term")

    def holds(self, store: FactStore) -> bool:
        return self._eval(self.formula, {}, store)

    # -- evaluation -----------------------------------------------------------------------------
    def _term(self, t: str, env: dict[str, str]) -> str:
        return env[t] if t.startswith("?") else t

    def _domain(self, ty: str) -> list[str]:
        return sorted(n for n, t in self.types.items() if ty == "object" or t == ty)

    def _eval(self, f: list, env: dict[str, str], store: FactStore) -> bool:
        head = f[0]
        if head == "and":
            return all(self._eval(sub, env, store) for sub in f[1:])
        if head == "or":
            return any(self._eval(sub, env, store) for sub in f[1:])
        if head == "not":
            return not self._eval(f[1], env, store)
        if head == "exists":
            return self._exists(typed_list(f[1]), f[2], env, store)
        if head == "forall":
            vars_ = typed_list(f[1])
            return not self._exists(vars_, ["not", f[2]], env, store)
        args = tuple(self._term(a, env) for a in f[1:])
        if head == "=":
            return args[0] == args[1]
        return (head, *args) in store

    def _exists(self, vars_, body, env, store) -> bool:
        key = (id(body), tuple(sorted(env)))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._flatten(vars_, body, env)
        lits, free = plan
        return self._solve(lits, dict(env), free, store)

    def _flatten(self, vars_, body, env):
        """Nested (and ...) / (exists ...) as one conjunction over more variables; each
        literal with the variables it needs."""
        free = dict(vars_)
        lits: list[list] = []
        todo = [body]
        while todo:
            g = todo.pop()
            if g[0] == "and":
                todo.extend(reversed(g[1:]))
            elif g[0] == "exists" and not set(dict(typed_list(g[1]))) & (set(free) | set(env)):
                free.update(dict(typed_list(g[1])))
                todo.append(g[2])
            else:
                lits.append((g, frozenset(self._free_vars(g, set()))))
        return lits, free

    def _free_vars(self, g, bound: set[str]) -> set[str]:
        if isinstance(g, str):
            return {g} if g.startswith("?") and g not in bound else set()
        if g and g[0] in ("exists", "forall"):
            return self._free_vars(g[2], bound | {n for n, _ in typed_list(g[1])})
        out: set[str] = set()
        for sub in g[1:]:
            out |= self._free_vars(sub, bound)
        return out

    def _solve(self, lits, env, free, store) -> bool:
        pending = []
        for g, needs in lits:
            if needs.issubset(env):
                if not self._eval(g, env, store):
                    return False
            else:
                pending.append((g, needs))
        if not pending:
            return True
        # bind from the positive atom with the fewest candidate facts
        best = None
        for g, _ in pending:
            if g[0] in _CONNECTIVES or g[0] == "=":
                continue
            cands = self._atom_candidates(g, env, store)
            if best is None or len(cands) < len(best[1]):
                best = (g, cands)
        if best is None:  # only negations / equalities / nested formulas left: enumerate a variable
            var = next(v for v in free if v not in env)
            for value in self._domain(free[var]):
                env[var] = value
                if self._solve(pending, env, free, store):
                    return True
            env.pop(var, None)
            return False
        g, cands = best
        for args in cands:
            new = dict(env)
            ok = True
            for term, value in zip(g[1:], args, strict=True):
                if term.startswith("?"):
                    if term in new and new[term] != value:
                        ok = False
                        break
                    ty = free.get(term)
                    if term not in new and ty is not None and ty != "object":
                        if self.types.get(value) != ty:
                            ok = False
                            break
                    new[term] = value
                elif term != value:
                    ok = False
                    break
            if ok and self._solve(pending, new, free, store):
                return True
        return False

    def _atom_candidates(self, g, env, store) -> list[tuple[str, ...]]:
        pred = g[0]
        for i, term in enumerate(g[1:]):
            value = env.get(term) if term.startswith("?") else term
            if value is not None:
                return [a for a in store.args_with(pred, i, value) if len(a) == len(g) - 1]
        return [a for a in store.args_of(pred) if len(a) == len(g) - 1]
