"""Metrics of a batch and evaluation on a split (docs/training.md, "Metrics", and "Quick start"
for ``mvpo-eval``): :func:`batch_metrics` is the per-iteration row's success / return / length
part, :func:`evaluate` plays every task of an eval split under its own random stream."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from mvpo_train.backends import make_backend
from mvpo_train.batch import StepBatch
from mvpo_train.config import ConfigError, TrainConfig
from mvpo_train.factories import make_collector, make_venv
from mvpo_train.policy import Policy
from mvpo_train.progress import episode_ticker, work_bar
from mvpo_train.task_selection import eval_task_indices

__all__ = ["batch_metrics", "evaluate"]


def batch_metrics(batch: StepBatch, adv: np.ndarray | None = None) -> dict[str, Any]:
    """Success, returns, lengths, format/invalid ratios and per-task-type success."""
    ex = batch.extras
    ti = batch.traj_index
    env_ret = np.bincount(
        ti, weights=np.asarray(ex["env_reward"], dtype=np.float64), minlength=batch.n_traj
    )
    out: dict[str, Any] = {
        "episodes": int(batch.n_traj),
        "steps": int(len(batch)),
        "success": float(batch.traj_success.mean()),
        "return_mean": float(env_ret.mean()),
        "shaped_return_mean": float(batch.traj_return.mean()),
        "episode_length": float(batch.traj_length.mean()),
        "invalid_action_ratio": float(np.mean(ex["invalid_action"])),
        "format_error_ratio": float(1.0 - np.mean(ex["format_ok"])),
    }
    types = np.asarray(ex["task_type"], dtype=object)[batch.traj_rows]
    for tt in sorted(set(types.tolist())):
        out[f"success/{tt}"] = float(batch.traj_success[types == tt].mean())
    if adv is not None:
        out["adv/mean"] = float(np.mean(adv))
        out["adv/std"] = float(np.std(adv))
    return out


def evaluate(
    policy: Policy,
    cfg: TrainConfig,
    *,
    split: str | None = None,
    episodes: int | None = None,
    greedy: bool | None = None,
    max_tasks: int | None = None,
    tasks: list[int] | None = None,
    backend: Any = None,
    seed: int = 0,
    cache: dict[str, Any] | None = None,
    report_time: bool = False,
    per_episode: bool = False,
    progress: bool | None = None,
    on_batch: Callable[[StepBatch], None] | None = None,
) -> dict[str, Any]:
    """Success rate (overall and per task type) on every task of an eval split (or on the
    task indices ``tasks``, or ``max_tasks`` of them stratified over the task types,
    :func:`~mvpo_train.task_selection.eval_task_indices`), ``episodes`` episodes each.
    ``per_episode`` adds ``episode_task`` and ``episode_success``: each episode's task index
    and outcome, in task order (for paired comparisons, e.g. ``mvpo-showcase``).
    ``progress`` (default ``cfg.progress``): a bar on stderr ticking per step and finished
    episode (:mod:`mvpo_train.progress`).
    ``on_batch`` sees every batch as collected, padding episodes included (a chunk of tasks is
    padded to its size by repeating the last task; they are the groups ``>=`` the chunk's real
    task count), e.g. to keep what the summary drops (:mod:`mvpo_train.study.eval_scores`).

    The collector is the trainer's (:func:`~mvpo_train.factories.make_collector`) with, in
    generate mode, the ``hf`` backend on ``policy`` itself unless ``backend`` is given: an
    evaluation never starts a second engine such as vLLM.

    Runs under ``torch.random.fork_rng`` with its own generator, so evaluating during
    training does not change the training run's random stream.
    """
    split = split or cfg.eval_split
    episodes = episodes or cfg.eval_episodes
    greedy = cfg.eval_greedy if greedy is None else greedy
    max_tasks = cfg.eval_max_tasks if max_tasks is None else max_tasks
    chunk = 8
    cache = {} if cache is None else cache
    key = f"venv:{split}:{episodes}"
    if key not in cache:
        cache[key] = make_venv(cfg, split, chunk, episodes)
    venv = cache[key]
    # max_tasks: stratified over the task types, seeded by the run's seed (mvpo_train.task_selection)
    task_list = [int(t) for t in tasks] if tasks else eval_task_indices(venv, max_tasks, cfg.seed)
    if any(not 0 <= t < venv.num_tasks for t in task_list):
        raise ConfigError(
            f"tasks: {[t for t in task_list if not 0 <= t < venv.num_tasks]} out of range; "
            f"split {split!r} of {cfg.env_id} has {venv.num_tasks} tasks (0..{venv.num_tasks - 1})"
        )
    n_tasks = len(task_list)
    if backend is None and cfg.action_mode == "generate":
        backend = make_backend("hf", policy, top_p=cfg.top_p)
    collector = make_collector(cfg, venv, policy, torch.Generator().manual_seed(seed), backend)
    succ: list[bool] = []
    types: list[str] = []
    ep_tasks: list[int] = []
    lengths: list[float] = []
    start = time.perf_counter()
    was_training = policy.model.training
    policy.model.eval()
    shown = cfg.progress if progress is None else progress
    with (
        torch.random.fork_rng(devices=[]),
        work_bar(shown, f"eval {split}", n_tasks * episodes, "ep") as bar,
    ):
        torch.manual_seed(seed)
        tick = episode_ticker(bar)
        for first in range(0, n_tasks, chunk):
            part = [task_list[min(first + k, n_tasks - 1)] for k in range(chunk)]
            batch = collector.collect(part, greedy=greedy, on_step=tick)
            if on_batch is not None:
                on_batch(batch)
            tt = np.asarray(batch.extras["task_type"], dtype=object)[batch.traj_rows]
            keep = batch.traj_group < (n_tasks - first)  # drop padding groups
            ep_tasks += [part[g] for g in batch.traj_group[keep].tolist()]
            succ += batch.traj_success[keep].tolist()
            types += tt[keep].tolist()
            lengths += batch.traj_length[keep].tolist()
    if was_training:
        policy.model.train()
    out: dict[str, Any] = {
        "success": float(np.mean(succ)) if succ else 0.0,
        "episodes": len(succ),
        "episode_length": float(np.mean(lengths)) if lengths else 0.0,
    }
    if report_time:
        out["time/seconds"] = time.perf_counter() - start
    arr_s, arr_t = np.asarray(succ), np.asarray(types, dtype=object)
    for tt in sorted(set(types)):
        out[f"success/{tt}"] = float(arr_s[arr_t == tt].mean())
    if per_episode:
        out["episode_task"] = ep_tasks
        out["episode_success"] = [bool(x) for x in succ]
    return out
