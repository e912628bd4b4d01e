"""A training run's recorded batches with the signatures of a progress-carrying abstraction,
from a replay of each trajectory's commands on the run's own env settings (its
``config.yaml``; :func:`mvpo_train.relabel.replay_env_settings`), for the sources of
``benchmarks/potential_options.py`` that read a run (docs/alignment.md, "The potential's
options"). The env id and the abstraction come from the caller: nothing here names an env."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym

from mvpo_train.alignment import LABEL_KEY
from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.config import load_config
from mvpo_train.records import find_records, read_batch_record
from mvpo_train.relabel import replay_env_settings
from mvpo_train.study.progress_sources import SourceError, replayed_signatures

__all__ = ["replayed_run_batches", "run_settings"]

#: the extras a run's records must hold for the replay and the scores
KEPT = (LABEL_KEY, "task_index", "admissible_actions", "choice")


def replayed_run_batches(
    run: Path, env_id: str, name: str, what: str, source: str
) -> list[StepBatch]:
    """The run's batches in iteration order (every iteration from 1: a potential chains over
    them), with the labels, task indices and the signatures of abstraction ``name`` from a
    replay (anchors checked; the oracle off: the labels are recorded). A run of another env
    than ``env_id``, a missing iteration or a record without :data:`KEPT` is a
    :class:`~mvpo_train.study.progress_sources.SourceError` naming ``what`` (the flag); a
    line per iteration replayed, named ``source``."""
    records = find_records(run)
    if not records or list(records) != list(range(1, len(records) + 1)):
        raise SourceError(f"{what} {run}: needs records/iter-*.npz of every iteration from 1")
    run_env, kwargs = replay_env_settings(load_config(run / "config.yaml"))
    if run_env != env_id:
        raise SourceError(f"{what} {run}: a run of {run_env}, not {env_id}")
    kwargs.update(abstraction=name, progress_oracle=False)
    env = gym.make(run_env, **kwargs)
    out = []
    for k, path in records.items():
        rec = read_batch_record(path)
        missing = [key for key in KEPT if key not in rec.extras]
        if missing:
            raise SourceError(f"{what} {path}: the record lacks {missing}")
        extras = {key: rec.extras[key] for key in KEPT}
        batch = StepBatch(**{f: getattr(rec.batch, f) for f in FIELDS}, extras=extras)
        out.append(replayed_signatures(batch, env, name))
        print(f"{source}: iteration {k} replayed ({len(batch)} rows)", flush=True)
    return out


def run_settings(run: Path, root: Path, key: str) -> dict[str, str]:
    """What the results say of a run: ``key``, its folder (relative to ``root`` when inside
    it), and ``<key>_shape``, its batch shape (groups x group size x steps)."""
    cfg = load_config(run / "config.yaml")
    shape = " x ".join(str(cfg.get(k, "?")) for k in ("num_groups", "group_size", "max_steps"))
    where = run.relative_to(root) if run.is_relative_to(root) else run
    return {key: str(where), f"{key}_shape": shape}
