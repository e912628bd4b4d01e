"""The run folders of a study and the runner of its pending runs.

A study is arms x seeds of ``mvpo-train`` runs, one folder each, ``<base>/<arm>-seed<k>/``.
A run is finished when its ``metrics.jsonl`` holds the study's iterations (rows read with
:func:`mvpo_train.metrics.read_metrics`, so a torn last line of a killed writer does not
count); an unfinished run with a complete checkpoint
(:func:`mvpo_train.checkpoint.latest_checkpoint`) continues from it (``--resume``), one
without starts over (``--overwrite``). Pending runs are queued seed by seed and run as shell
scripts, ``jobs`` at a time on this machine (:func:`run_local`) or one Ray task each
(:func:`run_ray`), each logging to ``<run>/train.log``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from mvpo_train.checkpoint import latest_checkpoint
from mvpo_train.metrics import read_metrics

__all__ = [
    "RUN_ENV",
    "RUN_FLAGS",
    "Pending",
    "eval_file",
    "fingerprint",
    "load_runs",
    "metric_rows",
    "n_metrics",
    "pending_runs",
    "python_entry",
    "read_eval",
    "read_eval_types",
    "resume_flag",
    "run_dir",
    "run_in_task",
    "run_local",
    "run_ray",
    "train_cmd",
]

#: environment of every run's process (on top of this one's)
RUN_ENV = {"PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
#: one pending run: (name, run folder, shell script)
Pending = tuple[str, Path, str]
#: the ``mvpo-train`` flags of every study run: one torch thread, no progress bar nor
#: TensorBoard, a checkpoint every 5 iterations (what an interrupted run resumes from)
RUN_FLAGS = ("--threads", "1", "--no-progress", "--no-tensorboard", "--save-every", "5")


def run_dir(base: Path, arm: str, seed: int) -> Path:
    """The folder of arm ``arm``'s run with seed ``seed``."""
    return Path(base) / f"{arm}-seed{seed}"


def metric_rows(path: Path) -> list[dict[str, Any]]:
    """The ``metrics.jsonl`` rows of run folder ``path`` (none when it has no such file)."""
    return read_metrics(path) if (Path(path) / "metrics.jsonl").is_file() else []


def n_metrics(path: Path) -> int:
    """Iterations the run in ``path`` has logged (0 without a ``metrics.jsonl``)."""
    return len(metric_rows(path))


def load_runs(
    base: Path, arms: Iterable[str], seeds: Iterable[int], iterations: int
) -> dict[str, dict[int, list[dict]]]:
    """Per arm: seed -> metrics rows, only runs with at least ``iterations`` rows (complete),
    cut at ``iterations``."""
    seeds = list(seeds)
    out: dict[str, dict[int, list[dict]]] = {}
    for arm in arms:
        out[arm] = {}
        for seed in seeds:
            rows = metric_rows(run_dir(base, arm, seed))
            if len(rows) >= iterations:
                out[arm][seed] = rows[:iterations]
    return out


def eval_file(path: Path, split: str) -> Path:
    """The final held-out evaluation of split ``split`` of the run in ``path``."""
    return Path(path) / f"eval-{split}.json"


def read_eval(path: Path, split: str, key: str = "success") -> float | None:
    """``key`` of the split's evaluation file (``success``; ``score`` on WebShop), or None."""
    f = eval_file(path, split)
    if not f.is_file():
        return None
    value = json.loads(f.read_text()).get(key)
    return None if value is None else float(value)


def read_eval_types(path: Path, split: str) -> dict[str, float]:
    """Held-out success per task type (``success/<type>`` of the evaluation file)."""
    f = eval_file(path, split)
    if not f.is_file():
        return {}
    ev = json.loads(f.read_text())
    return {k.split("/", 1)[1]: float(v) for k, v in ev.items() if k.startswith("success/")}


def resume_flag(path: Path) -> list[str]:
    """How an unfinished run in ``path`` continues: ``--resume`` from its latest complete
    checkpoint, ``--overwrite`` when the folder holds anything but ``train.log`` and no
    checkpoint, nothing for a new folder."""
    path = Path(path)
    if latest_checkpoint(path) is not None:
        return ["--resume"]
    if path.exists() and any(p.name != "train.log" for p in path.iterdir()):
        return ["--overwrite"]
    return []


def python_entry(entry: str, child: Path | None = None) -> list[str]:
    """The command of ``mvpo_train.cli``'s ``entry`` (``train_main`` / ``eval_main``), whose
    return value is the exit status; through script ``child`` when one is given (it runs the
    entry after registering what the study adds)."""
    if child is not None:
        return [sys.executable, str(child), entry]
    code = f"import sys; from mvpo_train.cli import {entry}; sys.exit({entry}())"
    return [sys.executable, "-c", code]


def train_cmd(
    path: Path,
    seed: int,
    iterations: int,
    before: Sequence[str],
    after: Sequence[str] = (),
    child: Path | None = None,
) -> list[str]:
    """The ``mvpo-train`` command of one study run in ``path``: the ``cpu-tiny`` preset,
    ``before``, the seed, iterations and run folder, :data:`RUN_FLAGS`, ``after``, then how an
    unfinished run goes on (:func:`resume_flag`); through script ``child`` when given
    (:func:`python_entry`). Flags appended to it win over all of these."""
    return [
        *python_entry("train_main", child), "--preset", "cpu-tiny", *before, "--seed", str(seed),
        "--iterations", str(iterations), "--run-dir", str(path), *RUN_FLAGS, *after,
        *resume_flag(path),
    ]  # fmt: skip


def pending_runs(
    base: Path,
    arms: Iterable[str],
    seeds: Iterable[int],
    commands: Callable[[Path, str, int], list[list[str]]],
    fresh: bool = False,
) -> list[Pending]:
    """The runs with work left, seed by seed (an interrupted study then has every arm on its
    first seeds): ``(name, folder, shell script)`` of each (arm, seed) for which
    ``commands(folder, arm, seed)`` gives commands, joined with ``&&``. ``fresh``: each run
    folder is deleted first, so every run starts over."""
    arms, out = list(arms), []
    for seed in seeds:
        for arm in arms:
            path = run_dir(base, arm, seed)
            if fresh and path.exists():
                shutil.rmtree(path)
            if cmds := commands(path, arm, seed):
                out.append((f"{arm}-seed{seed}", path, " && ".join(shlex.join(c) for c in cmds)))
    return out


def fingerprint(settings: dict[str, Any]) -> str:
    """SHA-256 of the JSON of ``settings`` (sorted keys): two runs with the same fingerprint
    were made with the same settings."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def _status(rc: int, path: Path) -> str:
    return "ok" if rc == 0 else f"FAILED ({rc}, see {path}/train.log)"


def run_local(pending: list[Pending], jobs: int, cwd: Path | str = ".") -> list[str]:
    """Run the pending scripts, ``jobs`` at a time, in ``cwd``; the names of those that failed."""
    running: list[tuple[subprocess.Popen, str, Path, float]] = []
    env = {**os.environ, **RUN_ENV}
    pending, failed = list(pending), []
    while pending or running:
        while pending and len(running) < jobs:
            name, path, script = pending.pop(0)
            path.mkdir(parents=True, exist_ok=True)
            with open(path / "train.log", "a") as log:
                proc = subprocess.Popen(
                    ["bash", "-c", script], stdout=log, stderr=log, cwd=cwd, env=env
                )
            running.append((proc, name, path, time.time()))
            print(f"[start] {name}", flush=True)
        time.sleep(0.5)
        for item in list(running):
            proc, name, path, t0 = item
            if proc.poll() is not None:
                running.remove(item)
                if proc.returncode:
                    failed.append(name)
                status = _status(proc.returncode, path)
                print(f"[done]  {name} in {time.time() - t0:.0f} s: {status}", flush=True)
    return failed


def run_in_task(script: str, cwd: str, log: str) -> int:
    """Body of one Ray task: the run's shell script, logged like a local run; its exit code."""
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:
        env = {**os.environ, **RUN_ENV}
        return subprocess.run(
            ["bash", "-c", script], stdout=f, stderr=f, cwd=cwd, env=env
        ).returncode


def run_ray(pending: list[Pending], address: str, jobs: int, cwd: Path | str = ".") -> None:
    """One Ray task per run (1 CPU each) on ``address`` or, with ``"local"``, a private local
    instance of ``jobs`` CPUs.

    A cluster's nodes need this repository and its venv at the same paths and the study's
    base on storage they share (docs/scaling.md, "Sweeps on Ray"); finished runs are skipped
    before anything is submitted, so rerunning the command resumes the sweep.
    """
    import ray

    if ray.is_initialized():
        pass
    elif address == "local":  # a laptop: a private instance on loopback, jobs runs at a time
        ray.init(
            num_cpus=jobs,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
        )
    else:
        ray.init(address=address, log_to_driver=False)
    task = ray.remote(num_cpus=1, max_retries=0)(run_in_task)
    refs = {}
    for name, path, script in pending:
        refs[task.remote(script, str(cwd), str(path / "train.log"))] = (name, path, time.time())
        print(f"[submit] {name}", flush=True)
    while refs:
        done, _ = ray.wait(list(refs), num_returns=1)
        name, path, t0 = refs.pop(done[0])
        try:
            status = _status(ray.get(done[0]), path)
        except ray.exceptions.RayError as err:
            status = f"FAILED (Ray task: {str(err).strip().splitlines()[0]})"
        print(f"[done]  {name} in {time.time() - t0:.0f} s: {status}", flush=True)
