"""Batches whose rows carry the exact progress label, to score how well a potential ranks
progress steps (``benchmarks/potential_options.py``; docs/alignment.md, "The potential's
options"): played by a script on the same tasks every batch, played by a trained policy, or
read from a training run's batch records; each with the signatures of a progress-carrying
abstraction beside the env's own (``extras["signature:NAME"]``,
:func:`mvpo_train.scripted_batches.with_signatures`).

* :func:`same_tasks`: the tasks of a same-task source, drawn with a seed;
* :func:`play_scripted`: one batch of the noisy expert (or the uniform policy) on them;
* :func:`play_policy`: one batch of a trained policy (a run's ``config.yaml`` and a model) on
  them, the progress signatures by a verified replay (:func:`replayed_signatures`);
* :func:`milestone_signatures`, :func:`run_batches`: a run's recorded batches with the
  signatures that add the milestones done to each place (``place|m{done}|depth``).

Every env id and abstraction name comes from the caller: nothing here names an env.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.alignment import LABEL_KEY
from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.records import find_records, read_batch_record
from mvpo_train.scripted_batches import SIGNATURE_PREFIX, noisy_expert_batch

__all__ = [
    "SourceError",
    "milestone_signatures",
    "play_policy",
    "play_scripted",
    "replayed_signatures",
    "run_batches",
    "same_tasks",
]


class SourceError(ValueError):
    """A source that cannot give its batches (one line)."""


def same_tasks(env: Any, seed: int, tasks: int) -> list[int]:
    """``tasks`` task indices of ``env``'s split (all when it has fewer), drawn with ``seed``."""
    n = len(env.unwrapped.task_ids)
    return np.random.default_rng(seed).choice(n, size=min(tasks, n), replace=False).tolist()


def play_scripted(
    make_env: Callable[[], Any],
    abstractions: Callable[[Any], dict[str, Any]],
    p: float,
    seed: int,
    k: int,
    size: tuple[int, int, int],
) -> StepBatch:
    """Batch ``k`` of a same-task scripted source: ``size`` = (tasks, rollouts, steps), the
    noisy expert at ``p`` (0: the uniform policy; :func:`~mvpo_train.scripted_batches.noisy_expert_batch`,
    seeded ``(seed, p * 1000, k)``), the signatures of ``abstractions(env)`` (name ->
    abstraction) beside the env's own."""
    tasks, rollouts, steps = size
    env = make_env()
    chosen = same_tasks(env, seed, tasks)
    rng = np.random.default_rng([seed, int(round(p * 1000)), k])
    played = noisy_expert_batch(
        env, chosen, rollouts, steps, p, rng, abstractions=abstractions(env)
    )
    env.close()
    return played.batch


def play_policy(
    config: Path, overrides: dict[str, Any], make_env: Callable[[], Any], seed: int, k: int
) -> StepBatch:
    """Batch ``k`` of the policy of a run's ``config`` (with ``overrides``: the model, the
    sizes, the run folder) on the same tasks as :func:`same_tasks` draws them from
    ``make_env()``'s split, sampled with ``torch`` seeded ``seed * 1000 + k``."""
    import torch

    from mvpo_train.config import TrainConfig, load_config
    from mvpo_train.factories import load_policy, make_collector, make_venv

    cfg = TrainConfig(**{**load_config(config), **overrides, "threads": 1, "seed": seed})
    torch.set_num_threads(1)
    policy = load_policy(cfg)
    policy.model.eval()
    venv = make_venv(cfg, "train", cfg.num_groups, cfg.group_size)
    try:
        env = make_env()
        tasks = same_tasks(env, seed, cfg.num_groups)
        env.close()
        generator = torch.Generator().manual_seed(seed * 1000 + k)
        collector = make_collector(cfg, venv, policy, generator)
        return collector.collect(tasks)
    finally:
        venv.close()


def replayed_signatures(batch: StepBatch, env: Any, name: str) -> StepBatch:
    """``batch`` with ``signature:NAME``: every trajectory's commands replayed on ``env`` (made
    with the abstraction ``name``), refused in one line if an anchor differs; only the label
    and the task index kept of its other extras."""
    sigs = np.empty(len(batch), dtype=object)
    order = np.lexsort((batch.t, batch.traj))
    for traj in np.unique(batch.traj):
        rows = order[batch.traj[order] == traj]
        _, info = env.reset(options={"task_index": int(batch.extras["task_index"][rows[0]])})
        for r in rows:
            if info["anchor"] != batch.anchor[r]:
                raise SourceError(f"replay of trajectory {traj}: step {batch.t[r]} differs")
            sigs[r] = info["signature"]
            admissible = batch.extras["admissible_actions"][r]
            *_, info = env.step(admissible[int(batch.extras["choice"][r])])
    env.close()
    extras: dict[str, Any] = {k: np.asarray(batch.extras[k]) for k in (LABEL_KEY, "task_index")}
    extras[f"{SIGNATURE_PREFIX}{name}"] = sigs.tolist()
    return StepBatch(**{f: getattr(batch, f) for f in FIELDS}, extras=extras)


def milestone_signatures(batch: StepBatch) -> list[str]:
    """Signatures ``place|m{done}|depth`` of a recorded batch whose own are ``place|depth``,
    ``done`` being the milestones its trajectory made before the row (each milestone fires
    once, none at reset, as on the control task; docs/control_task.md)."""
    out = np.empty(len(batch), dtype=object)
    order = np.lexsort((batch.t, batch.traj))
    done: dict[int, int] = {}
    for r in order.tolist():
        place, depth = str(batch.signature[r]).rsplit("|", 1)
        traj = int(batch.traj[r])
        out[r] = f"{place}|m{done.get(traj, 0)}|{depth}"
        done[traj] = done.get(traj, 0) + len(batch.milestones[r])
    return out.tolist()


def run_batches(run: Path, name: str, what: str = "--control-run") -> list[StepBatch]:
    """A run's recorded batches in iteration order, the labels, task indices and
    :func:`milestone_signatures` (as ``signature:NAME``) in their extras; every iteration from 1
    is needed (a potential chains over them), else a :class:`SourceError` naming ``what``."""
    records = find_records(run)
    if not records or list(records) != list(range(1, len(records) + 1)):
        raise SourceError(f"{what} {run}: needs records/iter-*.npz of every iteration from 1")
    out = []
    for path in records.values():
        rec = read_batch_record(path)
        extras = {
            LABEL_KEY: rec.extras[LABEL_KEY].astype(np.int64),
            "task_index": rec.extras["task_index"].astype(np.int64),
            f"{SIGNATURE_PREFIX}{name}": milestone_signatures(rec.batch),
        }
        out.append(StepBatch(**{f: getattr(rec.batch, f) for f in FIELDS}, extras=extras))
    return out
