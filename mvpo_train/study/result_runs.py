"""The runs of a study kept as compact results (:mod:`mvpo_train.study.compact`): its settings,
default pairs, the ``mvpo-train`` command of each (arm, seed), the command that writes its
``result.json``, the pending runs and the results read back (``benchmarks/control_study.py``;
docs/control_task.md, "Results").

Every run trains the encoder policy from a fresh head on ``env_id`` with ``--env-kwargs``
``{"difficulty", "num_milestones"}``; :func:`settings` is what a run's numbers depend on besides
the arm and the seed, stamped into its result, so a result made with other settings is refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mvpo_train.study import runs as study_runs
from mvpo_train.study.arms import Arm
from mvpo_train.study.compact import read_result
from mvpo_train.study.runs import Pending, n_metrics, run_dir

__all__ = [
    "BASELINES",
    "compact_cmd",
    "default_pairs",
    "load_results",
    "pending_runs",
    "settings",
    "train_cmd",
]

BASELINES = ("grpo", "gigpo")


def default_pairs(arms: list[Arm]) -> list[tuple[str, str]]:
    """Each non-baseline arm minus GRPO and minus GiGPO, GiGPO minus GRPO, and an arm with
    keywords minus the plain arm of its estimator (``mvpo-paper - mvpo``)."""
    names = {a.name for a in arms}
    pairs = [(a.name, b) for a in arms if a.name not in BASELINES for b in BASELINES if b in names]
    if set(BASELINES) <= names:
        pairs.append(("gigpo", "grpo"))
    pairs += [
        (a.name, a.estimator)
        for a in arms
        if a.kwargs and a.estimator in names and a.estimator != a.name
    ]
    return pairs


def settings(args: argparse.Namespace, env_id: str) -> dict[str, Any]:
    """Everything a run's numbers depend on besides the arm and the seed."""
    return {
        "env_id": env_id,
        "difficulty": args.difficulty,
        "num_milestones": args.num_milestones,
        "num_groups": args.num_groups,
        "group_size": args.group_size,
        "max_steps": args.max_steps,
        "iterations": args.iterations,
        "lr": args.lr,
        "ppo_epochs": args.ppo_epochs,
        "policy": "encoder",
        "model": "fresh",
        "eval_episodes": args.eval_episodes,
        "eval_max_tasks": args.eval_max_tasks,
        "extra": list(args.extra),
    }


def train_cmd(path: Path, arm: Arm, seed: int, args: argparse.Namespace, env_id: str) -> list[str]:
    """The run's ``mvpo-train`` command; its held-out evaluation runs in it, after the last
    iteration (one model load)."""
    env_kwargs = {"difficulty": args.difficulty, "num_milestones": args.num_milestones}
    before = [
        "--env-id", env_id, "--env-kwargs", json.dumps(env_kwargs), "--tasks", "[]",
        "--max-steps", str(args.max_steps), "--policy", "encoder", "--model", "fresh",
        "--num-groups", str(args.num_groups), "--group-size", str(args.group_size),
        "--ppo-epochs", str(args.ppo_epochs), "--lr", str(args.lr), *arm.flags(),
    ]  # fmt: skip
    after = [
        "--embedding-cache", str(Path(args.base) / "embeddings.npz"),
        "--eval-split", "eval", "--eval-every", str(args.iterations), "--no-eval-greedy",
        "--eval-episodes", str(args.eval_episodes), "--eval-max-tasks", str(args.eval_max_tasks),
    ]  # fmt: skip
    return study_runs.train_cmd(path, seed, args.iterations, before, after) + list(args.extra)


def compact_cmd(path: Path, arm: Arm, seed: int, conf: dict[str, Any]) -> list[str]:
    """The command that writes the run's compact result with settings ``conf``, the last step
    of its script."""
    code = (
        "import json, sys; from mvpo_train.study.compact import write_result; "
        "write_result(*json.loads(sys.argv[1]))"
    )
    payload = [str(path), arm.name, arm.spec(), seed, conf]
    return [sys.executable, "-c", code, json.dumps(payload)]


def pending_runs(args: argparse.Namespace, arms: list[Arm], env_id: str) -> list[Pending]:
    """(name, folder, shell script) of every (arm, seed) without a result, seed by seed."""
    conf, by_name = settings(args, env_id), {a.name: a for a in arms}

    def commands(path: Path, name: str, seed: int) -> list[list[str]]:
        arm = by_name[name]
        if read_result(path, arm.spec(), conf) is not None:
            return []
        done = n_metrics(path) >= args.iterations
        cmds = [] if done else [train_cmd(path, arm, seed, args, env_id)]
        return cmds + [compact_cmd(path, arm, seed, conf)]

    return study_runs.pending_runs(Path(args.base), by_name, args.seeds, commands, args.fresh)


def load_results(
    args: argparse.Namespace, arms: list[Arm], env_id: str
) -> dict[str, dict[int, dict[str, Any]]]:
    """The results of every arm by seed (a seed without one is missing; one made with other
    settings is refused)."""
    base, conf = Path(args.base), settings(args, env_id)
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for arm in arms:
        out[arm.name] = {}
        for seed in args.seeds:
            res = read_result(run_dir(base, arm.name, seed), arm.spec(), conf)
            if res is not None:
                out[arm.name][seed] = res
    return out
