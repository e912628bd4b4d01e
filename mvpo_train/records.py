"""Batch records: one compact file per recorded iteration, enough to recompute every estimator
offline (docs/inspect.md, "Batch records").

A record holds every :class:`~mvpo_train.batch.StepBatch` field exactly (row order kept), the
trained estimator's name, config and *pre-call* state (MVPO's EMA success and AMP weights), the
advantages and diagnostics the trainer got from it, optional per-row observations (truncated)
and the scalar per-row extras (``env_reward``, ``invalid_action``, ``task_type``, ``task_id``,
``prompt``, ...) and the string-list ones (``admissible_actions``). Strings (a string list: its
JSON text) are stored once per batch (a table) plus int32 codes, and the whole file is a compressed
``.npz`` read without pickle. ``read_batch_record(path).verify()`` recomputes the trained
estimator and raises if its advantages differ from the recorded ones.

Layout: ``<run_dir>/records/iter-<K:06d>.npz`` (:func:`record_path`).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch

__all__ = [
    "FORMAT",
    "RECORDS_DIR",
    "BatchRecord",
    "RecordError",
    "find_records",
    "read_batch_record",
    "record_path",
    "write_batch_record",
]

FORMAT = "mvpo-batch-record/1"
RECORDS_DIR = "records"
_NAME = re.compile(r"^iter-(\d+)\.npz$")
_OBS_CHARS = 600  # default truncation of observations (display only; anchors stay exact)
_STRING_COLUMNS = ("anchor", "signature", "action")


class RecordError(ValueError):
    """A record that cannot be read, or whose recomputed numbers differ from the recorded ones."""


# -------------------------------------------------------------------- paths


def record_path(run_dir: str | os.PathLike, iteration: int) -> Path:
    """``<run_dir>/records/iter-<iteration:06d>.npz``."""
    if int(iteration) < 0:
        raise ValueError(f"iteration must be >= 0, got {iteration}")
    return Path(run_dir) / RECORDS_DIR / f"iter-{int(iteration):06d}.npz"


def find_records(run_dir: str | os.PathLike) -> dict[int, Path]:
    """Iteration -> record file, for every record of a run folder (sorted by iteration)."""
    folder = Path(run_dir) / RECORDS_DIR
    found: dict[int, Path] = {}
    if folder.is_dir():
        for p in folder.iterdir():
            m = _NAME.match(p.name)
            if m:
                found[int(m.group(1))] = p
    return dict(sorted(found.items()))


# -------------------------------------------------------------------- encoding helpers


def _json_bytes(obj: Any) -> np.ndarray:
    text = json.dumps(obj, allow_nan=True, sort_keys=True, default=_json_default)
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _json_default(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (set, frozenset)):
        return sorted(x)
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def _json_load(arr: np.ndarray) -> Any:
    return json.loads(arr.tobytes().decode("utf-8"))


def _encode_strings(values: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """int32 codes + table of distinct strings (first-appearance order)."""
    table: dict[str, int] = {}
    codes = np.fromiter(
        (table.setdefault(v, len(table)) for v in values), dtype=np.int32, count=len(values)
    )
    return codes, list(table)


def _decode_strings(codes: np.ndarray, table: list[str]) -> np.ndarray:
    lut = np.empty(len(table), dtype=object)
    lut[:] = table
    return lut[codes] if len(codes) else np.empty(0, dtype=object)


def truncate_text(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, the cut marked ``… [+N chars]``."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… [+{len(text) - limit} chars]"


def _scalar_extras(batch: StepBatch) -> dict[str, tuple[str, Any]]:
    """Extras whose every value is a bool, int, float or str: name -> (kind, column)."""
    out: dict[str, tuple[str, Any]] = {}
    for name, col in batch.extras.items():
        vals = col.tolist() if isinstance(col, np.ndarray) else list(col)
        if isinstance(col, np.ndarray) and col.ndim != 1:
            continue
        if vals and all(isinstance(v, (bool, np.bool_)) for v in vals):
            out[name] = ("bool", np.asarray(vals, dtype=bool))
        elif vals and all(isinstance(v, str) for v in vals):
            out[name] = ("str", vals)
        elif vals and all(
            isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v) for v in vals
        ):
            out[name] = ("strlist", [json.dumps(list(v), ensure_ascii=False) for v in vals])
        elif vals and all(
            isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, (bool, np.bool_))
            for v in vals
        ):
            out[name] = ("float", np.asarray(vals, dtype=np.float64))
    return out


def estimator_config_dict(estimator: Any) -> dict[str, Any] | None:
    """The estimator's config dataclass as a dict (None when it has none)."""
    cfg = getattr(estimator, "config", None)
    if cfg is not None and dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return dataclasses.asdict(cfg)
    return None


# -------------------------------------------------------------------- write


def write_batch_record(
    run_dir: str | os.PathLike,
    iteration: int,
    batch: StepBatch,
    *,
    estimator: Any = None,
    estimator_state: Mapping[str, Any] | None = None,
    advantages: np.ndarray | None = None,
    diagnostics: Mapping[str, Any] | None = None,
    observations: Sequence[str] | None = None,
    max_obs_chars: int | None = _OBS_CHARS,
    meta: Mapping[str, Any] | None = None,
    path: str | os.PathLike | None = None,
) -> Path:
    """Write the record of ``batch`` at ``iteration``; returns its path (docs/inspect.md).

    ``estimator``: the trained estimator (its ``name`` and dataclass ``config`` are stored);
    ``estimator_state``: its ``state_dict()`` taken *before* it was called on ``batch`` (needed
    to recompute a stateful estimator such as MVPO; an estimator with a ``record_state(state,
    batch)`` method stores what that returns: MVPO's pooled region statistics cut to the
    batch's share); ``advantages``/``diagnostics``: what that call returned. ``observations``: one text per row (default: ``batch.extras["observation"]``
    when present, else none: the page then shows the anchor), each cut to ``max_obs_chars``.
    ``meta``: JSON-serialisable run facts (env id, abstraction, seed, ...). Anchors, signatures,
    actions and milestones are stored exactly. The file is written atomically (temp + rename).
    """
    if not isinstance(batch, StepBatch):
        raise TypeError(f"write_batch_record: expected a StepBatch, got {type(batch).__name__}")
    n = len(batch)
    if advantages is not None:
        advantages = np.asarray(advantages, dtype=np.float64)
        if advantages.shape != (n,):
            raise ValueError(
                f"write_batch_record: advantages has shape {advantages.shape}, expected ({n},)"
            )
        if estimator is None:
            raise ValueError("write_batch_record: advantages given without the estimator")
    thin = getattr(estimator, "record_state", None)
    if estimator_state is not None and callable(thin):
        estimator_state = thin(dict(estimator_state), batch)
    if observations is None and "observation" in batch.extras:
        observations = list(batch.extras["observation"])
    arrays: dict[str, np.ndarray] = {
        "group": batch.group.astype(np.int64),
        "traj": batch.traj.astype(np.int64),
        "t": batch.t.astype(np.int32),
        "reward": batch.reward.astype(np.float64),
        "terminated": batch.terminated,
        "truncated": batch.truncated,
        "success": batch.success,
    }
    tables: dict[str, list[str]] = {}
    for name in _STRING_COLUMNS:
        arrays[f"{name}_codes"], tables[name] = _encode_strings(getattr(batch, name).tolist())
    rows, names = batch.milestone_hits
    arrays["milestone_rows"] = rows.astype(np.int32)
    arrays["milestone_codes"], tables["milestone"] = _encode_strings(names.tolist())
    if observations is not None:
        obs = [truncate_text(str(o), max_obs_chars) for o in observations]
        if len(obs) != n:
            raise ValueError(f"write_batch_record: {len(obs)} observations for {n} rows")
        arrays["observation_codes"], tables["observation"] = _encode_strings(obs)
    extra_kinds: dict[str, str] = {}
    for name, (kind, col) in _scalar_extras(batch).items():
        extra_kinds[name] = kind
        if kind in ("str", "strlist"):  # a list of strings: its JSON text, coded as a string
            arrays[f"extra.{name}_codes"], tables[f"extra.{name}"] = _encode_strings(col)
        else:
            arrays[f"extra.{name}"] = col
    if advantages is not None:
        arrays["advantages"] = advantages
    header = {
        "format": FORMAT,
        "iteration": int(iteration),
        "rows": n,
        "estimator": None
        if estimator is None
        else {
            "name": str(getattr(estimator, "name", "")),
            "config": estimator_config_dict(estimator),
            "state": dict(estimator_state) if estimator_state is not None else None,
        },
        "diagnostics": _clean_diagnostics(diagnostics),
        "extras": extra_kinds,
        "max_obs_chars": max_obs_chars,
        "meta": dict(meta or {}),
    }
    arrays["header"] = _json_bytes(header)
    arrays["tables"] = _json_bytes(tables)
    target = Path(path) if path is not None else record_path(run_dir, iteration)
    target.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _clean_diagnostics(diag: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """JSON-ready copy (numpy scalars -> Python); non-finite floats kept (NaN/inf are JSON-able)."""
    if diag is None:
        return None
    return json.loads(json.dumps(dict(diag), allow_nan=True, default=_json_default))


# -------------------------------------------------------------------- read


@dataclass
class BatchRecord:
    """A record read back (docs/inspect.md): the batch and how it was trained on."""

    path: Path
    iteration: int
    batch: StepBatch
    estimator_name: str | None = None
    estimator_config: dict[str, Any] | None = None
    estimator_state: dict[str, Any] | None = None
    advantages: np.ndarray | None = None
    diagnostics: dict[str, Any] | None = None
    observations: np.ndarray | None = None
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    max_obs_chars: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def make_estimator(self, name: str | None = None) -> Any:
        """Estimator ``name`` as it was before the recorded call (docs/inspect.md).

        The trained estimator (``name`` None or equal to it) gets its recorded config and
        pre-call state; any other name is ``get_estimator(name)`` with its defaults.
        """
        from mvpo_train.credit import get_estimator

        if name is None or name == self.estimator_name:
            if self.estimator_name is None:
                raise RecordError(f"{self.path}: the record names no trained estimator")
            est = get_estimator(self.estimator_name, **(self.estimator_config or {}))
            if self.estimator_state:
                est.load_state_dict(self.estimator_state)
            return est
        return get_estimator(name)

    def verify(self, atol: float = 0.0) -> None:
        """Recompute the trained estimator; raise :class:`RecordError` if its advantages differ
        from the recorded ones by more than ``atol`` (0: bit-for-bit)."""
        if self.advantages is None:
            return
        adv, _ = self.make_estimator()(self.batch)
        diff = np.abs(adv - self.advantages)
        if diff.size and float(diff.max()) > atol:
            k = int(np.argmax(diff))
            raise RecordError(
                f"{self.path}: recomputed {self.estimator_name} advantages differ from the "
                f"recorded ones (row {k}: {adv[k]!r} vs {self.advantages[k]!r}); the record "
                "does not reproduce the training call"
            )


def read_batch_record(path: str | os.PathLike) -> BatchRecord:
    """Read a file written by :func:`write_batch_record` (no pickle); clear error if it is not."""
    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise RecordError(f"{p}: no such record") from None
    except (OSError, ValueError) as err:
        raise RecordError(f"{p}: not a batch record ({err})") from None
    if "header" not in data or "tables" not in data:
        raise RecordError(f"{p}: not a batch record (no header)")
    header = _json_load(data["header"])
    if header.get("format") != FORMAT:
        raise RecordError(f"{p}: unsupported record format {header.get('format')!r}")
    tables = _json_load(data["tables"])
    n = int(header["rows"])
    milestones: list[tuple[str, ...]] = [()] * n
    ms_names = _decode_strings(data["milestone_codes"], tables["milestone"])
    hits: dict[int, list[str]] = {}
    for r, name in zip(data["milestone_rows"].tolist(), ms_names.tolist(), strict=True):
        hits.setdefault(r, []).append(name)
    for r, names in hits.items():
        milestones[r] = tuple(names)
    cols = {
        "group": data["group"],
        "traj": data["traj"],
        "t": data["t"].astype(np.int64),
        "reward": data["reward"],
        "terminated": data["terminated"],
        "truncated": data["truncated"],
        "success": data["success"],
        "milestones": milestones,
    }
    for name in _STRING_COLUMNS:
        cols[name] = _decode_strings(data[f"{name}_codes"], tables[name])
    extras: dict[str, np.ndarray] = {}
    for name, kind in header.get("extras", {}).items():
        if kind == "str":
            extras[name] = _decode_strings(data[f"extra.{name}_codes"], tables[f"extra.{name}"])
        elif kind == "strlist":
            table = [tuple(json.loads(x)) for x in tables[f"extra.{name}"]]
            extras[name] = _decode_strings(data[f"extra.{name}_codes"], table)  # type: ignore[arg-type]
        else:
            extras[name] = data[f"extra.{name}"]
    try:  # the batch carries its recorded extras: an estimator may read them (the task labels)
        batch = StepBatch(**cols, extras=dict(extras))
    except ValueError as err:
        raise RecordError(f"{p}: the recorded batch is invalid: {err}") from None
    obs = None
    if "observation_codes" in data:
        obs = _decode_strings(data["observation_codes"], tables["observation"])
    est = header.get("estimator") or {}
    return BatchRecord(
        path=p,
        iteration=int(header["iteration"]),
        batch=batch,
        estimator_name=est.get("name"),
        estimator_config=est.get("config"),
        estimator_state=est.get("state"),
        advantages=data.get("advantages"),
        diagnostics=header.get("diagnostics"),
        observations=obs,
        extras=extras,
        max_obs_chars=header.get("max_obs_chars"),
        meta=header.get("meta") or {},
    )
