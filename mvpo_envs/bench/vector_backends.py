"""Env steps/s of one ``GroupedVectorEnv`` per vectorization backend (``benchmarks/scaling.py``;
docs/scaling.md, "Measured overhead"): ``sync``, ``async`` and ``ray`` with 1 and N sub-envs
per actor, played with seeded random admissible actions (:func:`play`), every observation and
reward checked equal to the sync run's (:func:`measure_envs`; :func:`env_lines`, the page's
section).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.measure import play_random
from mvpo_envs.vector import BACKENDS, GroupedVectorEnv

__all__ = ["env_lines", "measure_envs", "play"]


def play(venv: GroupedVectorEnv, steps: int, seed: int) -> tuple[float, list]:
    """Seconds for ``steps`` vector steps (after a reset) and the trace of what came back."""
    run = play_random(venv, list(range(venv.num_groups)), steps, seed, trace=True)
    return run["step_s"], run["trace"]


def measure_envs(args: Any) -> dict[str, Any]:
    """The env workers' figures: each backend's build time, env steps/s (median of
    ``args.repeats`` runs of ``args.steps`` vector steps after a warm-up) and rate against
    sync, its trace checked equal to its own repeats and to the sync run's. ``args``: ``env``,
    ``groups``, ``group_size``, ``steps``, ``envs_per_actor``, ``seed``, ``repeats``. Needs
    ``ray``."""
    import ray

    from mvpo_envs.ray_vector import ray_backend

    BACKENDS.setdefault("ray", ray_backend)
    ray.init(
        num_cpus=os.cpu_count() or 2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    kw = dict(num_groups=args.groups, group_size=args.group_size, split="train")
    n = args.groups * args.group_size
    per_actor = f"ray, {args.envs_per_actor} envs per actor"
    layouts = [
        ("sync", "sync", {}),
        ("async", "async", {}),
        ("ray, 1 env per actor", "ray", {"envs_per_actor": 1}),
        (per_actor, "ray", {"envs_per_actor": args.envs_per_actor}),
    ]
    rows, reference = [], None
    for label, mode, vkw in layouts:
        t0 = time.perf_counter()
        venv = GroupedVectorEnv(args.env, vectorization_mode=mode, vector_kwargs=vkw, **kw)
        build = time.perf_counter() - t0
        try:
            play(venv, 3, args.seed)  # warm-up (first loads of the games)
            runs = [play(venv, args.steps, args.seed) for _ in range(args.repeats)]
            secs, trace = float(np.median([r[0] for r in runs])), runs[0][1]
            if any(r[1] != trace for r in runs):
                raise SystemExit(f"{label}: repeated runs on the same seeds differ")
        finally:
            venv.close()
        if reference is None:
            reference = trace
        elif trace != reference:
            raise SystemExit(f"{label}: the trace differs from the sync run's")
        rate = n * args.steps / secs
        rows.append((label, build, rate))
        print(f"{label:28s} build {build:6.2f} s  {rate:8.1f} env steps/s", flush=True)
    ray.shutdown()
    base = rows[0][2]
    setting = {k: vars(args)[k] for k in ("env", "groups", "group_size", "steps", "repeats")}
    return {**setting, "rows": [[lab, b, r, r / base] for lab, b, r in rows]}


def env_lines(f: dict[str, Any]) -> list[str]:
    """The env workers' section of :func:`measure_envs`' figures ``f``."""
    n = f["groups"] * f["group_size"]
    lines = [
        f"### Env workers: {f['env']}, {n} sub-envs ({f['groups']} groups x {f['group_size']}), "
        f"{f['steps']} vector steps, median of {f['repeats']} runs",
        "",
        "| backend | build (s) | env steps/s | vs sync |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {lab} | {b:.2f} | {r:.1f} | {x:.2f}x |" for lab, b, r, x in f["rows"]]
    lines += ["", "Every backend's observations and rewards equal the sync run's (checked)."]
    return lines
