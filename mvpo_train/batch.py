"""The flat rollout batch every estimator reads (docs/estimators.md §0).

:class:`StepBatch` is a structure of arrays with one row per environment step. It validates
itself on construction and caches derived views (trajectory indices, returns, return-to-go).
Estimators work on :meth:`StepBatch.canonical`, the rows sorted by ``(traj, t)``, so that their
output does not depend on the order of the rows at all (not even in the last floating-point bit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

import numpy as np

from mvpo_train.segments import TrajLayout, factorize, flatten_milestones, reverse_scan

__all__ = ["FIELDS", "ORACLE_PLAN_DECREASE", "ORACLE_PROGRESS", "StepBatch", "canonical_action"]

#: ``extras`` column of the exact progress label of a step: 1 / 0, -1 unknown
#: (docs/alignment.md; filled by :mod:`mvpo_train.rollout` from ``info["oracle_progress"]``)
ORACLE_PROGRESS = "oracle_progress"
#: ``extras`` column of the decrease of the shortest-plan length across a step (float; NaN
#: unknown), from ``info["oracle_plan_length"]`` before and after it (docs/alignment.md)
ORACLE_PLAN_DECREASE = "oracle_plan_decrease"

_INT_FIELDS = ("group", "traj", "t")
_BOOL_FIELDS = ("terminated", "truncated", "success")
_STR_FIELDS = ("anchor", "signature", "action")
FIELDS = (
    "group", "traj", "t", "reward", "terminated", "truncated",
    "anchor", "signature", "milestones", "action", "success",
)  # fmt: skip


def canonical_action(s: str) -> str:
    """Lower-case, whitespace-collapsed action string (docs/estimators.md §0, ``action``)."""
    if not isinstance(s, str):
        raise TypeError(f"canonical_action expects str, got {type(s).__name__}")
    return " ".join(s.lower().split())


def _object_array(values: Any, name: str) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        return values
    seq = list(values)
    out = np.empty(len(seq), dtype=object)
    out[:] = seq
    return out


def _int_array(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"StepBatch: field '{name}' must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iub":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            pass
        else:
            raise ValueError(f"StepBatch: field '{name}' must hold integers, got {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _bool_array(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"StepBatch: field '{name}' must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "bui":
        raise ValueError(f"StepBatch: field '{name}' must hold booleans, got {arr.dtype}")
    return arr.astype(bool, copy=False)


@dataclass(frozen=True, eq=False)
class StepBatch:
    """One row per environment step ``(i, t)`` (docs/estimators.md §0).

    Fields are arrays of equal length. ``extras`` holds per-row payloads for the trainer
    (token ids, old log-probs, ...): each a list or array of the same length, carried through
    :meth:`take`; only its length is checked.
    """

    group: np.ndarray
    traj: np.ndarray
    t: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    anchor: np.ndarray
    signature: np.ndarray
    milestones: np.ndarray
    action: np.ndarray
    success: np.ndarray
    extras: dict[str, Any] = field(default_factory=dict)

    # ---------------------------------------------------------------- construction
    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in _INT_FIELDS:
            set_(self, name, _int_array(getattr(self, name), name))
        for name in _BOOL_FIELDS:
            set_(self, name, _bool_array(getattr(self, name), name))
        reward = np.asarray(self.reward, dtype=np.float64)
        if reward.ndim != 1:
            raise ValueError(f"StepBatch: field 'reward' must be 1-D, got shape {reward.shape}")
        set_(self, "reward", reward)
        for name in _STR_FIELDS:
            set_(self, name, _object_array(getattr(self, name), name))
        milestones, hits = _milestone_array(self.milestones)
        set_(self, "milestones", milestones)
        self.__dict__["milestone_hits"] = hits  # flattened during validation: no second pass
        set_(self, "extras", dict(self.extras))
        self._validate()
        set_(self, "action", _canonical_actions(self.action))

    @classmethod
    def from_steps(
        cls, steps: Sequence[Mapping[str, Any]], extras: Mapping[str, Any] | None = None
    ) -> StepBatch:
        """Build from one dict per step, keys = field names (docs/estimators.md §0).

        ``success`` may be omitted everywhere: it is then derived per trajectory as
        "ended by termination with a positive return" (the trainer normally passes it).
        """
        need = [f for f in FIELDS if f != "success"]
        cols: dict[str, list] = {f: [] for f in FIELDS}
        has_success = None
        for k, step in enumerate(steps):
            for f in need:
                if f not in step:
                    raise ValueError(f"StepBatch.from_steps: step {k} is missing field '{f}'")
                cols[f].append(step[f])
            if has_success is None:
                has_success = "success" in step
            elif has_success != ("success" in step):
                raise ValueError("StepBatch.from_steps: field 'success' given for some steps only")
            if has_success:
                cols["success"].append(step["success"])
        if not has_success:
            cols["success"] = _derive_success(cols)
        return cls(**cols, extras=dict(extras or {}))

    @classmethod
    def from_trajectories(cls, trajectories: Sequence[Mapping[str, Any]]) -> StepBatch:
        """Build from one dict per trajectory (handy for tests and examples, docs/estimators.md §0).

        Keys: ``group``; ``rewards`` (one per step); optional ``anchors`` (default ``"s{t}"``),
        ``signatures`` (default: the anchors), ``actions`` (default ``"act"``), ``milestones``
        (default none), ``end`` (``"terminated"`` or ``"truncated"``; default: terminated when
        the return is positive), ``success`` (default: derived as in :meth:`from_steps`),
        ``traj`` (default: position in the list).
        """
        steps: list[dict[str, Any]] = []
        explicit = [("success" in tr) for tr in trajectories]
        for i, tr in enumerate(trajectories):
            rewards = list(tr["rewards"])
            n = len(rewards)
            anchors = list(tr.get("anchors", [f"s{t}" for t in range(n)]))
            sigs = list(tr.get("signatures", anchors))
            actions = list(tr.get("actions", ["act"] * n))
            ms = list(tr.get("milestones", [()] * n))
            end = tr.get("end", "terminated" if sum(rewards) > 0 else "truncated")
            if end not in ("terminated", "truncated"):
                raise ValueError(
                    f"from_trajectories: end must be terminated/truncated, got {end!r}"
                )
            for t in range(n):
                last = t == n - 1
                row = dict(
                    group=tr["group"], traj=tr.get("traj", i), t=t, reward=rewards[t],
                    terminated=last and end == "terminated", truncated=last and end == "truncated",
                    anchor=anchors[t], signature=sigs[t], milestones=tuple(ms[t]),
                    action=actions[t],
                )  # fmt: skip
                if all(explicit):
                    row["success"] = tr["success"]
                steps.append(row)
        if any(explicit) and not all(explicit):
            raise ValueError("from_trajectories: give 'success' for every trajectory or none")
        return cls.from_steps(steps)

    def _validate(self) -> None:
        n = len(self.group)
        for f in FIELDS:
            if len(getattr(self, f)) != n:
                raise ValueError(
                    f"StepBatch: field '{f}' has {len(getattr(self, f))} rows, expected {n}"
                )
        for k, v in self.extras.items():
            if len(v) != n:
                raise ValueError(f"StepBatch: extras['{k}'] has {len(v)} rows, expected {n}")
        for f in _STR_FIELDS:
            bad = [x for x in self._unique_objects(f) if not isinstance(x, str)]
            if bad:
                raise ValueError(
                    f"StepBatch: field '{f}' must hold str, got {type(bad[0]).__name__}"
                )
        if n == 0:
            return
        if not np.all(np.isfinite(self.reward)):
            raise ValueError("StepBatch: field 'reward' holds NaN or inf")
        if np.any(self.t < 0):
            raise ValueError("StepBatch: field 't' holds negative steps")
        order = self.order
        traj, t = self.traj[order], self.t[order]
        start = np.ones(n, dtype=bool)
        start[1:] = traj[1:] != traj[:-1]
        first = np.flatnonzero(start)
        seg = np.cumsum(start) - 1
        if np.any(t != np.arange(n) - first[seg]):
            raise ValueError(
                "StepBatch: field 't' must run 0..T-1 without gaps or repeats in every trajectory"
            )
        last = np.ones(n, dtype=bool)
        last[:-1] = start[1:]
        for f in ("group", "success"):
            col = getattr(self, f)[order]
            if np.any((col[1:] != col[:-1]) & ~start[1:]):
                raise ValueError(
                    f"StepBatch: field '{f}' must be constant within a trajectory "
                    "(a trajectory spans two groups or mixes success flags)"
                )
        end = self.terminated[order] | self.truncated[order]
        if np.any(~end[last]):
            bad = traj[last][~end[last]][0]
            raise ValueError(
                f"StepBatch: fields 'terminated'/'truncated': trajectory {bad} ends with neither"
            )
        if np.any(end[~last]):
            bad = traj[~last][end[~last]][0]
            raise ValueError(
                f"StepBatch: fields 'terminated'/'truncated': trajectory {bad} ends "
                "before its last step"
            )

    def _unique_objects(self, name: str) -> set:
        try:
            return set(getattr(self, name).tolist())
        except TypeError as exc:  # unhashable entries
            raise ValueError(f"StepBatch: field '{name}' must hold str") from exc

    # ---------------------------------------------------------------- basic API
    def __len__(self) -> int:
        return len(self.group)

    def take(self, idx: Any, *, validate: bool = True) -> StepBatch:
        """Row subset or permutation (``extras`` too).

        With ``validate=False`` the result skips the checks, for minibatches that split
        trajectories; the derived views of such a batch are then meaningless.
        """
        idx = np.asarray(idx)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        extras = {k: _take_payload(v, idx) for k, v in self.extras.items()}
        cols = {f: getattr(self, f)[idx] for f in FIELDS}
        if validate:
            return StepBatch(**cols, extras=extras)
        out = object.__new__(StepBatch)
        for k, v in cols.items():
            object.__setattr__(out, k, v)
        object.__setattr__(out, "extras", extras)
        return out

    # ---------------------------------------------------------------- canonical order
    @cached_property
    def order(self) -> np.ndarray:
        """Row permutation that sorts by ``(traj, t)``."""
        traj, t = self.traj, self.t
        n = len(traj)
        if n < 2:
            return np.arange(n, dtype=np.int64)
        d = np.diff(traj)
        if np.all(d >= 0) and np.all((d > 0) | (np.diff(t) == 1)):
            return np.arange(n, dtype=np.int64)
        return np.lexsort((t, traj)).astype(np.int64)

    @cached_property
    def is_canonical(self) -> bool:
        """Rows already sorted by ``(traj, t)``."""
        return bool(np.array_equal(self.order, np.arange(len(self))))

    def canonical(self) -> StepBatch:
        """This batch with rows sorted by ``(traj, t)``, without ``extras`` (cached)."""
        if self.is_canonical and not self.extras:
            return self
        cached = self.__dict__.get("_canonical")
        if cached is None:
            base = self if not self.extras else _without_extras(self)
            cached = base if self.is_canonical else base.take(self.order, validate=False)
            if "milestone_hits" in self.__dict__ and not self.is_canonical:
                rows, names = self.milestone_hits
                where = np.empty(len(self), dtype=np.int64)
                where[self.order] = np.arange(len(self))
                new_rows = where[rows]
                o = np.argsort(new_rows, kind="stable")  # keeps each row's own name order
                cached.__dict__["milestone_hits"] = (new_rows[o], names[o])
            self.__dict__["_canonical"] = cached
        return cached

    # ---------------------------------------------------------------- derived views
    @cached_property
    def layout(self) -> TrajLayout:
        """Compact trajectory index per row and padding size for the scans."""
        _, idx = np.unique(self.traj, return_inverse=True)
        idx = idx.reshape(-1).astype(np.int64)
        n_traj = int(idx.max()) + 1 if len(idx) else 0
        t_max = int(self.t.max()) + 1 if len(idx) else 0
        return TrajLayout(idx, self.t, n_traj, t_max)

    @property
    def traj_index(self) -> np.ndarray:
        """Compact trajectory index ``0..n_traj-1`` per row (ordered by ``traj`` id)."""
        return self.layout.traj_index

    @property
    def n_traj(self) -> int:
        """Number of trajectories."""
        return self.layout.n_traj

    @cached_property
    def group_index(self) -> np.ndarray:
        """Compact rollout-group index ``0..n_groups-1`` per row."""
        _, idx = np.unique(self.group, return_inverse=True)
        return idx.reshape(-1).astype(np.int64)

    @cached_property
    def n_groups(self) -> int:
        """Number of rollout groups."""
        return int(self.group_index.max()) + 1 if len(self) else 0

    @cached_property
    def traj_rows(self) -> np.ndarray:
        """One representative row (the first found) per compact trajectory."""
        rows = np.zeros(self.n_traj, dtype=np.int64)
        rows[self.traj_index[::-1]] = np.arange(len(self) - 1, -1, -1)
        return rows

    @cached_property
    def traj_length(self) -> np.ndarray:
        """``T_i`` per compact trajectory."""
        return np.bincount(self.traj_index, minlength=self.n_traj).astype(np.int64)

    @cached_property
    def traj_group(self) -> np.ndarray:
        """Compact group index per compact trajectory."""
        return self.group_index[self.traj_rows]

    @cached_property
    def traj_success(self) -> np.ndarray:
        """Success flag per compact trajectory."""
        return self.success[self.traj_rows]

    @cached_property
    def traj_return(self) -> np.ndarray:
        """Episode return ``R_i = sum_t r_{i,t}`` per compact trajectory (§0).

        Summed in row order; estimators read it on :meth:`canonical`, where that is step order.
        """
        return np.bincount(self.traj_index, weights=self.reward, minlength=self.n_traj)

    @cached_property
    def returns(self) -> np.ndarray:
        """``R_i`` repeated on every row of trajectory ``i``."""
        return self.traj_return[self.traj_index]

    @cached_property
    def is_last(self) -> np.ndarray:
        """True on the last step of each trajectory."""
        return self.t == self.traj_length[self.traj_index] - 1

    @cached_property
    def traj_terminated(self) -> np.ndarray:
        """Per compact trajectory: the last step has ``terminated`` set."""
        out = np.zeros(self.n_traj, dtype=bool)
        last = self.is_last
        out[self.traj_index[last]] = self.terminated[last]
        return out

    def return_to_go(self, gamma: float) -> np.ndarray:
        """Discounted return-to-go ``G_{i,t} = r_{i,t} + gamma G_{i,t+1}`` per row (§0)."""
        cache = self.__dict__.setdefault("_rtg", {})
        key = float(gamma)
        if key not in cache:
            cache[key] = reverse_scan(self.reward, self.layout, key)
        return cache[key]

    def codes(self, name: str) -> tuple[np.ndarray, int]:
        """Codes of a string column (``anchor``, ``signature``, ``action``), cached: equal strings
        share a code, codes ``< len(self)`` (see :func:`mvpo_train.segments.factorize`)."""
        cache = self.__dict__.setdefault("_codes", {})
        if name not in cache:
            cache[name] = factorize(getattr(self, name))
        return cache[name]

    @cached_property
    def milestone_hits(self) -> tuple[np.ndarray, np.ndarray]:
        """Flat milestone hits: ``rows`` (int64) and ``names`` (object array), one per hit."""
        return flatten_milestones(self.milestones)

    @cached_property
    def milestone_count(self) -> np.ndarray:
        """Number of milestones fired by the transition at each row."""
        rows, _ = self.milestone_hits
        return np.bincount(rows, minlength=len(self)).astype(np.int64)


# -------------------------------------------------------------------- helpers


def _milestone_array(values: Any) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Validate the milestones column in one pass; also return the flat hits (rows, names)."""
    seq = values.tolist() if isinstance(values, np.ndarray) else list(values)
    rows: list[int] = []
    names: list[str] = []
    for k, v in enumerate(seq):
        if type(v) is not tuple:
            if isinstance(v, str) or not hasattr(v, "__iter__"):
                raise ValueError(
                    f"StepBatch: field 'milestones' row {k} must be a tuple/list of str, got {v!r}"
                )
            v = seq[k] = tuple(v)
        for x in v:
            if type(x) is not str:
                raise ValueError(f"StepBatch: field 'milestones' row {k} must hold str names")
            rows.append(k)
            names.append(x)
    out = np.fromiter(seq, dtype=object, count=len(seq))
    name_arr = np.empty(len(names), dtype=object)
    name_arr[:] = names
    return out, (np.asarray(rows, dtype=np.int64), name_arr)


def _canonical_actions(actions: np.ndarray) -> np.ndarray:
    table = {a: canonical_action(a) for a in set(actions.tolist())}
    if all(k == v for k, v in table.items()):
        return actions
    out = np.empty(len(actions), dtype=object)
    out[:] = [table[a] for a in actions.tolist()]
    return out


def _take_payload(v: Any, idx: np.ndarray) -> Any:
    if isinstance(v, np.ndarray):
        return v[idx]
    return [v[i] for i in idx.tolist()]


def _without_extras(b: StepBatch) -> StepBatch:
    out = object.__new__(StepBatch)
    for f in fields(StepBatch):
        object.__setattr__(out, f.name, getattr(b, f.name))
    object.__setattr__(out, "extras", {})
    if "milestone_hits" in b.__dict__:
        out.__dict__["milestone_hits"] = b.__dict__["milestone_hits"]
    return out


def _derive_success(cols: Mapping[str, list]) -> list[bool]:
    """Success per trajectory: terminated at its last step with a positive return."""
    ret: dict[Any, float] = {}
    term: dict[Any, bool] = {}
    last_t: dict[Any, int] = {}
    for tr, t, r, te in zip(
        cols["traj"], cols["t"], cols["reward"], cols["terminated"], strict=True
    ):
        ret[tr] = ret.get(tr, 0.0) + float(r)
        if t >= last_t.get(tr, -1):
            last_t[tr], term[tr] = t, bool(te)
    return [term[tr] and ret[tr] > 0 for tr in cols["traj"]]
