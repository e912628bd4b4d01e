"""A training run's recorded batches relabelled by verified replay, optionally shared out to
forked workers (docs/alignment.md, "Relabelling a run after the fact").

:class:`RunReplayer` builds, from a run folder's ``config.yaml``, the env the run played (as
the trainer did: :func:`mvpo_train.relabel.replay_env_settings`) with the caller's keyword
overrides and its labelling option on, and the run's reset map (cached under ``cache``:
:func:`mvpo_train.relabel.cached_reset_map`); :meth:`RunReplayer.relabel` gives a record's
verified labels (:func:`mvpo_train.relabel.relabel_batch`), with ``workers > 1`` by forked
processes that each own an env and take every ``workers``-th group (the same result). The
module names no env: the caller says which env ids carry the oracle (``env_ids``), which
keywords the replay env takes on top of the run's (``overrides``, e.g. a faster engine that is
identical step for step) and which keyword turns the labels on (``label_option``).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from mvpo_train.config import load_config
from mvpo_train.records import read_batch_record
from mvpo_train.relabel import (
    RelabelResult,
    cached_reset_map,
    relabel_batch,
    replay_env_settings,
)

__all__ = ["RelabelSetupError", "RunReplayer"]


class RelabelSetupError(ValueError):
    """A run that cannot be relabelled (no config, an env without the oracle): one line."""


class RunReplayer:
    """Replays a run's recorded trajectories on the env it played, the labels on."""

    def __init__(
        self,
        run_dir: Path,
        cache: Path,
        workers: int = 1,
        *,
        env_ids: Sequence[str],
        overrides: Mapping[str, Any] | None = None,
        label_option: str = "progress_oracle",
    ):
        config_path = Path(run_dir) / "config.yaml"
        if not config_path.is_file():
            raise RelabelSetupError(f"--relabel: {config_path} not found (the run's settings)")
        self.config = load_config(config_path)
        env_id, kwargs = replay_env_settings(self.config)
        if env_id not in env_ids:
            raise RelabelSetupError(
                f"--relabel: the run played {env_id}; only {', '.join(env_ids)} has the "
                "progress oracle"
            )
        kwargs = {**kwargs, **(overrides or {})}
        kwargs.pop(label_option, None)
        self.label_option = label_option
        self.check_abstraction = self.config.get("abstraction") != "learned"
        # the games are chosen by every keyword but the time limit: one map serves any max_steps
        games = {k: v for k, v in kwargs.items() if k != "max_episode_steps"}
        self.map, self.map_seconds, self.map_cached = cached_reset_map(
            Path(cache), env_id, games, lambda: gym.make(env_id, **games)
        )
        self.env_id, self.env_kwargs = env_id, kwargs
        self.env = self._make_env()
        self.workers = workers
        self.pool: Any = None
        if workers > 1:  # forked workers, each with its own env, sharing out a batch's groups
            ctx = multiprocessing.get_context("fork")
            self.pool = ctx.Pool(workers, initializer=_init_worker, initargs=(self,))

    def _make_env(self) -> Any:
        return gym.make(self.env_id, **self.env_kwargs, **{self.label_option: True})

    def relabel(self, rec: Any, groups: Sequence[int] | None = None) -> RelabelResult:
        """The verified labels of a record's batch (of ``groups`` only, if given)."""
        if self.pool is None or groups is not None:
            return relabel_batch(
                rec.batch, rec.extras, self.env, self.map,
                check_abstraction=self.check_abstraction, groups=groups,
            )  # fmt: skip
        batch = rec.batch
        gs = np.unique(batch.group).tolist()
        chunks = [gs[k :: self.workers] for k in range(self.workers) if gs[k :: self.workers]]
        parts = self.pool.map(_worker_relabel, [(str(rec.path), c) for c in chunks])
        out = RelabelResult(labels=np.full(len(batch), -1, dtype=np.int64), trajectories=0)
        for chunk, part in zip(chunks, parts, strict=True):
            rows = np.isin(batch.group, chunk)
            out.labels[rows] = part.labels[rows]
            out.trajectories += part.trajectories
            out.unverified += part.unverified
            out.tasks.update(part.tasks)
        out.unverified.sort(key=lambda u: (u.group, u.traj))
        return out

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool.join()
        self.env.close()


_WORKER: dict[str, RunReplayer] = {}


def _init_worker(replayer: RunReplayer) -> None:
    """A forked worker's own env (the parent's map and settings)."""
    replayer.env = replayer._make_env()
    replayer.pool = None
    _WORKER["replayer"] = replayer


def _worker_relabel(job: tuple[str, list[int]]) -> RelabelResult:
    path, groups = job
    return _WORKER["replayer"].relabel(read_batch_record(path), groups)
