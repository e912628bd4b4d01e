"""The fact store of the native ALFWorld engine (docs/alfworld_engine.md,
"How the fast engine works").

Holds the same propositions as TextWorld's ``PddlState``: the problem's ``:init`` atoms, then
each applied effect as TextWorld applies Fast Downward's effect list: a positive effect adds
``p(x)`` and removes ``not_p(x)``; a negative one removes ``p(x)`` and adds ``not_p(x)``.
Conjunctive queries enumerate bindings in TextWorld's order (``State.all_assignments``): the
literals left to right, each over its facts sorted by argument names, distinct placeholders
never bound to the same entity.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from mvpo_envs.alfworld.fast.errors import UnsupportedGameError

#: a placeholder of a query: (name, type)
Placeholder = tuple[str, str]
#: a query literal: predicate name and its placeholders
Literal = tuple[str, tuple[Placeholder, ...]]


class Var:
    """An entity as a fact argument (``.name`` is the raw id, ``.type`` its PDDL type)."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, type_: str):
        self.name = name
        self.type = type_

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.type!r})"


class Fact:
    """A proposition with ``.name`` and ``.arguments`` (what ``state_from_facts`` reads)."""

    __slots__ = ("name", "arguments", "key")

    def __init__(self, key: tuple[str, ...], arguments: tuple[Var, ...]):
        self.key = key
        self.name = key[0]
        self.arguments = arguments

    def __repr__(self) -> str:
        return f"{self.name}({', '.join(a.name for a in self.arguments)})"


def parse_query(text: str) -> tuple[Literal, ...]:
    """``"holds(a:agent, o:object) & isclean(o:object)"`` -> literals (TextWorld's syntax)."""
    literals = []
    for part in text.split("&"):
        part = part.strip()
        if not part.endswith(")") or "(" not in part:
            raise UnsupportedGameError(f"grammar query {text!r}: cannot read {part!r}")
        name, args = part[:-1].split("(", 1)
        placeholders = []
        for arg in args.split(","):
            arg = arg.strip()
            if not arg:
                continue
            if ":" not in arg:
                raise UnsupportedGameError(
                    f"grammar query {text!r}: argument {arg!r} is not a typed placeholder"
                )
            ph, ty = (s.strip() for s in arg.split(":", 1))
            placeholders.append((ph, ty))
        literals.append((name.strip(), tuple(placeholders)))
    return tuple(literals)


class FactList(list):
    """The fact list of one step; ``grouped`` gives the same facts grouped by predicate
    (predicate -> frozenset of argument tuples) while the store has not changed since, else
    ``None`` (``state_from_facts`` then groups the list itself)."""

    __slots__ = ("_store", "_stamp")

    def __init__(self, facts, store: FactStore):
        super().__init__(facts)
        self._store = store
        self._stamp = store.stamp

    @property
    def grouped(self) -> dict[str, frozenset[tuple[str, ...]]] | None:
        store = self._store
        return store.grouped() if store.stamp == self._stamp else None


class FactStore:
    """Facts as tuples ``(predicate, arg, ...)`` with per-predicate and per-argument indexes."""

    def __init__(self, types: dict[str, str]):
        self.types = types
        self._vars: dict[str, Var] = {}
        self._facts: dict[tuple[str, ...], Fact] = {}
        self._by_pred: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        self._by_arg: dict[tuple[str, int, str], set[tuple[str, ...]]] = defaultdict(set)
        self._signatures: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        #: per predicate, a counter bumped by every change (lets callers cache derived values)
        self.versions: dict[str, int] = defaultdict(int)
        #: predicates that may change (``copy`` shares the index sets of all the others)
        self.mutable: frozenset[str] | None = None
        #: predicate -> frozenset of its argument tuples, dropped when the predicate changes
        self._frozen: dict[str, frozenset[tuple[str, ...]]] = {}
        #: bumped by every change of any predicate
        self.stamp = 0
        #: fact key -> (its Fact, its argument types), shared by copies (a Fact never changes)
        self._made: dict[tuple[str, ...], tuple[Fact, tuple[str, ...]]] = {}

    # -- contents -------------------------------------------------------------------------------
    def copy(self) -> FactStore:
        """An independent store with the same facts. Index sets of predicates outside
        :attr:`mutable` (when set) are shared, not copied: they never change."""
        mutable = self.mutable
        if mutable is None:
            owned = set(self._by_pred)
        else:
            owned = {p for p in self._by_pred if p in mutable or p.startswith("not_")}
        new = FactStore.__new__(FactStore)
        new.types = self.types
        new._vars = self._vars
        new._facts = dict(self._facts)
        new._by_pred = defaultdict(
            set, {k: set(v) if k in owned else v for k, v in self._by_pred.items()}
        )
        new._by_arg = defaultdict(
            set, {k: set(v) if k[0] in owned else v for k, v in self._by_arg.items()}
        )
        new._signatures = defaultdict(set, {k: set(v) for k, v in self._signatures.items()})
        new.versions = defaultdict(int, self.versions)
        new.mutable = mutable
        new._frozen = dict(self._frozen)
        new._made = self._made
        new.stamp = 0
        return new

    def var(self, name: str) -> Var:
        v = self._vars.get(name)
        if v is None:
            v = self._vars[name] = Var(name, self.types[name])
        return v

    def _changed(self, pred: str) -> None:
        """A fact of ``pred`` was added or removed: refuse it if ``pred`` was declared
        constant, else count a new version and drop the frozen view of ``pred``."""
        if self.mutable is not None and not (pred in self.mutable or pred.startswith("not_")):
            raise ValueError(f"fact store: {pred!r} was declared constant")
        self.versions[pred] += 1
        self.stamp += 1
        self._frozen.pop(pred, None)

    def add(self, key: tuple[str, ...]) -> None:
        if key in self._facts:
            return
        args = key[1:]
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = (
                Fact(key, tuple(self.var(a) for a in args)),
                tuple(self.types[a] for a in args),
            )
        self._facts[key] = made[0]
        pred = key[0]
        self._changed(pred)
        self._by_pred[pred].add(args)
        for i, a in enumerate(args):
            self._by_arg[(pred, i, a)].add(args)
        self._signatures[pred].add(made[1])

    def discard(self, key: tuple[str, ...]) -> None:
        if self._facts.pop(key, None) is None:
            return
        args = key[1:]
        pred = key[0]
        self._changed(pred)
        self._by_pred[pred].discard(args)
        for i, a in enumerate(args):
            self._by_arg[(pred, i, a)].discard(args)

    def apply(self, key: tuple[str, ...], positive: bool) -> None:
        """One effect atom, applied as TextWorld's ``PddlState.apply`` applies it."""
        neg = ("not_" + key[0],) + key[1:]
        if positive:
            self.discard(neg)
            self.add(key)
        else:
            self.discard(key)
            self.add(neg)

    def __contains__(self, key: tuple[str, ...]) -> bool:
        return key in self._facts

    def facts(self) -> list[Fact]:
        return list(self._facts.values())

    def fact_list(self) -> FactList:
        """:meth:`facts` as a :class:`FactList` (its grouping is built on demand)."""
        return FactList(self._facts.values(), self)

    def grouped(self) -> dict[str, frozenset[tuple[str, ...]]]:
        """Predicate -> frozenset of its facts' argument tuples (non-empty predicates only);
        a predicate's set is rebuilt only after it changed."""
        frozen = self._frozen
        grouped = {}
        for p, v in self._by_pred.items():
            f = frozen.get(p)
            if f is None:
                f = frozen[p] = frozenset(v)
            if f:
                grouped[p] = f
        return grouped

    def by_predicate(self) -> dict[str, list[tuple[str, ...]]]:
        """Predicate -> argument tuples of its facts (the facts grouped, without building them)."""
        return {p: list(v) for p, v in self._by_pred.items() if v}

    def keys(self) -> set[tuple[str, ...]]:
        return set(self._facts)

    def args_of(self, pred: str) -> set[tuple[str, ...]]:
        return self._by_pred.get(pred, set())

    def args_with(self, pred: str, pos: int, value: str) -> set[tuple[str, ...]]:
        return self._by_arg.get((pred, pos, value), set())

    # -- queries --------------------------------------------------------------------------------
    def _candidates(
        self, pred: str, params: tuple[Placeholder, ...], mapping: dict[Placeholder, str]
    ) -> list[tuple[str, ...]]:
        if len(self._signatures.get(pred, ())) > 1 and any(t == "object" for _, t in params):
            raise UnsupportedGameError(
                f"grammar query over {pred!r}, whose facts mix argument types "
                f"{sorted(self._signatures[pred])}: TextWorld's order is not reproduced"
            )
        pool = None
        for i, ph in enumerate(params):
            bound = mapping.get(ph)
            if bound is not None:
                pool = self._by_arg.get((pred, i, bound), set())
                break
        if pool is None:
            pool = self._by_pred.get(pred, set())
        out = []
        for args in pool:
            if len(args) != len(params):
                continue
            for (_, ty), a in zip(params, args, strict=True):
                if ty != "object" and self.types[a] != ty:
                    break
            else:
                out.append(args)
        out.sort()
        return out

    def assignments(
        self, literals: tuple[Literal, ...], mapping: dict[Placeholder, str]
    ) -> Iterator[dict[Placeholder, str]]:
        """Every binding of the query's new placeholders, in TextWorld's order."""
        mapping = dict(mapping)
        used = set(mapping.values())
        seen = set(mapping)
        new_by_depth = []
        for _, params in literals:
            new = []
            for ph in params:
                if ph not in seen:
                    new.append(ph)
                    seen.add(ph)
            new_by_depth.append(new)
        yield from self._assign(literals, mapping, used, new_by_depth, 0)

    def _assign(self, literals, mapping, used, new_by_depth, depth):
        if depth >= len(literals):
            yield dict(mapping)
            return
        pred, params = literals[depth]
        new = new_by_depth[depth]
        for args in self._candidates(pred, params, mapping):
            ok = True
            for ph, var in zip(params, args, strict=True):
                existing = mapping.get(ph)
                if existing is None:
                    if var in used:
                        ok = False
                        break
                    mapping[ph] = var
                    used.add(var)
                elif existing != var:
                    ok = False
                    break
            if ok:
                yield from self._assign(literals, mapping, used, new_by_depth, depth + 1)
            for ph in new:
                var = mapping.pop(ph, None)
                used.discard(var)

    def holds(self, literals: tuple[Literal, ...], mapping: dict[Placeholder, str]) -> bool:
        """Whether the query has at least one binding (a grammar rule's condition)."""
        for _ in self.assignments(literals, mapping):
            return True
        return False
