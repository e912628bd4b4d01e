"""Batches played by a scripted policy on an env with an exact oracle: the noisy expert and the
uniform policy of the alignment measurements (docs/alignment.md, "Benchmark").

:func:`noisy_expert_batch` plays ``rollouts`` episodes of each task in ``tasks`` (group ``g``
is task ``tasks[g]``, reset with ``options={"task_index": ...}``). At each step the expert plays
one of the env's optimal actions (``env.unwrapped.optimal_actions()``, chosen uniformly) with
probability ``p``, else a uniformly random admissible action; ``p = 0`` is the uniform policy.
Every random choice comes from the generator ``rng`` the caller seeds: per step one
``rng.random()``, then one ``rng.integers`` among the optimal or the admissible actions, in
the order the episodes are played (group by group, rollout by rollout), so a batch is a
function of the env, the tasks and ``rng``'s seed. The env must give the info contract of
docs/environments.md (``admissible_actions``, ``anchor``, ``signature``, ``milestones``,
``won``, ``state``) and the oracle's ``oracle_progress`` label; nothing names an env here.

The batch's extras: ``oracle_progress`` (the label), ``oracle_plan_decrease`` when the infos
carry ``oracle_plan_length`` (as :mod:`mvpo_train.rollout` fills it), ``task_index`` (the
task of each row, stable across batches: what a pooled estimator keys its history by) and,
for each extra abstraction given in ``abstractions``, ``signature:NAME``: the signature that
abstraction gives the same state (an :class:`~mvpo_abstraction.base.AbstractionTracker` fed
the same ``info["state"]`` sequence), so one play serves several signatures
(:func:`with_signatures`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mvpo_abstraction.base import Abstraction, AbstractionTracker
from mvpo_train.batch import (
    FIELDS,
    ORACLE_PLAN_DECREASE,
    ORACLE_PROGRESS,
    StepBatch,
    canonical_action,
)
from mvpo_train.rollout import _plan_decrease

__all__ = [
    "SIGNATURE_PREFIX",
    "ScriptedBatch",
    "merge_batches",
    "noisy_expert_batch",
    "uniform_batch",
    "with_signatures",
]

#: extras column prefix of another abstraction's signatures (``signature:alfworld-progress``)
SIGNATURE_PREFIX = "signature:"


@dataclass(frozen=True)
class ScriptedBatch:
    """A played batch and what the benchmark tables report about it."""

    batch: StepBatch
    tasks: list[int]
    expert_steps: int  # steps where the expert (not the random choice) acted


def noisy_expert_batch(
    env: Any,
    tasks: Sequence[int],
    rollouts: int,
    steps: int,
    p: float,
    rng: np.random.Generator,
    abstractions: Mapping[str, Abstraction] | None = None,
) -> ScriptedBatch:
    """``len(tasks)`` groups of ``rollouts`` episodes of at most ``steps`` steps (module
    docstring)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"noisy_expert_batch: p={p} is not a probability in [0, 1]")
    trackers = {name: AbstractionTracker(a) for name, a in (abstractions or {}).items()}
    rows: list[dict[str, Any]] = []
    labels: list[int] = []
    decrease: list[float] = []
    task_of_row: list[int] = []
    other: dict[str, list[str]] = {name: [] for name in trackers}
    expert_steps = 0
    for g, task in enumerate(tasks):
        for k in range(rollouts):
            _, info = env.reset(options={"task_index": int(task)})
            sigs = {name: tr.reset(info["state"])["signature"] for name, tr in trackers.items()}
            start = len(rows)
            for t in range(steps):
                admissible = list(info["admissible_actions"])
                if rng.random() < p:
                    best = env.unwrapped.optimal_actions()
                    action = best[int(rng.integers(len(best)))] if best else admissible[0]
                    expert_steps += 1
                else:
                    action = admissible[int(rng.integers(len(admissible)))]
                _, reward, terminated, truncated, info2 = env.step(action)
                rows.append(
                    {
                        "group": g, "traj": g * rollouts + k, "t": t, "reward": float(reward),
                        "terminated": bool(terminated),
                        "truncated": bool(truncated) and not bool(terminated),
                        "anchor": info["anchor"], "signature": info["signature"],
                        "milestones": tuple(info2["milestones"]),
                        "action": canonical_action(action),
                    }
                )  # fmt: skip
                labels.append(int(info2[ORACLE_PROGRESS]))
                decrease.append(_plan_decrease(info, info2))
                task_of_row.append(int(task))
                for name, tr in trackers.items():
                    other[name].append(sigs[name])
                    sigs[name] = tr.step(info2["state"], action)["signature"]
                info = info2
                if terminated or truncated:
                    break
            won = bool(info["won"])
            for r in rows[start:]:
                r["success"] = won
    extras: dict[str, Any] = {ORACLE_PROGRESS: labels}
    if not np.all(np.isnan(decrease)):
        extras[ORACLE_PLAN_DECREASE] = np.asarray(decrease, dtype=np.float64)
    extras["task_index"] = np.asarray(task_of_row, dtype=np.int64)
    extras.update({f"{SIGNATURE_PREFIX}{name}": sigs for name, sigs in other.items()})
    return ScriptedBatch(StepBatch.from_steps(rows, extras=extras), list(tasks), expert_steps)


def uniform_batch(
    env: Any, tasks: Sequence[int], rollouts: int, seed: int, iteration: int, steps: int = 50
) -> StepBatch:
    """Batch ``iteration`` of a seeded uniform policy: every task of ``tasks`` played
    ``rollouts`` times (:func:`noisy_expert_batch` at ``p = 0``, its generator seeded
    ``(seed, iteration, 1)``), with ``extras["task_index"]`` and the oracle columns."""
    rng = np.random.default_rng([seed, iteration, 1])
    return noisy_expert_batch(env, tasks, rollouts, steps, 0.0, rng).batch


def merge_batches(batches: Sequence[StepBatch]) -> StepBatch:
    """Batches of the same tasks as one batch (more rollouts per task): one rollout group per
    task (``extras["task_index"]``, groups in task order), trajectories renumbered batch after
    batch, every extras column of the first batch concatenated (``signature:NAME`` columns as
    lists)."""
    tasks = sorted({int(x) for b in batches for x in np.unique(b.extras["task_index"])})
    cols: dict[str, list[np.ndarray]] = {f: [] for f in FIELDS}
    extras: dict[str, list[Any]] = {k: [] for k in batches[0].extras}
    offset = 0
    for b in batches:
        for f in FIELDS:
            cols[f].append(getattr(b, f))
        cols["group"][-1] = np.searchsorted(tasks, b.extras["task_index"])
        cols["traj"][-1] = b.traj + offset
        offset += int(b.traj.max()) + 1
        for k in extras:
            extras[k].extend(list(b.extras[k]))
    fields = {f: np.concatenate(v) for f, v in cols.items()}
    fields["milestones"] = [m for b in batches for m in b.milestones]
    arrays = {k: v if k.startswith(SIGNATURE_PREFIX) else np.asarray(v) for k, v in extras.items()}
    return StepBatch(**fields, extras=arrays)


def with_signatures(batch: StepBatch, name: str) -> StepBatch:
    """``batch`` with its signatures replaced by the extras column ``signature:NAME`` (the
    signatures another abstraction gave the same states); a :class:`KeyError` naming the
    columns it has when there is none."""
    key = f"{SIGNATURE_PREFIX}{name}"
    if key not in batch.extras:
        have = sorted(k for k in batch.extras if k.startswith(SIGNATURE_PREFIX))
        raise KeyError(f"with_signatures: the batch has no {key!r} column (it has {have})")
    fields = {f: getattr(batch, f) for f in FIELDS}
    fields["signature"] = np.asarray(batch.extras[key], dtype=object)
    return StepBatch(**fields, extras=batch.extras)
