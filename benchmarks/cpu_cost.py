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
MilestoneChain setting, fresh head), ``tiny`` (``cpu-tiny``: the tiny LM in score mode) and
``showcase`` (``mvpo-showcase``, what ``make run`` runs, cut to ``--showcase-iterations``
iterations: its two held-out evaluations are the ``eval`` phase, which holds everything called
inside them). A cold run starts with an empty embedding cache file; the warm run repeats it
with the file the cold run wrote (the same texts: every embedding a cache hit).

**Before and after in one run.** Each variant runs the code of one commit, checked out once
as a git worktree under ``BASE/src/`` (:func:`mvpo_train.study.worktree.checkout`; imported
first through ``PYTHONPATH``; the installed packages are the same): ``before`` is :data:`BASELINE` (8e1d056, the code before the CPU-cost
work) with its defaults, ``after`` is ``--after-ref`` (default ``HEAD``: committed code, never
a half-edited working tree) with the fast paths on (``--embedding-runtime auto``; the factored
head is its default). The two variants of one measurement run at the same time
(``--jobs 2``, the default) so that they meet the same load on a shared machine. The ONNX
export is built before any measurement (its one-off cost is reported apart). The worktrees
stay for the next run; ``git worktree remove --force BASE/src/*`` (or deleting ``BASE`` and
``git worktree prune``) removes them.

Run from the repository root (about 40 CPU minutes; results in
``benchmarks/results/cpu_cost.{md,json}``; ``--analyze-only`` only rebuilds the page from the
JSON, keeping the sections written by hand after the run)::

    nice -n 10 python benchmarks/cpu_cost.py
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: the code before the CPU-cost work: the ``before`` variant
BASELINE = "8e1d056"

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
    "showcase": [],  # mvpo-showcase's own defaults (the cpu-showcase preset)
}  # fmt: skip
#: variant -> extra flags (the code is the variant's commit: module docstring)
VARIANTS: dict[str, list[str]] = {
    "before": [],
    "after": ["--embedding-runtime", "auto"],
}
#: tasks whose policy embeds texts (a warm run exists)
CACHED = {"study", "control"}
#: phases that hold everything called inside them (no nested phase is split out)
OPAQUE = {"eval"}


# ------------------------------------------------------------------ the measuring process


class Phases:
    """Exclusive process-CPU seconds per phase: entering a nested phase pauses its parent
    (inside an :data:`OPAQUE` phase nothing is split out). It lives here, not in the package:
    the measured process imports the packages of another commit (``clock``: for the tests)."""

    def __init__(self, clock: Callable[[], float] = time.process_time) -> None:
        self.clock = clock
        self.seconds: dict[str, float] = defaultdict(float)
        self.stack: list[str | None] = []
        self.mark = clock()
        self.marks: list[dict[str, float]] = []  # a snapshot at each iteration's start
        self.first = 0.0  # process time at the first iteration's start

    def enter(self, name: str) -> None:
        if any(s in OPAQUE for s in self.stack):
            self.stack.append(None)
            return
        now = self.clock()
        if self.stack:
            self.seconds[self.stack[-1]] += now - self.mark  # type: ignore[index]
        elif name == "rollout":  # an iteration starts
            self.first = self.first or now
            self.marks.append(dict(self.seconds))
        self.stack.append(name)
        self.mark = now

    def exit(self) -> None:
        name = self.stack.pop()
        if name is None:
            return
        now = self.clock()
        self.seconds[name] += now - self.mark
        self.mark = now

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.enter(name)
        try:
            yield
        finally:
            self.exit()

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        fn = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return fn(*args, **kwargs)

        setattr(owner, attr, timed)

    def iterations(self) -> list[dict[str, float]]:
        snaps = [*self.marks, dict(self.seconds)]
        out = []
        for a, b in zip(snaps, snaps[1:], strict=False):
            out.append({k: b.get(k, 0.0) - a.get(k, 0.0) for k in b})
        return out


def install(phases: Phases) -> None:
    """Wrap the functions whose CPU time is a phase (module docstring); the head's is
    ``ScorerHead.score_groups`` where it exists, ``EncoderPolicy._head_scores`` before."""
    import torch

    import mvpo_train.encoder_policy as ep
    import mvpo_train.evaluation as evaluation
    import mvpo_train.metrics as metrics
    import mvpo_train.policy as lm
    from mvpo_envs.vector import GroupedVectorEnv

    phases.wrap(ep.SegmentEmbedder, "encode", "minilm")
    if hasattr(ep.EncoderPolicy, "_head_scores"):  # the baseline: the head lived here
        phases.wrap(ep.EncoderPolicy, "_head_scores", "head forward")
    else:
        from mvpo_train.encoder_head import ScorerHead

        phases.wrap(ScorerHead, "score_groups", "head forward")
    phases.wrap(lm.Policy, "score_candidates", "lm score")
    phases.wrap(lm.Policy, "token_logprobs", "lm score")
    phases.wrap(torch.autograd, "backward", "backward")
    for opt in (torch.optim.Adam, torch.optim.AdamW):
        phases.wrap(opt, "step", "optimizer")
    phases.wrap(GroupedVectorEnv, "step", "env")
    phases.wrap(GroupedVectorEnv, "reset_groups", "env")
    phases.wrap(evaluation, "evaluate", "eval")
    metrics.PhaseTimer.__call__ = lambda self, name: phases.phase(name)  # type: ignore[method-assign]


def worker(argv: list[str], out: Path) -> None:
    """One measured ``mvpo-train`` run (``argv``; ``mvpo-showcase`` when it starts with
    ``showcase``) in this process -> ``out`` (JSON)."""
    phases = Phases()
    install(phases)
    if argv and argv[0] == "showcase":
        from mvpo_train.showcase import main as entry

        argv = argv[1:]
    else:
        from mvpo_train.cli import train_main as entry

    start = time.process_time()
    rc = entry(argv)
    total = time.process_time() - start
    iters = phases.iterations()
    before_first = sum(phases.marks[0].values()) if phases.marks else 0.0
    setup = (phases.first - start - before_first) if phases.first else total
    import mvpo_train

    code = Path(mvpo_train.__file__).parents[1]
    # a module the commit lacks would come from the installed (editable) checkout instead
    foreign = sorted(name for name, m in list(sys.modules.items())
                     if name.split(".")[0] in ("mvpo_train", "mvpo_envs", "mvpo_abstraction")
                     and getattr(m, "__file__", None)
                     and not Path(m.__file__).resolve().is_relative_to(code.resolve()))  # fmt: skip
    out.write_text(json.dumps({"rc": rc, "setup": setup, "iterations": iters, "total": total,
                               "eval": phases.seconds.get("eval", 0.0), "code": str(code),
                               "foreign_modules": foreign}))  # fmt: skip


# ------------------------------------------------------------------ the driver


def build_export(src: Path) -> float:
    """Build (or open) the ONNX export with the code of ``src``; its process CPU seconds."""
    code = ("import time, torch; torch.set_num_threads(1); t = time.process_time(); "
            "from mvpo_train.segment_embedder import SegmentEmbedder as S; "
            "e = S(runtime='onnx'); e.onnx_encoder; print(time.process_time() - t)")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True)  # fmt: skip
    return float(res.stdout.split()[-1])


def measure(task: str, variant: str, src: Path, cache: Path, args: argparse.Namespace) -> dict:
    """One measured run of ``task`` with ``variant``'s code (``src``) and embedding ``cache``."""
    from mvpo_train.study.worktree import run_in  # the driver's package (see main)

    base = Path(args.base)
    run = base / f"{task}-{variant}"
    shutil.rmtree(run, ignore_errors=True)
    out = base / f"{task}-{variant}-{cache.stem}.json"
    iterations = args.showcase_iterations if task == "showcase" else args.iterations
    argv = [*TASKS[task], *VARIANTS[variant], "--threads", "1", "--iterations", str(iterations),
            "--run-dir", str(run), "--no-progress", "--no-tensorboard", "--save-every", "0",
            "--record-every", "0"]  # fmt: skip
    if task == "showcase":
        argv = ["showcase", *argv, "--embedding-cache", str(cache)]
    else:
        argv += ["--eval-every", "0"]
        if task in CACHED:
            argv += ["--embedding-cache", str(cache)]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(out), "--", *argv]
    return run_in(src, cmd, out, ROOT, f"cpu_cost: {variant}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["study", "control", "tiny", "showcase"],
                   choices=TASKS)  # fmt: skip
    p.add_argument("--iterations", type=int, default=1, help="iterations per measured run")
    p.add_argument("--showcase-iterations", type=int, default=2,
                   help="iterations of the measured mvpo-showcase (make run has 10)")  # fmt: skip
    p.add_argument("--after-ref", default="HEAD", help="the commit the `after` variant runs")
    p.add_argument("--jobs", type=int, default=2, choices=(1, 2),
                   help="2: the two variants of a measurement run at the same time")  # fmt: skip
    p.add_argument("--base", default=str(ROOT / "runs" / "cpu-cost"))
    p.add_argument("--out", default=str(RESULTS / "cpu_cost.md"))
    p.add_argument("--analyze-only", action="store_true",
                   help="only rebuild --out from the JSON beside it (no runs)")  # fmt: skip
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.rest, Path(args.worker))
        return 0
    from mvpo_train.study.figures_page import write_figures_page
    from mvpo_train.study.phase_tables import header_lines, page

    out = Path(args.out)
    if args.analyze_only:  # the notes written by hand after the run kept
        old = out.read_text() if out.is_file() else None
        write_figures_page("cpu_cost", out, lambda results: page(results, old))
        return 0
    base = Path(args.base)
    base.mkdir(parents=True, exist_ok=True)
    refs = {"before": BASELINE, "after": args.after_ref}
    # imported here, not at the top: the measured process runs another commit's packages
    from mvpo_train.study.tables import command_line
    from mvpo_train.study.variant_pairs import measure_tasks
    from mvpo_train.study.worktree import checkout, short_sha

    src = {v: checkout(ROOT, ref, base) for v, ref in refs.items()}
    shas = {v: short_sha(ROOT, ref) for v, ref in refs.items()}
    export_cpu = build_export(src["after"])
    cmd = command_line("benchmarks/cpu_cost.py", argv if argv is not None else sys.argv[1:])
    md = header_lines(cmd, shas, args.jobs, export_cpu)
    run = lambda task, v, cache: measure(task, v, src[v], cache, args)  # noqa: E731
    sizes = (args.jobs, CACHED, args.showcase_iterations)
    measured = measure_tasks(args.tasks, list(VARIANTS), run, base, *sizes, md, out)
    results = {"command": cmd.strip(), "jobs": args.jobs, "showcase_iterations": args.showcase_iterations,
               "commits": shas, "onnx_export_cpu_s": export_cpu, **measured}  # fmt: skip
    write_figures_page("cpu_cost", out, page, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
