"""The learning-curve table of a study (docs/learning_study.md, "Results"): per-seed values of
each run from its ``metrics.jsonl`` rows and held-out evaluation files, per-arm bootstrap
intervals over seeds, paired differences, and the figure. The study names its held-out
``splits`` (the first is the headline one) and whether its evaluations hold a ``score``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.stats import SMOOTH, bootstrap_ci, censored, curve_band, first_reach, moving_average
from mvpo_train.study.figures import band_line, pyplot, save
from mvpo_train.study.runs import read_eval, read_eval_types, run_dir
from mvpo_train.study.summary import intervals, pair_rows, paired
from mvpo_train.study.tables import fmt_ci, n_seeds

__all__ = [
    "heldout_keys",
    "inline_eval_lines",
    "more_thresholds_lines",
    "per_seed_values",
    "plot",
    "summarize",
    "threshold_key",
]


def heldout_keys(splits: Sequence[str], scores: bool = False) -> list[str]:
    """The per-seed held-out values: success per split, then the score per split
    (``<split>_score``) where the evaluations report one."""
    return list(splits) + ([f"{s}_score" for s in splits] if scores else [])


def threshold_key(threshold: float) -> str:
    """The key of a further threshold in a table's ``reach_at`` (``"0.25"``)."""
    return f"{threshold:g}"


def per_seed_values(
    rows: list[dict],
    path: Path,
    threshold: float,
    splits: Sequence[str],
    scores: bool = False,
    more_thresholds: Sequence[float] = (),
) -> dict[str, Any]:
    """One run's values: training success (area, first and final :data:`SMOOTH` iterations,
    iterations to ``threshold`` and to each of ``more_thresholds``), the early zero-advantage
    ratio, the final held-out evaluations (``eval-<split>.json``: success, and WebShop's score
    where ``scores``), the first split's success per task type, the inline evaluations and the
    run's minutes."""
    succ = np.array([r["success"] for r in rows])
    za = np.array([r.get("adv/zero_adv_ratio", np.nan) for r in rows])
    held = [r["eval/success"] for r in rows if "eval/success" in r]
    first = splits[0]
    out: dict = {
        "auc": float(succ.mean()),
        "first": float(succ[:SMOOTH].mean()),
        "final": float(succ[-SMOOTH:].mean()),
        "reach": first_reach(succ, threshold),
        "reach_at": {threshold_key(t): first_reach(succ, t) for t in more_thresholds},
        "zero_adv_early": float(np.nanmean(za[:SMOOTH])),
    }
    for key in heldout_keys(splits, scores):
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
    runs: dict[str, dict[int, list[dict]]],
    base: Path,
    threshold: float,
    iterations: int,
    pairs: Sequence[tuple[str, str]],
    splits: Sequence[str],
    scores: bool = False,
    more_thresholds: Sequence[float] = (),
) -> dict:
    """Per arm (``runs``: arm -> seed -> metrics rows, the runs in ``base/<arm>-seed<k>/``):
    bootstrap CIs over seeds of every per-seed value (:func:`per_seed_values`); per pair: of
    the per-seed differences; the warm start's own evaluations (``base/warm-start/``).
    Iterations to a threshold count a run that never reaches it as ``iterations + 1``
    (``threshold`` and each of ``more_thresholds``, docs/learning_study.md)."""
    first = splits[0]
    table: dict = {"arms": {}, "pairs": {}, "warm_start": {}}
    for key in heldout_keys(splits, scores):
        split = key.removesuffix("_score")
        value = read_eval(base / "warm-start", split, "score" if key != split else "success")
        if value is not None:
            table["warm_start"][key] = value
    for arm, per_seed in runs.items():
        if not per_seed:
            continue
        seeds = sorted(per_seed)
        vals = {
            s: per_seed_values(
                per_seed[s], run_dir(base, arm, s), threshold, splits, scores, more_thresholds
            )
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
        keys = ("auc", "first", "final", "zero_adv_early", *heldout_keys(splits, scores), "minutes")
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
        if (both := pair_rows(table["arms"], a, b)) is None:
            continue
        common, pa, pb = both
        keys = ("auc", "final", first, "reach", *([f"{first}_score"] if scores else []))
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


def plot(table: dict, out: Path, threshold: float, first: str) -> None:
    """The figure of :func:`summarize`'s table: training success with its band, the held-out
    ``first`` split's success during training (iteration 0: the warm start) and the
    zero-advantage ratio, per arm."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    for arm, row in table["arms"].items():
        x, color = band_line(axes[0], arm, row)
        its = [0, *row["inline_eval_iterations"]]
        held = [table["warm_start"].get(first, np.nan), *row["inline_eval"]]
        axes[1].plot(its, held, marker="o", label=arm, color=color)
        axes[2].plot(x, row["zero_adv_curve"], label=arm, color=color)
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
    save(fig, out)


def more_thresholds_lines(
    table: dict, more_thresholds: Sequence[float], iterations: int
) -> list[str]:
    """The markdown table of iterations to each of ``more_thresholds`` (per arm, then per
    pair) of a :func:`summarize` table; nothing without one."""
    more = [threshold_key(t) for t in more_thresholds]
    if not more:
        return []
    it = iterations
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
            cells.append(f"{fmt_ci(at['ci'], 1)} ({per}; {at['reached']}/{n_seeds(r)} reached)")
        lines.append(f"| {arm} | {n_seeds(r)} | " + " | ".join(cells) + " |")
    for name, p in table["pairs"].items():
        cells = [fmt_ci(p["reach_at"][t], 1) for t in more]
        lines.append(f"| {name} (paired) | {n_seeds(p)} | " + " | ".join(cells) + " |")
    return lines


def inline_eval_lines(table: dict, split: str, eval_every: int, eval_episodes: int) -> list[str]:
    """The markdown table of held-out success during training (every ``eval_every``
    iterations, ``eval_episodes`` per task) per arm and paired per iteration: the shape of the
    MVPO paper's comparison at iterations 20, 30, 50, 60; nothing without such evaluations."""
    its = sorted({int(k) for r in table["arms"].values() for k in r.get("inline_eval_ci", {})})
    if not its:
        return []
    lines = [
        "",
        f"Held-out `{split}` success during training (every {eval_every} iterations, "
        f"every task x {eval_episodes} sampled episode(s), the run's own evaluation "
        "stream; less precise than the final evaluation above), then paired per iteration:",
        "",
        "| arm | seeds | " + " | ".join(f"it. {i}" for i in its) + " |",
        "|---|---|" + "---|" * len(its),
    ]
    for arm, r in table["arms"].items():
        ci = r.get("inline_eval_ci", {})
        lines.append(f"| {arm} | {n_seeds(r)} | "
                     + " | ".join(fmt_ci(ci.get(str(i))) for i in its) + " |")  # fmt: skip
    for name, p in table["pairs"].items():
        ci = p.get("inline_eval", {})
        lines.append(f"| {name} (paired) | {n_seeds(p)} | "
                     + " | ".join(fmt_ci(ci.get(str(i))) for i in its) + " |")  # fmt: skip
    return lines
