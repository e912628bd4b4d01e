"""The figure and results page of a study kept as compact results (``benchmarks/control_study.py``;
docs/control_task.md, "Results"): :func:`plot` draws the table of
:func:`mvpo_train.study.result_summary.summarize`, :func:`write_markdown` writes it out."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.stats import SMOOTH
from mvpo_train.study.arms import Arm
from mvpo_train.study.figures import band_line, pyplot, save
from mvpo_train.study.tables import fmt_ci, machine_line, n_seeds, partial_lines, reach_cell

__all__ = ["ALIGN_SHOWN", "plot", "write_markdown"]

#: the trainer's alignment metrics shown in the table and plot (docs/alignment.md); every
#: ``align/*`` key is kept in the compact results
ALIGN_SHOWN = ("align/auc", "align/labelled_fraction", "align/positives", "align/negatives")


def plot(table: dict[str, Any], out: Path, threshold: float) -> None:
    """Batch success per arm, paired differences, GiGPO's zero-credit ratio and, when logged,
    the repair's ``align/auc``, one panel each."""
    plt = pyplot()
    align = [k for k in ALIGN_SHOWN if any(k in r["curves"] for r in table["arms"].values())]
    panels = 3 + (1 if align else 0)
    fig, axes = plt.subplots(1, panels, figsize=(5.3 * panels, 4.4))
    colors: dict[str, Any] = {}
    for arm, row in table["arms"].items():
        x, colors[arm] = band_line(axes[0], arm, row)
        zc = np.array([np.nan if v is None else v for v in row["curves"]["zero_credit_ratio"]])
        axes[2].plot(x, zc, label=arm, color=colors[arm])
        for k in align[:1]:  # the AUC
            v = np.array([np.nan if z is None else z for z in row["curves"].get(k, [])])
            if v.size:
                axes[3].plot(x, v, label=f"{arm} {k}", color=colors[arm])
    for name, p in table["pairs"].items():
        band_line(axes[1], name, p, alpha=0.12)
    axes[0].axhline(threshold, color="grey", lw=0.8, ls="--")
    axes[1].axhline(0.0, color="grey", lw=0.8)
    axes[0].set(title=f"batch success ({SMOOTH}-it. moving average, 95% band)",
                xlabel="iteration", ylabel="success rate")  # fmt: skip
    axes[1].set(title="paired difference of batch success (same seeds)",
                xlabel="iteration", ylabel="difference")  # fmt: skip
    axes[2].set(title="GiGPO zero-credit ratio (rows in zero-credit step groups)",
                xlabel="iteration", ylabel="ratio")  # fmt: skip
    if align:
        axes[3].set(
            title="align/auc: MVPO's repair vs the oracle (0.5 = unrelated)",
            xlabel="iteration",
            ylabel="AUC",
        )
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    save(fig, out)


def write_markdown(
    table: dict[str, Any],
    args: argparse.Namespace,
    arms: list[Arm],
    out: Path,
    png: Path,
    env_id: str,
    command: str,
) -> None:
    """The results page: the command, settings, figure, the per-arm and paired tables, the
    repair against the oracle when logged, stale and partial runs, and ``args.note``."""
    it, th = args.iterations, args.threshold
    specs = ", ".join(f"`{a.name}`: `{' '.join(shlex.quote(f) for f in a.flags())}`" for a in arms)
    lines = [
        f"# Control-task study: GRPO vs GiGPO vs MVPO on {env_id}",
        "",
        f"Command: `{command.strip()}` (table and plot only: add `--analyze-only`).",
        machine_line(
            out,
            getattr(args, "analyze_only", False),
            f" (shared), {args.jobs} run(s) at a time, 1 torch thread each",
        ),  # fmt: skip
        "",
        f"Settings: encoder policy with a fresh head (`--model fresh`, from the seed), "
        f"`{env_id}` difficulty {args.difficulty}, K = {args.num_milestones}, all train layouts, "
        f"{args.max_steps}-step episodes, {args.num_groups} layouts x {args.group_size} rollouts "
        f"per iteration, {it} iterations, lr {args.lr}, {args.ppo_epochs} PPO epochs, seeds "
        f"{list(args.seeds)}"
        + (f", extra flags `{' '.join(args.extra)}`" if args.extra else "")
        + f"; arms differ only in {specs}.",
        "",
        f"![control study]({png.name})",
        "",
        "Means over seeds with percentile-bootstrap 95% CIs over seeds (10,000 resamples, seed 0). "
        f"Training success = the rollout batch's (sampled actions, random train layouts); area = "
        f"mean over all {it} iterations; first / final = first / last {SMOOTH} iterations. "
        f"Iterations to {th:.0%}: first iteration whose {SMOOTH}-iteration moving average "
        f"reaches it (a run that never does counts as {it + 1}). Held-out: the final checkpoint "
        f"on the `eval` split (64 layouts never trained on), sampled, seed 0, "
        f"{args.eval_episodes} episode(s) per layout. Zero-credit: share of the batch's rows in "
        f"GiGPO step groups whose credit is zero (`adv/zero_credit_ratio`), first {SMOOTH} "
        "iterations. Minutes / run: the trainer's iteration and evaluation time (`time/total` + "
        "`time/eval`; start-up and model load, about 20 s, not included).",
        "",
        f"| arm | seeds | training success: area | first | final | iterations to {th:.0%} "
        "(per seed) | held-out eval success | zero-credit ratio, first it. | minutes / run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, r in table["arms"].items():
        mins = r["minutes"][0] if r["minutes"] else float("nan")
        lines.append(
            f"| {arm} | {n_seeds(r)} | {fmt_ci(r['auc'])} | "
            f"{fmt_ci(r['first'])} | {fmt_ci(r['final'])} | "
            f"{reach_cell(r, it)} | "
            f"{fmt_ci(r['eval'])} | {fmt_ci(r['zero_credit_early'])} | {mins:.1f} |"
        )
    if table["pairs"]:
        lines += [
            "",
            "Paired differences (per seed: same initial head, same task draws; mean [95% "
            "bootstrap CI] of the per-seed differences; a CI that excludes 0 is a difference at "
            "this sample size):",
            "",
            f"| pair | seeds | area | final | iterations to {th:.0%} | held-out eval |",
            "|---|---|---|---|---|---|",
        ]
        for name, p in table["pairs"].items():
            lines.append(
                f"| {name} | {n_seeds(p)} | {fmt_ci(p['auc'])} | "
                f"{fmt_ci(p['final'])} | {fmt_ci(p['reach'], 1)} | "
                f"{fmt_ci(p['eval'])} |"
            )
    align = [k for k in ALIGN_SHOWN if any(k in r["curves"] for r in table["arms"].values())]
    if align:
        lines += ["", "MVPO's repair against the oracle (docs/alignment.md; the trainer's `align/*`, "
                  "mean over seeds and the iterations where defined):", "",
                  "| arm | " + " | ".join(align) + " |", "|---|" + "---|" * len(align)]  # fmt: skip
        for arm, r in table["arms"].items():
            cells = []
            for k in align:
                v = [x for x in r["curves"].get(k, []) if x is not None]
                digits = 0 if k in ("align/positives", "align/negatives") else 3  # counts
                cells.append(f"{np.mean(v):.{digits}f}" if v else "-")
            lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    if table.get("stale"):
        lines += ["", "Made with other credit-estimator code than the working tree's "
                  f"(`mvpo_train/credit/*.py`): {', '.join(table['stale'])}; retrain them "
                  "(delete their folders) if that code changed what they compute."]  # fmt: skip
    names = [a.name for a in arms]
    lines += partial_lines(
        table, names, len(args.seeds), "rerun the command (without `--analyze-only`)"
    )
    if args.note:
        lines += ["", Path(args.note).read_text().strip()]
    out.write_text("\n".join(lines) + "\n")
