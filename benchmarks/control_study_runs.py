"""The control study's arms, runs and results: arm specs, the ``mvpo-train`` command of each run,
its compact ``result.json``, the per-arm summary over seeds (``benchmarks/control_study.py``)."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.stats import SMOOTH, bootstrap_ci, censored, curve_band, first_reach, moving_average
from mvpo_train.study.arms import Arm, StudyError, parse_arm, parse_arms  # noqa: F401  (the study's names)
from mvpo_train.study.compact import (  # noqa: F401  (the study's names)
    RESULT,
    credit_code_sha256,
    curve_matrix,
    nanmean_rows,
    read_result,
    write_result,
)
from mvpo_train.study.runs import (
    n_metrics,
    python_entry,
    resume_flag,
    run_dir,
)
from mvpo_train.study.summary import intervals, pair_rows, paired

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV_ID = "mvpo/MilestoneChain-v0"
BASELINES = ("grpo", "gigpo")
#: the trainer's alignment metrics shown in the table and plot (docs/alignment.md); every
#: ``align/*`` key is kept in the compact results
ALIGN_SHOWN = ("align/auc", "align/labelled_fraction", "align/positives", "align/negatives")


def default_pairs(arms: list[Arm]) -> list[tuple[str, str]]:
    """Each non-baseline arm minus GRPO and minus GiGPO, GiGPO minus GRPO, and an arm with
    keywords minus the plain arm of its estimator (``mvpo-paper - mvpo``)."""
    names = {a.name for a in arms}
    pairs = [(a.name, b) for a in arms if a.name not in BASELINES for b in BASELINES if b in names]
    if set(BASELINES) <= names:
        pairs.append(("gigpo", "grpo"))
    pairs += [(a.name, a.estimator) for a in arms if a.kwargs and a.estimator in names
              and a.estimator != a.name]  # fmt: skip
    return pairs


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Everything a run's numbers depend on besides the arm and the seed."""
    return {
        "env_id": ENV_ID, "difficulty": args.difficulty, "num_milestones": args.num_milestones,
        "num_groups": args.num_groups, "group_size": args.group_size,
        "max_steps": args.max_steps, "iterations": args.iterations, "lr": args.lr,
        "ppo_epochs": args.ppo_epochs, "policy": "encoder", "model": "fresh",
        "eval_episodes": args.eval_episodes, "eval_max_tasks": args.eval_max_tasks,
        "extra": list(args.extra),
    }  # fmt: skip


def train_cmd(path: Path, arm: Arm, seed: int, args: argparse.Namespace) -> list[str]:
    env_kwargs = {"difficulty": args.difficulty, "num_milestones": args.num_milestones}
    cmd = [
        *python_entry("train_main"), "--preset", "cpu-tiny", "--env-id", ENV_ID,
        "--env-kwargs", json.dumps(env_kwargs), "--tasks", "[]",
        "--max-steps", str(args.max_steps), "--policy", "encoder", "--model", "fresh",
        "--num-groups", str(args.num_groups), "--group-size", str(args.group_size),
        "--ppo-epochs", str(args.ppo_epochs), "--lr", str(args.lr), *arm.flags(),
        "--seed", str(seed), "--iterations", str(args.iterations), "--run-dir", str(path),
        "--threads", "1", "--no-progress", "--no-tensorboard", "--save-every", "5",
        "--embedding-cache", str(Path(args.base) / "embeddings.npz"),
        # the held-out evaluation: in the run, after its last iteration (one model load)
        "--eval-split", "eval", "--eval-every", str(args.iterations), "--no-eval-greedy",
        "--eval-episodes", str(args.eval_episodes), "--eval-max-tasks", str(args.eval_max_tasks),
    ]  # fmt: skip
    # an interrupted run resumes from its checkpoint; a run folder without one starts over
    return cmd + resume_flag(path) + list(args.extra)


def compact_cmd(path: Path, arm: Arm, seed: int, args: argparse.Namespace) -> list[str]:
    """The command that writes the run's compact result, the last step of its script."""
    code = (
        "import json, sys; from mvpo_train.study.compact import write_result; "
        "write_result(*json.loads(sys.argv[1]))"
    )
    payload = [str(path), arm.name, arm.spec(), seed, settings(args)]
    return [sys.executable, "-c", code, json.dumps(payload)]


def pending_runs(args: argparse.Namespace, arms: list[Arm]) -> list[tuple[str, Path, str]]:
    """(name, folder, shell script) of every (arm, seed) without a result, seed by seed."""
    base, conf = Path(args.base), settings(args)
    out = []
    for seed in args.seeds:
        for arm in arms:
            path = run_dir(base, arm.name, seed)
            if args.fresh and path.exists():
                shutil.rmtree(path)
            if read_result(path, arm.spec(), conf) is not None:
                continue
            cmds = []
            if n_metrics(path) < args.iterations:
                cmds.append(train_cmd(path, arm, seed, args))
            cmds.append(compact_cmd(path, arm, seed, args))
            out.append((f"{arm.name}-seed{seed}", path, " && ".join(shlex.join(c) for c in cmds)))
    return out


def per_seed(res: dict[str, Any], threshold: float) -> dict[str, Any]:
    succ = np.asarray(res["curves"]["success"], dtype=np.float64)
    zc = curve_matrix([res], "zero_credit_ratio")[0]
    return {
        "auc": float(succ.mean()),
        "first": float(succ[:SMOOTH].mean()),
        "final": float(succ[-SMOOTH:].mean()),
        "reach": first_reach(succ, threshold),
        "zero_credit_early": float(np.nanmean(zc[:SMOOTH])) if np.isfinite(zc).any() else None,
        "eval": res["eval"]["success"],
        "minutes": res["minutes"],
    }


def summarize(results: dict[str, dict[int, dict]], threshold: float, iterations: int,
              pairs: list[tuple[str, str]]) -> dict[str, Any]:  # fmt: skip
    """Per arm: curves with bands and per-seed values with CIs; per pair: paired differences
    over seeds both arms finished (the success-curve difference with a band too)."""
    table: dict[str, Any] = {"arms": {}, "pairs": {}}
    for arm, runs in results.items():
        if not runs:
            continue
        seeds = sorted(runs)
        rs = [runs[s] for s in seeds]
        vals = {s: per_seed(runs[s], threshold) for s in seeds}
        mean, lo, hi = curve_band(moving_average(curve_matrix(rs, "success")))
        row: dict[str, Any] = {
            "spec": rs[0]["spec"], "seeds": seeds, "per_seed": {str(s): vals[s] for s in seeds},
            "curve": mean.tolist(), "curve_lo": lo.tolist(), "curve_hi": hi.tolist(),
            "reached": sum(vals[s]["reach"] is not None for s in seeds),
        }  # fmt: skip
        keys = sorted({k for r in rs for k in r["curves"]} - {"success"})
        row["curves"] = {k: nanmean_rows(curve_matrix(rs, k)) for k in keys}
        keys = ("auc", "first", "final", "zero_credit_early", "eval", "minutes")
        row.update(intervals((vals[s] for s in seeds), keys))
        row["reach"] = bootstrap_ci([censored(vals[s]["reach"], iterations) for s in seeds])
        table["arms"][arm] = row
    for a, b in pairs:
        if (both := pair_rows(table["arms"], a, b)) is None:
            continue
        common, pa, pb = both
        entry: dict[str, Any] = {"seeds": common}
        entry.update(paired(pa, pb, ("auc", "final", "eval", "reach"), iterations))
        diff = moving_average(
            curve_matrix([results[a][s] for s in common], "success")
            - curve_matrix([results[b][s] for s in common], "success")
        )
        m, lo, hi = curve_band(diff)
        entry.update(curve=m.tolist(), curve_lo=lo.tolist(), curve_hi=hi.tolist())
        table["pairs"][f"{a} - {b}"] = entry
    return table


def load_results(args: argparse.Namespace, arms: list[Arm]) -> dict[str, dict[int, dict]]:
    base, conf = Path(args.base), settings(args)
    out: dict[str, dict[int, dict]] = {}
    for arm in arms:
        out[arm.name] = {}
        for seed in args.seeds:
            res = read_result(run_dir(base, arm.name, seed), arm.spec(), conf)
            if res is not None:
                out[arm.name][seed] = res
    return out
