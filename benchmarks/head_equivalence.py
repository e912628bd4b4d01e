"""Paired check: the factored action-scorer head learns as the concat one did.

The factored head (``--encoder-head factored``, the default; mvpo_train/encoder_head.py)
computes the concat head's function from the same weights, up to float rounding; rounding
moves sampled trajectories apart after a while, so this compares learning, not bits. Per
seed, the same run twice, ``--encoder-head concat`` and ``factored`` (same seed: the same
initial head and task draws), on

* ``control``: the control study's setting (benchmarks/control_study.py: MilestoneChain
  difficulty 1, K = 4, fresh head, 8 x 8 x 50, lr 2e-3, 2 PPO epochs, MVPO), ``--iterations``
  (the study's 40 by default);
* ``alfworld``: the ``cpu-showcase`` setting (ALFWorld full split, the bundled warm start,
  16 x 8 x 50, MVPO), ``--iterations`` 10.

Reported: :mod:`mvpo_train.study.paired_forms`. Resumable: a finished run is skipped, an
interrupted one resumes from its checkpoint. Run from the repository root::

    nice -n 19 python benchmarks/head_equivalence.py --task control --seeds 0 1 2 3 4
    nice -n 19 python benchmarks/head_equivalence.py --task alfworld --seeds 0 1 2 --iterations 10
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from mvpo_train.study.analyze_only import AnalyzeOnlyError, saved_results
from mvpo_train.study.paired_forms import form_lines
from mvpo_train.study.runs import metric_rows, train_cmd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FORMS = ("concat", "factored")
#: task -> mvpo-train flags on top of the ``cpu-tiny`` preset (:func:`train_cmd`)
TASKS = {
    "control": [
        "--env-id", "mvpo/MilestoneChain-v0",
        "--env-kwargs", '{"difficulty": 1, "num_milestones": 4}', "--tasks", "[]",
        "--max-steps", "50", "--policy", "encoder", "--model", "fresh", "--num-groups", "8",
        "--group-size", "8", "--ppo-epochs", "2", "--lr", "2e-3",
    ],
    "alfworld": ["--preset", "cpu-showcase"],
}  # fmt: skip


def run(task: str, form: str, seed: int, iterations: int, base: Path) -> list[float]:
    """The run's training success per iteration (training it first when unfinished)."""
    path = base / task / f"{form}-seed{seed}"
    if len(metric_rows(path)) < iterations:
        cmd = train_cmd(path, seed, iterations, [*TASKS[task], "--estimator", "mvpo",
                        "--encoder-head", form], ["--eval-every", "0", "--record-every", "0",
                        "--embedding-cache", str(base / task / "embeddings.npz")])  # fmt: skip
        subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return [float(r["success"]) for r in metric_rows(path)[:iterations]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", choices=TASKS, default="control")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument("--base", default=str(ROOT / "runs" / "head-equivalence"))
    p.add_argument("--out", default=None, help="default benchmarks/results/head_equivalence_<task>")
    p.add_argument("--analyze-only", action="store_true", help="the page from the JSON's curves")
    args = p.parse_args(argv)
    base = Path(args.base)
    out = Path(args.out or RESULTS / f"head_equivalence_{args.task}.md")
    if args.analyze_only:
        try:
            saved = saved_results(out)
        except AnalyzeOnlyError as err:
            sys.exit(f"head_equivalence: {err}")
        held, kept = saved.get("seeds"), saved.get("curves")
        if held != args.seeds or not isinstance(kept, dict) or set(FORMS) - set(kept):
            sys.exit(f"head_equivalence: {out.with_suffix('.json')} holds seeds {held} and "
                     f"the curves of {sorted(kept) if isinstance(kept, dict) else 'no form'}")  # fmt: skip
        curves = {f: kept[f] for f in FORMS}
    else:
        curves = {f: [] for f in FORMS}
        for seed in args.seeds:  # seed by seed: an interrupted check has both forms per seed
            for form in FORMS:
                curves[form].append(run(args.task, form, seed, args.iterations, base))
    cmd = " ".join(["python benchmarks/head_equivalence.py", "--task", args.task, "--seeds",
                    *map(str, args.seeds), "--iterations", str(args.iterations)])  # fmt: skip
    md = [
        f"# Factored vs concat action-scorer head: {args.task}",
        "",
        f"Command: `{cmd}` (benchmarks/head_equivalence.py docstring: settings, MVPO, one "
        "thread per run). Training success of the rollout batches; area = mean over the "
        f"{args.iterations} iterations, final = last 5; CIs: percentile bootstrap over the "
        f"{len(args.seeds)} seeds (10,000 resamples, seed 0); paired: t-based intervals beside "
        "them. Tables only: add `--analyze-only` (from the JSON's curves).",
        "",
        *form_lines(curves, "head"),
    ]
    out.write_text("\n".join(md) + "\n")
    data = {"command": cmd, "curves": curves, "seeds": args.seeds}
    out.with_suffix(".json").write_text(json.dumps(data) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
