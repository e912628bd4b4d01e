"""MVPO's potential options on control-task batches: repair per step kind, and its alignment.

docs/estimators.md §3.11-§3.12. Batches of ``mvpo/MilestoneChain-v0`` (difficulty 1, K = 4,
50-step horizon, train layouts) played by a seeded uniform policy, as the trainer draws them:
batch ``i`` plays ``--groups`` tasks drawn from the first ``--tasks`` train layouts with
``numpy.random.default_rng([seed, i])``, ``--rollouts`` rollouts each, every action uniform
among the admissible ones (``random.Random`` seeded by ``(seed, i, group, rollout)``). The rows
carry ``extras["task_index"]`` (the layout) and the oracle columns, as the rollout fills them.

Per option (MVPO's config keywords), one estimator is called on the ``--batches`` batches in
order (its state, the pool included, carried from batch to batch, as in a run), and:

* the **per-kind table**, over the routed rows of every batch: ``go to`` into a milestone place
  (a ``go to`` after which a milestone is made before the agent leaves the place), the milestone
  step (a row that fires a milestone), the step leaving it (the first ``go to`` after a
  milestone, from the place where it was made), and every other ``go to`` / other step; per kind
  the number of rows, the mean repair (``kappa * A^Phi``, MVPO's ``last_repair``) and the share
  below 0;
* the **alignment**: per batch the AUC of the repair for ``extras["oracle_progress"]`` on the
  repaired rows (``repair_alignment``, docs/alignment.md); mean and a t-based 95% interval over
  the batches, and the mean over the batches after the first ``--burn_in`` (pooling needs
  history).

Run from the repository root::

    python benchmarks/potential_kinds.py            # writes benchmarks/results/potential_kinds.md
    python benchmarks/potential_kinds.py --batches 3 --out -   # a quick look, printed
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402

import mvpo_envs  # noqa: E402, F401  (registers the env ids)
from mvpo_train.batch import ORACLE_PLAN_DECREASE, ORACLE_PROGRESS, StepBatch  # noqa: E402
from mvpo_train.credit import get_estimator  # noqa: E402
from mvpo_train.credit.alignment_measure import repair_alignment  # noqa: E402
from mvpo_train.stats import t_interval  # noqa: E402

ENV_ID = "mvpo/MilestoneChain-v0"
RESULTS = ROOT / "benchmarks" / "results" / "potential_kinds.md"
OPTIONS: dict[str, dict[str, Any]] = {
    "paper (default)": {},
    "split": {"potential_split": "milestones"},
    "cross-fit only": {"region_stats": "pooled", "pool_decay": 0.0},
    "pooled": {"region_stats": "pooled"},
    "pooled + split": {"region_stats": "pooled", "potential_split": "milestones"},
}
KINDS = (
    "go to into a milestone place",
    "milestone step",
    "step leaving it",
    "other go to",
    "other",
)


def uniform_batch(
    env: gym.Env, tasks: list[int], rollouts: int, seed: int, iteration: int
) -> StepBatch:
    """One batch: every task of ``tasks`` played ``rollouts`` times by the uniform policy."""
    rows: list[dict[str, Any]] = []
    task_index: list[int] = []
    progress: list[int] = []
    decrease: list[float] = []
    for g, task in enumerate(tasks):
        for r in range(rollouts):
            rng = random.Random(f"{seed}/{iteration}/{g}/{r}")
            _, info = env.reset(options={"task_index": task})
            t, done = 0, False
            while not done:
                action = rng.choice(info["admissible_actions"])
                _, reward, term, trunc, after = env.step(action)
                rows.append(
                    {
                        "group": g, "traj": g * rollouts + r, "t": t, "reward": reward,
                        "terminated": term, "truncated": trunc and not term,
                        "anchor": info["anchor"], "signature": info["signature"],
                        "milestones": tuple(after["milestones"]), "action": action,
                    }
                )  # fmt: skip
                task_index.append(task)
                progress.append(after[ORACLE_PROGRESS])
                decrease.append(float(info["oracle_plan_length"] - after["oracle_plan_length"]))
                info, t, done = after, t + 1, term or trunc
    extras = {
        "task_index": np.array(task_index),
        ORACLE_PROGRESS: np.array(progress),
        ORACLE_PLAN_DECREASE: np.array(decrease),
    }
    return StepBatch.from_steps(rows, extras=extras)


def step_kinds(batch: StepBatch) -> np.ndarray:
    """Per row (batch order, rows of a trajectory consecutive and in time order): its kind
    (an index into :data:`KINDS`)."""
    place = np.array([s.split("|")[0] for s in batch.signature], dtype=object)
    go = np.array([a.startswith("go to") for a in batch.action])
    fires = batch.milestone_count > 0
    kind = np.where(go, 3, 4)
    kind[fires] = 1
    n, traj = len(batch), batch.traj
    for i in np.flatnonzero(go).tolist():
        if i + 1 < n and traj[i + 1] == traj[i]:  # the stay at the place it goes to
            j = i + 1
            while j < n and traj[j] == traj[i] and place[j] == place[i + 1]:
                if fires[j]:
                    kind[i] = 0
                    break
                j += 1
        k = i - 1  # the stay it ends: a milestone made there makes it the step leaving it
        while kind[i] == 3 and k >= 0 and traj[k] == traj[i] and place[k] == place[i]:
            if fires[k]:
                kind[i] = 2
            k -= 1
    return kind


def measure(batches: list[StepBatch], kwargs: dict[str, Any], burn_in: int) -> dict[str, Any]:
    est = get_estimator("mvpo", **kwargs)
    aucs: list[float] = []
    per_kind: dict[int, list[np.ndarray]] = {k: [] for k in range(len(KINDS))}
    for batch in batches:
        adv, _ = est(batch)
        aucs.append(repair_alignment(batch, adv, est.last_gigpo).auc)
        kind = step_kinds(batch)
        for k in per_kind:
            per_kind[k].append(est.last_repair[est.last_routed & (kind == k)])
    later = [a for a in aucs[burn_in:] if np.isfinite(a)]
    kinds = {}
    for k, parts in per_kind.items():
        x = np.concatenate(parts)
        kinds[KINDS[k]] = {
            "rows": int(len(x)),
            "mean": float(x.mean()) if len(x) else float("nan"),
            "negative": float((x < 0).mean()) if len(x) else float("nan"),
        }
    finite = [a for a in aucs if np.isfinite(a)]
    return {
        "kwargs": kwargs,
        "auc": aucs,
        "auc_mean": dict(zip(("mean", "low", "high"), t_interval(finite), strict=True)),
        "auc_after_burn_in": float(np.mean(later)) if later else float("nan"),
        "kinds": kinds,
    }


def markdown(out: dict[str, Any], command: str) -> str:
    s = out["settings"]
    lines = [
        "# MVPO's potential options: repair per step kind and alignment (control task)",
        "",
        f"Command: `{command}` ({out['seconds']:.0f} s; {platform.machine()}, Python "
        f"{platform.python_version()}). `{ENV_ID}`, difficulty {s['difficulty']}, "
        f"{s['batches']} consecutive batches of {s['groups']} tasks x {s['rollouts']} uniform "
        f"rollouts x 50 steps, tasks drawn per batch from the first {s['tasks']} train layouts "
        f"(seed {s['seed']}); one estimator per option, its state carried across the batches. "
        "docs/estimators.md §3.11-§3.12.",
        "",
        "## Alignment: AUC of the repair for the oracle label, per batch",
        "",
        f"| option | MVPO keywords | mean AUC [95% t interval] | mean after batch {s['burn_in']} "
        "| per batch |",
        "|---|---|---|---:|---|",
    ]
    for name, r in out["options"].items():
        ci = r["auc_mean"]
        per = " ".join(f"{a:.2f}" for a in r["auc"])
        lines.append(
            f"| {name} | `{json.dumps(r['kwargs'])}` | {ci['mean']:.3f} "
            f"[{ci['low']:.3f}, {ci['high']:.3f}] | {r['auc_after_burn_in']:.3f} | {per} |"
        )
    lines += [
        "",
        "## Repair per step kind (routed rows of every batch)",
        "",
        "Mean repair `kappa * A^Phi` / share below 0 / rows.",
        "",
        "| option | " + " | ".join(KINDS) + " |",
        "|---|" + "---|" * len(KINDS),
    ]
    for name, r in out["options"].items():
        cells = [
            f"{c['mean']:+.3f} / {c['negative']:.0%} / {c['rows']}"
            for c in (r["kinds"][k] for k in KINDS)
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Kinds: `go to` into a milestone place = a `go to` after which a milestone is made before "
        "the agent leaves the place it went to; milestone step = a row that fires a milestone; "
        "step leaving it = the first `go to` after a milestone, from the place where it was made; "
        "other `go to` / other = the rest. Routed rows: those MVPO repairs (zero-credit step "
        "groups). AUC: `repair_alignment` (docs/alignment.md), NaN batches left out of the mean.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=128, help="train layouts drawn from")
    parser.add_argument("--difficulty", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--burn_in", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS), help="markdown file, or - to print only")
    parser.add_argument("--json", default=None, help="also write the numbers here")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    env = gym.make(ENV_ID, difficulty=args.difficulty, num_milestones=4)
    n_tasks = min(args.tasks, len(env.unwrapped.task_ids))
    batches = []
    for i in range(args.batches):
        rng = np.random.default_rng([args.seed, i])
        tasks = [int(x) for x in rng.choice(n_tasks, size=args.groups, replace=False)]
        batches.append(uniform_batch(env, tasks, args.rollouts, args.seed, i))
    env.close()
    out = {
        "settings": {k: getattr(args, k) for k in
                     ("batches", "groups", "rollouts", "tasks", "difficulty", "seed", "burn_in")},
        "options": {name: measure(batches, kw, args.burn_in) for name, kw in OPTIONS.items()},
    }  # fmt: skip
    out["seconds"] = time.perf_counter() - t0
    command = "python benchmarks/potential_kinds.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    text = markdown(out, command.strip())
    print(text)
    if args.out != "-":
        Path(args.out).write_text(text, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
