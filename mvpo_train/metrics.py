"""Metrics: per-iteration JSONL (+ the trackers of ``report_to``), phase timers, plots.

docs/architecture.md ("Long work shows progress (tqdm) and writes metrics (JSONL, optional
TensorBoard) and plots"); the trackers (TensorBoard, W&B, Trackio) are :mod:`mvpo_train.tracking`. One JSON object per iteration in ``run_dir/metrics.jsonl``.
Nested diagnostics are flattened with ``/`` (``adv/amp_weights/target_seen``). Timing fields
all start with ``time/`` (the phases of the MVPO paper's Table 3: ``time/rollout`` = generation,
``time/logp_ref`` = old + reference log-probs, ``time/advantage``, ``time/update`` = actor),
so runs can be compared exactly on everything else (:func:`strip_timing`).

The file never loses rows it had (docs/training.md, "Reliability"): a resume shortens it to the
checkpoint's rows by writing a temporary file, ``fsync`` and ``os.replace`` (a kill or a full
disk leaves the old file whole), after :func:`check_metrics_rows` made sure the rows the
checkpoint counts are all there; a row that cannot be written whole is cut off again. A last
line without its newline that does not parse is the torn tail of a killed writer: readers skip
it (with a warning) and the next resume drops it.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MetricsLogger",
    "PhaseTimer",
    "check_metrics_rows",
    "flatten",
    "format_axis",
    "plot_metrics",
    "read_metrics",
    "strip_timing",
]


def _clean(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> ``a/b`` keys; numpy scalars -> Python; NaN/inf -> None; lists kept."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "/"))
        elif isinstance(v, np.ndarray):
            out[key] = [_clean(x) for x in v.tolist()]
        elif isinstance(v, list | tuple):
            out[key] = [_clean(x) for x in v]
        else:
            out[key] = _clean(v)
    return out


def strip_timing(row: dict[str, Any]) -> dict[str, Any]:
    """A metrics row without its ``time/`` fields (for exact run comparisons)."""
    return {k: v for k, v in row.items() if not k.startswith("time/")}


class PhaseTimer:
    """``with timer("rollout"): ...`` accumulates wall seconds per phase."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def as_metrics(self) -> dict[str, float]:
        out = {f"time/{k}": v for k, v in self.seconds.items()}
        out["time/total"] = sum(self.seconds.values())
        return out


def _scan(text: str) -> tuple[list[str], str | None]:
    """The row lines of a metrics file (no newlines, blank lines kept as ``""``) and its torn
    tail: a last line without newline that is not a JSON object (None if there is none)."""
    lines = text.split("\n")
    tail = lines.pop()  # "" when the file ends with a newline
    if tail.strip():
        try:
            whole = isinstance(json.loads(tail), dict)
        except json.JSONDecodeError:
            whole = False
        if not whole:
            return lines, tail
        lines.append(tail)  # a whole row that only lacks its newline
    return lines, None


def _row_count(lines: list[str]) -> int:
    return sum(1 for line in lines if line.strip())


def _storage_error(err: OSError, path: Path, what: str) -> Exception:
    from mvpo_train.checkpoint import CheckpointError, StorageFullError, storage_full_reason

    reason = storage_full_reason(err)
    if reason is not None:
        return StorageFullError(
            f"no space left writing {path} ({reason}); {what}; free space and rerun with --resume"
        )
    return CheckpointError(f"{path}: cannot write ({err.strerror or err}); {what}")


class MetricsLogger:
    """Appends rows to ``metrics.jsonl`` and sends their scalars to the trackers
    (:mod:`mvpo_train.tracking`, docs/training.md "Tracking").

    ``keep_rows`` (a resume): keep the first ``keep_rows`` rows, atomically (module docstring).
    ``report_to``: tracker names (``strict``: a missing package is a ``ConfigError``); None keeps
    the old rule, TensorBoard if ``tensorboard`` and installed. ``config`` is logged with the W&B
    and Trackio runs; ``resume_step`` is the checkpoint's iteration (0 for a fresh run).
    """

    def __init__(
        self,
        run_dir: str | Path,
        tensorboard: bool = True,
        keep_rows: int | None = None,
        *,
        report_to: Sequence[str] | None = None,
        strict: bool = False,
        config: dict[str, Any] | None = None,
        resume_step: int = 0,
    ):
        from mvpo_train.tracking import open_trackers, resolve_report_to

        self.path = Path(run_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for stale in self.path.parent.glob(f"{self.path.name}.tmp-*"):  # a killed rewrite
            if stale.is_file() or stale.is_symlink():
                stale.unlink(missing_ok=True)
        if keep_rows is not None:
            self.truncate(keep_rows)
        if report_to is None:
            report_to, strict = resolve_report_to(None, tensorboard)
        self.trackers = open_trackers(
            run_dir, report_to, strict=strict, config=config, resume_step=resume_step
        )

    def truncate(self, keep_rows: int) -> None:
        """Keep only the first ``keep_rows`` rows (a resumed run rewrites the rest): a new file
        written beside it, ``fsync``-ed and renamed over it, so the old file stays whole until
        the new one is complete. Fewer rows than ``keep_rows`` is a ``ConfigError``."""
        if not self.path.exists():
            if keep_rows:
                check_metrics_rows(self.path.parent, keep_rows)  # raises: rows are missing
            return
        lines, torn = _scan(self.path.read_text())
        if _row_count(lines) < keep_rows:
            check_metrics_rows(self.path.parent, keep_rows)  # raises, naming the lost rows
        kept, n = [], 0
        for line in lines:
            if n == keep_rows:
                break
            if line.strip():
                kept.append(line)
                n += 1
        if torn is None and kept == lines:
            return  # already the checkpoint's rows: nothing to rewrite
        text = "".join(line + "\n" for line in kept)
        tmp = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
        try:
            with open(tmp, "w") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as err:
            tmp.unlink(missing_ok=True)
            raise _storage_error(err, self.path, f"{self.path.name} is unchanged") from None
        from mvpo_train.checkpoint import fsync_dir  # imports torch: only when rewriting

        fsync_dir(self.path.parent)

    def log(self, row: dict[str, Any], step: int) -> None:
        row = flatten(row)
        data = (json.dumps(row, sort_keys=True) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:  # unbuffered: nothing is left to fail later, at close
                view = view[os.write(fd, view) :]
            os.fsync(fd)  # on disk before a checkpoint counts it
        except OSError as err:
            try:  # never leave half a row
                os.ftruncate(fd, start)
            except OSError:
                pass
            raise _storage_error(
                err, self.path, "the rows before it and the newest checkpoint are intact"
            ) from None
        finally:
            os.close(fd)
        if self.trackers:
            from mvpo_train.tracking import scalars

            values = scalars(row)
            for tracker in self.trackers:
                tracker.log(step, values)

    @property
    def rows_written(self) -> int:
        if not self.path.exists():
            return 0
        return _row_count(_scan(self.path.read_text())[0])

    def close(self) -> None:
        trackers, self.trackers = self.trackers, []
        for tracker in trackers:
            tracker.close()


def check_metrics_rows(run_dir: str | Path, rows: int, checkpoint: str | None = None) -> None:
    """Raise a ``ConfigError`` unless ``run_dir/metrics.jsonl`` holds at least ``rows`` whole
    rows (the number a checkpoint counts), the message naming the lost ones; a resume checks
    this before it writes anything, so lost rows are never reported as a finished run."""
    from mvpo_train.config import ConfigError

    path = Path(run_dir) / "metrics.jsonl"
    if rows <= 0:
        return
    try:
        have = _row_count(_scan(path.read_text())[0])
    except FileNotFoundError:
        have = 0
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: unreadable ({type(err).__name__})") from None
    if have >= rows:
        return
    after = f"checkpoint {checkpoint}" if checkpoint else "the checkpoint"
    lost = f"row {rows} is" if have + 1 == rows else f"rows {have + 1}-{rows} are"
    raise ConfigError(
        f"{path}: holds {have} whole rows but {after} counts {rows}; {lost} lost, so the "
        "run cannot be resumed as it was (put the rows back, or start afresh with --overwrite)"
    )


def read_metrics(
    path: str | Path, *, warn: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Rows of a ``metrics.jsonl`` (or of ``<run_dir>/metrics.jsonl``).

    A missing file or a malformed line is a :class:`~mvpo_train.config.ConfigError` naming
    the file and line; only a torn last line (no final newline and not a JSON object: the
    process was killed while writing it, docs/training.md "Reliability") is left out, and
    ``warn`` (if given) is told so.
    """
    from mvpo_train.config import ConfigError

    path = Path(path)
    try:
        if path.is_dir():
            path = path / "metrics.jsonl"
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such metrics file (not a run folder?)") from None
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
        raise ConfigError(f"{_short_path(path)}: unreadable ({why})") from None
    lines, torn = _scan(text)
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise ConfigError(f"{path}: line {n} is not a JSON object") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path}: line {n} is not a JSON object")
        rows.append(row)
    if torn is not None and warn is not None:
        warn(
            f"{path}: line {len(lines) + 1} is incomplete (the writer was killed while writing "
            "it); skipped"
        )
    return rows


def _short_path(path: Path, width: int = 120) -> str:
    text = str(path)
    return text if len(text) <= width else "..." + text[-(width - 3) :]


def _smooth(y: np.ndarray, window: int) -> np.ndarray:
    if window <= 1 or len(y) < 2:
        return y
    out = np.empty_like(y)
    for i in range(len(y)):
        seg = y[max(0, i - window + 1) : i + 1]
        seg = seg[np.isfinite(seg)]
        out[i] = seg.mean() if len(seg) else np.nan
    return out


#: unit of a metric key by its prefix (shown in the panel's title and y label)
UNITS = {"time/": "seconds"}


def format_axis(ax: Any, key: str, x: str) -> None:
    """Title, labels and ticks of one ``mvpo-plot`` panel: the x ticks are whole numbers when
    every x value drawn is one (iterations, env steps: no 2.5th iteration), and a key with a
    unit (``time/*``: seconds per iteration) says it."""
    from matplotlib.ticker import MaxNLocator

    unit = next((u for prefix, u in UNITS.items() if key.startswith(prefix)), None)
    per = " per iteration" if x == "iteration" else ""
    ax.set_title(f"{key} ({unit}{per})" if unit else key)
    if unit:
        ax.set_ylabel(unit)
    ax.set_xlabel(x)
    xs = np.concatenate([line.get_xdata() for line in ax.get_lines()] or [np.zeros(0)])
    if xs.size and np.all(np.isfinite(xs)) and np.all(xs == np.round(xs)):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)


def plot_metrics(
    runs: Sequence[str | Path],
    keys: Iterable[str] = ("success", "return_mean", "adv/zero_credit_ratio", "time/total"),
    out: str | Path = "curves.png",
    labels: Sequence[str] | None = None,
    x: str = "iteration",
    smooth: int = 1,
    warn: Callable[[str], None] | None = None,
) -> Path:
    """One panel per metric key, one line per run; saved as PNG. ``warn`` hears about skipped
    torn last lines (default: one ``mvpo-plot: warning: ...`` line on stderr each)."""
    if warn is None:

        def warn(message: str) -> None:
            print(f"mvpo-plot: warning: {message}", file=sys.stderr, flush=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mvpo_train.config import ConfigError

    suffix = Path(out).suffix.lower().lstrip(".")
    supported = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if suffix not in supported:  # checked before reading and drawing, not by savefig after
        raise ConfigError(f"--out: {out} has no image suffix; use one of {sorted(supported)}")
    data = [read_metrics(r, warn=warn) for r in runs]
    empty = [str(r) for r, rows in zip(runs, data, strict=True) if not rows]
    if empty:
        raise ConfigError(
            f"{empty[0]}: no metrics rows yet (the run has not finished an iteration)"
        )
    wanted = list(keys)
    keys = [k for k in wanted if any(row.get(k) is not None for rows in data for row in rows)]
    if not keys:
        raise ConfigError(
            f"--keys: none of {wanted} is in these runs; available: "
            f"{sorted({k for rows in data for row in rows for k in row})[:12]}"
        )
    if x != "iteration" and not any(x in row for rows in data for row in rows):
        raise ConfigError(f"--x: {x!r} is not a metric of these runs (try iteration, env_steps)")
    labels = (
        list(labels)
        if labels
        else [Path(r).name if Path(r).is_dir() else Path(r).parent.name for r in runs]
    )
    cols = min(len(keys), 2)
    nrows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(6 * cols, 3.6 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys, strict=False):
        for rows, label in zip(data, labels, strict=True):
            xs = np.array([r.get(x, i) for i, r in enumerate(rows)], dtype=float)
            ys = np.array(
                [np.nan if r.get(key) is None else float(r[key]) for r in rows], dtype=float
            )
            if np.all(np.isnan(ys)):
                continue
            ax.plot(xs, _smooth(ys, smooth), label=label)
        format_axis(ax, key, x)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    handles, names = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="lower center", ncol=min(len(names), 4))
    fig.tight_layout(rect=(0, 0.06 if handles else 0, 1, 1))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
