"""Experiment tracking: where the metrics rows go besides ``metrics.jsonl`` (docs/training.md,
"Tracking").

``report_to`` names the trackers the way TRL and ``transformers.TrainingArguments`` do: a list
(or a comma string) of ``tensorboard``, ``wandb``, ``trackio``; ``none`` for none of them, ``all``
for every one whose package is installed. ``metrics.jsonl`` is written whatever it says. Nothing
leaves the machine unless the user asks: TensorBoard writes event files in ``run_dir/tensorboard``,
W&B runs offline (``run_dir/wandb``; ``wandb sync`` uploads them) unless ``WANDB_MODE`` says
otherwise, and Trackio keeps its SQLite database in ``run_dir/trackio`` unless ``TRACKIO_DIR`` is
set.

Every tracker has the same two calls, :meth:`Tracker.log` ``(step, metrics)`` and
:meth:`Tracker.close`, and is built by the factory registered under its name
(:func:`register_tracker`; ``factory(run_dir, *, config, resume_step)``, docs/architecture.md "A new
policy, backend or tracker"); register your own before the config is built (or expose it as an entry
point of the group ``mvpo.trackers``) and name it in ``report_to``. Only numeric scalars are sent
(lists, ``None`` and booleans stay in ``metrics.jsonl``). The step is the iteration. A resumed run
never sends a step twice: TensorBoard hides the killed process's steps after the checkpoint
(``purge_step``) and the resumed process writes them again; W&B and Trackio keep the steps they
already hold (a resumed run recomputes the same rows bit for bit, so they are the rows it would
send) and receive the later ones, in the same run (W&B: the run id kept in
``run_dir/wandb/mvpo-wandb.json``; Trackio: the run named after the run folder).

A tracker named in ``report_to`` whose package is missing is one :class:`ConfigError` line naming
the pip extra, before the model loads (:func:`check_available`); only the default (``report_to``
unset: TensorBoard when installed) skips a missing TensorBoard silently, as it always did.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import sqlite3
import struct
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mvpo_train.errors import ConfigError
from mvpo_train.plugin_table import PluginTable

__all__ = [
    "BACKENDS",
    "TensorBoardTracker",
    "Tracker",
    "TRACKERS",
    "TrackerKind",
    "TrackioTracker",
    "WandbTracker",
    "available_trackers",
    "check_available",
    "normalize_report_to",
    "open_trackers",
    "register_tracker",
    "resolve_report_to",
    "scalars",
]

#: tracker name -> (module that must be importable, pip extra that installs it), for every
#: registered tracker that needs a package (:func:`register_tracker`'s ``requires``)
BACKENDS: dict[str, tuple[str, str]] = {}
#: the project of the W&B and Trackio runs (W&B: ``WANDB_PROJECT`` overrides it)
PROJECT = "mvpo"
#: the file of ``run_dir/wandb`` that keeps the W&B run id and the last step sent
WANDB_STATE = "mvpo-wandb.json"
#: the file of ``run_dir/trackio`` that marks a run folder whose Trackio run exists
TRACKIO_STATE = "mvpo-trackio.json"


class Tracker(Protocol):
    """One experiment tracker: :meth:`log` a row of scalars at a step, :meth:`close` at the end."""

    name: str

    def log(self, step: int, metrics: dict[str, float]) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class TrackerKind:
    """One registered tracker: ``factory(run_dir, *, config, resume_step) -> Tracker`` (``config``
    the run's settings, ``resume_step`` the checkpoint's iteration, 0 for a fresh run) and the
    ``(module, pip extra)`` it needs (``None``: nothing to install)."""

    name: str
    factory: Callable[..., Tracker]
    requires: tuple[str, str] | None = None


#: the registered trackers (built-in: ``tensorboard``, ``wandb``, ``trackio``)
TRACKERS: PluginTable[TrackerKind] = PluginTable(
    "tracker", "report_to", "mvpo.trackers", TrackerKind
)


def register_tracker(
    name: str,
    factory: Callable[..., Tracker] | None = None,
    *,
    requires: tuple[str, str] | None = None,
    overwrite: bool = False,
) -> Any:
    """Register ``factory(run_dir, *, config, resume_step) -> Tracker`` under ``name`` (a call
    or the decorator ``@register_tracker("x")``); ``requires=(module, extra)`` makes a missing
    package one :class:`ConfigError` line naming ``pip install 'mvpo[extra]'``. A taken name
    needs ``overwrite=True``; ``none`` and ``all`` are words of ``report_to``, not names."""
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name):
        raise ValueError(f"register_tracker: name must be a lower-case word, got {name!r}")
    if name in ("none", "all"):
        raise ValueError(f"register_tracker: {name!r} is a word of report_to, not a tracker name")

    def entry(f: Callable[..., Tracker]) -> TrackerKind:
        BACKENDS.pop(name, None)
        if requires is not None:
            BACKENDS[name] = requires
        return TrackerKind(name, f, requires)

    return TRACKERS.register(name, factory, entry, overwrite=overwrite)


def available_trackers() -> list[str]:
    """Registered tracker names, in registration order (the built-in ones first), then those of
    the ``mvpo.trackers`` entry points not loaded yet."""
    return TRACKERS.names()


def normalize_report_to(value: Any) -> list[str] | None:
    """``report_to`` as a list of tracker names (``None`` stays ``None``: the default).

    A comma string is split; ``none`` is ``[]``; ``all`` is every tracker whose package is
    installed. Unknown names, repeats, and ``none``/``all`` beside other names are a
    :class:`ConfigError` line."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [x.strip() for x in value.split(",") if x.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(x, str) for x in value):
        raise ConfigError(
            f"report_to: expected tracker names such as tensorboard,wandb; got {value!r:.60}"
        )
    names = [x.strip().lower() for x in value]
    for name in names:
        if name not in ("none", "all") and not TRACKERS.known(name):
            allowed = ", ".join([*available_trackers(), "none", "all"])
            raise ConfigError(f"report_to: unknown tracker {name!r}; allowed: {allowed}")
    if len(set(names)) != len(names):
        raise ConfigError(f"report_to: {names} names a tracker twice")
    if len(names) > 1 and ({"none", "all"} & set(names)):
        raise ConfigError(f"report_to: none and all stand alone, got {','.join(names)}")
    if names == ["none"]:
        return []
    if names == ["all"]:
        return [n for n in available_trackers() if _installed(n)]
    return names


def resolve_report_to(report_to: list[str] | None, tensorboard: bool) -> tuple[list[str], bool]:
    """The trackers a run uses and whether a missing package is an error (``strict``).

    ``report_to`` unset: TensorBoard if ``tensorboard`` (the deprecated flag, default true) and
    not strict (skipped when not installed, as before ``report_to`` existed)."""
    if report_to is None:
        return (["tensorboard"] if tensorboard else []), False
    return list(report_to), True


def _installed(name: str) -> bool:
    requires = TRACKERS.get(name).requires
    if requires is None:
        return True
    try:  # sys.modules[module] = None (a blocked import) raises ValueError
        return importlib.util.find_spec(requires[0]) is not None
    except (ImportError, ValueError):
        return False


def check_available(names: Iterable[str]) -> None:
    """Raise one :class:`ConfigError` line for the first tracker whose package is missing."""
    for name in names:
        requires = TRACKERS.get(name).requires
        if requires is not None and not _installed(name):
            module, extra = requires
            raise ConfigError(
                f"report_to: {name} is not installed (pip install 'mvpo[{extra}]', or "
                f"pip install {module}); or drop it from --report-to"
            )


def scalars(row: dict[str, Any]) -> dict[str, float]:
    """The numeric scalars of a flattened metrics row (what the trackers receive)."""
    return {k: v for k, v in row.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def open_trackers(
    run_dir: str | Path,
    names: Sequence[str],
    *,
    strict: bool = True,
    config: dict[str, Any] | None = None,
    resume_step: int = 0,
) -> list[Tracker]:
    """The trackers ``names`` for ``run_dir`` (each built by its registered factory);
    ``resume_step`` is the checkpoint's iteration (0 for a fresh run). ``strict=False`` skips a
    tracker whose package is missing or does not import (the default TensorBoard)."""
    if strict:
        check_available(names)
    run_dir = Path(run_dir)
    out: list[Tracker] = []
    try:
        for name in names:
            if not _installed(name):
                continue
            factory = TRACKERS.get(name).factory
            try:
                out.append(factory(run_dir, config=config or {}, resume_step=resume_step))
            except ImportError:  # the default: TensorBoard only when it imports
                if strict:
                    raise
    except BaseException:
        for tracker in out:
            tracker.close()
        raise
    return out


class TensorBoardTracker:
    """Scalars in ``run_dir/tensorboard`` (``torch.utils.tensorboard``); a resume purges the
    steps after the checkpoint that a killed process wrote (TensorBoard's ``purge_step``)."""

    name = "tensorboard"

    def __init__(self, run_dir: Path, resume_step: int = 0):
        from torch.utils.tensorboard import SummaryWriter

        folder = run_dir / "tensorboard"
        had_events = folder.is_dir() and any(folder.glob("events.out.tfevents.*"))
        self._writer = SummaryWriter(
            str(folder), purge_step=resume_step + 1 if had_events else None
        )

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for k, v in metrics.items():
            self._writer.add_scalar(k, v, step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


class WandbTracker:
    """A W&B run in ``run_dir/wandb``: offline unless ``WANDB_MODE`` is set (``wandb sync
    run_dir/wandb/offline-run-*`` uploads it), named after the run folder, project
    ``WANDB_PROJECT`` or ``mvpo``, the config logged. The run id and the last step sent live in
    ``run_dir/wandb/mvpo-wandb.json``: a resumed run continues that run and skips the steps it
    already has."""

    name = "wandb"

    def __init__(self, run_dir: Path, config: dict[str, Any]):
        import wandb

        self._folder = run_dir / "wandb"
        self._folder.mkdir(parents=True, exist_ok=True)
        state = self._read_state()
        run_id = state.get("id")  # None: a new run, its id chosen by wandb
        self._last = int(state.get("step", 0))
        mode = None if os.environ.get("WANDB_MODE") else "offline"  # WANDB_MODE: wandb reads it
        if mode == "offline":  # the process-wide settings too: wandb 0.31's telemetry reads them
            wandb.setup(settings=wandb.Settings(mode="offline"))
        try:
            self._run = wandb.init(
                project=os.environ.get("WANDB_PROJECT") or PROJECT,
                name=run_dir.resolve().name,
                id=run_id,
                resume="allow" if run_id else None,
                dir=str(run_dir),
                mode=mode,
                config=config,
                settings=wandb.Settings(console="off"),
            )
        except Exception as err:  # e.g. WANDB_MODE=online without an API key
            message = " ".join(str(err).split())
            raise ConfigError(f"report_to: wandb.init failed: {message}") from None
        self._id = self._run.id
        self._write_state()
        # offline: the steps the run's files really hold (a SIGKILL can take the rows W&B's
        # service had not written yet); those the checkpoint's metrics.jsonl has are sent again
        self._held: set[int] | None = None
        if mode == "offline" and run_id:
            self._held = _wandb_offline_steps(self._folder, self._id)
            self._resend(run_dir / "metrics.jsonl")

    def _read_state(self) -> dict[str, Any]:
        path = self._folder / WANDB_STATE
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            raise ConfigError(f"{path}: unreadable; delete it to start a new W&B run") from None
        return state if isinstance(state, dict) else {}

    def _write_state(self) -> None:
        path = self._folder / WANDB_STATE
        tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps({"id": self._id, "step": self._last}) + "\n")
        os.replace(tmp, path)

    def _resend(self, metrics_file: Path) -> None:
        """Send the rows of ``metrics_file`` (the checkpoint's rows, on a resume) whose step
        the offline run files lack, in order."""
        try:
            lines = metrics_file.read_text().splitlines()
        except OSError:
            return
        for line in lines:
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a torn last line: the metrics logger skips it too
            step = row.get("iteration") if isinstance(row, dict) else None
            if isinstance(step, int) and not isinstance(step, bool):
                self.log(step, scalars(row))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        if self._held is not None:  # offline resume: what the files hold, not what was sent
            if step in self._held:
                return
            self._held.add(step)
        elif step <= self._last:  # the killed process sent it already (same row)
            return
        self._run.log(metrics, step=step)
        self._last = max(self._last, step)
        self._write_state()

    def close(self) -> None:
        self._run.finish()


class TrackioTracker:
    """A Trackio run (local mode): the SQLite database ``<TRACKIO_DIR>/mvpo.db``, with
    ``TRACKIO_DIR`` defaulting to ``run_dir/trackio``; the run is named after the run folder and
    holds the config. ``run_dir/trackio/mvpo-trackio.json`` marks a run folder whose Trackio run
    exists: a resumed run continues the newest run of that name and skips the steps the
    database already holds. Trackio reads ``TRACKIO_DIR`` once, at import: a process that
    imported it for another folder cannot switch (one :class:`ConfigError` line)."""

    name = "trackio"

    def __init__(self, run_dir: Path, config: dict[str, Any]):
        folder = Path(os.environ.get("TRACKIO_DIR") or run_dir / "trackio")
        trackio = _import_trackio(folder)
        if not os.environ.get("TRACKIO_DIR"):  # trackio's own hint omits the folder
            print(
                f"mvpo-train: trackio dashboard: TRACKIO_DIR={folder} trackio show --project "
                f"{PROJECT}",
                file=sys.stderr,
                flush=True,
            )
        marker = run_dir / "trackio" / TRACKIO_STATE
        self._run = trackio.init(
            project=PROJECT,
            name=run_dir.resolve().name,
            config=config,
            resume="allow" if marker.is_file() else "never",
            auto_log_cpu=False,
            auto_log_gpu=False,
            embed=False,
        )
        self._last = _last_step(folder / f"{PROJECT}.db", self._run.id)
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_name(f"{marker.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps({"id": self._run.id, "trackio_dir": str(folder)}) + "\n")
        os.replace(tmp, marker)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        if self._last is not None and step <= self._last:  # already in the database
            return
        self._run.log(metrics, step=step)
        _flush_trackio(self._run)

    def close(self) -> None:
        import trackio

        with contextlib.redirect_stdout(io.StringIO()):  # "* Run finished. Uploading logs ..."
            current = getattr(getattr(trackio, "context_vars", None), "current_run", None)
            if current is not None and current.get() is self._run:
                trackio.finish()  # also forgets the run: its exit hook does not finish it again
            else:
                self._run.finish()


def _flush_trackio(run: Any) -> None:
    """Write the queued rows to Trackio's SQLite database now. Trackio (local mode) queues
    each ``log`` for a background thread that writes every half second; the trainer logs an
    iteration's row before it commits that iteration's checkpoint, so without this a kill
    right after the checkpoint loses the row for good (the resumed run skips it). Trackio
    has no public flush: its own ``_flush_queues_inline`` under its lock, where present."""
    flush, lock = getattr(run, "_flush_queues_inline", None), getattr(run, "_client_lock", None)
    if flush is None or lock is None:
        return
    with lock:
        flush()


def _wandb_offline_steps(folder: Path, run_id: str) -> set[int]:
    """The history steps held by the offline files ``folder/offline-run-*/run-<id>.wandb``:
    a 7-byte header (``:W&B``, magic, version), then LevelDB log blocks of 32 KiB holding
    ``wandb_internal.Record`` protobufs; a torn tail (a killed writer) ends the scan."""
    from wandb.proto import wandb_internal_pb2 as pb

    steps: set[int] = set()
    for path in sorted(folder.glob(f"offline-run-*/run-{run_id}.wandb")):
        data = path.read_bytes()
        pos, chunk, block = 7, b"", 32768
        while data[:4] == b":W&B" and pos + 7 <= len(data):
            if block - pos % block < 7:  # a block's tail too short for a header is padding
                pos += block - pos % block
                continue
            _crc, size, kind = struct.unpack("<IHB", data[pos : pos + 7])
            pos += 7
            if (size == 0 and kind == 0) or pos + size > len(data):
                break
            chunk += data[pos : pos + size]
            pos += size
            if kind in (1, 4):  # FULL or LAST: the record is whole
                record = pb.Record()
                try:
                    record.ParseFromString(chunk)
                except Exception:  # a torn record: nothing after it is trusted
                    break
                chunk = b""
                if record.WhichOneof("record_type") == "history":
                    for item in record.history.item:
                        if (item.key or "/".join(item.nested_key)) == "_step":
                            steps.add(int(json.loads(item.value_json)))
    return steps


def _import_trackio(folder: Path) -> Any:
    """``import trackio`` with ``TRACKIO_DIR = folder`` (it reads the variable at import)."""
    if "trackio" in sys.modules:
        import trackio.utils

        have = Path(trackio.utils.TRACKIO_DIR)
        if have.resolve() != folder.resolve():
            raise ConfigError(
                f"report_to: trackio was imported in this process for {have}, not {folder}; "
                "set TRACKIO_DIR before starting, or train in a new process"
            )
        import trackio

        return trackio
    folder.mkdir(parents=True, exist_ok=True)
    before = os.environ.get("TRACKIO_DIR")
    os.environ["TRACKIO_DIR"] = str(folder)
    try:
        import trackio
    finally:
        if before is None:
            os.environ.pop("TRACKIO_DIR", None)
    return trackio


def _query(db: Path, sql: str, args: tuple[Any, ...]) -> Any:
    if not db.is_file():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            row = conn.execute(sql, args).fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else row[0]


def _last_step(db: Path, run_id: str) -> int | None:
    """The highest step of the run in Trackio's database (its documented ``metrics`` table)."""
    step = _query(db, "SELECT MAX(step) FROM metrics WHERE run_id = ?", (run_id,))
    return None if step is None else int(step)


# ------------------------------------------------------------------ the built-in trackers


@register_tracker("tensorboard", requires=("tensorboard", "tensorboard"))
def _tensorboard(run_dir: Path, *, config: dict[str, Any], resume_step: int) -> Tracker:
    return TensorBoardTracker(run_dir, resume_step)


@register_tracker("wandb", requires=("wandb", "track"))
def _wandb(run_dir: Path, *, config: dict[str, Any], resume_step: int) -> Tracker:
    return WandbTracker(run_dir, config)


@register_tracker("trackio", requires=("trackio", "track"))
def _trackio(run_dir: Path, *, config: dict[str, Any], resume_step: int) -> Tracker:
    return TrackioTracker(run_dir, config)
