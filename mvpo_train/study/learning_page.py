"""The learning study's results page (``benchmarks/learning.py``; docs/learning_study.md): the
table of :func:`mvpo_train.study.curves.summarize` over the held-out splits of the study's
:class:`~mvpo_train.study.study_env.StudyEnv`, its figure, its markdown and the settings
``learning.json`` records."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mvpo_train.stats import SMOOTH
from mvpo_train.study import curves
from mvpo_train.study.heldout_first import heldout_first_lines
from mvpo_train.study.study_env import (
    StudyEnv,
    arm_flags,
    count_tasks,
    final_evals,
    heldout_keys,
)
from mvpo_train.study.tables import command_line, machine_line, n_seeds, partial_lines, reach_cell
from mvpo_train.study.tables import fmt_ci as _fmt

__all__ = ["candidates_markdown", "plot", "study_settings", "summarize", "write_markdown"]


def candidates_markdown(rows: list[dict]) -> str:
    """The warm-start candidates as a markdown table (train split only)."""
    lines = ["| BC steps | train episodes | train success | train score | eval seconds |",
             "|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        score = "-" if r.get("score") is None else f"{r['score']:.3f}"
        secs = "-" if r.get("seconds") is None else f"{r['seconds']:.0f}"
        lines.append(f"| {r['steps'] or '0 (fresh head)'} | {r['episodes']} | "
                     f"{r['success']:.3f} | {score} | {secs} |")  # fmt: skip
    return "\n".join(lines)


def summarize(
    runs: dict[str, dict[int, list[dict[str, Any]]]],
    base: Path,
    threshold: float,
    iterations: int,
    env: StudyEnv,
    pairs: Sequence[tuple[str, str]] | None = None,
    more_thresholds: tuple[float, ...] = (),
) -> dict[str, Any]:
    """:func:`mvpo_train.study.curves.summarize` with ``env``'s held-out splits and pairs."""
    splits = [s for s, _ in env.final_evals]
    pairs = env.pairs if pairs is None else pairs
    return curves.summarize(
        runs, base, threshold, iterations, pairs, splits, env.scores, more_thresholds
    )


def plot(table: dict[str, Any], out: Path, threshold: float, env: StudyEnv) -> None:
    """:func:`mvpo_train.study.curves.plot` with ``env``'s headline split."""
    curves.plot(table, out, threshold, env.final_evals[0][0])


def write_markdown(table: dict[str, Any], args: argparse.Namespace, out: Path, png: Path) -> None:
    """The results page of the study ``args.study_env`` run with ``args`` (the command, the
    settings, the figure, the held-out-first table with t-based intervals, the per-arm and
    paired bootstrap tables, further thresholds, the inline evaluations, success per task type,
    the warm-start candidates, partial runs)."""
    it = args.iterations
    env = args.study_env
    command = command_line("benchmarks/learning.py", args.argv)
    first = env.final_evals[0][0]
    held_cols = [s for s, _ in env.final_evals] + (
        [f"{s} score" for s, _ in env.final_evals] if env.scores else []
    )
    lines = [
        f"# {env.title}",
        "",
        f"Command: `{command.strip()}` (table and plots only: add `--analyze-only`).",
        machine_line(
            out,
            getattr(args, "analyze_only", False),
            f", {args.jobs} runs at a time, 1 torch thread each",
        ),
        "",
        "Settings: "
        + (
            f"encoder policy warm-started on {env.demos} (`{args.warm}`"
            + (f", `{args.warm_args}`" if args.warm_args else "")
            + "), "
            + env.sentence(args.env_kwargs)
            + f", {env.steps}-step episodes, {args.num_groups} tasks x {args.group_size} rollouts per "
            f"iteration, {it} iterations, lr {args.lr}, 2 PPO epochs"
            + (f", then `{' '.join(args.extra)}`" if args.extra else "")
            + f", seeds {list(args.seeds)}; "
            + (
                "arms differ only in "
                if not arm_flags(args)
                else "arms differ in (their flags come last, so an arm's `--lr` or `--kl-coef` wins) "
            )
            + ", ".join(
                f"`{a}`: `{' '.join(env.arm(a) + arm_flags(args).get(a, []))}`" for a in args.arms
            )
            if args.study
            else f"`cpu-tiny` + `{' '.join(args.extra)}`, {it} iterations"
        )
        + ".",
        "",
        f"![learning curves]({png.name})",
        "",
        "After the first table: means over seeds with percentile-bootstrap 95% CIs over seeds "
        "(10,000 resamples, seed 0).",
        f"Training success = the rollout batch's (sampled actions, random task draw); area = mean "
        f"over all {it} iterations; final = last {SMOOTH} iterations. Iterations to "
        f"{args.threshold:.0%}: first iteration whose {SMOOTH}-iteration moving average reaches it "
        f"(a run that never does counts as {it + 1}). Held-out: the final checkpoint, sampled, "
        "seed 0, every task of the split x "
        + " / ".join(
            f"{e} episodes ({s})"
            for s, e in final_evals(env, getattr(args, "final_episodes", None))
        )
        + "."
        + (env.score_note if env.scores else ""),
        "",
    ]
    ws = table["warm_start"]
    if ws:
        lines += ["Warm start (iteration 0, same for every arm): " + ", ".join(
            f"{s} {v:.3f}" for s, v in ws.items()) + ".", ""]  # fmt: skip
    lines += heldout_first_lines(table, heldout_keys(env))
    lines += [
        f"| arm | seeds | training success: area | final | iterations to {args.threshold:.0%} "
        f"(per seed) | held-out {' | '.join(held_cols)} | zero-adv. ratio, first 5 it. "
        "| minutes / run |",
        "|---|---|---|---|---|" + "---|" * len(held_cols) + "---|---|",
    ]
    for arm, r in table["arms"].items():
        mins = r["minutes"][0] if r["minutes"] else float("nan")
        lines.append(
            f"| {arm} | {n_seeds(r)} | {_fmt(r['auc'])} | {_fmt(r['final'])} | "
            f"{reach_cell(r, it)} | "
            + "".join(f"{_fmt(r[k])} | " for k in heldout_keys(env))
            + f"{_fmt(r['zero_adv_early'])} "
            f"| {mins:.1f} |"
        )
    if table["pairs"]:
        lines += [
            "",
            "Paired differences (same seeds; mean [95% bootstrap CI] of the per-seed differences; "
            "a CI that excludes 0 is a difference at this sample size):",
            "",
            f"| pair | seeds | area | final | iterations to {args.threshold:.0%} | {first} |"
            + (f" {first} score |" if env.scores else ""),
            "|---|---|---|---|---|---|" + ("---|" if env.scores else ""),
        ]
        for name, p in table["pairs"].items():
            lines.append(
                f"| {name} | {n_seeds(p)} | {_fmt(p['auc'])} | {_fmt(p['final'])} | "
                f"{_fmt(p['reach'], 1)} | {_fmt(p[first])} |"
                + (f" {_fmt(p[f'{first}_score'])} |" if env.scores else "")
            )
    lines += curves.more_thresholds_lines(table, getattr(args, "more_thresholds", []), it)
    lines += curves.inline_eval_lines(table, first, args.eval_every, args.eval_episodes)
    types = sorted({t for r in table["arms"].values() for t in r.get(f"{first}_types", {})})
    if types and env.task_types:
        lines += [
            "",
            "Held-out `valid_unseen` success per task type (the MVPO paper's Table 1 columns; mean over "
            "seeds [95% bootstrap CI]):",
            "",
            "| arm | " + " | ".join(types) + " |",
            "|---|" + "---|" * len(types),
        ]
        for arm, r in table["arms"].items():
            cells = [_fmt(r["valid_unseen_types"].get(t)) for t in types]
            lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    cand = Path(args.base) / "warm-candidates" / "candidates.json"
    if env.candidates and cand.is_file():
        lines += [
            "",
            f"Warm-start candidates (train split only; `--warm-candidates`, {env.candidates}):",
            "",
            candidates_markdown(json.loads(cand.read_text())),
        ]
    lines += partial_lines(table, args.arms, len(args.seeds))
    out.write_text("\n".join(lines) + "\n")


def study_settings(args: argparse.Namespace) -> dict[str, Any]:
    """What ``learning.json`` records of the study's regime (its settings, for the reader)."""
    env = args.study_env
    evals = final_evals(env, getattr(args, "final_episodes", None))
    held = {s: count_tasks(args.env_kwargs, s, env.env_id) for s, _ in evals} if args.study else {}
    return {
        "num_groups": args.num_groups,
        "group_size": args.group_size,
        "iterations": args.iterations,
        "seeds": list(args.seeds),
        "lr": args.lr,
        "env_kwargs": json.loads(args.env_kwargs or "{}"),
        "extra_flags": list(args.extra),
        "arm_flags": arm_flags(args),
        "train_games": count_tasks(args.env_kwargs, "train", env.env_id) if args.study else None,
        "heldout_games": held,
        "final_episodes": {s: e for s, e in evals},
        "eval_every": args.eval_every,
        "eval_episodes": args.eval_episodes,
        "thresholds": [args.threshold, *getattr(args, "more_thresholds", [])],
        **env.extra_settings,
    }
