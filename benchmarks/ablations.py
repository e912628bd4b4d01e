"""Why does MVPO trail GiGPO in the learning study? Ablations of MVPO on the *train* split only.

docs/learning_study.md, "Ablations". Every variant is the study's ``mvpo`` arm (same policy, warm
start, rooms, batch, iterations, learning rate and seeds as ``benchmarks/learning.py``) with one
MVPO option changed; nothing here looks at a held-out split: no evaluation during training
(``--eval-every 0``) and no final evaluation. Reported per variant: training success (area =
mean over all iterations, final = last 5 iterations, iterations until the 5-iteration moving
average reaches 20%), the early zero-advantage ratio, the repaired share and kappa, and the
paired difference against plain ``mvpo`` on the same seeds (bootstrap 95% CI over seeds). The
study's GiGPO and MVPO values on the same seeds (``benchmarks/results/learning.json``) are shown
for reference, and the ``mvpo`` rerun here is checked against the study's (same seed, same
trajectories: the inline evaluation of the study runs on its own random generator).

Run from the repository root::

    python benchmarks/ablations.py                 # table + plot: benchmarks/results/ablations.md
    python benchmarks/ablations.py --analyze-only  # rebuild them from runs/ablations/
    python benchmarks/ablations.py --seeds 3 4     # add seeds to a finished sweep

Resumable like the study: finished runs are skipped, interrupted ones resume from their
checkpoint. Runs share the study's embedding cache (``runs/learning-study/embeddings.npz``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("learning", ROOT / "benchmarks" / "learning.py")
learning = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("learning", learning)
_spec.loader.exec_module(learning)


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
    "mvpo-scope-batch": (_kw(scope="batch"), "regions over the whole batch, not per group"),
    "mvpo-singletons": (_kw(repair_singletons=True), "repair singleton step groups as well"),
    "mvpo-amp-off": (_kw(eta=0.0), "milestone weights fixed uniform (AMP off, eta 0)"),
    "mvpo-text-rules": (
        ["--abstraction", "alfworld-text"],
        "milestone set and signatures read from the observation text (the paper's string rules)",
    ),
}
DEFAULT_VARIANTS = tuple(VARIANTS)
for _name, (_flags, _) in VARIANTS.items():
    learning.ARMS[_name] = [*learning.ARMS["mvpo"], *_flags]


def sweep_args(args: argparse.Namespace) -> argparse.Namespace:
    """The learning study's arguments for this sweep (study settings, train split only)."""
    return argparse.Namespace(
        arms=["mvpo", *args.variants], seeds=args.seeds, iterations=args.iterations,
        num_groups=8, group_size=8, lr=2e-3, eval_every=0, threshold=0.2, jobs=args.jobs,
        ray=args.ray, base=args.base, embedding_cache=args.embedding_cache, fresh=False,
        eval=False, study=True, extra=[],
    )  # fmt: skip


def _late_mean(rows: list[dict], key: str) -> float:
    xs = [r[key] for r in rows[-learning.SMOOTH :] if key in r]
    return float(np.mean(xs)) if xs else float("nan")


def credit_alignment(run: Path) -> dict[str, float]:
    """Where MVPO's advantage mass goes and whether it points at success, from the run's batch
    records (docs/learning_study.md, "Ablations"; docs/inspect.md for the records).

    Each record is recomputed with the trained estimator in its recorded pre-call state (the
    record's own check makes that bit-exact), split into GiGPO's part and the repair:

    * ``repair_share``: share of the total advantage mass ``sum |A|`` on repaired rows;
    * ``alignment_repair``: on repaired rows of *mixed* groups (a success and a failure, so the
      outcome is known), ``sum A * y / sum |A|`` with ``y = +1`` on successful and ``-1`` on
      failed trajectories: +1 = every repaired push points towards success, 0 = unrelated;
    * ``alignment_gigpo``: the same for the rest of the advantage (GiGPO's own credit) on the
      same groups.

    Means over the run's iterations (NaN where no iteration has such rows).
    """
    from mvpo_train.credit.gigpo import gigpo_parts
    from mvpo_train.credit.mvpo import potential_terms, scale_by_std
    from mvpo_train.records import find_records, read_batch_record

    out: dict[str, list[float]] = {"repair_share": [], "alignment_repair": [],
                                   "alignment_gigpo": []}  # fmt: skip
    for _, path in sorted(find_records(run).items()):
        rec = read_batch_record(path)
        if rec.estimator_name != "mvpo":
            continue
        est = rec.make_estimator()
        cfg, sb = est.config, rec.batch.canonical()
        parts = gigpo_parts(sb, cfg)
        pot = potential_terms(sb, cfg, est.amp)
        routed = parts.zero_credit | ((parts.size < 2) if cfg.repair_singletons else False)
        a_phi, _ = scale_by_std(pot.d, routed, cfg.eps)
        adv, _ = est.compute(sb)
        if rec.advantages is not None and not np.array_equal(adv, rec.advantages[rec.batch.order]):
            raise RuntimeError(f"{path}: the recomputed advantages differ from the recorded ones")
        repair = np.where(routed, cfg.omega * est.kappa * a_phi, 0.0)
        rest = adv - repair
        total = np.abs(adv).sum()
        if total > 0:
            out["repair_share"].append(float(np.abs(repair).sum() / total))
        succ_by_group = np.bincount(sb.group_index, weights=sb.success.astype(float))
        rows_by_group = np.bincount(sb.group_index)
        frac = succ_by_group[sb.group_index] / rows_by_group[sb.group_index]
        mixed = (frac > 0) & (frac < 1)
        y = np.where(sb.success, 1.0, -1.0)
        for key, a in (("alignment_repair", repair), ("alignment_gigpo", rest)):
            sel = mixed & (a != 0)
            if sel.any():
                out[key].append(float((a[sel] * y[sel]).sum() / np.abs(a[sel]).sum()))
    return {k: float(np.mean(v)) if v else float("nan") for k, v in out.items()}


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


def analyse(args: argparse.Namespace) -> dict:
    sa = sweep_args(args)
    base = Path(args.base)
    runs = learning.load_runs(base, sa.arms, sa.seeds, sa.iterations)
    pairs = [(v, "mvpo") for v in args.variants]
    table = learning.summarize(runs, base, sa.threshold, sa.iterations, pairs=pairs)
    for arm, row in table["arms"].items():
        per = runs[arm]
        row["kappa_late"] = float(np.mean([_late_mean(per[s], "adv/kappa") for s in per]))
        row["repaired_late"] = float(
            np.mean([_late_mean(per[s], "adv/repaired_ratio") for s in per])
        )
        aligned = [credit_alignment(learning.run_dir(base, arm, s)) for s in per]
        for key in ("repair_share", "alignment_repair", "alignment_gigpo"):
            row[key] = float(np.nanmean([a[key] for a in aligned]))
    ref = reference(sa.seeds)
    table["reference"] = {}
    for arm, per_seed in ref.items():
        common = [s for s in per_seed if s in runs.get("mvpo", {})]
        table["reference"][arm] = {
            "seeds": sorted(per_seed),
            "auc": learning.bootstrap_ci([v["auc"] for v in per_seed.values()]),
            "final": learning.bootstrap_ci([v["final"] for v in per_seed.values()]),
            "reached": sum(v["reach"] is not None for v in per_seed.values()),
            "paired_vs_mvpo_rerun": (
                learning.bootstrap_ci(
                    [
                        per_seed[s]["auc"] - table["arms"]["mvpo"]["per_seed"][str(s)]["auc"]
                        for s in common
                    ]
                )
                if common
                else None
            ),
        }
    if "mvpo" in ref and "mvpo" in table["arms"]:
        mine = table["arms"]["mvpo"]["per_seed"]
        diffs = [
            abs(ref["mvpo"][s]["auc"] - mine[str(s)]["auc"]) for s in ref["mvpo"] if str(s) in mine
        ]
        table["mvpo_rerun_max_abs_auc_diff"] = max(diffs) if diffs else None
    return table


def plot(table: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    for arm, row in table["arms"].items():
        y = np.array(row["curve"])
        lw, ls = (2.5, "-") if arm == "mvpo" else (1.3, "--" if "kappa" in arm else "-")
        ax.plot(np.arange(1, len(y) + 1), y, lw=lw, ls=ls, label=f"{arm} (n={len(row['seeds'])})")
    ax.axhline(0.2, color="grey", lw=0.8, ls=":")
    ax.set(
        title="MVPO ablations, train split (5-iteration moving average of batch success)",
        xlabel="iteration",
        ylabel="batch success rate",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def write_markdown(table: dict, args: argparse.Namespace, out: Path, png: Path) -> None:
    fmt = learning._fmt
    it = args.iterations
    cmd = "python benchmarks/ablations.py " + " ".join(shlex.quote(a) for a in args.argv)
    lines = [
        "# MVPO ablations on the train split",
        "",
        f"Command: `{cmd.strip()}` (table and plot only: add `--analyze-only`).",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, {args.jobs} runs at a time, "
        f"1 torch thread each; {time.strftime('%Y-%m-%d')}.",
        "",
        "Settings: the learning study's `mvpo` arm (docs/learning_study.md: encoder policy "
        "warm-started on the train walkthroughs, bundled `alfworld` preset, all train tasks, "
        f"50-step episodes, 8 tasks x 8 rollouts, {it} iterations, lr 0.002, 2 PPO epochs), seeds "
        f"{list(args.seeds)}, one option changed per variant; train split only (no evaluation "
        "during or after training).",
        "",
        f"![ablation curves]({png.name})",
        "",
        "Means over seeds with percentile-bootstrap 95% CIs over seeds. Area = mean batch success "
        f"over all {it} iterations; final = last 5 iterations; kappa and repaired share = mean "
        "over the last 5 iterations; paired = per-seed difference against `mvpo`.",
        "",
        "| variant | what changes | seeds | area | final | reached 20% | zero-adv. first 5 it. "
        "| kappa, late | repaired share, late | paired vs mvpo: area | paired: final |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, r in table["arms"].items():
        what = "baseline (defaults)" if arm == "mvpo" else VARIANTS[arm][1]
        pair = table["pairs"].get(f"{arm} - mvpo", {})
        lines.append(
            f"| {arm} | {what} | {len(r['seeds'])} | {fmt(r['auc'])} | {fmt(r['final'])} | "
            f"{r['reached']}/{len(r['seeds'])} | {fmt(r['zero_adv_early'])} | "
            f"{r['kappa_late']:.2f} | {r['repaired_late']:.2f} | {fmt(pair.get('auc'))} | "
            f"{fmt(pair.get('final'))} |"
        )
    ref = table.get("reference", {})
    if ref:
        lines += [
            "",
            "Reference, the committed study (`benchmarks/results/learning.json`, same seeds):",
            "",
            "| arm | seeds | area | final | reached 20% | paired vs the mvpo rerun: area |",
            "|---|---|---|---|---|---|",
        ]
        for arm, r in ref.items():
            lines.append(
                f"| study {arm} | {len(r['seeds'])} | {fmt(r['auc'])} | {fmt(r['final'])} | "
                f"{r['reached']}/{len(r['seeds'])} | {fmt(r['paired_vs_mvpo_rerun'])} |"
            )
        d = table.get("mvpo_rerun_max_abs_auc_diff")
        if d is not None:
            lines += [
                "",
                f"The `mvpo` rerun against the study's `mvpo` on the same seeds: largest per-seed "
                f"area difference {d:.2e}"
                + (" (identical trajectories)." if d < 1e-9 else " (not identical: see the logs)."),
            ]
    missing = [
        a
        for a in ["mvpo", *args.variants]
        if len(table["arms"].get(a, {}).get("seeds", [])) < len(args.seeds)
    ]
    if missing:
        lines += ["", f"Partial: fewer than {len(args.seeds)} finished seeds for {missing}; "
                  "rerun the command to continue."]  # fmt: skip
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
    p.add_argument("--analyze-only", action="store_true", help="only rebuild the table and plot")
    p.add_argument("--out", default=str(learning.RESULTS / "ablations.md"))
    args = p.parse_args(argv)
    args.argv = [a for a in argv if a != "--analyze-only"]
    if not args.analyze_only:
        sa = sweep_args(args)
        learning.warm_start_and_eval(sa, Path(args.base))  # the cached warm start
        Path(args.embedding_cache).parent.mkdir(parents=True, exist_ok=True)
        learning.run_all(sa, Path(args.base))
    table = analyse(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    png = out.with_suffix(".png")
    plot(table, png)
    write_markdown(table, args, out, png)
    out.with_suffix(".json").write_text(json.dumps(table, indent=1) + "\n")
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
