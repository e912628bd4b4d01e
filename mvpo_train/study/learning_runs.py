"""The learning study's runs (``benchmarks/learning.py``; docs/learning_study.md): the
``mvpo-train`` / ``mvpo-eval`` commands of each (arm, seed) of the study ``args.study_env``
(:class:`~mvpo_train.study.study_env.StudyEnv`), the cached warm start and its held-out
evaluation, the warm-start candidates; pending runs go to :mod:`mvpo_train.study.runs`. Every
command runs from ``root``, the repository the study's paths are relative to."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from mvpo_train.study import runs
from mvpo_train.study.runs import (
    RUN_ENV,
    eval_file,
    n_metrics,
    pending_runs,
    python_entry,
    run_dir,
    run_local,
    run_ray,
)
from mvpo_train.study.study_env import StudyEnv, arm_flags, embedding_cache, final_evals

__all__ = [
    "ensure_warm",
    "eval_cmd",
    "run_all",
    "train_cmd",
    "warm_candidates",
    "warm_cmd",
    "warm_start_and_eval",
]


def train_cmd(path: Path, arm: str, seed: int, args: argparse.Namespace) -> list[str]:
    """The run's ``mvpo-train`` command: the arm's flags, the study's shared ones (with
    ``args.study``), then the extra flags and the arm's own ``--arm-flags`` (which win)."""
    env, study = args.study_env, []
    if args.study:
        study = [*env.flags, "--num-groups", str(args.num_groups), "--group-size",
                 str(args.group_size), "--lr", str(args.lr), "--eval-every", str(args.eval_every),
                 "--eval-episodes", str(args.eval_episodes), "--env-kwargs", args.env_kwargs,
                 "--embedding-cache", embedding_cache(args), "--model", args.warm]  # fmt: skip
    cmd = runs.train_cmd(path, seed, args.iterations, env.arm(arm), study, env.child)
    return cmd + list(args.extra) + arm_flags(args).get(arm, [])


def eval_cmd(
    path: Path, split: str, episodes: int, env: StudyEnv, model: str | None = None
) -> list[str]:
    """The run's final ``mvpo-eval`` on ``split`` (sampled, seed 0; ``model``: another head)."""
    cmd = [*python_entry("eval_main", env.child), "--run-dir", str(path), "--split", split, "--episodes",
           str(episodes), "--sampled", "--seed", "0", "--out", str(eval_file(path, split))]  # fmt: skip
    cmd += ["--env-id", env.eval_env_id] if env.eval_env_id else []
    return cmd + (["--model", model] if model else [])


def run_all(args: argparse.Namespace, base: Path, root: Path) -> None:
    """Train (and evaluate) every (arm, seed) pair not finished yet, seed by seed, from
    ``root`` (the repository)."""
    env = args.study_env
    evals = final_evals(env, getattr(args, "final_episodes", None)) if args.eval else ()

    def commands(path: Path, arm: str, seed: int) -> list[list[str]]:
        cmds = [train_cmd(path, arm, seed, args)] if n_metrics(path) < args.iterations else []
        return cmds + [eval_cmd(path, s, e, env) for s, e in evals
                       if not eval_file(path, s).is_file()]  # fmt: skip

    pending = pending_runs(base, args.arms, args.seeds, commands, args.fresh)
    if args.ray is not None:
        run_ray(pending, args.ray, args.jobs, root)
    else:
        run_local(pending, args.jobs, root)


def warm_cmd(args: argparse.Namespace, out: str, *extra: str) -> list[str]:
    """``python -m mvpo_train.encoder_policy`` for the study's warm start into ``out``: behaviour
    cloning on the expert plans of the *train* split of the study's env (``extra`` last)."""
    cmd = [sys.executable, "-m", "mvpo_train.encoder_policy", "--out", out,
           *shlex.split(args.warm_args)]  # fmt: skip
    cmd += list(args.study_env.warm_flags)
    if args.env_kwargs.strip() not in ("", "{}"):  # the walkthroughs of the study's games
        cmd += ["--env-kwargs", args.env_kwargs]
    return cmd + list(extra)


def ensure_warm(args: argparse.Namespace, root: Path, head: str, *extra: str) -> None:
    """Make or check the warm start in ``head`` (``warm_cmd``: replays every expert plan of
    the split, minutes on the full ALFWorld split). With ``--warm-checked`` and a warm start
    already there, only its saved settings are compared with the study's ``--warm-args``
    (``--settings-only``: seconds): another warm start in the folder stops the study in one
    line instead of being used."""
    cmd = warm_cmd(args, head, *extra)
    quick = args.warm_checked and (Path(head) / "warm_start.json").is_file()
    run = subprocess.run(cmd + ["--settings-only"] if quick else cmd, cwd=root,
                         env={**os.environ, **RUN_ENV})  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"warm start {head}: `{shlex.join(cmd)}` failed "
                         f"(exit {run.returncode}; its message is above)")  # fmt: skip


def warm_candidates(args: argparse.Namespace, base: Path, root: Path) -> list[dict[str, Any]]:
    """Train-split success of the warm start after each ``--warm-candidates`` BC step count
    (0 = a fresh head): the split's first ``--candidate-tasks`` tasks x 1 sampled episode,
    seed 0, with the runs' env, step limit and policy. Nothing here reads a held-out split.
    Cached per candidate in ``BASE/warm-candidates/``; the rows are also written to its
    ``candidates.json`` (the results file shows them)."""
    env, work = args.study_env, base / "warm-candidates"
    work.mkdir(parents=True, exist_ok=True)
    config = work / "config.json"  # mvpo-eval --config: JSON is YAML
    fields = {"env_id": env.eval_env_id or env.env_id, "env_kwargs": json.loads(args.env_kwargs),
              "policy": "encoder", "max_steps": env.steps, "tasks": [], "threads": 1,
              "embedding_cache": embedding_cache(args)}  # fmt: skip
    config.write_text(json.dumps(fields, indent=1) + "\n")
    run_env = {**os.environ, **RUN_ENV}
    rows = []
    for steps in args.warm_candidates:
        head = f"{args.warm}-steps{steps}" if steps else "fresh"
        if steps:
            ensure_warm(args, root, head, "--steps", str(steps))
        out = work / f"train-steps{steps}-tasks{args.candidate_tasks}.json"
        if not out.is_file():
            cmd = [*python_entry("eval_main", env.child), "--config", str(config), "--model", head,
                   "--split", "train", "--max-tasks", str(args.candidate_tasks), "--episodes",
                   "1", "--sampled", "--seed", "0", "--out", str(out)]  # fmt: skip
            subprocess.run(cmd, cwd=root, env=run_env, check=True)
        ev = json.loads(out.read_text())
        rows.append({"steps": steps, "head": head, "episodes": ev["episodes"],
                     "success": ev["success"], "score": ev.get("score"),
                     "seconds": ev.get("time/seconds")})  # fmt: skip
    (work / "candidates.json").write_text(json.dumps(rows, indent=1) + "\n")
    return rows


def warm_start_and_eval(
    args: argparse.Namespace, base: Path, root: Path, build: bool = True
) -> None:
    """The cached warm start (``build``: made or checked, which replays every expert plan of
    the split, minutes on the full ALFWorld split; skipped with ``--warm-checked`` when the
    folder holds one), and the held-out success of the warm start itself (once: it is the
    same for every arm and seed), evaluated through the first seed's first run folder. When
    the study runs as one process per arm on the same ``--base``, only one of them evaluates
    it (a lock in ``BASE/warm-start``); the others go on with their runs."""
    env = {**os.environ, **RUN_ENV}
    if build:
        ensure_warm(args, root, args.warm)
    if not args.eval:
        return
    first = run_dir(base, args.arms[0], args.seeds[0])
    start = base / "warm-start"
    start.mkdir(parents=True, exist_ok=True)
    with open(start / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"[warm start] another process of this study is evaluating it ({start})")
            return
        for split, episodes in final_evals(args.study_env, getattr(args, "final_episodes", None)):
            out = start / f"eval-{split}.json"
            if out.is_file() or not (first / "config.yaml").is_file():
                continue
            cmd = eval_cmd(first, split, episodes, args.study_env, model=str(root / args.warm))
            cmd[cmd.index("--out") + 1] = str(out)
            subprocess.run(cmd, cwd=root, env=env, check=True)
