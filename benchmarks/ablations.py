"""Why does MVPO trail GiGPO in the learning study? Ablations of MVPO on the *train* split only.

Each variant is the study's ``mvpo`` arm (``benchmarks/learning_env.py``: same policy, warm
start, rooms, batch and seeds) with one MVPO option changed, chosen on training success; the
variants named with ``--test`` are then evaluated once on the held-out splits. What it reports
and what it found: docs/learning_study.md, "Ablations". Resumable like the study::

    python benchmarks/ablations.py                 # table + plot: benchmarks/results/ablations.md
    python benchmarks/ablations.py --analyze-only  # rebuild them from runs/ablations/
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from learning_env import ALFWORLD, ARMS, FINAL_EVALS, RESULTS, ROOT
from learning_report import summarize
from learning_runs import eval_cmd, run_all, warm_start_and_eval

from mvpo_train.stats import SMOOTH, bootstrap_ci, moving_average
from mvpo_train.study.credit_mass import credit_alignment
from mvpo_train.study.figures import pyplot, save
from mvpo_train.study.runs import (
    eval_file,
    load_runs,
    n_metrics,
    pending_runs,
    run_dir,
    run_local,
)
from mvpo_train.study.summary import paired
from mvpo_train.study.tables import command_line, fmt_ci, machine_line, n_seeds, save_results


def _kw(**kwargs: object) -> list[str]:
    return ["--estimator-kwargs", json.dumps(kwargs, sort_keys=True)]


#: variant -> (mvpo-train flags added to the ``mvpo`` arm, what it tests; docs/estimators.md §3)
VARIANTS: dict[str, tuple[list[str], str]] = {
    "mvpo-kappa0.25": (
        _kw(kappa_schedule="constant", kappa_constant=0.25),
        "potential scale: kappa fixed at 0.25 (the default schedule 1 - EMA success keeps it "
        "near 0.9 here)",
    ),
    "mvpo-kappa0.1": (
        _kw(kappa_schedule="constant", kappa_constant=0.1),
        "potential scale: kappa fixed at 0.1",
    ),
    "mvpo-lambdaL0": (_kw(lambda_L=0.0), "no loop penalty (lambda_L 0.5 -> 0)"),
    "mvpo-lambdaL1": (_kw(lambda_L=1.0), "stronger loop penalty (lambda_L 0.5 -> 1)"),
    "mvpo-lambdaL0-kappa0.25": (
        _kw(lambda_L=0.0, kappa_schedule="constant", kappa_constant=0.25),
        "both: no loop penalty and kappa fixed at 0.25",
    ),
    "mvpo-scope-batch": (_kw(scope="batch"), "regions over the whole batch, not per group"),
    "mvpo-singletons": (_kw(repair_singletons=True), "repair singleton step groups as well"),
    "mvpo-amp-off": (_kw(eta=0.0), "milestone weights fixed uniform (AMP off, eta 0)"),
    "mvpo-text-rules": (
        ["--abstraction", "alfworld-text"],
        "milestone set and signatures read from the observation text (the paper's string rules)",
    ),
}
#: the first sweep (``python benchmarks/ablations.py``): every variant but the combination
DEFAULT_VARIANTS = tuple(v for v in VARIANTS if v != "mvpo-lambdaL0-kappa0.25")
#: the learning study's ALFWorld settings with every variant as an arm
STUDY_ENV = ALFWORLD._replace(
    arm_flags={name: [*ARMS["mvpo"], *flags] for name, (flags, _) in VARIANTS.items()}
)


def sweep_args(args: argparse.Namespace) -> argparse.Namespace:
    """The learning study's arguments for this sweep (study settings, train split only)."""
    env = STUDY_ENV
    return argparse.Namespace(
        study_env=env, arms=["mvpo", *args.variants], seeds=args.seeds,
        iterations=args.iterations, num_groups=8, group_size=8, lr=2e-3, eval_every=0,
        eval_episodes=env.eval_episodes, threshold=0.2, jobs=args.jobs, ray=args.ray,
        base=args.base, embedding_cache=args.embedding_cache, fresh=False, eval=False,
        study=True, extra=[], warm=env.warm, warm_args=env.warm_args, warm_checked=False,
        env_kwargs=env.env_kwargs,
    )  # fmt: skip


def _late_mean(rows: list[dict], key: str) -> float:
    xs = [r[key] for r in rows[-SMOOTH:] if key in r]
    return float(np.mean(xs)) if xs else float("nan")


def reference(seeds: list[int]) -> dict[str, dict[str, dict]]:
    """The committed study's per-seed training values of ``gigpo`` and ``mvpo`` (same seeds)."""
    f = ROOT / "benchmarks" / "results" / "learning.json"
    if not f.is_file():
        return {}
    arms = json.loads(f.read_text())["arms"]
    return {
        arm: {s: arms[arm]["per_seed"][str(s)] for s in seeds if str(s) in arms[arm]["per_seed"]}
        for arm in ("gigpo", "mvpo")
        if arm in arms
    }


def runs_on_disk(base: Path) -> tuple[list[str], list[int]]:
    """The arms (``mvpo`` first, then :data:`VARIANTS` order) and seeds with a run folder."""
    found = {}
    for d in base.glob("*-seed*"):
        arm, _, seed = d.name.rpartition("-seed")
        if seed.isdigit() and (arm == "mvpo" or arm in VARIANTS):
            found.setdefault(arm, set()).add(int(seed))
    arms = [a for a in ["mvpo", *VARIANTS] if a in found]
    return arms, sorted(set().union(*found.values())) if found else []


def analyse(args: argparse.Namespace) -> dict:
    """Every arm and seed finished under ``--base`` (all the sweep's commands together)."""
    base = Path(args.base)
    arms, seeds = runs_on_disk(base)
    runs = load_runs(base, arms, seeds, args.iterations)
    pairs = [(v, "mvpo") for v in arms if v != "mvpo"]
    table = summarize(runs, base, 0.2, args.iterations, pairs=pairs)
    ref = reference(seeds)
    common = sorted(set.intersection(*(set(runs[a]) for a in table["arms"]))) if runs else []
    table["common_seeds"] = common
    for arm, row in table["arms"].items():
        per = runs[arm]
        succ = np.array([[r["success"] for r in per[s]] for s in common])
        row["curve_common"] = moving_average(succ).mean(0).tolist() if len(common) else []
        row["kappa_late"] = float(np.mean([_late_mean(per[s], "adv/kappa") for s in per]))
        row["repaired_late"] = float(
            np.mean([_late_mean(per[s], "adv/repaired_ratio") for s in per])
        )
        aligned = [credit_alignment(run_dir(base, arm, s)) for s in per]
        for key in ("repair_share", "alignment_repair", "phi_split_spearman_failed", "loop_share"):
            row[key] = float(np.nanmean([a[key] for a in aligned]))
        mine = {int(s): v for s, v in row["per_seed"].items()}
        theirs = ref.get("gigpo", {})
        both = [s for s in mine if s in theirs]
        vs = paired([mine[s] for s in both], [theirs[s] for s in both],
                    ("auc", "final", "valid_unseen"), args.iterations, reach=())  # fmt: skip
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


def test_held_out(args: argparse.Namespace) -> None:
    """The final held-out evaluations (as in the study) of ``mvpo`` and the ``--test`` variants,
    on their finished runs: a variant chosen on the train split, then tested once."""

    def commands(path: Path, arm: str, seed: int) -> list[list[str]]:
        if n_metrics(path) < args.iterations:
            return []
        return [eval_cmd(path, sp, e) for sp, e in FINAL_EVALS if not eval_file(path, sp).is_file()]

    pending = pending_runs(Path(args.base), ["mvpo", *args.test], args.seeds, commands)
    run_local(pending, args.jobs, ROOT)


def plot(table: dict, out: Path) -> None:
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


def write_markdown(table: dict, args: argparse.Namespace, out: Path, png: Path) -> None:
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
        "Settings: the learning study's `mvpo` arm (docs/learning_study.md: encoder policy "
        "warm-started on the train walkthroughs, bundled `alfworld` preset, all train tasks, "
        f"50-step episodes, 8 tasks x 8 rollouts, {it} iterations, lr 0.002, 2 PPO epochs), one "
        "option changed per variant; chosen on the train split only (no evaluation during "
        "training; a held-out test only of the variants named with `--test`, after the choice).",
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
        what = "baseline (defaults)" if arm == "mvpo" else VARIANTS[arm][1]
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
            + " / ".join(f"{s} x {e} sampled episodes per task" for s, e in FINAL_EVALS)
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--variants", nargs="+", default=list(DEFAULT_VARIANTS), choices=list(VARIANTS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel (1 thread each)")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="one Ray task per run, as in benchmarks/learning.py")  # fmt: skip
    p.add_argument("--base", default=str(ROOT / "runs" / "ablations"))
    p.add_argument(
        "--embedding-cache",
        default=str(ROOT / "runs" / "learning-study" / "embeddings.npz"),
        help="embedding cache file shared with the learning study",
    )
    p.add_argument(
        "--test",
        nargs="+",
        default=[],
        choices=list(VARIANTS),
        metavar="VARIANT",
        help="after choosing on the train split: the final held-out evaluations of these "
        "variants and of mvpo on their finished runs (as in the learning study)",
    )
    p.add_argument("--analyze-only", action="store_true", help="only rebuild the table and plot")
    p.add_argument("--out", default=str(RESULTS / "ablations.md"))
    args = p.parse_args(argv)
    args.argv = [a for a in argv if a != "--analyze-only"]
    if not args.analyze_only:
        base = Path(args.base)
        base.mkdir(parents=True, exist_ok=True)
        cmd = command_line("benchmarks/ablations.py", args.argv)
        log = base / "commands.txt"
        if cmd.strip() not in (log.read_text().splitlines() if log.is_file() else []):
            with log.open("a") as f:
                f.write(cmd.strip() + "\n")
        sa = sweep_args(args)
        warm_start_and_eval(sa, base)  # the cached warm start
        Path(args.embedding_cache).parent.mkdir(parents=True, exist_ok=True)
        run_all(sa, base)
        if args.test:
            test_held_out(args)
    table = analyse(args)
    save_results(table, Path(args.out), plot, lambda t, out, png: write_markdown(t, args, out, png))
    return 0


if __name__ == "__main__":
    sys.exit(main())
