"""The sweep of the oracle-gain studies (docs/alignment.md, "The oracle-gain study";
``benchmarks/oracle_gain.py``, ``benchmarks/potential_learning.py``): arms x seeds of
``mvpo-train`` runs, one folder each (``<base>/<arm>/seed<k>/``), each condensed into one
compact ``result.json`` when it finishes and archived at once
(:mod:`mvpo_train.study.result_archive`), so the sweep continues on any machine from what is
committed.

* :class:`GainArm`: an estimator with keywords at a difficulty, on one axis of a study;
* :func:`summarise_run`: a finished run's compact result, from its ``metrics.jsonl``;
* :func:`finished`, :func:`load`, :func:`load_timed`: a run's result from the archive, else
  from its run folder, and those of every finished run of a sweep (with the estimator's
  seconds);
* :func:`estimator_seconds`, :func:`seed_embedding_cache`: a run's seconds in the estimator,
  and a sweep's embedding cache started from another's;
* :func:`todo`: the runs of a plan neither archived, finished nor carried;
* :class:`Sweep`, :func:`sweep`: where a sweep runs, and the runner, ``jobs`` at a time, each finished run summarised and archived.

The script builds each run's ``mvpo-train`` command (it names the env); nothing here does.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.atomic_write import write_text_atomic
from mvpo_train.metrics import read_metrics
from mvpo_train.study.paired import SEEDS, check_settings
from mvpo_train.study.result_archive import check_result, load_carried, load_result, save_result
from mvpo_train.study.runs import metric_rows

__all__ = [
    "FINAL",
    "GainArm",
    "Sweep",
    "estimator_seconds",
    "finished",
    "load",
    "mean_finite",
    "seed_dir",
    "seed_embedding_cache",
    "summarise_run",
    "sweep",
    "todo",
]

FINAL = 5  # iterations of the "final" mean


@dataclass(frozen=True)
class GainArm:
    """One arm: an estimator with keywords at a difficulty (``axis``: main | zero-credit |
    strength)."""

    name: str
    estimator: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    difficulty: int = 1
    axis: str = "main"

    @property
    def rho(self) -> float | None:
        """The alignment of the arm's repair: the oracle's ``oracle_rho``, 1 for the positive
        control, 0 for the shuffled repair, None for the others."""
        src = self.kwargs.get("repair_source")
        if src == "oracle":
            return float(self.kwargs.get("oracle_rho", 1.0))
        return {"positive": 1.0, "shuffled": 0.0}.get(src)

    @property
    def kappa(self) -> float | None:
        """Kappa when held constant; None when it follows MVPO's schedule."""
        if self.kwargs.get("kappa_schedule") == "constant":
            return float(self.kwargs["kappa_constant"])
        return None


def seed_dir(base: Path, arm: str, seed: int) -> Path:
    """The run folder of ``arm`` at ``seed``: ``<base>/<arm>/seed<k>``."""
    return Path(base) / arm / f"seed{seed}"


def mean_finite(values: Sequence[Any]) -> float | None:
    """Mean of the finite numbers of ``values`` (None when there is none)."""
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    return float(np.mean(v)) if v else None


def summarise_run(path: Path, iterations: int) -> dict[str, Any]:
    """The compact result of a finished run, from its metrics.jsonl: the batch success per
    iteration, the held-out success, the mean ``align/auc``, the zero-credit ratio of the first
    :data:`FINAL` iterations, the mean kappa and repaired ratio, the estimator's seconds, the
    entropy of the last :data:`FINAL` iterations and the minutes."""
    rows = [r for r in read_metrics(path) if "success" in r]
    if len(rows) < iterations:
        raise RuntimeError(f"{path}: {len(rows)} of {iterations} iterations in metrics.jsonl")
    rows = rows[:iterations]
    heldout = [r["eval/success"] for r in rows if "eval/success" in r]
    auc = mean_finite([r.get("align/auc") for r in rows])
    return {
        "success": [float(r["success"]) for r in rows],
        "heldout": float(heldout[-1]) if heldout else None,
        "auc": auc,
        "zero_credit": float(np.mean([r.get("adv/zero_credit_ratio", 0.0) for r in rows[:FINAL]])),
        "kappa": float(np.mean([r["adv/kappa"] for r in rows if "adv/kappa" in r] or [0.0])),
        "repaired_ratio": float(np.mean([r.get("adv/repaired_ratio", 0.0) for r in rows])),
        "advantage_s": mean_finite([r.get("time/advantage") for r in rows]),
        "entropy": mean_finite([r.get("loss/entropy", np.nan) for r in rows[-FINAL:]]),
        "minutes": float(sum(r.get("time/total", 0.0) + r.get("time/eval", 0.0) for r in rows))
        / 60.0,
    }


def estimator_seconds(path: Path, iterations: int) -> float | None:
    """Mean seconds per iteration the run in ``path`` spent in the estimator
    (``time/advantage``) over the study's ``iterations``; None without such rows (or without a
    ``metrics.jsonl``)."""
    rows = [r for r in metric_rows(path) if "success" in r][:iterations]
    t = [float(r["time/advantage"]) for r in rows if "time/advantage" in r]
    return float(np.mean(t)) if t else None


def seed_embedding_cache(reuse: Path, base: Path) -> None:
    """Start ``base``'s embedding cache as a copy of ``reuse``'s (read only; the trainer writes
    that file by atomic rename, so a copy is whole): a sweep's runs embed with the vectors
    another sweep's runs embedded with, and skip recomputing them. Nothing when ``base`` has
    one or ``reuse`` has none."""
    src, dst = Path(reuse) / "embeddings.npz", Path(base) / "embeddings.npz"
    if src.is_file() and not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)


def finished(
    archive: Path, base: Path, arm: str, seed: int, iterations: int, archive_it: bool = False
) -> dict[str, Any] | None:
    """The result of a finished run: the archive's, else the run folder's ``result.json``
    (archived too when ``archive_it``: the sweep does, the analysis only reads); None when the
    run is not finished."""
    res = load_result(archive, arm, seed, iterations)
    if res is not None:
        return res
    p = seed_dir(base, arm, seed) / "result.json"
    if not p.is_file():
        return None
    res = check_result(json.loads(p.read_text()), iterations, p)
    if "entropy" not in res:  # results written before the field existed
        rows = [r for r in read_metrics(p.parent) if "success" in r]
        res["entropy"] = mean_finite([r.get("loss/entropy") for r in rows[-FINAL:]])
    if archive_it:
        save_result(archive, arm, seed, res, iterations)
    return res


def load(
    archive: Path, base: Path, arms: Sequence[str], seeds: Sequence[int], iterations: int
) -> dict[str, dict[int, dict[str, Any]]]:
    """The finished runs' results (:func:`finished`, read only), per arm and seed; arms
    without a finished run left out."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for arm in arms:
        for s in seeds:
            res = finished(archive, base, arm, s, iterations)
            if res is not None:
                out.setdefault(arm, {})[s] = res
    return out


def load_timed(
    archive: Path, base: Path, arms: Sequence[str], seeds: Sequence[int], iterations: int
) -> dict[str, dict[int, dict[str, Any]]]:
    """:func:`load`, each result with its ``advantage_s`` (:func:`estimator_seconds` of its run
    folder where the result has none: results written before the field existed)."""
    out = load(archive, base, arms, seeds, iterations)
    for arm, runs in out.items():
        for seed, res in runs.items():
            if res.get("advantage_s") is None:
                res["advantage_s"] = estimator_seconds(seed_dir(base, arm, seed), iterations)
    return out


def todo(
    plan: Sequence[tuple[GainArm, int]],
    archive: Path,
    base: Path,
    iterations: int,
    fingerprint: str,
) -> list[tuple[GainArm, int]]:
    """The runs of ``plan`` still to make: neither carried (``carried.json``) nor finished
    (a finished run folder's result is archived on the way)."""
    carried = load_carried(archive, fingerprint)
    return [
        (a, s)
        for a, s in plan
        if s not in carried.get(a.name, {}).get(SEEDS, [])
        and finished(archive, base, a.name, s, iterations, archive_it=True) is None
    ]


@dataclass(frozen=True)
class Sweep:
    """Where a sweep runs and what it checks: its run folder, its archive, its settings (with
    their fingerprint), its iterations, and the name its messages start with."""

    base: Path
    archive: Path
    settings: dict[str, Any]
    fingerprint: str
    iterations: int
    who: str

    def check(self) -> None:
        """Record the settings in the run folder and the archive on first use; refuse (one
        line) a changed setting after that."""
        for folder in (self.base, self.archive):
            check_settings(folder, self.settings, self.fingerprint, self.who)


def sweep(
    spec: Sweep,
    plan: Sequence[tuple[GainArm, int]],
    command: Callable[[Path, GainArm, int], list[str]],
    jobs: int,
    after_each: Callable[[], Any] | None = None,
    before: Callable[[], Any] | None = None,
) -> None:
    """Run the unfinished runs of ``plan`` (``command(path, arm, seed)``: the run's
    ``mvpo-train`` command), ``jobs`` at a time with one OpenMP thread, each logging to
    ``<base>/<arm>/seed<k>.log``; a finished run's compact result goes to its ``result.json``
    and the archive, then ``after_each()`` (a rewrite of the tables) runs. ``before()`` runs
    once the pending runs are counted."""
    spec.check()
    pending = todo(plan, spec.archive, spec.base, spec.iterations, spec.fingerprint)
    print(f"{spec.who}: {len(plan) - len(pending)} of {len(plan)} runs done", flush=True)
    if before is not None:
        before()
    running: list[tuple[subprocess.Popen, GainArm, int, Path]] = []
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    while pending or running:
        while pending and len(running) < jobs:
            arm, seed = pending.pop(0)
            path = seed_dir(spec.base, arm.name, seed)
            path.parent.mkdir(parents=True, exist_ok=True)
            with (path.parent / f"seed{seed}.log").open("a") as log:
                proc = subprocess.Popen(command(path, arm, seed), stdout=log, stderr=log, env=env)
            running.append((proc, arm, seed, path))
        time.sleep(5)
        for item in [r for r in running if r[0].poll() is not None]:
            running.remove(item)
            proc, arm, seed, path = item
            if proc.returncode != 0:
                print(
                    f"{spec.who}: {arm.name} seed {seed} failed (rc {proc.returncode}); see "
                    f"{path.parent}/seed{seed}.log",
                    flush=True,
                )
                continue
            res = summarise_run(path, spec.iterations)
            write_text_atomic(path / "result.json", json.dumps(res) + "\n")
            save_result(spec.archive, arm.name, seed, res, spec.iterations)
            print(
                f"{spec.who}: {arm.name} seed {seed} done: area {np.mean(res['success']):.3f}",
                flush=True,
            )
            if after_each is not None:
                after_each()
