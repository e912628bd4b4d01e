"""The run folder's rules: what a fresh, resumed or overwritten run may do with ``run_dir``
(docs/training.md, "Reliability"), decided before anything is written (:func:`plan_run`) and
carried out once the setup has succeeded (:meth:`RunPlan.open`), with one-line errors for
folders that cannot be used or written."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mvpo_train.atomic_write import write_text_atomic
from mvpo_train.checkpoint import (
    CheckpointError,
    StorageFullError,
    find_intact_checkpoint,
    keep_aside,
    load_checkpoint,
    remove_stale_temporaries,
    storage_full_reason,
)
from mvpo_train.config import ConfigError, TrainConfig, changed_fields
from mvpo_train.metrics import check_metrics_rows
from mvpo_train.run_artifacts import RUN_ARTIFACTS
from mvpo_train.run_lock import LOCK_NAME, RunLock

__all__ = ["RUN_ARTIFACTS", "RunPlan", "check_run_dir_name", "plan_run", "say", "write_error"]


def say(message: str) -> None:
    """One ``mvpo-train:`` line on stderr."""
    print(f"mvpo-train: {message}", file=sys.stderr, flush=True)


def _short(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass
class RunPlan:
    """What :func:`train` will do with ``run_dir`` (decided by :func:`plan_run` before any
    write; carried out by :meth:`open` once the setup has succeeded)."""

    run_dir: Path
    checkpoint: Path | None = None  #: the intact checkpoint a resumed run starts from
    saved: dict[str, Any] = field(default_factory=dict)  #: its loaded contents
    corrupt: list[tuple[Path, str]] = field(default_factory=list)  #: newer, failed checks
    move_aside: bool = False  #: --overwrite of a folder that holds a run
    lock: RunLock | None = None  #: the run folder's lock (rank 0), moved along by --overwrite

    def open(self, cfg: TrainConfig) -> Path:
        """Move an old run aside or set corrupt checkpoints aside, then write config.yaml.

        Nothing is deleted: a corrupt checkpoint becomes the first free ``iter-K.corrupt``,
        ``iter-K.corrupt-2``, ... (an older one of that name is evidence, kept as it is).
        A failed write (full disk, a name the file system refuses) is one line naming it.
        """
        run_dir = self.run_dir
        try:
            if self.move_aside:
                n = 1
                while os.path.lexists(run_dir.with_name(f"{run_dir.name}.old-{n}")):
                    n += 1
                target = run_dir.with_name(f"{run_dir.name}.old-{n}")
                os.rename(run_dir, target)
                if self.lock is not None:  # its file moved along with the old run
                    self.lock.move_to(run_dir)
                (target / LOCK_NAME).unlink(missing_ok=True)
                say(f"--overwrite: moved the previous run in {run_dir} to {target}")
            for path, reason in self.corrupt:
                target = keep_aside(path, ".corrupt")
                say(f"skipped a corrupt checkpoint ({reason}); kept as {target.name}")
            if self.checkpoint is not None:
                remove_stale_temporaries(run_dir)
                if self.corrupt:
                    say(f"resuming from the newest intact checkpoint, {self.checkpoint.name}")
            run_dir.mkdir(parents=True, exist_ok=True)
            write_text_atomic(
                run_dir / "config.yaml", yaml.safe_dump(cfg.to_dict(), sort_keys=True)
            )
        except OSError as err:
            raise write_error(err, run_dir) from None
        return run_dir


def write_error(
    err: OSError, run_dir: Path, intact: str = "the run folder is as it was; free space and rerun"
) -> Exception:
    """One line for a failed write into the run folder (nothing before it was lost)."""
    reason = storage_full_reason(err)
    where = err.filename or run_dir
    if reason is not None:
        return StorageFullError(f"no space left writing {_trim(where)} ({reason}); {intact}")
    return ConfigError(f"run_dir: cannot write {_trim(where)}: {err.strerror or err}")


def _trim(path: Any, width: int = 120) -> str:
    text = str(path)
    return text if len(text) <= width else text[: width // 2 - 2] + "..." + text[-width // 2 :]


def check_run_dir_name(run_dir: Path, overwrite: bool) -> None:
    """A run folder name the file system can hold, with room for the names the trainer
    derives from it (``<run_dir>.old-N``); one line otherwise (it was ``File name too
    long`` as a traceback)."""
    try:
        limit = os.pathconf(_existing_parent(run_dir), "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    room = len(".old-99") if overwrite else 0
    for part in run_dir.parts:
        if len(part.encode()) + (room if part == run_dir.name else 0) > limit:
            raise ConfigError(
                f"run_dir: the folder name {_short(part, 40)} has {len(part.encode())} bytes; "
                f"this file system allows {limit}"
                + (f" (less {room} for the .old-N name of --overwrite)" if room else "")
                + "; choose a shorter --run-dir"
            )
    try:
        run_dir.exists()
    except OSError as err:
        raise ConfigError(
            f"run_dir: {_trim(run_dir)} cannot be used ({err.strerror or err})"
        ) from None


def _existing_parent(path: Path) -> Path:
    for p in (path, *path.parents):
        try:
            if p.is_dir():
                return p
        except OSError:
            continue
    return Path(".")


def plan_run(cfg: TrainConfig) -> RunPlan:
    """Apply the run folder's rules (docs/training.md, "Reliability") without writing:

    * a fresh run refuses a folder that holds a run unless ``overwrite`` (then the old run
      is moved to ``<run_dir>.old-N``, never mixed with the new one);
    * ``resume`` needs an intact checkpoint (checksums verified; newer corrupt ones are
      reported and set aside) and the same config apart from the resume-safe fields.
    """
    run_dir = Path(cfg.run_dir)
    plan = RunPlan(run_dir)
    if cfg.resume and cfg.overwrite:
        raise ConfigError("resume: --resume and --overwrite exclude each other")
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"run_dir: {run_dir} exists and is not a folder")
    if not cfg.resume:
        found = [name for name in RUN_ARTIFACTS if (run_dir / name).exists()]
        if found and not cfg.overwrite:
            raise ConfigError(
                f"run_dir: {run_dir} already holds a run ({', '.join(found)}); pass --resume "
                "to continue it or --overwrite to move it aside and start afresh"
            )
        plan.move_aside = bool(found)
        return plan
    if not run_dir.is_dir():
        raise ConfigError(f"run_dir: {run_dir} does not exist, so there is nothing to resume")
    ckpt, corrupt = find_intact_checkpoint(run_dir)
    if ckpt is None:
        if corrupt:
            raise CheckpointError(f"no intact checkpoint to resume from: {corrupt[-1][1]}")
        raise ConfigError(
            f"run_dir: {run_dir} has no complete checkpoint to resume from; run without "
            "--resume (with --overwrite if the folder holds a run) to start afresh"
        )
    saved = load_checkpoint(ckpt, verify=False)  # just verified
    check_metrics_rows(run_dir, int(saved["state"].get("metrics_rows", 0)), ckpt.name)
    changed = changed_fields(saved["state"].get("config", {}), cfg, saved["state"].get("estimator"))
    if changed:
        diff = ", ".join(f"{k}: {_short(a)} -> {_short(b)}" for k, (a, b) in changed.items())
        raise ConfigError(
            f"resume: the config differs from the run's in {diff}; a resumed run may change "
            "only iterations, checkpointing, logging and evaluation fields"
        )
    done = int(saved["state"]["iteration"])
    if cfg.iterations < done:
        raise ConfigError(
            f"iterations: the run is already at iteration {done}; expected >= {done}, "
            f"got {cfg.iterations}"
        )
    plan.checkpoint, plan.saved, plan.corrupt = ckpt, saved, corrupt
    return plan
