"""What a study will cost before it runs: the CPU hours of its runs and held-out evaluations,
estimated from a sized run (``--size``: a few iterations measured in process CPU seconds by
``benchmarks/cpu_cost.py --worker``, and a small evaluation) or from committed measurements of
the same preset (benchmarks/results/cpu_cost.json and a finished study's minutes), and the
page's "Size" section that states them (``benchmarks/oracle_gain_alfworld.py``;
docs/alignment.md, "The oracle-gain study").

* :func:`children_cpu`: the CPU seconds of this process's finished children;
* :func:`measure`: the sized run and the small evaluation, run and measured;
* :func:`sized`: the estimate from a sized run;
* :func:`prior`: the estimate from committed measurements;
* :func:`size_lines`: the page's section, from either or both.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["children_cpu", "measure", "prior", "size_lines", "sized"]

Estimate = Mapping[str, Any]


def children_cpu() -> float:
    """User + system CPU seconds of this process's finished (waited for) children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(
    worker_cmd: Sequence[str], worker_json: Path, eval_cmd: Sequence[str], cwd: Path, who: str
) -> tuple[dict[str, Any], float]:
    """Run the sized training (``worker_cmd``: ``cpu_cost.py --worker``, which writes
    ``worker_json``), then the small held-out evaluation (``eval_cmd``), one thread each, from
    ``cwd``: the worker's JSON and the evaluation's CPU seconds (:func:`children_cpu`). A sized
    run that failed exits with one line naming ``who``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    subprocess.run(list(worker_cmd), check=True, cwd=cwd, env=env)
    w = json.loads(Path(worker_json).read_text())
    if w["rc"] != 0:
        sys.exit(f"{who}: the sized run failed (rc {w['rc']}); see its output above")
    before = children_cpu()
    subprocess.run(list(eval_cmd), check=True, cwd=cwd, env=env)
    return w, children_cpu() - before


def sized(
    worker: Mapping[str, Any],
    eval_cpu: float,
    eval_episodes: int,
    heldout_games: int,
    runs: int,
    iterations: int,
    final_episodes: int,
) -> dict[str, Any]:
    """The study's estimate from a sized run: ``worker`` (``cpu_cost.py --worker``'s JSON:
    ``setup`` and the seconds per phase of each iteration) and a held-out evaluation of
    ``eval_episodes`` episodes that took ``eval_cpu`` seconds (its setup included); one run =
    setup + ``iterations`` x the mean iteration + ``heldout_games`` x ``final_episodes``
    episodes."""
    per_it = [sum(it.values()) for it in worker["iterations"]]
    per_episode = eval_cpu / max(eval_episodes, 1)
    run_cpu = worker["setup"] + iterations * float(np.mean(per_it))
    eval_run = per_episode * heldout_games * final_episodes
    return {
        "setup_cpu_s": worker["setup"],
        "iteration_cpu_s": per_it,
        "eval_cpu_s": eval_cpu,
        "eval_episodes": eval_episodes,
        "heldout_games": heldout_games,
        "runs": runs,
        "iterations": iterations,
        "final_episodes": final_episodes,
        "run_cpu_s": run_cpu,
        "eval_run_cpu_s": eval_run,
        "study_cpu_h": runs * (run_cpu + eval_run) / 3600.0,
    }


def prior(
    cold: Mapping[str, Any],
    study: Mapping[str, Any],
    heldout: str,
    runs: int,
    iterations: int,
    final_episodes: int,
) -> dict[str, Any]:
    """The study's estimate from committed measurements: ``cold`` (a ``cpu_cost.json`` entry:
    setup and one iteration per phase with an empty embedding cache) and ``study`` (a
    finished study's results: its MVPO arm's minutes per run and its settings, with the
    ``heldout`` split's number of games). An iteration costs the cold one without MiniLM
    (every embedding cached) to the cold one; an episode, the playing phases over the batch's
    episodes."""
    minutes, full = study["arms"]["mvpo"]["minutes"], study["settings"]
    phases = cold["iterations"][0]
    it_cold = float(sum(phases.values()))
    play = sum(phases.get(k, 0.0) for k in ("env", "rollout", "minilm", "head forward"))
    episodes = full["num_groups"] * full["group_size"]
    games = int(full["heldout_games"][heldout])
    run_lo = cold["setup"] + iterations * (it_cold - phases.get("minilm", 0.0))
    run_hi = cold["setup"] + iterations * it_cold
    eval_run = play / episodes * games * final_episodes
    return {
        "setup_cpu_s": cold["setup"],
        "iteration_cold_cpu_s": it_cold,
        "iteration_warm_cpu_s": it_cold - phases.get("minilm", 0.0),
        "play_cpu_s_per_episode": play / episodes,
        "heldout_games": games,
        "study_minutes_per_iteration": float(np.mean(minutes)) / full["iterations"],
        "runs": runs,
        "iterations": iterations,
        "final_episodes": final_episodes,
        "eval_run_cpu_s": eval_run,
        "study_cpu_h": [runs * (run_lo + eval_run) / 3600.0, runs * (run_hi + eval_run) / 3600.0],
    }


def size_lines(sz: Estimate | None, pr: Estimate | None) -> list[str]:
    """The page's "Size" section: the sized run's estimate (or that there is none yet), the
    load while it was measured, and the estimate from committed measurements."""
    if not sz:
        return ["## Size", "", "Not measured for this study yet (`--size`).", "", *_prior_lines(pr)]
    it = sz["iteration_cpu_s"]
    run_h = (sz["run_cpu_s"] + sz["eval_run_cpu_s"]) / 3600.0
    return [
        "## Size",
        "",
        f"Measured with `{sz['command']}`: process CPU seconds, one torch thread, a fresh "
        "process and an empty embedding cache (so MiniLM embeds every text; later iterations "
        "of a run and later runs hit the shared cache more). Setup (warm start, encoder, the "
        f"full train split) {sz['setup_cpu_s']:.0f} s; iterations 1 and 2 "
        f"{', '.join(f'{x:.0f}' for x in it)} s; a held-out evaluation of "
        f"{sz['eval_episodes']} games x 1 episode {sz['eval_cpu_s']:.0f} s (with its setup, "
        "so the per-episode cost below is an upper bound).",
        "",
        f"Estimate: one run = setup + {sz['iterations']} x {np.mean(it):.0f} s + "
        f"{sz['heldout_games']} games x {sz['final_episodes']} episode(s) x "
        f"{sz['eval_cpu_s'] / max(sz['eval_episodes'], 1):.1f} s = "
        f"{sz['run_cpu_s']:.0f} + {sz['eval_run_cpu_s']:.0f} CPU s ({run_h:.2f} CPU h); "
        f"the study, {sz['runs']} runs: {sz['study_cpu_h']:.1f} CPU h, that is "
        f"{sz['study_cpu_h'] / 2:.1f} h of wall time at 2 runs at a time on a free 2-core "
        f"machine and about {sz['study_cpu_h']:.1f} h on one core beside the running "
        "oracle-gain sweep (which keeps the other busy).",
        "",
        *_load_lines(sz),
        *_prior_lines(pr),
    ]


def _load_lines(sz: Estimate) -> list[str]:
    """What the machine was doing while the size was measured (its 1-minute load average at
    the start and the end): process CPU time grows when other jobs share the cores."""
    load = sz.get("load_avg")
    if not load:
        return []
    return [
        f"The 1-minute load average was {load[0]:.1f} at the start and {load[1]:.1f} at the "
        f"end of the measurement, on {sz.get('cpus', '?')} cores: with other jobs on the cores "
        "a process's CPU seconds grow (shared caches and cores), so on a busy machine this "
        "estimate is an upper bound.",
        "",
    ]


def _prior_lines(pr: Estimate | None) -> list[str]:
    """The estimate from committed measurements (:func:`prior`), with where its numbers come
    from."""
    if not pr:
        return []
    lo, hi = pr["study_cpu_h"]
    return [
        "Estimate from committed measurements of the same preset without the oracle "
        "(`prior_estimate` in the JSON): benchmarks/results/cpu_cost.md (`--preset "
        "cpu-showcase --estimator mvpo`, one thread, process CPU) gives setup "
        f"{pr['setup_cpu_s']:.0f} s and an iteration of {pr['iteration_cold_cpu_s']:.0f} s with "
        f"an empty embedding cache ({pr['iteration_warm_cpu_s']:.0f} s with every embedding "
        f"cached, estimated there), of which playing costs {pr['play_cpu_s_per_episode']:.2f} s "
        "per episode; benchmarks/results/learning_full.md's MVPO arm took "
        f"{pr['study_minutes_per_iteration']:.2f} minutes of wall time per iteration, two "
        "runs at a time on this 2-core machine, its held-out evaluations included "
        f"({pr['iterations'] * pr['study_minutes_per_iteration']:.0f} minutes for "
        f"{pr['iterations']} iterations at that pace). So one run "
        f"of {pr['iterations']} iterations is setup + {pr['iterations']} x "
        f"{pr['iteration_warm_cpu_s']:.0f}-{pr['iteration_cold_cpu_s']:.0f} s, and its held-out "
        f"evaluation {pr['heldout_games']} games x {pr['final_episodes']} episodes x "
        f"{pr['play_cpu_s_per_episode']:.2f} s = {pr['eval_run_cpu_s']:.0f} s; the study, "
        f"{pr['runs']} runs: {lo:.1f}-{hi:.1f} CPU h, that is {lo / 2:.1f}-{hi / 2:.1f} h at "
        "2 runs at a time on a free 2-core machine, and about "
        f"{lo:.1f}-{hi:.1f} h on the one core the running control-task sweep leaves. The "
        'oracle adds to every env step (docs/alignment.md, "The progress oracle": 1.55 ms '
        "against 0.23 ms per step on random play, about 8 s per iteration of 6,400 steps; "
        "3.27 ms per step on a trained policy's, about 21 s, and 15.76 ms before its search "
        "cuts), which this does not include.",
        "",
    ]
