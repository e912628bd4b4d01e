"""The learning study's results: per-seed values, per-arm intervals and paired differences over
seeds (:mod:`mvpo_train.stats`), the markdown table and the figure."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from learning_env import (
    ALFWORLD,
    StudyEnv,
    arm_flags,
    count_tasks,
    final_evals,
    heldout_keys,
    study_env,
    threshold_key,
)

from mvpo_train.stats import SMOOTH, bootstrap_ci, censored, curve_band, first_reach, moving_average
from mvpo_train.study.runs import (
    read_eval,
    read_eval_types,
    run_dir,
)
from mvpo_train.study.summary import intervals, paired
from mvpo_train.study.tables import command_line as _command_line
from mvpo_train.study.tables import fmt_ci as _fmt
from mvpo_train.study.tables import machine_line, n_seeds, reach_cell


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


def per_seed_values(
    rows: list[dict],
    path: Path,
    threshold: float,
    env: StudyEnv = ALFWORLD,
    more_thresholds: tuple[float, ...] = (),
) -> dict[str, float | None]:
    succ = np.array([r["success"] for r in rows])
    za = np.array([r.get("adv/zero_adv_ratio", np.nan) for r in rows])
    held = [r["eval/success"] for r in rows if "eval/success" in r]
    first = env.final_evals[0][0]
    out: dict = {
        "auc": float(succ.mean()),
        "first": float(succ[:SMOOTH].mean()),
        "final": float(succ[-SMOOTH:].mean()),
        "reach": first_reach(succ, threshold),
        "reach_at": {threshold_key(t): first_reach(succ, t) for t in more_thresholds},
        "zero_adv_early": float(np.nanmean(za[:SMOOTH])),
    }
    for key in heldout_keys(env):
        split = key.removesuffix("_score")
        out[key] = read_eval(path, split, "score" if key != split else "success")
    out[f"{first}_types"] = read_eval_types(path, first)
    out["last_inline_eval"] = held[-1] if held else None
    out["inline_eval"] = {
        str(r["iteration"]): r["eval/success"] for r in rows if "eval/success" in r
    }
    out["minutes"] = sum(r.get("time/total", 0.0) + r.get("time/eval", 0.0) for r in rows) / 60
    return out


def summarize(
    runs,
    base: Path,
    threshold: float,
    iterations: int,
    pairs=None,
    env: StudyEnv = ALFWORLD,
    more_thresholds: tuple[float, ...] = (),
) -> dict:
    """Per arm: bootstrap CIs over seeds of every per-seed value; per pair: of the per-seed
    differences. Iterations to a threshold count a run that never reaches it as
    ``iterations + 1`` (``threshold`` and each of ``more_thresholds``, docs/learning_study.md)."""
    pairs = env.pairs if pairs is None else pairs
    first = env.final_evals[0][0]
    table: dict = {"arms": {}, "pairs": {}, "warm_start": {}}
    for key in heldout_keys(env):
        split = key.removesuffix("_score")
        value = read_eval(base / "warm-start", split, "score" if key != split else "success")
        if value is not None:
            table["warm_start"][key] = value
    for arm, per_seed in runs.items():
        if not per_seed:
            continue
        seeds = sorted(per_seed)
        vals = {
            s: per_seed_values(per_seed[s], run_dir(base, arm, s), threshold, env, more_thresholds)
            for s in seeds
        }
        succ = np.array([[r["success"] for r in per_seed[s]] for s in seeds])
        mean, lo, hi = curve_band(moving_average(succ))
        inline = {s: vals[s]["inline_eval"] for s in seeds}  # iteration (str) -> success
        ev_iters = sorted({int(k) for s in seeds for k in inline[s]})
        ev = np.array([[inline[s].get(str(it), np.nan) for it in ev_iters] for s in seeds])
        row = {
            "seeds": seeds,
            "per_seed": {str(s): vals[s] for s in seeds},
            "curve": mean.tolist(), "curve_lo": lo.tolist(), "curve_hi": hi.tolist(),
            "zero_adv_curve": np.nanmean(
                [[r.get("adv/zero_adv_ratio", np.nan) for r in per_seed[s]] for s in seeds], 0
            ).tolist(),
            "inline_eval_iterations": ev_iters,
            "inline_eval": np.nanmean(ev, 0).tolist() if ev.size else [],
            "inline_eval_ci": {
                str(it): bootstrap_ci([inline[s][str(it)] for s in seeds if str(it) in inline[s]])
                for it in ev_iters
            },
            "reached": sum(vals[s]["reach"] is not None for s in seeds),
        }  # fmt: skip
        keys = ("auc", "first", "final", "zero_adv_early", *heldout_keys(env), "minutes")
        row.update(intervals((vals[s] for s in seeds), keys))
        # censored at the run length + 1 when not reached (reported as such)
        reach = [censored(vals[s]["reach"], iterations) for s in seeds]
        row["reach"] = bootstrap_ci(reach)
        row["reach_median"] = float(np.median(reach))
        row["reach_at"] = {}
        for t in map(threshold_key, more_thresholds):
            at = [vals[s]["reach_at"][t] for s in seeds]
            row["reach_at"][t] = {
                "ci": bootstrap_ci([censored(r, iterations) for r in at]),
                "reached": sum(r is not None for r in at),
            }
        tk = f"{first}_types"
        types = sorted({t for s in seeds for t in vals[s][tk]})
        row[tk] = {
            t: bootstrap_ci([vals[s][tk][t] for s in seeds if t in vals[s][tk]]) for t in types
        }
        table["arms"][arm] = row
    for a, b in pairs:
        if a not in table["arms"] or b not in table["arms"]:
            continue
        common = [s for s in table["arms"][a]["seeds"] if s in table["arms"][b]["seeds"]]
        pa = [table["arms"][a]["per_seed"][str(s)] for s in common]
        pb = [table["arms"][b]["per_seed"][str(s)] for s in common]
        keys = ("auc", "final", first, "reach", *([f"{first}_score"] if env.scores else []))
        entry = {"seeds": common, **paired(pa, pb, keys, iterations)}
        # held-out during training, paired per evaluated iteration
        its = [str(i) for i in sorted({int(k) for r in pa for k in r["inline_eval"]})]
        inline = paired([r["inline_eval"] for r in pa], [r["inline_eval"] for r in pb], its, 0, ())
        entry["inline_eval"] = {k: ci for k, ci in inline.items() if ci is not None}
        more = [threshold_key(t) for t in more_thresholds]
        at_a, at_b = [r["reach_at"] for r in pa], [r["reach_at"] for r in pb]
        entry["reach_at"] = paired(at_a, at_b, more, iterations, reach=more)
        table["pairs"][f"{a} - {b}"] = entry
    return table


def plot(table: dict, out: Path, threshold: float, env: StudyEnv = ALFWORLD) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = env.final_evals[0][0]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    for arm, row in table["arms"].items():
        y, lo, hi = (np.array(row[k]) for k in ("curve", "curve_lo", "curve_hi"))
        x = np.arange(1, len(y) + 1)
        (line,) = axes[0].plot(x, y, label=f"{arm} (n={n_seeds(row)})")
        axes[0].fill_between(x, lo, hi, alpha=0.15, color=line.get_color())
        its = [0, *row["inline_eval_iterations"]]
        held = [table["warm_start"].get(first, np.nan), *row["inline_eval"]]
        axes[1].plot(its, held, marker="o", label=arm, color=line.get_color())
        axes[2].plot(x, row["zero_adv_curve"], label=arm, color=line.get_color())
    axes[0].axhline(threshold, color="grey", lw=0.8, ls="--")
    axes[0].set(title=f"training success ({SMOOTH}-it. moving average, 95% bootstrap band)",
                xlabel="iteration", ylabel="batch success rate")  # fmt: skip
    axes[1].set(title=f"held-out {first} success during training (sampled)",
                xlabel="iteration (0 = warm start)", ylabel="success rate")  # fmt: skip
    axes[2].set(title="zero-advantage ratio (steps with exactly 0 advantage)",
                xlabel="iteration", ylabel="ratio")  # fmt: skip
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def command_line(args: argparse.Namespace) -> str:
    return _command_line("benchmarks/learning.py", args.argv)


def env_sentence(args: argparse.Namespace) -> str:
    """The markdown's words for the env of the runs (after the warm start)."""
    env = study_env(args)
    if env is ALFWORLD:
        if args.env_kwargs.strip() in ("", "{}"):
            return "`mvpo/ALFWorld-v0` defaults (bundled `alfworld` preset, all train tasks)"
        return f"`mvpo/ALFWorld-v0` with `--env-kwargs '{args.env_kwargs}'`"
    return f"`{env.env_id}` with `--env-kwargs '{args.env_kwargs}'`, all train tasks, {env.setting}"


def more_thresholds_lines(table: dict, args: argparse.Namespace) -> list[str]:
    """The table of iterations to each of ``--more-thresholds`` (per arm, then per pair)."""
    more = [threshold_key(t) for t in getattr(args, "more_thresholds", [])]
    if not more:
        return []
    it = args.iterations
    lines = [
        "",
        "Iterations to further thresholds of training success (`--more-thresholds`; the same "
        f"rule, a run that never reaches one counts as {it + 1}; per seed in brackets):",
        "",
        "| arm | seeds | " + " | ".join(f"to {float(t):.0%}" for t in more) + " |",
        "|---|---|" + "---|" * len(more),
    ]
    for arm, r in table["arms"].items():
        cells = []
        for t in more:
            per = ", ".join(
                str(v["reach_at"][t]) if v["reach_at"][t] is not None else f">{it}"
                for v in r["per_seed"].values()
            )
            at = r["reach_at"][t]
            cells.append(f"{_fmt(at['ci'], 1)} ({per}; {at['reached']}/{n_seeds(r)} reached)")
        lines.append(f"| {arm} | {n_seeds(r)} | " + " | ".join(cells) + " |")
    for name, p in table["pairs"].items():
        cells = [_fmt(p["reach_at"][t], 1) for t in more]
        lines.append(f"| {name} (paired) | {n_seeds(p)} | " + " | ".join(cells) + " |")
    return lines


def inline_eval_lines(table: dict, split: str, args: argparse.Namespace) -> list[str]:
    """Held-out success during training (every ``--eval-every`` iterations) per arm and paired
    per iteration: the shape of the MVPO paper's comparison at iterations 20, 30, 50, 60."""
    its = sorted({int(k) for r in table["arms"].values() for k in r.get("inline_eval_ci", {})})
    if not its:
        return []
    lines = [
        "",
        f"Held-out `{split}` success during training (every {args.eval_every} iterations, "
        f"every task x {args.eval_episodes} sampled episode(s), the run's own evaluation "
        "stream; less precise than the final evaluation above), then paired per iteration:",
        "",
        "| arm | seeds | " + " | ".join(f"it. {i}" for i in its) + " |",
        "|---|---|" + "---|" * len(its),
    ]
    for arm, r in table["arms"].items():
        ci = r.get("inline_eval_ci", {})
        lines.append(f"| {arm} | {n_seeds(r)} | "
                     + " | ".join(_fmt(ci.get(str(i))) for i in its) + " |")  # fmt: skip
    for name, p in table["pairs"].items():
        ci = p.get("inline_eval", {})
        lines.append(f"| {name} (paired) | {n_seeds(p)} | "
                     + " | ".join(_fmt(ci.get(str(i))) for i in its) + " |")  # fmt: skip
    return lines


def write_markdown(table: dict, args: argparse.Namespace, out: Path, png: Path) -> None:
    it = args.iterations
    env = study_env(args)
    first = env.final_evals[0][0]
    held_cols = [s for s, _ in env.final_evals] + (
        [f"{s} score" for s, _ in env.final_evals] if env.scores else []
    )
    lines = [
        f"# {env.title}",
        "",
        f"Command: `{command_line(args).strip()}` (table and plots only: add `--analyze-only`).",
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
            + env_sentence(args)
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
        "Means over seeds with percentile-bootstrap 95% CIs over seeds (10,000 resamples, seed 0).",
        f"Training success = the rollout batch's (sampled actions, random task draw); area = mean "
        f"over all {it} iterations; final = last {SMOOTH} iterations. Iterations to "
        f"{args.threshold:.0%}: first iteration whose {SMOOTH}-iteration moving average reaches it "
        f"(a run that never does counts as {it + 1}). Held-out: the final checkpoint, sampled, "
        "seed 0, every task of the split x "
        + " / ".join(f"{e} episodes ({s})" for s, e in final_evals(args))
        + "."
        + (
            " Score: WebShop's score of the purchase (0 without one), mean over the held-out "
            "episodes; success = a score of 1.0."
            if env.scores
            else ""
        ),
        "",
    ]
    ws = table["warm_start"]
    if ws:
        lines += ["Warm start (iteration 0, same for every arm): " + ", ".join(
            f"{s} {v:.3f}" for s, v in ws.items()) + ".", ""]  # fmt: skip
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
    lines += more_thresholds_lines(table, args)
    lines += inline_eval_lines(table, first, args)
    types = sorted({t for r in table["arms"].values() for t in r.get(f"{first}_types", {})})
    if types and env is ALFWORLD:  # WebShop's goals have no task types
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
    if env is not ALFWORLD and cand.is_file():
        lines += ["", "Warm-start candidates (train split only; `--warm-candidates`, "
                  "docs/learning_study.md, \"WebShop study\"):", "",
                  candidates_markdown(json.loads(cand.read_text()))]  # fmt: skip
    missing = [
        a for a in args.arms if len(table["arms"].get(a, {}).get("seeds", [])) < len(args.seeds)
    ]
    if missing:
        lines += ["", f"Partial: fewer than {len(args.seeds)} finished seeds for {missing}; rerun "
                  "the command to continue the study."]  # fmt: skip
    out.write_text("\n".join(lines) + "\n")


def study_settings(args: argparse.Namespace) -> dict:
    """What ``learning.json`` records of the study's regime (its settings, for the reader)."""
    env = study_env(args)
    held = (
        {s: count_tasks(args.env_kwargs, s, env.env_id) for s, _ in final_evals(args)}
        if args.study
        else {}
    )
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
        "final_episodes": {s: e for s, e in final_evals(args)},
        "eval_every": args.eval_every,
        "eval_episodes": args.eval_episodes,
        "thresholds": [args.threshold, *getattr(args, "more_thresholds", [])],
        **env.extra_settings,
    }
