"""Metrics: per-iteration JSONL (+ TensorBoard when installed), phase timers, plots.

docs/architecture.md ("Long work shows progress (tqdm) and writes metrics (JSONL, optional
TensorBoard) and plots"). One JSON object per iteration in ``run_dir/metrics.jsonl``.
Nested diagnostics are flattened with ``/`` (``adv/amp_weights/target_seen``). Timing fields
all start with ``time/`` (the phases of the seeds' Table 3: ``time/rollout`` = generation,
``time/logp_ref`` = old + reference log-probs, ``time/advantage``, ``time/update`` = actor),
so runs can be compared exactly on everything else (:func:`strip_timing`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MetricsLogger", "PhaseTimer", "flatten", "plot_metrics", "read_metrics", "strip_timing"]


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


class MetricsLogger:
    """Appends rows to ``metrics.jsonl`` and mirrors scalars to TensorBoard if available."""

    def __init__(self, run_dir: str | Path, tensorboard: bool = True, keep_rows: int | None = None):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if keep_rows is not None:
            self.truncate(keep_rows)
        self._tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(Path(run_dir) / "tensorboard"))
            except Exception:  # tensorboard not installed
                self._tb = None

    def truncate(self, keep_rows: int) -> None:
        """Keep only the first ``keep_rows`` rows (a resumed run rewrites the rest)."""
        if not self.path.exists():
            return
        lines = self.path.read_text().splitlines(keepends=True)[:keep_rows]
        self.path.write_text("".join(lines))

    def log(self, row: dict[str, Any], step: int) -> None:
        row = flatten(row)
        with open(self.path, "a") as fh:
            fh.write(json.dumps(row, sort_keys=True) + "\n")
            fh.flush()
        if self._tb is not None:
            for k, v in row.items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    self._tb.add_scalar(k, v, step)
            self._tb.flush()

    @property
    def rows_written(self) -> int:
        if not self.path.exists():
            return 0
        return sum(1 for _ in self.path.open())

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``metrics.jsonl`` (or of ``<run_dir>/metrics.jsonl``).

    A missing file or a malformed line is a :class:`~mvpo_train.config.ConfigError` naming
    the file and line; only a torn last line (no final newline: the process was killed while
    writing it, docs/training.md "Reliability") is left out.
    """
    from mvpo_train.config import ConfigError

    path = Path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such metrics file (not a run folder?)") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: unreadable ({type(err).__name__})") from None
    lines = text.split("\n")
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):  # the torn last line of a killed writer
                break
            raise ConfigError(f"{path}: line {n} is not a JSON object") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path}: line {n} is not a JSON object")
        rows.append(row)
    return rows


def _smooth(y: np.ndarray, window: int) -> np.ndarray:
    if window <= 1 or len(y) < 2:
        return y
    out = np.empty_like(y)
    for i in range(len(y)):
        seg = y[max(0, i - window + 1) : i + 1]
        seg = seg[np.isfinite(seg)]
        out[i] = seg.mean() if len(seg) else np.nan
    return out


def plot_metrics(
    runs: Sequence[str | Path],
    keys: Iterable[str] = ("success", "return_mean", "adv/zero_credit_ratio", "time/total"),
    out: str | Path = "curves.png",
    labels: Sequence[str] | None = None,
    x: str = "iteration",
    smooth: int = 1,
) -> Path:
    """One panel per metric key, one line per run; saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mvpo_train.config import ConfigError

    suffix = Path(out).suffix.lower().lstrip(".")
    supported = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if suffix not in supported:  # checked before reading and drawing, not by savefig after
        raise ConfigError(f"--out: {out} has no image suffix; use one of {sorted(supported)}")
    data = [read_metrics(r) for r in runs]
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
        ax.set_title(key)
        ax.set_xlabel(x)
        ax.grid(alpha=0.3)
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
