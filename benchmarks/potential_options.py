"""Benchmark: how well each option of MVPO's potential ranks progress steps (docs/alignment.md,
"The potential's options").

The AUC of MVPO's repair (``mvpo_adv - gigpo_adv`` on the repaired rows) against the exact
progress label ``oracle_progress`` (1: the step shortened the shortest plan to the goal), per
*row* (an estimator option and a signature) and per *source* (a sequence of batches). Each row
is one estimator carried over a source's batches in order (its state, pooled region statistics
included, chained as in training; :func:`mvpo_train.alignment.score_sequence`). Sources, all
on train splits:

* ``control-uniform``: ``mvpo/MilestoneChain-v0`` difficulty 1, the uniform policy, the same
  8 train layouts (drawn with ``--seed``) in every batch, ``--batches`` batches of 8 x 8 x 50;
* ``control-trained``: a training run's own recorded batches on the control task
  (``--control-run``, default the oracle-gain study's MVPO run at seed 0, show_route on:
  ``runs/oracle-gain-route/mvpo/seed0``, read only), every iteration in order, scored over
  the last ``--trained-window`` iterations (the policy trained); its layouts change per batch
  (8 of 128), as in training;
* ``alfworld-p0.15``, ``alfworld-p0.3``: ``mvpo/ALFWorld-v0`` train split (bundled
  ``alfworld`` preset, fast engine), the noisy expert at ``p`` (one of the oracle's optimal
  actions with probability ``p``, else a random admissible one), the same 8 train tasks in
  every batch, ``--alfworld-batches`` batches of 8 x 8 x 50;
* ``alfworld-policy``: the ALFWorld study's behaviour-cloned warm start (the encoder head
  ``benchmarks/results/learning_full_runs/warm-head``, the study's policy before its first
  update) played on the same 8 train tasks, ``--alfworld-batches`` batches, oracle on; the
  study's own batch records are not on this machine, so this is the trained-policy source
  that can be regenerated;
* ``alfworld-trained`` (not in the default ``--sources``: it needs a run folder): a training
  run's own recorded batches on ALFWorld (``--alfworld-run``, default the GiGPO run at seed 0
  of the ALFWorld oracle-gain study, ``runs/oracle-gain-alfworld/gigpo-seed0``: full train
  split, 16 x 8 x 50, history-aware encoder policy, oracle labels on; read only), every
  iteration in order, scored over the last ``--trained-window`` iterations; the
  progress-carrying signatures by replaying each trajectory's commands (anchors checked). Its
  tasks change per batch (16 of 3,553), so pooled statistics rarely see a task twice.

Rows: the MVPO paper's form (the default), each option of docs/estimators.md's "Potential
options" (``region_stats="pooled"``: pooled, cross-fitted region statistics;
``pool_decay=0``: cross-fitting alone; ``potential_split="milestones"``: credit where progress
becomes possible; ``potential_estimate="td"``: the value of the pooled chain), the
progress-carrying signatures (``milestone-chain-progress`` on the
control task, ``alfworld-progress`` on ALFWorld: the same states, signatures computed by the
other abstraction), their combination, and, as a reference, the paper's form on 32 rollouts
per task (4 consecutive batches of a same-task source merged into one).

Per cell: the mean AUC over the source's batches with a t-based 95% interval over batches
(batches whose labelled repaired rows hold one class only are left out), and the repaired rows
per batch. Batches are played once and cached as batch records under ``--cache``
(``runs/potential-options/SOURCE/bNN.npz``); ``--analyze-only`` rebuilds the tables from the
results JSON. Run from the repository root::

    python benchmarks/potential_options.py          # writes benchmarks/results/potential_options.md/.json
    python benchmarks/potential_options.py --sources alfworld-trained --trained-window 10 \
        --out benchmarks/results/potential_options_alfworld_trained
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402

import mvpo_envs  # noqa: E402, F401
from mvpo_abstraction.registry import make_abstraction  # noqa: E402
from mvpo_train.alignment_variants import VariantError, make_variant  # noqa: E402
from mvpo_train.batch import StepBatch  # noqa: E402
from mvpo_train.config import ConfigError  # noqa: E402
from mvpo_train.records import RecordError  # noqa: E402
from mvpo_train.study import progress_sources as sources  # noqa: E402
from mvpo_train.study.analyze_only import (  # noqa: E402
    AnalyzeOnlyError,
    saved_results,
)
from mvpo_train.study.option_alignment import (  # noqa: E402
    cached_batches,
    score_rows,
    source_summary,
    write_page,
)
from mvpo_train.study.run_replay import replayed_run_batches, run_settings  # noqa: E402
from mvpo_train.study.tables import changed_flags  # noqa: E402

CONTROL = "mvpo/MilestoneChain-v0"
ALFWORLD = "mvpo/ALFWorld-v0"
PROGRESS_SIG = {CONTROL: "milestone-chain-progress", ALFWORLD: "alfworld-progress"}
SOURCES = (
    "control-uniform",
    "control-trained",
    "alfworld-p0.15",
    "alfworld-p0.3",
    "alfworld-policy",
)
#: sources read from a training run's records (scored over the last --trained-window batches)
TRAINED = ("control-trained", "alfworld-trained")
CACHE = ROOT / "runs" / "potential-options"
OUT = ROOT / "benchmarks" / "results" / "potential_options"
CONTROL_RUN = "runs/oracle-gain-route/mvpo/seed0"
ALFWORLD_RUN = "runs/oracle-gain-alfworld/gigpo-seed0"
WARM_HEAD = "benchmarks/results/learning_full_runs/warm-head"
WARM_CONFIG = "benchmarks/results/learning_full_runs/mvpo-seed0/config.yaml"
TASKS, ROLLOUTS, STEPS = 8, 8, 50
MERGE = 4  # batches merged into one for the 32-rollout reference row

#: the combination of every estimator option (docs/estimators.md §3.11-§3.13)
ALL = "region_stats=pooled,potential_estimate=td,potential_split=milestones"
#: (row name, estimator variant, signature: "env" | "progress", batches merged per batch)
ROWS: tuple[tuple[str, str, str, int], ...] = (
    ("the paper's form (default)", "mvpo", "env", 1),
    ("pooled, cross-fitted region statistics", "mvpo:region_stats=pooled", "env", 1),
    ("cross-fitted only (pool_decay=0)", "mvpo:region_stats=pooled,pool_decay=0", "env", 1),
    ("credit where progress becomes possible", "mvpo:potential_split=milestones", "env", 1),
    ("progress-carrying signature", "mvpo", "progress", 1),
    ("pooled + split", "mvpo:region_stats=pooled,potential_split=milestones", "env", 1),
    (
        "pooled + split + progress signature",
        "mvpo:region_stats=pooled,potential_split=milestones",
        "progress",
        1,
    ),
    ("pooled TD value", "mvpo:region_stats=pooled,potential_estimate=td", "env", 1),
    ("all three: pooled TD + split", f"mvpo:{ALL}", "env", 1),
    ("all three + progress signature", f"mvpo:{ALL}", "progress", 1),
    ("reference: the paper's form, 32 rollouts per task", "mvpo", "env", MERGE),
)


class BenchError(ValueError):
    """A bad command-line value or missing input (one line, exit 2)."""


def play_scripted(env_id: str, p: float, seed: int, k: int, **env_kwargs: Any) -> StepBatch:
    """Batch ``k`` of a same-task scripted source (the noisy expert at ``p``; 0 = uniform),
    with the progress-carrying signatures beside the env's own."""
    name = PROGRESS_SIG[env_id]

    def abstractions(env: Any) -> dict[str, Any]:
        kw = {"num_milestones": env.unwrapped.num_milestones} if env_id == CONTROL else {}
        return {name: make_abstraction(name, **kw)}

    make_env = lambda: gym.make(env_id, max_episode_steps=STEPS, **env_kwargs)  # noqa: E731
    return sources.play_scripted(make_env, abstractions, p, seed, k, (TASKS, ROLLOUTS, STEPS))


def play_policy(seed: int, k: int, cache: Path) -> StepBatch:
    """Batch ``k`` of the ALFWorld warm start on the same 8 train tasks, oracle on; the
    progress-carrying signatures by replaying each trajectory's commands on an env with that
    abstraction (the anchors checked step for step)."""
    overrides = dict(
        model=str(ROOT / WARM_HEAD), env_kwargs={"progress_oracle": True}, num_groups=TASKS,
        group_size=ROLLOUTS, max_steps=STEPS, embedding_cache=str(cache / "embeddings.npz"),
        run_dir=str(cache / "policy-run"),
    )  # fmt: skip
    make_env = lambda: gym.make(ALFWORLD, split="train")  # noqa: E731
    batch = sources.play_policy(ROOT / WARM_CONFIG, overrides, make_env, seed, k)
    name = PROGRESS_SIG[ALFWORLD]
    env = gym.make(ALFWORLD, split="train", abstraction=name, max_episode_steps=STEPS)
    return sources.replayed_signatures(batch, env, name)


def alfworld_run_batches(run: Path) -> list[StepBatch]:
    """An ALFWorld run's recorded batches in iteration order with the progress-carrying
    signatures of a replay on the run's own env settings (:mod:`mvpo_train.study.run_replay`)."""
    return replayed_run_batches(run, ALFWORLD, PROGRESS_SIG[ALFWORLD], "--alfworld-run", TRAINED[1])


def source_batches(name: str, args: argparse.Namespace) -> tuple[list[StepBatch], float]:
    """The batches of source ``name`` in order (played or from the cache), and the CPU
    seconds spent playing them (0 for a recorded run)."""
    if name == "control-trained":
        return sources.run_batches(ROOT / args.control_run, PROGRESS_SIG[CONTROL]), 0.0
    if name == "alfworld-trained":
        return alfworld_run_batches(ROOT / args.alfworld_run), 0.0
    n = args.batches if name == "control-uniform" else args.alfworld_batches
    plays: dict[str, Callable[[int], StepBatch]] = {
        "control-uniform": lambda k: play_scripted(CONTROL, 0.0, args.seed, k, difficulty=1),
        "alfworld-p0.15": lambda k: play_scripted(
            ALFWORLD, 0.15, args.seed, k, split="train", progress_oracle=True
        ),
        "alfworld-p0.3": lambda k: play_scripted(
            ALFWORLD, 0.3, args.seed, k, split="train", progress_oracle=True
        ),
        "alfworld-policy": lambda k: play_policy(args.seed, k, Path(args.cache)),
    }
    return cached_batches(Path(args.cache) / name, args.seed, n, plays[name], args.cached_only)


def run(args: argparse.Namespace) -> dict[str, Any]:
    for _, variant, _, _ in ROWS:
        make_variant(variant)  # a bad variant fails before any rollout
    results: dict[str, Any] = {
        "command": " ".join(["python benchmarks/potential_options.py", *args.flags]),
        "settings": {
            "seed": args.seed, "batches": args.batches, "alfworld_batches": args.alfworld_batches,
            "control_run": args.control_run, "trained_window": args.trained_window,
            **(run_settings(ROOT / args.alfworld_run, ROOT, "alfworld_run")
               if "alfworld-trained" in args.sources else {}),
            "tasks": TASKS, "rollouts": ROLLOUTS, "steps": STEPS, "merge": MERGE,
        },
        "sources": {},
        "rows": {r[0]: {"variant": r[1], "signature": r[2], "merge": r[3], "cells": {}} for r in ROWS},
    }  # fmt: skip
    for name in args.sources:
        batches, spent = source_batches(name, args)
        if not batches:
            print(f"{name}: no batch (--cached-only and none played yet): left out", flush=True)
            continue
        window = args.trained_window if name in TRAINED else 0
        results["sources"][name] = source_summary(batches, window, spent)
        progress = PROGRESS_SIG[CONTROL if name.startswith("control") else ALFWORLD]
        # a trained run's layouts or tasks change per batch: no task has 32 rollouts
        same = name not in TRAINED
        for row, cell in score_rows(ROWS, batches, window, progress, same, name).items():
            results["rows"][row]["cells"][name] = cell
    return results


# -- the page ------------------------------------------------------------------------------
def heads(results: dict[str, Any]) -> dict[str, str]:
    """The page's name of each source."""
    return {
        "control-uniform": "control, uniform",
        "control-trained": f"control, trained (last {results['settings']['trained_window']} it.)",
        "alfworld-p0.15": "ALFWorld, p = 0.15",
        "alfworld-p0.3": "ALFWorld, p = 0.3",
        "alfworld-policy": "ALFWorld, warm-start policy",
        "alfworld-trained": (
            f"ALFWorld, trained run, {results['settings'].get('alfworld_run_shape')} "
            f"(last {results['settings']['trained_window']} it.)"
        ),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0, help="tasks and rollouts of the sources")
    ap.add_argument("--batches", type=int, default=12, help="control-uniform batches")
    ap.add_argument("--alfworld-batches", type=int, default=8, help="batches per ALFWorld source")
    ap.add_argument("--trained-window", type=int, default=20, help="control-trained: last N scored")
    ap.add_argument("--control-run", default=CONTROL_RUN, help="a control-task run with records")
    ap.add_argument("--alfworld-run", default=ALFWORLD_RUN, help="an ALFWorld run with records")
    ap.add_argument("--sources", nargs="+", default=list(SOURCES), choices=[*SOURCES, TRAINED[1]])
    ap.add_argument("--cache", default=str(CACHE), help="folder of the played batches")
    ap.add_argument("--out", default=str(OUT), help="results path without suffix")
    ap.add_argument("--analyze-only", action="store_true", help="tables from the results JSON")
    ap.add_argument(
        "--cached-only",
        action="store_true",
        help="score only the batches already in --cache (at most the asked number; each source "
        "says how many it used)",
    )
    args = ap.parse_args(argv)
    shown = ("seed", "batches", "alfworld_batches", "control_run", "alfworld_run", "cached_only",
             "sources", "trained_window", "out")  # fmt: skip
    args.flags = changed_flags(ap, args, shown)
    out = Path(args.out)
    try:
        if min(args.batches, args.alfworld_batches) < 1:
            raise BenchError("--batches and --alfworld-batches must be >= 1")
        results = saved_results(out) if args.analyze_only else run(args)
    except (
        BenchError,
        VariantError,
        RecordError,
        AnalyzeOnlyError,
        sources.SourceError,
        ConfigError,
    ) as err:
        print(f"potential_options: {err}", file=sys.stderr)
        return 2
    write_page(results, heads(results), out, args.analyze_only)
    print(f"wrote {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
