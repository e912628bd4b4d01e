"""Batch records from seeded random play on any env id (docs/inspect.md, "Records without a
training run").

``python -m mvpo_train.inspect.sample --env mvpo/ALFWorld-v0 --out runs/inspect-sample``
plays B groups x G episodes (every episode of a group on the same task, actions drawn uniformly
from ``info["admissible_actions"]`` with a seeded generator; a template's query slot is filled
with the task text, :func:`mvpo_envs.action_templates.fill_template`, so WebShop searches its instruction
and SearchQA its question), builds the
:class:`~mvpo_train.batch.StepBatch` with the same row rules as the trainer's rollout (anchor and
signature of the observation the action was taken in, milestones of the transition, success =
``info["won"]``), calls the estimator as the trainer does and writes one record per iteration.
It prints each record's size: the "MiB per iteration" of docs/inspect.md comes from here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_envs.cli_args import FlagSpellingParser
from mvpo_envs.declaration import default_env_id
from mvpo_train.batch import StepBatch, canonical_action
from mvpo_train.records import write_batch_record

__all__ = ["main", "random_batch"]


def random_batch(
    env_id: str,
    num_groups: int,
    group_size: int,
    max_steps: int,
    rng: np.random.Generator,
    env_kwargs: dict[str, Any] | None = None,
    envs: dict[str, Any] | None = None,
) -> StepBatch:
    """One batch of seeded random play (see the module docstring). ``envs`` caches the env."""
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the env ids)
    from mvpo_envs.action_templates import fill_template

    cache = envs if envs is not None else {}
    env = cache.get(env_id)
    if env is None:
        env = cache[env_id] = gym.make(
            env_id, max_episode_steps=max_steps or None, **dict(env_kwargs or {})
        )
    n_tasks = len(env.unwrapped.task_ids)
    tasks = rng.choice(n_tasks, size=num_groups, replace=num_groups > n_tasks).tolist()
    rows: list[dict[str, Any]] = []
    extras: dict[str, list] = {"env_reward": [], "invalid_action": [], "task_type": []}
    for g, task in enumerate(tasks):
        for j in range(group_size):
            traj = g * group_size + j
            _, info = env.reset(options={"task_index": int(task)})
            t, done, start = 0, False, len(rows)
            while not done:
                adm = list(info.get("admissible_actions", []))
                if not adm:
                    raise ValueError(f"{env_id}: random play needs info['admissible_actions']")
                action = fill_template(adm[int(rng.integers(len(adm)))], info)
                _, reward, terminated, truncated, info2 = env.step(action)
                done = bool(terminated or truncated)
                rows.append(
                    {
                        "group": g,
                        "traj": traj,
                        "t": t,
                        "reward": float(reward),
                        "terminated": bool(terminated),
                        "truncated": bool(truncated) and not bool(terminated),
                        "anchor": str(info.get("anchor", "")),
                        "signature": str(info.get("signature", "")),
                        "milestones": tuple(info2.get("milestones", ())),
                        "action": canonical_action(action),
                    }
                )
                extras["env_reward"].append(float(reward))
                extras["invalid_action"].append(bool(info2.get("invalid_action", False)))
                extras["task_type"].append(str(info.get("task_type", "all")))
                info, t = info2, t + 1
            won = bool(info.get("won", False))
            for r in rows[start:]:
                r["success"] = won
    return StepBatch.from_steps(rows, extras=extras)


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring."""
    from mvpo_train.credit import get_estimator

    ap = FlagSpellingParser(prog="python -m mvpo_train.inspect.sample", description=__doc__)
    ap.add_argument("--env", default=default_env_id(), help="Gymnasium env id (%(default)s)")
    ap.add_argument("--out", required=True, help="run folder: records go to OUT/records/")
    ap.add_argument("--groups", type=int, default=4, help="rollout groups per batch (B)")
    ap.add_argument("--group-size", type=int, default=8, help="episodes per group (G)")
    ap.add_argument("--max-steps", type=int, default=0, help="step limit (0 = the env's own)")
    ap.add_argument("--iterations", type=int, default=1, help="batches (records) to write")
    ap.add_argument("--estimator", default="mvpo", help="the 'trained' estimator recorded")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if min(args.groups, args.group_size, args.iterations) <= 0 or args.max_steps < 0:
        ap.error("--groups, --group-size and --iterations must be > 0, --max-steps >= 0")
    rng = np.random.default_rng(args.seed)
    est = get_estimator(args.estimator)
    envs: dict[str, Any] = {}
    try:
        for it in range(1, args.iterations + 1):
            t0 = time.perf_counter()
            batch = random_batch(
                args.env, args.groups, args.group_size, args.max_steps, rng, envs=envs
            )
            t_play = time.perf_counter() - t0
            state = est.state_dict()
            adv, diag = est(batch)
            t0 = time.perf_counter()
            path = write_batch_record(
                args.out,
                it,
                batch,
                estimator=est,
                estimator_state=state,
                advantages=adv,
                diagnostics=diag,
                meta={"env_id": args.env, "policy": "uniform random", "seed": args.seed},
            )
            t_write = time.perf_counter() - t0
            size = path.stat().st_size
            print(
                f"{path}: {len(batch)} rows, {batch.n_traj} episodes, "
                f"success {float(batch.traj_success.mean()):.3f}, "
                f"{size / 2**20:.3f} MiB ({size / max(len(batch), 1):.0f} B/row), "
                f"write {t_write * 1000:.0f} ms, play {t_play:.1f} s"
            )
    finally:
        for env in envs.values():
            env.close()
    print(f"inspect with: mvpo-inspect {Path(args.out)} --iteration {args.iterations}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
