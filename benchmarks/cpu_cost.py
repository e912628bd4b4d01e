"""Process CPU seconds of a training iteration, per phase, before and after the fast paths.

Each measurement is a fresh ``mvpo-train`` process on one torch thread (``--threads 1``), timed
with :func:`time.process_time` (CPU seconds of this process, so other jobs on the machine do
not count), split into phases by wrapping the functions that do the work (exclusive time: a
phase nested in another is not counted twice):

* ``minilm``: the sentence encoder's forward passes (``SegmentEmbedder.encode``);
* ``head forward``: the action scorer (``ScorerHead.score_groups``); ``lm score``: the LM
  policy's ``score_candidates`` / ``token_logprobs`` (``cpu-tiny``);
* ``backward``: ``torch.autograd.backward``; ``optimizer``: the optimiser steps;
* ``env``: the vector env's ``step`` / ``reset_groups`` (engine, abstraction, info merging);
* the trainer's phases (``rollout``, ``logp_ref``, ``advantage``, ``update``) hold the rest:
  prompt building, tokenising, cache look-ups, sampling, the PPO loss; ``advantage`` is the
  credit assignment.

``setup`` is the process time from the trainer's start to its first iteration (model, encoder
and env construction). Tasks: ``study`` (the ``cpu-showcase`` setting: ALFWorld full split,
encoder policy with history, 16 x 8 x 50, MVPO), ``control`` (the control study's
MilestoneChain setting, fresh head) and ``tiny`` (``cpu-tiny``: the tiny LM in score mode).
Variants: ``before`` selects the kept first code paths (``--encoder-head concat``, ...),
``after`` the defaults. A cold run starts with an empty embedding cache file; the warm run
repeats it with the file the cold run wrote (the same texts: every embedding a cache hit).

Run from the repository root (about 15 CPU minutes; results in
``benchmarks/results/cpu_cost.{md,json}``)::

    nice -n 19 python benchmarks/cpu_cost.py
    python benchmarks/cpu_cost.py --tasks control --iterations 2   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

#: task -> mvpo-train flags (``--threads 1`` and the run folder are added)
TASKS: dict[str, list[str]] = {
    "study": ["--preset", "cpu-showcase", "--estimator", "mvpo", "--eval-every", "0"],
    "control": [
        "--preset", "cpu-tiny", "--env-id", "mvpo/MilestoneChain-v0",
        "--env-kwargs", '{"difficulty": 1, "num_milestones": 4}', "--tasks", "[]",
        "--max-steps", "50", "--policy", "encoder", "--model", "fresh", "--num-groups", "8",
        "--group-size", "8", "--ppo-epochs", "2", "--lr", "2e-3", "--estimator", "mvpo",
    ],
    "tiny": ["--preset", "cpu-tiny", "--estimator", "mvpo"],
}  # fmt: skip
#: variant -> extra flags: ``before`` = the code paths kept from before the fast ones
VARIANTS: dict[str, list[str]] = {
    "before": ["--encoder-head", "concat"],
    "after": [],
}
#: tasks whose policy embeds texts (a warm run exists)
CACHED = {"study", "control"}
#: display order of the phases
PHASES = [
    "setup", "minilm", "head forward", "lm score", "backward", "optimizer", "env",
    "rollout", "logp_ref", "advantage", "update",
]  # fmt: skip
TRAINER_PHASES = ("rollout", "logp_ref", "advantage", "update")


# ------------------------------------------------------------------ the measuring process


class Phases:
    """Exclusive process-CPU seconds per phase: entering a nested phase pauses its parent."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.stack: list[str] = []
        self.mark = time.process_time()
        self.marks: list[dict[str, float]] = []  # a snapshot at each iteration's start
        self.first = 0.0  # process time at the first iteration's start

    def enter(self, name: str) -> None:
        now = time.process_time()
        if self.stack:
            self.seconds[self.stack[-1]] += now - self.mark
        elif name == "rollout":  # an iteration starts
            self.first = self.first or now
            self.marks.append(dict(self.seconds))
        self.stack.append(name)
        self.mark = now

    def exit(self) -> None:
        now = time.process_time()
        self.seconds[self.stack.pop()] += now - self.mark
        self.mark = now

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        fn = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(name)
            try:
                return fn(*args, **kwargs)
            finally:
                self.exit()

        setattr(owner, attr, timed)

    def iterations(self) -> list[dict[str, float]]:
        snaps = [*self.marks, dict(self.seconds)]
        out = []
        for a, b in zip(snaps, snaps[1:], strict=False):
            out.append({k: b.get(k, 0.0) - a.get(k, 0.0) for k in b})
        return out


def install(phases: Phases) -> None:
    """Wrap the functions whose CPU time is a phase (module docstring)."""
    from contextlib import contextmanager

    import torch

    import mvpo_train.encoder_policy as ep
    import mvpo_train.metrics as metrics
    import mvpo_train.policy as lm
    from mvpo_envs.vector import GroupedVectorEnv
    from mvpo_train.encoder_head import ScorerHead

    phases.wrap(ep.SegmentEmbedder, "encode", "minilm")
    phases.wrap(ScorerHead, "score_groups", "head forward")
    phases.wrap(lm.Policy, "score_candidates", "lm score")
    phases.wrap(lm.Policy, "token_logprobs", "lm score")
    phases.wrap(torch.autograd, "backward", "backward")
    for opt in (torch.optim.Adam, torch.optim.AdamW):
        phases.wrap(opt, "step", "optimizer")
    phases.wrap(GroupedVectorEnv, "step", "env")
    phases.wrap(GroupedVectorEnv, "reset_groups", "env")

    @contextmanager
    def phase(self: Any, name: str):  # noqa: ANN202
        phases.enter(name)
        try:
            yield
        finally:
            phases.exit()

    metrics.PhaseTimer.__call__ = phase  # type: ignore[method-assign]


def worker(argv: list[str], out: Path) -> None:
    """One measured ``mvpo-train`` run (``argv``) in this process -> ``out`` (JSON)."""
    phases = Phases()
    install(phases)
    from mvpo_train.cli import train_main

    start = time.process_time()
    rc = train_main(argv)
    total = time.process_time() - start
    iters = phases.iterations()
    setup = phases.first - start if phases.first else total
    out.write_text(json.dumps({"rc": rc, "setup": setup, "iterations": iters, "total": total}))


# ------------------------------------------------------------------ the driver


def measure(task: str, variant: str, cache: Path, iterations: int, base: Path) -> dict:
    run = base / f"{task}-{variant}"
    shutil.rmtree(run, ignore_errors=True)
    out = base / f"{task}-{variant}-{cache.stem}.json"
    argv = [*TASKS[task], *VARIANTS[variant], "--threads", "1", "--iterations", str(iterations),
            "--run-dir", str(run), "--no-progress", "--no-tensorboard", "--save-every", "0",
            "--record-every", "0", "--eval-every", "0"]  # fmt: skip
    if task in CACHED:
        argv += ["--embedding-cache", str(cache)]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(out), "--", *argv]
    subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return json.loads(out.read_text())


def row_of(result: dict, which: int = 0) -> dict[str, float]:
    it = dict(result["iterations"][which])
    it["setup"] = result["setup"]
    return it


def table(title: str, rows: dict[str, dict[str, float]]) -> list[str]:
    """Markdown: one line per phase, a column per measurement, ratios after/before."""
    cols = list(rows)
    lines = [f"### {title}", "", "| phase | " + " | ".join(cols) + " |",
             "|---|" + "---:|" * len(cols)]  # fmt: skip
    names = [p for p in PHASES if any(rows[c].get(p, 0.0) > 0.005 for c in cols)]
    for p in names:
        lines.append(f"| {p} | " + " | ".join(f"{rows[c].get(p, 0.0):.2f}" for c in cols) + " |")
    tot = {c: sum(v for k, v in rows[c].items() if k != "setup") for c in cols}
    lines.append("| **iteration** | " + " | ".join(f"**{tot[c]:.2f}**" for c in cols) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["study", "control", "tiny"], choices=TASKS)
    p.add_argument("--iterations", type=int, default=1, help="iterations per measured run")
    p.add_argument("--base", default=str(ROOT / "runs" / "cpu-cost"))
    p.add_argument("--out", default=str(RESULTS / "cpu_cost.md"))
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.rest, Path(args.worker))
        return 0
    base = Path(args.base)
    base.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    md = ["# CPU cost per iteration, before and after the fast paths", "",
          f"Command: `python benchmarks/cpu_cost.py --tasks {' '.join(args.tasks)} "
          f"--iterations {args.iterations}`; process CPU seconds, one torch thread, the first "
          "iteration of a fresh process (benchmarks/cpu_cost.py, module docstring).", ""]  # fmt: skip
    for task in args.tasks:
        rows: dict[str, dict[str, float]] = {}
        for variant in VARIANTS:
            cache = base / f"{task}-{variant}-emb.npz"
            cache.unlink(missing_ok=True)
            cold = measure(task, variant, cache, args.iterations, base)
            results[f"{task}/{variant}/cold"] = cold
            rows[f"{variant} cold"] = row_of(cold)
            if task in CACHED:
                warm = measure(task, variant, cache, args.iterations, base)
                results[f"{task}/{variant}/warm"] = warm
                rows[f"{variant} warm"] = row_of(warm)
        md += table(task, rows) + [""]
        for kind in ("cold", "warm"):
            b, a = rows.get(f"before {kind}"), rows.get(f"after {kind}")
            if b and a:
                tb = sum(v for k, v in b.items() if k != "setup")
                ta = sum(v for k, v in a.items() if k != "setup")
                md.append(f"- {task}, {kind}: iteration {tb:.1f} -> {ta:.1f} CPU s "
                          f"(x{ta / tb:.2f}); setup {b['setup']:.1f} -> {a['setup']:.1f} s")  # fmt: skip
        md.append("")
    Path(args.out).write_text("\n".join(md) + "\n")
    Path(args.out).with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
