"""Benchmark: does MVPO's repair point at real progress? AUC against the exact ALFWorld oracle.

docs/alignment.md ("Benchmark", "Relabelling a run after the fact": the method, the flags and
the run JSON). On the rows where MVPO's advantage differs from GiGPO's on the same batch (the
repaired rows), the AUC of the repair ``mvpo_adv - gigpo_adv`` for the exact progress label
(1: the step shortened the shortest plan to the goal; ``mvpo_envs.alfworld.oracle``), per
estimator variant given on the command line (``NAME`` or ``NAME:key=value,...``, estimator
config fields, values read as JSON when they parse). Batches: noisy-expert rollouts on the
ALFWorld train split (default; each ``(p, seed)`` batch cached as a batch record under
``--cache``, a fresh estimator per batch: :mod:`mvpo_train.study.expert_alignment`), or a
training run's recorded batches (``--run-dir``, labels from the records or, with
``--relabel``, by replay: :mod:`mvpo_train.study.run_alignment`).

Run from the repository root::

    python benchmarks/alignment.py --variant mvpo:form=v1 --variant mvpo:form=v1,lambda_L=0 \\
        --variant mvpo:form=paper --variant mvpo:form=paper,lambda_L=0   # alignment.md/.json
    python benchmarks/alignment.py --run-dir runs/x     # a run's recorded batches (printed)
    python benchmarks/alignment.py --run-dir runs/x --relabel --json x.json  # ... without labels
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401
from mvpo_train.alignment_variants import VariantError
from mvpo_train.batch import StepBatch
from mvpo_train.config import ConfigError
from mvpo_train.records import RecordError
from mvpo_train.run_relabeller import RelabelSetupError
from mvpo_train.run_relabeller import RunReplayer as _RunReplayer
from mvpo_train.scripted_batches import noisy_expert_batch as play_noisy_expert
from mvpo_train.study.analyze_only import AnalyzeOnlyError, saved_results
from mvpo_train.study.expert_alignment import score_batches, write_page
from mvpo_train.study.page_command import with_page_command
from mvpo_train.study.run_alignment import DEFAULT_RUN_VARIANTS, score_run, write_json
from mvpo_train.study.run_sets import rel_path

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "mvpo/ALFWorld-v0"
DEFAULT_PS = (0.15, 0.3, 0.5)
DEFAULT_SEEDS = (0, 1, 2)
DEFAULT_VARIANTS = DEFAULT_RUN_VARIANTS
CACHE = ROOT / "runs" / "alignment-cache"
MAX_UNVERIFIED = 0.01  # --relabel: above this fraction of unverified trajectories, exit 1
OUT = ROOT / "benchmarks" / "results" / "alignment"


#: a bad command-line value (printed in one line, exit 2)
BenchError = VariantError


# -- noisy-expert rollouts ----------------------------------------------------------------------
def noisy_expert_batch(
    p: float, seed: int, tasks: int, rollouts: int, steps: int
) -> tuple[StepBatch, dict[str, Any]]:
    """``tasks`` groups of ``rollouts`` episodes (one task per group) of the noisy expert
    (:func:`mvpo_train.scripted_batches.noisy_expert_batch` on the ALFWorld train split)."""
    rng = np.random.default_rng([seed, int(round(p * 1000))])
    env = gym.make(ENV_ID, split="train", progress_oracle=True, max_episode_steps=steps)
    n_tasks = len(env.unwrapped.task_ids)
    chosen = rng.choice(n_tasks, size=min(tasks, n_tasks), replace=False).tolist()
    played = play_noisy_expert(env, chosen, rollouts, steps, p, rng)
    env.close()
    meta = {"p": p, "seed": seed, "tasks": chosen, "expert_steps": played.expert_steps}
    return played.batch, meta


def run_noisy(args: argparse.Namespace) -> dict[str, Any]:
    variants = list(args.variant or DEFAULT_VARIANTS)
    size = (args.tasks, args.rollouts, args.steps)
    ps = list(args.p or DEFAULT_PS)

    def cache(p: float, seed: int) -> Path:
        return Path(args.cache) / f"p{p:g}-seed{seed}-{size[0]}x{size[1]}x{size[2]}.npz"

    play = lambda p, seed: noisy_expert_batch(p, seed, *size)  # noqa: E731
    return {"batches": score_batches(ps, args.seeds, variants, cache, play), "variants": variants}


class RunReplayer(_RunReplayer):
    """Replays a run's recorded trajectories on the env it played, ``progress_oracle`` on
    (:class:`mvpo_train.run_relabeller.RunReplayer`): only ``mvpo/ALFWorld-v0`` runs, replayed
    on the fast engine (identical step for step to ``pddl``, and the fastest)."""

    def __init__(self, run_dir: Path, cache: Path, workers: int = 1):
        super().__init__(run_dir, cache, workers, env_ids=(ENV_ID,), overrides={"engine": "fast"})


def command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this table (the variants it was asked for)."""
    parts = [f"--p {p}" for p in args.p or []]
    if list(args.seeds) != list(DEFAULT_SEEDS):
        parts.append("--seeds " + " ".join(map(str, args.seeds)))
    parts += [f"--variant {shlex.quote(v)}" for v in args.variant or []]
    if Path(args.out).resolve() != Path(OUT).resolve():
        parts.append(f"--out {shlex.quote(rel_path(Path(args.out), ROOT))}")
    return " ".join(["python benchmarks/alignment.py", *parts])


def check_saved(args: argparse.Namespace, res: dict[str, Any]) -> dict[str, Any]:
    """``res`` (the results JSON, ``--analyze-only``) when the command line asks for its
    variants, seeds and p, as the page names them; else a :class:`BenchError` line (the page
    would name a command that did not make its table)."""
    batches = res.get("batches", [])
    saved = {
        "--variant": list(res.get("variants", [])),
        "--seeds": sorted({b["seed"] for b in batches}),
        "--p": sorted({b["p"] for b in batches}),
    }
    asked = {
        "--variant": list(args.variant or DEFAULT_VARIANTS),
        "--seeds": sorted(args.seeds),
        "--p": sorted(args.p or DEFAULT_PS),
    }
    if differ := [f"{k} {saved[k]}" for k in saved if saved[k] != asked[k]]:
        raise BenchError(
            f"--analyze-only: {Path(args.out).with_suffix('.json')} holds {'; '.join(differ)}: "
            "give those (`python benchmarks/alignment.py --analyze-only` alone rebuilds the "
            "page with its own command); nothing written"
        )
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--p", type=float, action="append", help="expert probability (repeatable)")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS))
    ap.add_argument("--variant", action="append", help="NAME or NAME:key=value,... (repeatable)")
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--cache", default=str(CACHE), help="folder of the cached rollouts")
    ap.add_argument("--out", default=str(OUT), help="results path without suffix")
    ap.add_argument("--run-dir", help="score a training run's recorded batches instead")
    ap.add_argument(
        "--relabel", action="store_true", help="with --run-dir: recover the labels by replay"
    )
    ap.add_argument(
        "--analyze-only",
        action="store_true",
        help="rewrite the tables from the results JSON at --out (give the flags of its command; "
        "alone, or with --out: the command its page names)",
    )
    ap.add_argument("--json", help="with --run-dir: write the results JSON here")
    ap.add_argument(
        "--workers", type=int, default=1, help="with --relabel: processes sharing each batch"
    )
    ap.add_argument(
        "--iterations", help="with --run-dir: score only these recorded iterations (1,5,10-12)"
    )
    ap.add_argument(
        "--state",
        choices=("chained", "fresh"),
        default="chained",
        help="with --run-dir, a variant the run did not train: carried over the batches "
        "(chained) or fresh per batch",
    )
    ap.add_argument(
        "--max-unverified",
        type=float,
        default=MAX_UNVERIFIED,
        help="with --relabel: fail (exit 1) above this fraction of unverified trajectories",
    )
    raw = list(sys.argv[1:] if argv is None else argv)
    page = Path(ap.parse_args(raw).out).with_suffix(".md")
    raw = with_page_command(raw, page, "benchmarks/alignment.py", "alignment")
    args = ap.parse_args(raw)
    try:
        if min(args.tasks, args.rollouts, args.steps) < 1:
            raise BenchError("--tasks, --rollouts and --steps must be >= 1")
        if args.run_dir:
            if args.workers < 1:
                raise BenchError("--workers must be >= 1")
            if not 0.0 <= args.max_unverified <= 1.0:
                raise BenchError("--max-unverified: a fraction in [0, 1]")
            args.command = shlex.join(["python", "benchmarks/alignment.py", *raw])
            hint = f"{ENV_ID} with --env-kwargs '{{\"progress_oracle\": true}}'"
            res, status = score_run(args, RunReplayer, hint)
            write_json(args.json, res)
            print(json.dumps(res, indent=1, allow_nan=True))
            return status
        if args.relabel or args.json or args.iterations:
            raise BenchError("--relabel, --json and --iterations go with --run-dir")
        res = (
            check_saved(args, saved_results(Path(args.out)))
            if args.analyze_only
            else run_noisy(args)
        )
    except (BenchError, RecordError, ConfigError, RelabelSetupError, AnalyzeOnlyError) as err:
        print(f"alignment: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    size = (args.tasks, args.rollouts, args.steps)
    setting = "ALFWorld train split (bundled `alfworld` preset, fast engine)"
    write_page(
        out, res, command_line(args), size, args.seeds, args.analyze_only, "ALFWorld", setting
    )
    print(f"wrote {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
