"""Recover a recorded batch's per-step env labels after the fact, by verified replay.

docs/alignment.md, "Relabelling a run after the fact". A batch record (:mod:`mvpo_train.records`)
holds every step's anchor, signature, action, milestones, reward and termination, but not the
game a group played nor a label its env did not compute (``oracle_progress`` when the run
played without ``progress_oracle``). Every mvpo env is deterministic given its task index
(docs/environments.md, "Task selection"), so replaying a trajectory's actions on the same task
reproduces it step for step, and an env built with a labelling option (ALFWorld's
``progress_oracle=True``) then yields the labels the run would have logged.

* :func:`build_reset_map`: reset observation (its SHA-256) -> the task indices that start with
  it; :func:`cached_reset_map` keeps it on disk, keyed by the env settings and checked against
  the split's task ids;
* :func:`replay_trajectory`: play one recorded trajectory on one task and check every step
  (the anchor and signature the action was taken in, the transition's milestones, the env
  reward, ``terminated`` / ``truncated``, ``invalid_action``, the episode's success): the
  labels, or the first mismatch in words;
* :func:`relabel_batch`: each group's candidates are the tasks whose reset observation is the
  group's first anchor; a candidate is kept for a trajectory only when its full replay
  matches, a group plays the one task common to its reproduced trajectories, and a trajectory
  is labelled only when every kept candidate gives it the same labels. Anything else is an
  *unverified* trajectory (its rows get ``-1``, unknown), with the reason; nothing is guessed.

The module knows no particular env: the caller builds the env (with its labelling option) and
names the info key to read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.alignment import LABEL_KEY
from mvpo_train.batch import StepBatch, canonical_action
from mvpo_train.config import TrainConfig

__all__ = [
    "RelabelResult",
    "Unverified",
    "build_reset_map",
    "cached_reset_map",
    "observation_key",
    "relabel_batch",
    "replay_env_settings",
    "replay_trajectory",
]

MAP_FORMAT = "mvpo-reset-map/1"


def observation_key(text: str) -> str:
    """The SHA-256 (hex) of an observation: the reset map's key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def replay_env_settings(config: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(env_id, gym.make keywords)`` of a run's training env, from its ``config.yaml``
    fields: ``env_kwargs`` plus ``split``, ``max_steps`` (as ``max_episode_steps``) and a named
    ``abstraction``, as :func:`mvpo_train.factories.make_venv` builds them (a field the file
    lacks takes its :class:`~mvpo_train.config.TrainConfig` default)."""
    fields = TrainConfig.__dataclass_fields__

    def get(name: str) -> Any:
        return config[name] if name in config else fields[name].default

    env_kwargs = get("env_kwargs")
    kwargs = dict(env_kwargs) if isinstance(env_kwargs, Mapping) else {}
    if get("abstraction") and get("abstraction") != "learned":
        kwargs.setdefault("abstraction", get("abstraction"))
    kwargs.setdefault("split", get("split"))
    if get("max_steps"):
        kwargs["max_episode_steps"] = int(get("max_steps"))
    return str(get("env_id")), kwargs


# -------------------------------------------------------------------- the reset map


def build_reset_map(env: Any, num_tasks: int) -> dict[str, list[int]]:
    """Reset observation key (:func:`observation_key`) -> the task indices starting with it."""
    out: dict[str, list[int]] = {}
    for i in range(num_tasks):
        obs, _ = env.reset(options={"task_index": i})
        out.setdefault(observation_key(str(obs)), []).append(i)
    return out


def cached_reset_map(
    cache: str | os.PathLike, env_id: str, settings: Mapping[str, Any], make_env: Callable[[], Any]
) -> tuple[dict[str, list[int]], float, bool]:
    """The reset map of ``env_id`` with ``settings`` (the ``gym.make`` keywords that choose
    the games): read from ``<cache>/reset-map-<hash>.json``, else built with a fresh
    ``make_env()`` and written. A cached map whose task ids differ from the env's (the data
    changed) is rebuilt. Returns ``(map, seconds spent building, from_cache)``."""
    key = json.dumps({"env_id": env_id, "settings": dict(settings)}, sort_keys=True, default=str)
    path = Path(cache) / f"reset-map-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    env = make_env()
    try:
        task_ids = list(env.unwrapped.task_ids)
        ids_hash = hashlib.sha256("\n".join(task_ids).encode("utf-8")).hexdigest()
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("format") == MAP_FORMAT and data.get("task_ids_sha256") == ids_hash:
                    return {k: list(v) for k, v in data["map"].items()}, 0.0, True
            except (OSError, ValueError, KeyError, AttributeError):
                pass  # a broken cache entry is built again
        t0, c0 = time.perf_counter(), time.process_time()
        mapping = build_reset_map(env, len(task_ids))
        spent, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        env.close()
    data = {
        "format": MAP_FORMAT,
        "env_id": env_id,
        "settings": json.loads(key)["settings"],
        "tasks": len(task_ids),
        "task_ids_sha256": ids_hash,
        "build_seconds": spent,
        "build_cpu_seconds": cpu,
        "map": mapping,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)
    return mapping, spent, False


# -------------------------------------------------------------------- replay


@dataclass(frozen=True)
class Unverified:
    """A trajectory whose labels could not be recovered, and why."""

    group: int
    traj: int
    reason: str


@dataclass
class RelabelResult:
    """The recovered labels of one batch (row order), ``-1`` on unverified trajectories."""

    labels: np.ndarray
    trajectories: int
    unverified: list[Unverified] = field(default_factory=list)
    #: group -> the task indices whose replay reproduces its trajectories
    tasks: dict[int, list[int]] = field(default_factory=dict)


def _replay_action(action: str, invalid: bool, admissible: Sequence[str], choice: int) -> str:
    """The text to send for a recorded (canonical) ``action``: the admissible command it
    canonicalises to (``choice``'s in score mode); a step recorded as invalid whose canonical
    form is admissible (its raw text differed, e.g. in case) is sent upper-cased, which the
    env refuses the same way while its abstraction sees the same canonical command."""
    matches = [a for a in admissible if canonical_action(a) == action]
    if invalid:
        return action.upper() if matches else action
    if 0 <= choice < len(admissible) and canonical_action(admissible[choice]) == action:
        return admissible[choice]
    return matches[0] if len(matches) == 1 else action


def replay_trajectory(
    env: Any,
    task_index: int,
    batch: StepBatch,
    rows: Sequence[int],
    extras: Mapping[str, np.ndarray],
    *,
    label_key: str = LABEL_KEY,
    check_abstraction: bool = True,
) -> list[int] | str:
    """Replay the trajectory of ``rows`` (``t`` = 0, 1, ...) on task ``task_index``: the label
    ``info[label_key]`` after each step (``-1`` where the env gives none), or the first
    mismatch with the record as one sentence. ``check_abstraction=False`` skips signatures and
    milestones (a learned abstraction fitted during training labels them, not the env)."""
    _, info = env.reset(options={"task_index": int(task_index)})
    labels: list[int] = []
    for r in rows:  # a StepBatch's trajectory runs t = 0..T-1 and only its last row ends
        t = int(batch.t[r])
        if info.get("anchor") != batch.anchor[r]:
            return f"t={t}: the observation differs from the recorded anchor"
        if check_abstraction and info.get("signature") != batch.signature[r]:
            return f"t={t}: signature {info.get('signature')!r} != {batch.signature[r]!r}"
        invalid = bool(extras["invalid_action"][r]) if "invalid_action" in extras else False
        choice = int(extras["choice"][r]) if "choice" in extras else -1
        admissible = list(info.get("admissible_actions") or [])
        action = _replay_action(str(batch.action[r]), invalid, admissible, choice)
        _, reward, terminated, truncated, info = env.step(action)
        if "invalid_action" in extras and bool(info.get("invalid_action")) != invalid:
            return f"t={t}: invalid_action {bool(info.get('invalid_action'))} != {invalid}"
        if check_abstraction and tuple(info.get("milestones") or ()) != tuple(batch.milestones[r]):
            return (
                f"t={t}: milestones {tuple(info.get('milestones') or ())} != {batch.milestones[r]}"
            )
        if "env_reward" in extras:
            if float(reward) != float(extras["env_reward"][r]):
                return f"t={t}: reward {float(reward)} != recorded {float(extras['env_reward'][r])}"
        elif not invalid and float(reward) != float(batch.reward[r]):
            return f"t={t}: reward {float(reward)} != recorded {float(batch.reward[r])}"
        term, trunc = bool(terminated), bool(truncated) and not bool(terminated)
        if (term, trunc) != (bool(batch.terminated[r]), bool(batch.truncated[r])):
            return (
                f"t={t}: terminated/truncated {term}/{trunc} != recorded "
                f"{bool(batch.terminated[r])}/{bool(batch.truncated[r])}"
            )
        labels.append(int(info.get(label_key, -1)))
    if rows and bool(info.get("won")) != bool(batch.success[rows[-1]]):
        return f"success {bool(info.get('won'))} != recorded {bool(batch.success[rows[-1]])}"
    return labels


def _trajectory_rows(batch: StepBatch) -> dict[int, dict[int, list[int]]]:
    """group -> traj -> row indices sorted by ``t``."""
    out: dict[int, dict[int, list[int]]] = {}
    order = np.lexsort((batch.t, batch.traj))
    for r in order.tolist():
        out.setdefault(int(batch.group[r]), {}).setdefault(int(batch.traj[r]), []).append(r)
    return out


def relabel_batch(
    batch: StepBatch,
    extras: Mapping[str, np.ndarray],
    env: Any,
    reset_map: Mapping[str, Sequence[int]],
    *,
    label_key: str = LABEL_KEY,
    check_abstraction: bool = True,
    groups: Collection[int] | None = None,
) -> RelabelResult:
    """The labels of every row of ``batch`` by verified replay on ``env`` (module docstring):
    ``extras`` are the record's scalar extras (``invalid_action``, ``env_reward``, ``choice``
    are checked or used when present). ``groups``: replay only these groups (the rows of the
    others stay ``-1`` and are not counted), e.g. to share a batch between processes."""
    labels = np.full(len(batch), -1, dtype=np.int64)
    result = RelabelResult(labels=labels, trajectories=0)
    for g, trajs in sorted(_trajectory_rows(batch).items()):
        if groups is not None and g not in groups:
            continue
        result.trajectories += len(trajs)
        matched: dict[int, dict[int, list[int]]] = {tau: {} for tau in trajs}  # task -> labels
        miss: dict[int, str] = {}  # traj -> why it is not reproduced (the first reason)
        starts: dict[int, list[int]] = {}  # traj -> candidate tasks
        for tau, rows in trajs.items():
            if not reset_map.get(observation_key(str(batch.anchor[rows[0]]))):
                miss[tau] = "no task of the split starts with its first observation"
            else:
                starts[tau] = [
                    int(c) for c in reset_map[observation_key(str(batch.anchor[rows[0]]))]
                ]
        for c in sorted({c for cs in starts.values() for c in cs}):  # task outermost: the
            for tau, cs in starts.items():  # env's per-game caches are reused
                if c not in cs:
                    continue
                got = replay_trajectory(
                    env, c, batch, trajs[tau], extras,
                    label_key=label_key, check_abstraction=check_abstraction,
                )  # fmt: skip
                if isinstance(got, str):
                    miss.setdefault(tau, f"task {c}: {got}")
                else:
                    matched[tau][c] = got
        reproduced = [set(m) for m in matched.values() if m]
        common = set.intersection(*reproduced) if reproduced else set()
        result.tasks[g] = sorted(common)
        for tau, rows in trajs.items():
            if not matched[tau]:
                reason = miss.get(tau, "no candidate task reproduces it")
            elif not common:
                reason = "the trajectories of its group are reproduced by no common task"
            else:
                found = {tuple(matched[tau][c]) for c in common}
                if len(found) == 1:
                    labels[rows] = np.asarray(found.pop(), dtype=np.int64)
                    continue
                reason = f"tasks {sorted(common)} reproduce it with different labels"
            result.unverified.append(Unverified(group=g, traj=tau, reason=reason))
    return result
