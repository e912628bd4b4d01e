"""The table, figure and page of the MVPO ablations (``benchmarks/ablations.py``;
docs/learning_study.md, "Ablations"): variants of the learning study's ``mvpo`` arm chosen on
the train split, each against ``mvpo`` on the same seeds and against the committed study's
GiGPO, with the late kappa, the repaired share and the credit alignment recomputed from the
batch records (:func:`~mvpo_train.study.credit_mass.credit_alignment`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.stats import SMOOTH, bootstrap_ci, moving_average
from mvpo_train.study import curves
from mvpo_train.study.credit_mass import credit_alignment
from mvpo_train.study.figures import pyplot, save
from mvpo_train.study.runs import load_runs, run_dir
from mvpo_train.study.summary import paired
from mvpo_train.study.tables import fmt_ci, machine_line, n_seeds

__all__ = ["analyse", "late_mean", "plot", "reference", "runs_on_disk", "write_markdown"]


def late_mean(rows: list[dict], key: str) -> float:
    """The mean of ``key`` over the last :data:`SMOOTH` rows that have it (NaN if none)."""
    xs = [r[key] for r in rows[-SMOOTH:] if key in r]
    return float(np.mean(xs)) if xs else float("nan")


def reference(f: Path, seeds: list[int]) -> dict[str, dict[int, dict[str, Any]]]:
    """The per-seed values of ``gigpo`` and ``mvpo`` on ``seeds`` in the study table ``f`` (a
    ``learning.json``; empty when it is missing)."""
    if not f.is_file():
        return {}
    arms = json.loads(f.read_text())["arms"]
    return {
        arm: {s: arms[arm]["per_seed"][str(s)] for s in seeds if str(s) in arms[arm]["per_seed"]}
        for arm in ("gigpo", "mvpo")
        if arm in arms
    }


def runs_on_disk(base: Path, variants: Sequence[str]) -> tuple[list[str], list[int]]:
    """The arms (``mvpo`` first, then in ``variants`` order) and seeds with a run folder."""
    found = {}
    for d in base.glob("*-seed*"):
        arm, _, seed = d.name.rpartition("-seed")
        if seed.isdigit() and (arm == "mvpo" or arm in variants):
            found.setdefault(arm, set()).add(int(seed))
    arms = [a for a in ["mvpo", *variants] if a in found]
    return arms, sorted(set().union(*found.values())) if found else []


def analyse(
    base: Path, iterations: int, variants: Sequence[str], splits: Sequence[str], study: Path
) -> dict[str, Any]:
    """Every arm (``mvpo`` and ``variants``) and seed with a run under ``base``: the learning
    study's table over the held-out ``splits`` (pairs: each variant minus ``mvpo``), and per
    arm the curve on the random seeds every arm has, the late kappa and repaired share, the credit
    alignment (:func:`~mvpo_train.study.credit_mass.credit_alignment`) and the paired
    difference to ``gigpo`` of the study table ``study`` on the same seeds; that table's
    ``gigpo`` and ``mvpo`` as a reference; ``BASE/commands.txt`` as the commands."""
    arms, seeds = runs_on_disk(base, variants)
    runs = load_runs(base, arms, seeds, iterations)
    pairs = [(v, "mvpo") for v in arms if v != "mvpo"]
    table = curves.summarize(runs, base, 0.2, iterations, pairs, list(splits), False, ())
    ref = reference(study, seeds)
    common = sorted(set.intersection(*(set(runs[a]) for a in table["arms"]))) if runs else []
    table["common_seeds"] = common
    for arm, row in table["arms"].items():
        per = runs[arm]
        succ = np.array([[r["success"] for r in per[s]] for s in common])
        row["curve_common"] = moving_average(succ).mean(0).tolist() if len(common) else []
        row["kappa_late"] = float(np.mean([late_mean(per[s], "adv/kappa") for s in per]))
        row["repaired_late"] = float(
            np.mean([late_mean(per[s], "adv/repaired_ratio") for s in per])
        )
        aligned = [credit_alignment(run_dir(base, arm, s)) for s in per]
        for key in ("repair_share", "alignment_repair", "phi_split_spearman_failed", "loop_share"):
            row[key] = float(np.nanmean([a[key] for a in aligned]))
        mine = {int(s): v for s, v in row["per_seed"].items()}
        theirs = ref.get("gigpo", {})
        both = [s for s in mine if s in theirs]
        vs = paired([mine[s] for s in both], [theirs[s] for s in both],
                    ("auc", "final", "valid_unseen"), iterations, reach=())  # fmt: skip
        row.update({f"vs_study_gigpo_{k}": ci for k, ci in vs.items()})
        row["held_out_tested"] = any(v["valid_unseen"] is not None for v in mine.values())
    table["reference"] = {}
    for arm, per_seed in ref.items():
        table["reference"][arm] = {
            "seeds": sorted(per_seed),
            "auc": bootstrap_ci([v["auc"] for v in per_seed.values()]),
            "final": bootstrap_ci([v["final"] for v in per_seed.values()]),
            "valid_unseen": bootstrap_ci([v["valid_unseen"] for v in per_seed.values()]),
            "reached": sum(v["reach"] is not None for v in per_seed.values()),
        }
    if "mvpo" in ref and "mvpo" in table["arms"]:
        mine = table["arms"]["mvpo"]["per_seed"]
        diffs = [
            abs(ref["mvpo"][s]["auc"] - mine[str(s)]["auc"]) for s in ref["mvpo"] if str(s) in mine
        ]
        table["mvpo_rerun_max_abs_auc_diff"] = max(diffs) if diffs else None
        table["mvpo_rerun_seeds"] = sorted(int(s) for s in mine if int(s) in ref["mvpo"])
    log = base / "commands.txt"
    table["commands"] = log.read_text().splitlines() if log.is_file() else []
    return table


def plot(table: dict[str, Any], out: Path) -> None:
    """Each arm's moving-average batch success on the random seeds every arm has."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 5))
    for arm, row in table["arms"].items():
        y = np.array(row["curve_common"])
        lw, ls = (2.5, "-") if arm == "mvpo" else (1.3, "--" if "kappa" in arm else "-")
        ax.plot(np.arange(1, len(y) + 1), y, lw=lw, ls=ls, label=arm)
    ax.axhline(0.2, color="grey", lw=0.8, ls=":")
    common = table["common_seeds"]
    ax.set(
        title="MVPO ablations, train split: 5-iteration moving average of batch success,\n"
        f"mean over seeds every variant has ({common})",
        xlabel="iteration",
        ylabel="batch success rate",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, out)


def write_markdown(
    table: dict[str, Any],
    args: argparse.Namespace,
    out: Path,
    png: Path,
    variants: dict[str, str],
    final_evals: Sequence[tuple[str, int]],
    settings: str,
) -> None:
    """The results page: the commands, ``settings`` (the sentence after "Settings: "), the
    figure, the table of every arm (``variants``: name -> what it changes), the held-out test
    of the variants evaluated on ``final_evals`` and the reference of the study."""
    fmt = fmt_ci
    it = args.iterations
    cmds = table["commands"] or ["python benchmarks/ablations.py"]
    lines = [
        "# MVPO ablations on the train split",
        "",
        "Commands (in this order; rebuild the table and plot with `python benchmarks/ablations.py "
        "--analyze-only`):",
        "",
        *[f"    {c}" for c in cmds],
        "",
        machine_line(
            out,
            getattr(args, "analyze_only", False),
            f", {args.jobs} runs at a time, 1 torch thread each",
        ),
        "",
        "Settings: " + settings,
        "",
        f"![ablation curves]({png.name})",
        "",
        "Means over seeds with percentile-bootstrap 95% CIs over seeds. Area = mean batch success "
        f"over all {it} iterations; final = last 5 iterations; kappa and repaired rows = mean "
        "over the last 5 iterations (`adv/kappa`, `adv/repaired_ratio`). Repair's |A| share and "
        "alignments are recomputed from every iteration's batch record (`credit_alignment`: the "
        "repair's share of the advantage mass sum |A|; alignment = sum A*y / sum |A| over the "
        "rows of groups with a success and a failure, y = +1 on successful and -1 on failed "
        "trajectories: +1 = all credit points at the successful trajectories, 0 = unrelated to "
        "the outcome; with `c_succ > 0` the potential averages the group's own outcomes, so this "
        "is not an independent check). Phi split Spearman = the estimator's non-circular "
        "statistic (docs/estimators.md §3.7: the potential from the other half of each group "
        "against the milestones a failed trajectory still reaches). GiGPO's own credit is not "
        "given an alignment: it contains A^E, the outcome itself, so its alignment is +1 by "
        "construction; the loop term's share of Var(D) = how much of the potential difference on "
        "repaired rows comes from `lambda_L * L(rho)` (the rest: the milestone values). Paired = "
        "per-seed difference on seeds both have.",
        "",
        "| variant | what changes | seeds | area | final | reached 20% | zero-adv. first 5 it. "
        "| kappa, late | repaired rows, late | repair's share of \\|A\\| | loop term's share "
        "of Var(D) | alignment: repair "
        "| Phi split Spearman (failed) | paired vs mvpo: area | paired vs mvpo: final "
        "| paired vs study GiGPO: area | paired vs study GiGPO: final |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, r in table["arms"].items():
        what = "baseline (defaults)" if arm == "mvpo" else variants[arm]
        pair = table["pairs"].get(f"{arm} - mvpo", {})
        lines.append(
            f"| {arm} | {what} | {n_seeds(r)} | {fmt(r['auc'])} | {fmt(r['final'])} | "
            f"{r['reached']}/{n_seeds(r)} | {fmt(r['zero_adv_early'])} | "
            f"{r['kappa_late']:.2f} | {r['repaired_late']:.2f} | {r['repair_share']:.2f} | "
            f"{r['loop_share']:.2f} | "
            f"{r['alignment_repair']:+.3f} | {r['phi_split_spearman_failed']:+.3f} | "
            f"{fmt(pair.get('auc'))} | {fmt(pair.get('final'))} | "
            f"{fmt(r['vs_study_gigpo_auc'])} | {fmt(r['vs_study_gigpo_final'])} |"
        )
    tested = {a: r for a, r in table["arms"].items() if r["held_out_tested"]}
    if tested:
        lines += [
            "",
            "Held-out test of the chosen variants (the final checkpoint, as in the study: "
            + " / ".join(f"{s} x {e} sampled episodes per task" for s, e in final_evals)
            + "):",
            "",
            "| arm | seeds | valid_unseen | valid_seen | paired vs mvpo: valid_unseen "
            "| paired vs study GiGPO: valid_unseen |",
            "|---|---|---|---|---|---|",
        ]
        for arm, r in tested.items():
            pair = table["pairs"].get(f"{arm} - mvpo", {})
            lines.append(
                f"| {arm} | {n_seeds(r)} | {fmt(r['valid_unseen'])} | {fmt(r['valid_seen'])} "
                f"| {fmt(pair.get('valid_unseen'))} | {fmt(r['vs_study_gigpo_valid_unseen'])} |"
            )
    ref = table.get("reference", {})
    if ref:
        lines += [
            "",
            "Reference, the committed study (`benchmarks/results/learning.json`, those seeds):",
            "",
            "| arm | seeds | area | final | reached 20% | valid_unseen |",
            "|---|---|---|---|---|---|",
        ]
        for arm, r in ref.items():
            lines.append(
                f"| study {arm} | {n_seeds(r)} | {fmt(r['auc'])} | {fmt(r['final'])} | "
                f"{r['reached']}/{n_seeds(r)} | {fmt(r['valid_unseen'])} |"
            )
        d = table.get("mvpo_rerun_max_abs_auc_diff")
        if d is not None:
            rerun = table["mvpo_rerun_seeds"]
            lines += [
                "",
                f"The `mvpo` rerun against the study's `mvpo` on seeds {rerun}: "
                f"largest per-seed area difference {d:.2e}"
                + (" (identical trajectories)." if d < 1e-9 else " (not identical: see the logs)."),
            ]
    out.write_text("\n".join(lines) + "\n")
