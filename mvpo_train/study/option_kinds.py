"""MVPO's potential options on uniform control-task batches: the figures and page of
``benchmarks/potential_kinds.py`` (docs/estimators.md §3.11-§3.13). :func:`measure_options`
calls one estimator per option of :data:`OPTIONS` on consecutive batches (its state carried
from batch to batch, as in a run; :func:`mvpo_train.study.step_kinds.measure`) for two task
pools, then the pool's decays and folds of the combination of every option; :func:`markdown`
prints a run's figures (the JSON kept beside the page)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mvpo_train.credit.mvpo import MVPOConfig
from mvpo_train.credit.pooled_potential import EDGE_BYTES, ENTRY_BYTES
from mvpo_train.scripted_batches import uniform_batch
from mvpo_train.study.step_kinds import (
    KINDS_NOTE,
    decay_fold_lines,
    measure,
    ms_x_paper,
    pool_lines,
)

__all__ = ["DECAYS", "FOLDS", "OPTIONS", "config_figures", "markdown", "measure_options"]

#: option name -> MVPO's config keywords
OPTIONS: dict[str, dict[str, Any]] = {
    "paper (default)": {},
    "split": {"potential_split": "milestones"},
    "cross-fit only": {"region_stats": "pooled", "pool_decay": 0.0},
    "pooled": {"region_stats": "pooled"},
    "pooled + split": {"region_stats": "pooled", "potential_split": "milestones"},
    "pooled TD": {"region_stats": "pooled", "potential_estimate": "td"},
    "pooled TD + split (all)": {
        "region_stats": "pooled",
        "potential_estimate": "td",
        "potential_split": "milestones",
    },
    "pooled TD + split, loop-merged chain": {
        "region_stats": "pooled",
        "potential_estimate": "td",
        "potential_split": "milestones",
        "td_chain": "regions",
    },
    "all, scope=batch": {
        "region_stats": "pooled",
        "potential_estimate": "td",
        "potential_split": "milestones",
        "scope": "batch",
    },
}
DECAYS = (0.5, 0.9, 1.0)
FOLDS = (4, 8)
#: the option whose decays and folds are measured
COMBINATION = OPTIONS["pooled TD + split (all)"]


def measure_options(
    env: Any, n_batches: int, groups: int, rollouts: int, seed: int, burn_in: int
) -> dict[str, Any]:
    """The figures of every option on ``n_batches`` uniform batches of ``env`` (batch ``i``:
    ``groups`` tasks drawn with ``numpy.random.default_rng([seed, i])`` from the first N of
    its layouts, N = all of them and N = ``groups``; ``rollouts`` each): per pool and option
    :func:`~mvpo_train.study.step_kinds.measure` with its ``ms_x_paper``, and the combination's
    AUC after ``burn_in`` batches per pool decay (the last pool) and per fold count."""
    pools: dict[int, Any] = {}
    folds: dict[int, Any] = {}
    for n_tasks in (len(env.unwrapped.task_ids), groups):
        batches = []
        for i in range(n_batches):
            rng = np.random.default_rng([seed, i])
            tasks = [int(x) for x in rng.choice(n_tasks, size=groups, replace=False)]
            batches.append(uniform_batch(env, tasks, rollouts, seed, i))
        pools[n_tasks] = {name: measure(batches, kw, burn_in) for name, kw in OPTIONS.items()}
        folds[n_tasks] = {
            str(k): measure(batches, {**COMBINATION, "td_folds": k}, burn_in) for k in FOLDS
        }
    decays = {  # the last batches: every task in every batch
        str(d): measure(batches, {**COMBINATION, "pool_decay": d}, burn_in)["auc_after_burn_in"]
        for d in DECAYS
    }
    for res in pools.values():  # the ratio of the unrounded times, as printed
        for name in res:
            res[name]["ms_x_paper"] = ms_x_paper(res, name)
    return {
        "pools": pools,
        "decays": decays,
        "folds": {n: {k: r["auc_after_burn_in"] for k, r in v.items()} for n, v in folds.items()},
        "folds_ms": {n: {k: r["ms_per_batch"] for k, r in v.items()} for n, v in folds.items()},
    }


def config_figures() -> dict[str, Any]:
    """MVPO's pool defaults and sizes the page's memory paragraph prints."""
    cfg = MVPOConfig()
    return {"pool_decay": cfg.pool_decay, "td_folds": cfg.td_folds,
            "pool_max_entries": cfg.pool_max_entries, "entry_bytes": ENTRY_BYTES,
            "edge_bytes": EDGE_BYTES}  # fmt: skip


def markdown(out: dict[str, Any], env_id: str, memory_env: str) -> str:
    """The page of a run's figures (``out``, the JSON kept beside the page): ``env_id`` is the
    control task the options ran on, ``memory_env`` names the env of the memory paragraph
    (both the script's: this module names no env)."""
    s, cfg = out["settings"], out["config"]
    lines = [
        "# MVPO's potential options: repair per step kind and alignment (control task)",
        "",
        f"Command: `{out['command']}` ({out['seconds']:.0f} s; {out['machine']}). `{env_id}`, difficulty {s['difficulty']}, "
        f"{s['batches']} consecutive batches of {s['groups']} tasks x {s['rollouts']} uniform "
        f"rollouts x 50 steps, the tasks of each batch drawn from the first N train layouts "
        f"(seed {s['seed']}; N = 128, all of them, as `mvpo-train` draws, and N = "
        f"{s['groups']}, every task in every batch); one estimator per option, its state carried "
        "across the batches. docs/estimators.md §3.11-§3.13.",
    ]
    for n_tasks, res in out["pools"].items():
        lines += pool_lines(n_tasks, res, s["burn_in"])
    mem = out["memory"]
    cap, entry, edge = cfg["pool_max_entries"], cfg["entry_bytes"], cfg["edge_bytes"]
    lines += [
        *decay_fold_lines(out, COMBINATION),
        "",
        f"{memory_env}: one uniform batch "
        f"of {mem['tasks']} tasks x {mem['rollouts']} rollouts x 50 steps holds "
        f"{min(mem['keys_per_task'])}-{max(mem['keys_per_task'])} distinct (signature, "
        "milestones done) keys per task; every one of the 3,553 train tasks seen once at the "
        f"largest of these is {3553 * max(mem['keys_per_task']):,} entries = "
        f"{3553 * max(mem['keys_per_task']) * entry / 1e6:.0f} MB. The cap "
        f"(`pool_max_entries`, default {cap:,}) bounds the pool at {cap * entry / 1e6:.0f} "
        f"MB, and at {cap * (entry + edge) / 1e6:.0f} MB with "
        '`potential_estimate="td"` (its transitions, 32 bytes each, have a cap of their own), '
        "whatever the run; entries lighter than 1e-3 decayed visits are dropped (at `pool_decay` "
        "0.8 a key not seen again leaves after 31 iterations).",
        "",
        KINDS_NOTE,
        "",
    ]
    return "\n".join(lines)
