"""The MVPO paper's training diagnostics, measured and drawn: GRPO vs GiGPO vs MVPO on ALFWorld and WebShop.

From the runs on disk (each run folder: ``metrics.jsonl``, one JSON line per iteration, and
``config.yaml``), per environment:

* zero-advantage ratio (rows whose advantage is exactly 0) and zero-credit ratio (rows of
  step groups whose returns do not vary) over the first iterations, per estimator: mean over
  seeds and the per-seed spread (docs/estimators.md §2/§3.7);
* MVPO's kappa and EMA success over training;
* MVPO's mean prefix potential Phi of successful vs failed trajectories over training, and the
  check whether the sign of the gap ever flips (circular by construction, docs/estimators.md
  §3.7: kept for the MVPO paper's Figure 3);
* MVPO's non-circular statistic ``adv/phi_split_spearman_failed`` over training (first -> last,
  mean, share above 0, the rows ``adv/phi_split_rows`` it is computed on; docs/estimators.md
  §3.7): on failed trajectories, the Spearman correlation between a region's value estimated
  from the *other* half of the rollout group and the milestones the row's own trajectory
  still fires;
* the step-level alignment of MVPO's repair with the ALFWorld progress oracle (docs/
  alignment.md), read from ``--alignment-json`` files of ``python benchmarks/alignment.py
  --run-dir RUN --relabel --json OUT`` (mean AUC over iterations per variant, min..max, the
  command); a run without a file is "not measured yet";
* the grouping ratio over training: GiGPO's and MVPO's step groups (rows whose anchor-state
  group holds at least 2 rows, ``1 - adv/singleton_ratio``) and MVPO's regions
  (``adv/grouping_ratio``);
* MVPO's AMP weights per milestone over training;
* the share of each phase of an iteration (rollout / reference log-probs / advantage / update /
  eval; docs/training.md, "One iteration") per estimator: mean seconds and % of the iteration.

Written to ``benchmarks/results/diagnostics.md`` (+ ``.json``) with one figure per run set,
``diagnostics_<set>.png``. A run set that is missing is written as "not run yet"; one with
fewer seeds or iterations than asked is marked partial; config fields that differ between the
runs of a set are listed ("not like for like").

Run sets, the headline first (the studies in the MVPO paper's regime, docs/learning_study.md; their
arms, seeds 0-4 and 60 iterations as ``benchmarks/learning.py`` plans them, so a set in
progress is marked partial):

* ``alfworld-full`` (``--alfworld-full-base``, default ``runs/full/learning``): the ALFWorld
  full-split study, arms ``grpo``, ``gigpo``, ``mvpo``, 16 x 8 x 50. Its committed compact
  copies (``benchmarks/study_archive.py export``) redraw it from the repository alone:
  ``--alfworld-full-base benchmarks/results/learning_full_runs``.
* ``webshop-study`` (``--webshop-study-base``, default ``runs/webshop/learning``): the WebShop
  study (the MVPO paper's Table 2), arms ``gigpo``, ``mvpo``, ``mvpo-no-anchor``,
  ``mvpo-no-kappa-decay``; its tables show the MVPO paper's early zero-advantage ratios beside ours.

The earlier sets (committed history; a history set whose runs are not on disk is carried over,
marked, from ``--previous-json``, default the committed ``diagnostics.json``):

* ``alfworld``: the learning sweep of ``python benchmarks/learning.py`` (its defaults), run
  folders ``runs/learning-study/<arm>-seed<k>/`` with arms ``grpo``, ``gigpo``, ``mvpo``,
  ``mvpo-learned``; this script never trains them. While the study is incomplete, the
  sweep's smoke runs (``--quick``, ``runs/learning-quick/``) are shown too, as the set
  ``alfworld-quick`` marked as a preview.
* ``webshop`` and ``webshop-score``: GRPO, GiGPO and MVPO on WebShop, 5 iterations of 8 x 8
  from a fresh encoder head, with the MVPO paper's success reward and with WebShop's score
  (``runs/diagnostics-webshop/[score/]<estimator>-seed<k>/``), made by this script's former
  ``--run-webshop`` (git history; the env it registered is ``mvpo/WebShop-v0`` with
  ``search_query="instruction"`` and, for the first set, ``reward="success"`` today). This
  script only analyses them.

Commands (from the repository root)::

    python benchmarks/learning.py                      # the ALFWorld sweep (the lead's)
    python benchmarks/diagnostics.py --analyze-only    # rebuild md + figures from the runs
    python benchmarks/diagnostics.py --analyze-only \
        --alfworld-full-base benchmarks/results/learning_full_runs \
        --alignment-json OUT                           # the full study from the repository
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.metrics import read_metrics
from mvpo_train.study.tables import n_seeds

#: the repository root: a study runs from there (its paths are relative to it)
ROOT = Path.cwd()
RESULTS = ROOT / "benchmarks" / "results"
ALFWORLD_BASE = ROOT / "runs" / "learning-study"
WEBSHOP_BASE = ROOT / "runs" / "diagnostics-webshop"
ALFWORLD_ARMS = ("grpo", "gigpo", "mvpo", "mvpo-learned")
WEBSHOP_ARMS = ("grpo", "gigpo", "mvpo")
#: the two studies in the MVPO paper's regime (docs/learning_study.md, "The MVPO paper's regime" and
#: "WebShop study"): their run folders, arms, seeds and iterations as ``benchmarks/learning.py``
#: plans them; the headline of the md when found
ALFWORLD_FULL_BASE = ROOT / "runs" / "full" / "learning"
ALFWORLD_FULL_COPIES = RESULTS / "learning_full_runs"  # the committed compact copies
ALFWORLD_FULL_ARMS = ("grpo", "gigpo", "mvpo")
WEBSHOP_STUDY_BASE = ROOT / "runs" / "webshop" / "learning"
WEBSHOP_STUDY_ARMS = ("gigpo", "mvpo", "mvpo-no-anchor", "mvpo-no-kappa-decay")
STUDY_ITERATIONS = 60
#: the sets carried over from the previous json when their runs are not on disk (committed
#: history); the headline sets never are: they are drawn from their runs or "not run yet"
HISTORY_SETS = ("alfworld", "webshop", "webshop-score")
HEADLINE_SETS = ("alfworld-full", "webshop-study")
#: the trainer's non-circular statistic of MVPO's potential (docs/estimators.md §3.7)
PHI_SPLIT = "adv/phi_split_spearman_failed"
PHI_SPLIT_ROWS = "adv/phi_split_rows"
ALIGNMENT_CMD = "python benchmarks/alignment.py --run-dir RUN --relabel --json OUT"
DIAG_WEBSHOP_ID = "mvpo-diag/WebShop-InstructionSearch-v0"  # the history sets' env id
#: derived per-iteration key: share of rows in anchor-state step groups of >= 2 rows
STEP_GROUPING = "derived/step_grouping_ratio"
#: the phases of one iteration (docs/training.md, "One iteration"), metric key -> label
PHASES = {
    "time/rollout": "rollout",
    "time/logp_ref": "ref. log-probs",
    "time/advantage": "advantage",
    "time/update": "update",
    "time/eval": "eval",
}
#: the MVPO paper's numbers (issue text of the MVPO paper's diagnostics) shown next to ours
PAPER_ZERO_ADV_WEBSHOP = {"grpo": ">0.90", "gigpo": "~0.65"}
#: the sets with the MVPO paper's binary WebShop reward: their tables show the paper's numbers
PAPER_ZERO_ADV_SETS = ("webshop", "webshop-study")
NAMES = {"grpo": "GRPO", "gigpo": "GiGPO"}
PAPER_KAPPA = {
    "alfworld": "1 -> ~0.2 (EMA success 0.82)",
    "webshop": "1 -> ~0.4 (EMA success 0.61)",
}


# ====================================================================== loading


@dataclass
class Run:
    """One run folder: its metrics rows and the iterations its config asked for."""

    path: Path
    rows: list[dict[str, Any]]
    planned: int | None  # ``iterations`` of config.yaml, None if unreadable
    config: dict[str, Any] = field(default_factory=dict)  # config.yaml ({} if absent)


@dataclass
class RunSet:
    """The runs of one environment: arm -> seed -> run, and what was asked for."""

    env: str
    base: Path
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    runs: dict[str, dict[int, Run]] = field(default_factory=dict)
    plan: int | None = None  # the study's iterations per run, where a config.yaml lacks them

    def found(self) -> bool:
        return any(self.runs.get(a) for a in self.arms)

    def partial_notes(self) -> list[str]:
        """One line per arm with fewer seeds or iterations than asked (empty if complete)."""
        notes = []
        for arm in self.arms:
            by_seed = self.runs.get(arm, {})
            missing = [s for s in self.seeds if s not in by_seed]
            short = [
                f"seed {s}: {len(r.rows)}/{r.planned}"
                for s, r in sorted(by_seed.items())
                if r.planned is None or len(r.rows) < r.planned
            ]
            if missing or short:
                parts = []
                if missing:
                    parts.append(f"seeds not found {missing}")
                if short:
                    parts.append("iterations done/planned " + ", ".join(short))
                notes.append(f"`{arm}`: " + "; ".join(parts))
        return notes

    def rows(self, arm: str) -> dict[int, list[dict[str, Any]]]:
        return {s: r.rows for s, r in sorted(self.runs.get(arm, {}).items()) if r.rows}


def read_config(path: Path) -> dict[str, Any]:
    import yaml

    f = path / "config.yaml"
    return (yaml.safe_load(f.read_text()) or {}) if f.is_file() else {}


#: config fields shown per run set (and checked to agree across its runs)
SETTINGS = (
    "env_id", "env_kwargs", "split", "tasks", "max_steps", "num_groups", "group_size", "policy",
    "model", "lr", "ppo_epochs", "kl_coef", "estimator_kwargs", "abstraction", "iterations",
)  # fmt: skip


def settings(rs: RunSet) -> tuple[dict[str, Any], list[str]]:
    """The :data:`SETTINGS` of the set's runs: the values all runs share, and one line per
    field whose value differs between runs (a comparison that is not like for like)."""
    configs = [(f"{a}-seed{s}", r.config) for a, by in rs.runs.items() for s, r in by.items()]
    shared: dict[str, Any] = {}
    differ = []
    for key in SETTINGS:
        vals = {json.dumps(c.get(key), sort_keys=True) for _, c in configs}
        if vals == {"null"}:  # no run has the field
            continue
        if len(vals) == 1:
            shared[key] = configs[0][1].get(key)
        elif vals:
            groups: dict[str, list[str]] = {}
            for n, c in configs:
                groups.setdefault(json.dumps(c.get(key), sort_keys=True), []).append(n)
            per = "; ".join(f"{v} in {', '.join(ns)}" for v, ns in groups.items())
            differ.append(f"`{key}` differs between runs: {per}")
    return shared, differ


def derive(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add :data:`STEP_GROUPING` (``1 - adv/singleton_ratio``) where the singleton ratio exists."""
    for r in rows:
        if r.get("adv/singleton_ratio") is not None:
            r[STEP_GROUPING] = 1.0 - float(r["adv/singleton_ratio"])
    return rows


def load_runset(
    env: str, base: Path, arms: Iterable[str], seeds: Iterable[int], plan: int | None = None
) -> RunSet:
    """The runs ``base/<arm>-seed<k>/`` with metrics; ``plan``: the iterations a run is planned
    for when its ``config.yaml`` does not say."""
    rs = RunSet(env=env, base=base, arms=tuple(arms), seeds=tuple(seeds), plan=plan)
    for arm in rs.arms:
        for seed in rs.seeds:
            path = base / f"{arm}-seed{seed}"
            if (path / "metrics.jsonl").is_file():
                rows = derive(read_metrics(path))
                if rows:
                    cfg = read_config(path)
                    it = cfg.get("iterations")
                    planned = int(it) if isinstance(it, int) else plan
                    rs.runs.setdefault(arm, {})[seed] = Run(path, rows, planned, cfg)
    return rs


# ====================================================================== computations


def value(row: dict[str, Any], key: str) -> float:
    """``row[key]`` as a float; absent or null (NaN written as null) -> NaN."""
    v = row.get(key)
    return float("nan") if v is None else float(v)


def series(rows: list[dict[str, Any]], key: str) -> np.ndarray:
    return np.array([value(r, key) for r in rows], dtype=float)


def has_key(by_seed: dict[int, list[dict[str, Any]]], key: str) -> bool:
    return any(r.get(key) is not None for rows in by_seed.values() for r in rows)


def early_per_seed(by_seed: dict[int, list[dict[str, Any]]], key: str, k: int) -> dict[int, float]:
    """Per seed: the mean of ``key`` over its first ``k`` iterations (NaN rows skipped)."""
    out = {}
    for seed, rows in by_seed.items():
        ys = series(rows[:k], key)
        ys = ys[~np.isnan(ys)]
        if len(ys):
            out[seed] = float(ys.mean())
    return out


def curve(by_seed: dict[int, list[dict[str, Any]]], key: str) -> dict[str, np.ndarray]:
    """Per iteration up to the longest run: mean, min and max over seeds that have that
    iteration (a run in progress counts for the iterations it has; NaN ignored)."""
    import warnings

    n = max(len(r) for r in by_seed.values())
    ys = np.full((len(by_seed), n), np.nan)
    for i, rows in enumerate(by_seed.values()):
        ys[i, : len(rows)] = series(rows, key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
        return {
            "x": np.arange(1, n + 1),
            "mean": np.nanmean(ys, 0),
            "lo": np.nanmin(ys, 0),
            "hi": np.nanmax(ys, 0),
        }


def phase_table(by_seed: dict[int, list[dict[str, Any]]]) -> dict[str, tuple[float, float]]:
    """Phase label -> (mean seconds per iteration, share of the iteration), over every
    iteration of every seed. The iteration = ``time/total`` + ``time/eval`` (the trainer's
    total leaves evaluation out); evaluation, run every ``eval_every``-th iteration, is
    averaged over all iterations; ``other`` = the iteration minus the listed phases (logging,
    checkpoints). Phases a run never timed (``time/eval`` without evaluation) are left out."""
    rows = [r for rs in by_seed.values() for r in rs if r.get("time/total") is not None]
    if not rows:
        return {}
    wall = float(np.mean([r["time/total"] + float(r.get("time/eval") or 0.0) for r in rows]))
    out: dict[str, tuple[float, float]] = {}
    timed = 0.0
    for key, label in PHASES.items():
        if any(r.get(key) is not None for r in rows):
            sec = float(np.mean([float(r.get(key) or 0.0) for r in rows]))
            out[label] = (sec, sec / wall if wall > 0 else float("nan"))
            timed += sec
    other = wall - timed
    out["other"] = (other, other / wall if wall > 0 else float("nan"))
    out["total"] = (wall, 1.0)
    return out


def phi_sign_check(by_seed: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """Iterations where both means exist; where success's mean Phi is not above failure's."""
    both = 0
    flips: list[tuple[int, int]] = []
    gaps = []
    for seed, rows in by_seed.items():
        for i, r in enumerate(rows):
            ps, pf = value(r, "adv/phi_success_mean"), value(r, "adv/phi_failure_mean")
            if math.isnan(ps) or math.isnan(pf):
                continue
            both += 1
            gaps.append(ps - pf)
            if ps <= pf:
                flips.append((seed, int(r.get("iteration", i + 1))))
    return {
        "iterations_with_both": both,
        "flips": flips,
        "gap_mean": float(np.mean(gaps)) if gaps else float("nan"),
        "gap_min": float(np.min(gaps)) if gaps else float("nan"),
    }


def phi_split_summary(by_seed: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """MVPO's non-circular statistic :data:`PHI_SPLIT` over training (docs/estimators.md
    §3.7): first / last iteration (mean over seeds that have it, as the other first -> last
    columns), every (seed, iteration) value's mean, min, max and share above 0, per-seed means,
    and the rows it was computed on (:data:`PHI_SPLIT_ROWS`). NaN iterations (fewer than 3
    failed rows with an estimate, or no spread) are counted, not averaged."""
    c = curve(by_seed, PHI_SPLIT)
    vals = np.concatenate([series(rows, PHI_SPLIT) for rows in by_seed.values()])
    finite = vals[~np.isnan(vals)]
    rows = np.concatenate([series(r, PHI_SPLIT_ROWS) for r in by_seed.values()])
    rows = rows[~np.isnan(rows)]
    per_seed = {}
    for seed, rs in by_seed.items():
        ys = series(rs, PHI_SPLIT)
        if (~np.isnan(ys)).any():
            per_seed[seed] = float(np.nanmean(ys))
    nan = float("nan")
    return {
        "first": float(c["mean"][0]),
        "last": float(c["mean"][-1]),
        "values": int(len(finite)),
        "iterations": int(len(vals)),
        "mean": float(finite.mean()) if len(finite) else nan,
        "min": float(finite.min()) if len(finite) else nan,
        "max": float(finite.max()) if len(finite) else nan,
        "positive_share": float((finite > 0).mean()) if len(finite) else nan,
        "per_seed_mean": per_seed,
        "rows_mean": float(rows.mean()) if len(rows) else nan,
        "rows_min": float(rows.min()) if len(rows) else nan,
        "rows_max": float(rows.max()) if len(rows) else nan,
    }


def milestones(
    by_seed: dict[int, list[dict[str, Any]]], prefix: str = "adv/amp_weights/"
) -> list[str]:
    names = {
        k[len(prefix) :]
        for rows in by_seed.values()
        for r in rows
        for k in r
        if k.startswith(prefix)
    }
    return sorted(names)


def summarize(rs: RunSet, early: int) -> dict[str, Any]:
    """Every number of the md for one run set (JSON-friendly)."""
    out: dict[str, Any] = {"env": rs.env, "base": str(rs.base), "found": rs.found(), "arms": {}}
    out["partial"] = rs.partial_notes()
    done = sum(len(r.rows) for by in rs.runs.values() for r in by.values())
    out["plan"] = {
        "arms": list(rs.arms),
        "seeds": list(rs.seeds),
        "iterations": rs.plan,
        "iterations_done": done,
        "iterations_planned": None if rs.plan is None else rs.plan * len(rs.arms) * len(rs.seeds),
    }
    out["settings"], out["settings_differ"] = settings(rs)
    lengths = [len(r.rows) for by in rs.runs.values() for r in by.values()]
    # "first iterations": one window k for every run of the set (at most the longest run);
    # a run with fewer than k iterations so far is left out of the window's statistics
    early = min([early, max(lengths, default=early)])
    out["early"] = early
    for arm in rs.arms:
        by_seed = rs.rows(arm)
        if not by_seed:
            continue
        a: dict[str, Any] = {
            "seeds": sorted(by_seed),
            "iterations": [len(r) for r in by_seed.values()],
        }
        window = {seed: rows for seed, rows in by_seed.items() if len(rows) >= early}
        a["early_seeds"] = sorted(window)
        for key in ("adv/zero_adv_ratio", "adv/zero_credit_ratio", "success"):
            per = early_per_seed(window, key, early)
            if per:
                vals = np.array(list(per.values()))
                a[key] = {
                    "per_seed": per,
                    "mean": float(vals.mean()),
                    "min": float(vals.min()),
                    "max": float(vals.max()),
                }
        first = early_per_seed(by_seed, "adv/zero_adv_ratio", 1)
        if first:
            a["zero_adv_first_iteration"] = float(np.mean(list(first.values())))
        first = early_per_seed(by_seed, "success", 1)
        if first:
            a["success_first_iteration"] = float(np.mean(list(first.values())))
        for key in ("adv/kappa", "adv/ema_success", STEP_GROUPING, "adv/grouping_ratio"):
            if has_key(by_seed, key):
                c = curve(by_seed, key)
                a[key] = {"first": float(c["mean"][0]), "last": float(c["mean"][-1])}
        if has_key(by_seed, "adv/phi_success_mean") or has_key(by_seed, "adv/phi_failure_mean"):
            a["phi"] = phi_sign_check(by_seed)
        if has_key(by_seed, PHI_SPLIT) or has_key(by_seed, PHI_SPLIT_ROWS):
            a["phi_split"] = phi_split_summary(by_seed)
        ms = milestones(by_seed)
        if ms:
            a["amp_weights"] = {
                m: {
                    "first": float(curve(by_seed, f"adv/amp_weights/{m}")["mean"][0]),
                    "last": float(curve(by_seed, f"adv/amp_weights/{m}")["mean"][-1]),
                }
                for m in ms
            }
        a["phases"] = phase_table(by_seed)
        out["arms"][arm] = a
    return out


# ====================================================================== step-level alignment


def read_alignment(path: Path) -> dict[str, Any]:
    """One file of ``benchmarks/alignment.py --run-dir RUN --relabel --json OUT`` (docs/
    alignment.md): ``{"run": RUN, "variants": {NAME: {"iterations": [..], "auc": [..],
    "repaired_rows": [..]}}, "unverified_trajectories": N, "trajectories": M, "command": ..}``.
    Anything else: ValueError, one line naming the file."""
    where = f"--alignment-json {path}"
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"{where}: no such file") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not JSON ({e.msg}, line {e.lineno})") from None
    if not (
        isinstance(doc, dict)
        and isinstance(doc.get("run"), str)
        and isinstance(doc.get("variants"), dict)
    ):
        raise ValueError(
            f"{where}: expected an object with 'run' (a run folder) and 'variants', as written "
            f"by `{ALIGNMENT_CMD}`"
        )
    for name, v in doc["variants"].items():
        keys = ("iterations", "auc", "repaired_rows")
        if not (isinstance(v, dict) and all(isinstance(v.get(k), list) for k in keys)):
            raise ValueError(f"{where}: variant {name!r} needs the lists {', '.join(keys)}")
        if len({len(v[k]) for k in keys}) != 1:
            raise ValueError(f"{where}: variant {name!r} has lists of different lengths")
    return doc


def alignment_summary(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """Per variant: iterations scored, those with an AUC (NaN where the repaired rows' known
    labels are all of one kind, docs/alignment.md "The measure"), the AUC's mean over them,
    min, max, the mean repaired rows per iteration, and the curve for the figure."""
    variants = {}
    for name, v in doc["variants"].items():
        auc = np.array([np.nan if x is None else float(x) for x in v["auc"]], dtype=float)
        fin = auc[~np.isnan(auc)]
        rep = [float(x) for x in v["repaired_rows"] if x is not None]
        nan = float("nan")
        variants[name] = {
            "iterations": len(auc),
            "measured": int(len(fin)),
            "mean": float(fin.mean()) if len(fin) else nan,
            "min": float(fin.min()) if len(fin) else nan,
            "max": float(fin.max()) if len(fin) else nan,
            "repaired_mean": float(np.mean(rep)) if rep else nan,
            "curve": {"iterations": [int(i) for i in v["iterations"]], "auc": auc.tolist()},
        }
    return {
        "file": _rel(Path(path)),
        "run": doc["run"],
        "name": Path(doc["run"]).name,
        "variants": variants,
        "unverified_trajectories": doc.get("unverified_trajectories"),
        "trajectories": doc.get("trajectories"),
        "command": doc.get("command") or "",
    }


def run_key(run: str) -> tuple[Path, str, int] | None:
    """``(folder holding the run, arm, seed)`` of a run folder ``.../<arm>-seed<k>`` (a
    relative path is read from the repository root); None for another name."""
    import re

    p = Path(run) if Path(run).is_absolute() else ROOT / run
    m = re.fullmatch(r"(.+)-seed(\d+)", p.name)
    return (p.resolve().parent, m.group(1), int(m.group(2))) if m else None


def belongs(al: dict[str, Any], bases: Iterable[Path], arms: Iterable[str]) -> bool:
    """Whether an alignment file's run is ``<base>/<arm>-seed<k>`` of a set: ``bases`` are the
    set's folder and its study's default folder, so a file made on the live runs matches the
    set drawn from their compact copies too."""
    key = run_key(al["run"])
    return key is not None and key[1] in arms and key[0] in {b.resolve() for b in bases}


# ====================================================================== figures


def plot(rs: RunSet, out: Path, early: int, alignment: Sequence[dict[str, Any]] = ()) -> bool:
    """Eight panels for one run set (the last: the step-level alignment files matched to it);
    False (nothing drawn) when no run was found."""
    if not rs.found():
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, 4, figsize=(16.5, 6.8))
    colors = {a: f"C{i}" for i, a in enumerate(rs.arms)}

    def band(
        ax: Any, arm: str, key: str, label: str, style: str = "-", color: str | None = None
    ) -> None:
        by_seed = rs.rows(arm)
        if not by_seed or not has_key(by_seed, key):
            return
        c = curve(by_seed, key)
        col = color or colors[arm]
        ax.plot(c["x"], c["mean"], style, color=col, marker="o", ms=2.5,
                label=f"{label} (n={len(by_seed)})")  # fmt: skip
        ax.fill_between(c["x"], c["lo"], c["hi"], color=col, alpha=0.15, lw=0)

    for arm in rs.arms:
        band(axes[0, 0], arm, "adv/zero_adv_ratio", arm)
        band(axes[0, 1], arm, "adv/zero_credit_ratio", arm)
        band(axes[1, 0], arm, STEP_GROUPING, f"{arm} step groups", "--")
        band(axes[1, 0], arm, "adv/grouping_ratio", f"{arm} regions")
    mv = [a for a in rs.arms if a.startswith("mvpo") and rs.rows(a)]
    for arm in mv:
        band(axes[0, 2], arm, "adv/kappa", f"{arm} kappa")
        band(axes[0, 2], arm, "adv/ema_success", f"{arm} EMA success", "--")
        band(axes[1, 1], arm, "adv/phi_success_mean", f"{arm} successful", "-")
        band(axes[1, 1], arm, "adv/phi_failure_mean", f"{arm} failed", ":")
        band(axes[0, 3], arm, PHI_SPLIT, arm)
    if axes[0, 3].lines:
        axes[0, 3].axhline(0.0, color="grey", lw=0.8)
    for j, al in enumerate(alignment):
        for k, (v, d) in enumerate(al["variants"].items()):
            c = d["curve"]
            axes[1, 3].plot(c["iterations"], c["auc"], marker="o", ms=2.5, color=f"C{j}",
                            ls=("-", "--", ":", "-.")[k % 4], label=f"{al['name']} {v}")  # fmt: skip
    if axes[1, 3].lines:
        axes[1, 3].axhline(0.5, color="grey", lw=0.8)
    if "mvpo" in mv:
        by_seed = rs.rows("mvpo")
        for j, m in enumerate(milestones(by_seed)):
            band(axes[1, 2], "mvpo", f"adv/amp_weights/{m}", m, color=f"C{j}")
    titles = {
        (0, 0): ("zero-advantage ratio", "share of rows"),
        (0, 1): ("zero-credit ratio", "share of rows"),
        (0, 2): ("MVPO kappa (solid) and EMA success (dashed)", ""),
        (1, 0): ("grouping ratio: step groups (dashed), MVPO regions (solid)", "share of rows"),
        (1, 1): ("MVPO mean prefix potential Phi per trajectory", "Phi"),
        (1, 2): ("MVPO AMP weights per milestone (arm mvpo)", "weight"),
        (0, 3): ("MVPO phi_split_spearman_failed (non-circular)", "Spearman rho"),
        (1, 3): ("step-level alignment: oracle AUC of the repair", "AUC"),
    }
    for (i, j), (title, ylab) in titles.items():
        ax = axes[i, j]
        ax.set(title=title, xlabel="iteration", ylabel=ylab)
        ax.title.set_fontsize(10)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
        else:
            empty = "not measured yet" if (i, j) == (1, 3) else "no data"
            ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
    for ax in (axes[0, 0], axes[0, 1]):
        ax.axvspan(0.5, early + 0.5, color="grey", alpha=0.08)
    fig.suptitle(f"{rs.env}: mean over seeds, band = min..max over seeds ({_rel(rs.base)})")
    fig.tight_layout()
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, dpi=100)
    plt.close(fig)
    # a 256-colour palette: the same picture at a third of the bytes (the PNGs are committed)
    Image.open(buf).convert("RGB").quantize(256).save(out, optimize=True)
    return True


# ====================================================================== markdown


def _f(x: float | None, nd: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def _r(x: float, nd: int) -> float:
    """``x`` rounded, without a negative zero (-0.00 -> 0.00)."""
    return round(x, nd) + 0.0


def _spread(d: dict[str, Any] | None) -> str:
    if not d:
        return "-"
    per = ", ".join(f"{v:.3f}" for _, v in sorted(d["per_seed"].items(), key=_seed))
    return f"{d['mean']:.3f} ({d['min']:.3f}..{d['max']:.3f}; {per})"


#: under the heading of a carried-over history set (its runs predate MVPO's paper form)
FORM_V1_NOTE = (
    '**MVPO form.** The `mvpo` runs of this set used `form="v1"`, MVPO\'s default until '
    "2026-12-01 (docs/estimators.md §3.10); the same commands now run the paper form."
)
#: one line under each run set's heading
SET_NOTES = {
    "alfworld": "ALFWorld: the learning sweep's runs (its settings are in "
    "`benchmarks/results/learning.md`).",
    "alfworld-quick": "ALFWorld: the learning sweep's smoke runs.",
    "alfworld-full": "ALFWorld, the MVPO paper's regime (docs/learning_study.md, \"The MVPO paper's "
    'regime"): the full train split (3,553 games), 16 tasks x 8 rollouts x 50 steps, 60 '
    "iterations, the history-aware encoder policy warm-started by 300 BC steps, the tuning "
    "grid's settings per arm (GRPO lr 3e-4, GiGPO lr 1e-3, MVPO lr 3e-4 with KL 0.05; "
    'MVPO\'s default `form="paper"`).',
    "webshop-study": "WebShop study, the MVPO paper's Table 2 (docs/learning_study.md, \"WebShop "
    "study\"): the MVPO paper's win-only reward (`mvpo-study/WebShop-SuccessReward-v0`), 16 goals "
    "x 8 rollouts x 15 steps, 60 iterations, the encoder policy warm-started by 50 BC steps; "
    "`mvpo-no-anchor` = MVPO without GiGPO's anchor credit, `mvpo-no-kappa-decay` = kappa 1 "
    "throughout.",
    "webshop": "WebShop, the MVPO paper's reward: 1.0 for a won episode, else 0 (verl-agent's WebShop "
    "rule, there 10 for a win), so a group without a win has zero advantage under GRPO.",
    "webshop-score": "WebShop, WebShop's own reward (the env default): the purchase's score "
    "in [0, 1] (partial credit), so a GRPO group has zero advantage only when its scores are "
    "all equal.",
}


def phi_split_lines(arms: dict[str, dict[str, Any]]) -> list[str]:
    """The table of :data:`PHI_SPLIT` per MVPO arm (nothing when no arm logged it)."""
    rows = [(arm, a["phi_split"]) for arm, a in arms.items() if a.get("phi_split")]
    if not rows:
        return []
    lines = [
        "### Non-circular check of the potential: `adv/phi_split_spearman_failed`",
        "",
        "Logged by the trainer for every MVPO batch (docs/estimators.md §3.7). The trajectories "
        "of each rollout group are split in two halves by position (even, odd); each row gets "
        "its region's value estimated from the *other* half's visits only (the potential's "
        "formula, before batch normalisation). Over the rows of *failed* trajectories that have "
        "such an estimate (`adv/phi_split_rows`): the Spearman rank correlation between that "
        "estimate and the number of milestones the row's own trajectory still fires from that "
        "step on. Non-circular: the rows are failures (no success in their own return), the "
        "estimate comes from other trajectories (it does not move with the row's own value, as "
        "a leave-one-out mean would), and the milestones are the row's own future, which the "
        "estimate does not see. Positive: regions from which the other half went on to progress "
        "are regions from which failed rollouts still progressed; 0: the potential does not "
        "predict progress. NaN iterations (fewer than 3 such rows, or no spread) are counted "
        "apart.",
        "",
        "| estimator | rho, first -> last iteration (mean over seeds) | rho, all iterations: "
        "mean (min..max) | iterations with rho > 0 | iterations with a value, of logged "
        "| per-seed mean | rows per iteration, mean (min..max) |",
        "|---|---|---|---|---|---|---|",
    ]
    for arm, p in rows:
        per = ", ".join(f"{v:+.3f}" for _, v in sorted(p["per_seed_mean"].items(), key=_seed))
        pos = "-" if math.isnan(p["positive_share"]) else f"{100 * p['positive_share']:.0f}%"
        lines.append(
            f"| {arm} | {_g(p['first'])} -> {_g(p['last'])} | {_g(p['mean'])} "
            f"({_g(p['min'])}..{_g(p['max'])}) | {pos} | {p['values']} of {p['iterations']} "
            f"| {per or '-'} | {_f(p['rows_mean'], 0)} ({_f(p['rows_min'], 0)}.."
            f"{_f(p['rows_max'], 0)}) |"
        )
    return lines + [""]


def alignment_lines(s: dict[str, Any]) -> list[str]:
    """The step-level alignment table of one set from the ``--alignment-json`` files matched
    to it; "not measured yet" for its MVPO runs without one."""
    lines = [
        "### Step-level alignment: oracle AUC of MVPO's repair (docs/alignment.md)",
        "",
    ]
    missing = s.get("alignment_missing", [])
    if not s.get("oracle", True) and not s["alignment"]:
        return lines + [
            "**Not measured yet**: the exact progress oracle exists for ALFWorld only "
            "(docs/alignment.md), so this set's repair has no step-level label.",
            "",
        ]
    if not s["alignment"]:
        return lines + [
            "**Not measured yet**: no `--alignment-json` file for this set's MVPO runs"
            + (f" ({', '.join(f'`{m}`' for m in missing)})" if missing else "")
            + f". Measure a run with `{ALIGNMENT_CMD}`, then pass `--alignment-json OUT` here.",
            "",
        ]
    lines += [
        "Per recorded batch of the run (`--relabel`: every step labelled by the ALFWorld "
        "progress oracle, 1 = the step is on a shortest plan): the AUC of the repair "
        "(MVPO's advantage minus its GiGPO twin's, on the repaired rows) as a score for the "
        "label; 0.5 = unrelated, 1 = every progress step repaired above every other. "
        "Mean over the iterations with an AUC (NaN where the repaired rows' known labels are "
        "all of one kind). Read from the files named below, not recomputed here.",
        "",
        "| run | variant | iterations with an AUC, of scored | AUC, mean over iterations "
        "| min..max | repaired rows per iteration (mean) | unverified trajectories, of all |",
        "|---|---|---|---|---|---|---|",
    ]
    for al in s["alignment"]:
        unv = al.get("unverified_trajectories")
        tot = al.get("trajectories")
        unv_s = "-" if unv is None else f"{unv} of {'-' if tot is None else tot}"
        for v, d in al["variants"].items():
            lines.append(
                f"| `{al['name']}` | `{v}` | {d['measured']} of {d['iterations']} "
                f"| {_f(d['mean'])} | {_f(d['min'])}..{_f(d['max'])} "
                f"| {_f(d['repaired_mean'], 0)} | {unv_s} |"
            )
    lines += ["", "Made by:"]
    lines += [f"* `{al['name']}` (`{al['file']}`): `{al['command'] or '(no command in the file)'}`"
              for al in s["alignment"]]  # fmt: skip
    if missing:
        lines += ["", "Not measured yet: " + ", ".join(f"`{m}`" for m in missing) + "."]
    return lines + [""]


def _g(x: float | None) -> str:
    """A signed statistic (``+0.123``), ``-`` for NaN."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.3f}"


def _seed(item: tuple[Any, Any]) -> int:
    """Sort key of a per-seed item whose seed may be a JSON string (a carried-over set)."""
    return int(item[0])


def markdown_section(s: dict[str, Any], png: str | None, command: str) -> list[str]:
    env = s["env"]
    early = s.get("early", 0)
    lines = [f"## {env}", "", SET_NOTES.get(env, ""), ""]
    if s.get("carried_from"):  # drawn before 2026-12-01: the v1 form
        lines += [FORM_V1_NOTE, ""]
    lines.append(f"Runs: `{s['base_rel']}/<arm>-seed<k>/`, made by `{command}`.")
    lines.append("")
    if s.get("note"):
        lines += [s["note"], ""]
    if not s["found"]:
        return lines + ["**Not run yet**: no run folder with metrics was found.", ""]
    plan = s.get("plan") or {}
    if plan.get("iterations_planned"):
        seeds = plan["seeds"]
        lines += [
            f"Planned: arms {', '.join(f'`{a}`' for a in plan['arms'])} x seeds "
            f"{seeds[0]}-{seeds[-1] if len(seeds) > 1 else seeds[0]} x {plan['iterations']} "
            f"iterations; done {plan['iterations_done']} of {plan['iterations_planned']} "
            "run-iterations.",
            "",
        ]
    shown = ", ".join(f"`{k}` {json.dumps(v)}" for k, v in s["settings"].items())
    lines += [f"Settings shared by the runs (their `config.yaml`): {shown}.", ""]
    if s["settings_differ"]:
        lines.append("**Not like for like**:")
        lines += [f"* {d}" for d in s["settings_differ"]] + [""]
    if s["partial"]:
        lines.append("**Partial run set** (fewer seeds or iterations than asked):")
        lines += [f"* {n}" for n in s["partial"]] + [""]
    else:
        lines.append("Complete: every asked seed has its planned iterations.")
        lines.append("")
    if png:
        lines += [f"![{env} diagnostics]({png})", ""]
    arms = s["arms"]
    # --- zero advantage
    seeds_col = env in PAPER_ZERO_ADV_SETS
    head = (
        f"| estimator | seeds in the window, of found | iterations | zero-advantage ratio, it. 1 "
        f"| zero-advantage ratio, first {early} it. (min..max; per seed) "
        f"| zero-credit ratio, first {early} it. | batch success, it. 1 "
        f"| batch success, first {early} it. |"
    )
    sep = "|---|---|---|---|---|---|---|---|"
    if seeds_col:
        head += " the MVPO paper's, WebShop, early |"
        sep += "---|"
    lines += [f"### Zero-advantage and zero-credit ratio, first {early} iterations", "", head, sep]
    for arm, a in arms.items():
        early_n = len(a["early_seeds"])
        row = (
            f"| {arm} | {early_n} of {n_seeds(a)} "
            f"| {min(a['iterations'])}..{max(a['iterations'])} "
            f"| {_f(a.get('zero_adv_first_iteration'))} | {_spread(a.get('adv/zero_adv_ratio'))} "
            f"| {_spread(a.get('adv/zero_credit_ratio'))} | {_f(a.get('success_first_iteration'))} "
            f"| {_spread(a.get('success'))} |"
        )
        if seeds_col:
            row += f" {PAPER_ZERO_ADV_WEBSHOP.get(arm, '-')} |"
        lines.append(row)
    lines.append("")
    paper = ", ".join(f"{NAMES[a]} {v}" for a, v in PAPER_ZERO_ADV_WEBSHOP.items())
    if seeds_col:
        lines += [f"Last column: the MVPO paper's early zero-advantage ratio on WebShop "
                  f"({paper}; their win-only reward), quoted, not measured here.", ""]  # fmt: skip
    else:
        lines += [f"For reference, the MVPO paper reports the early zero-advantage ratio on "
                  f"WebShop only ({paper}); it gives no figure for this setting.", ""]  # fmt: skip
    # --- kappa / EMA / grouping
    lines += [
        "### kappa, EMA success and grouping ratios (mean over seeds, first -> last iteration)",
        "",
        "Last = the longest run's last iteration, mean over seeds that have reached it.",
        "",
        "| estimator | kappa | EMA success | grouping ratio, step groups | grouping ratio, MVPO regions |",
        "|---|---|---|---|---|",
    ]
    for arm, a in arms.items():

        def fl(key: str, a: dict[str, Any] = a) -> str:
            d = a.get(key)
            return "-" if not d else f"{_f(d['first'])} -> {_f(d['last'])}"

        lines.append(
            f"| {arm} | {fl('adv/kappa')} | {fl('adv/ema_success')} | {fl(STEP_GROUPING)} "
            f"| {fl('adv/grouping_ratio')} |"
        )
    lines.append("")
    lines.append(
        f"The MVPO paper: kappa {PAPER_KAPPA.get(env.split('-')[0], '-')} over 150 iterations."
    )
    lines.append("")
    # --- Phi
    lines += [
        "### Prefix potential Phi: successful vs failed trajectories",
        "",
        "Circular by construction, kept for the MVPO paper's Figure 3: the potential averages the "
        "returns of the trajectories through a region, so successful trajectories raise their "
        "own regions' Phi (docs/estimators.md §3.7). "
        + (
            "The non-circular check is the next table."
            if any(a.get("phi_split") for a in arms.values())
            else "The trainer's non-circular statistic (`adv/phi_split_spearman_failed`) is "
            "not in these runs' metrics."
        ),
        "",
    ]
    any_phi = False
    for arm, a in arms.items():
        p = a.get("phi")
        if not p:
            continue
        any_phi = True
        if p["iterations_with_both"] == 0:
            lines.append(f"* `{arm}`: no iteration had both successful and failed trajectories.")
            continue
        verdict = (
            "never flips: successful trajectories always have the higher mean Phi"
            if not p["flips"]
            else f"**flips** in {len(p['flips'])} of {p['iterations_with_both']} iterations "
            f"(seed, iteration): {[tuple(f) for f in p['flips'][:12]]}"
            f"{' ...' if len(p['flips']) > 12 else ''}"
        )
        lines.append(
            f"* `{arm}`: {p['iterations_with_both']} (seed, iteration) pairs with both kinds; "
            f"gap Phi(success) - Phi(failure) mean {_f(p['gap_mean'])}, min {_f(p['gap_min'])}; "
            f"the sign {verdict}."
        )
    if not any_phi:
        lines.append("No MVPO run in this set.")
    lines.append("")
    lines += phi_split_lines(arms)
    if s.get("alignment") is not None:
        lines += alignment_lines(s)
    # --- AMP
    for arm, a in arms.items():
        if not a.get("amp_weights"):
            continue
        lines += [f"### AMP weights per milestone (arm `{arm}`, mean over seeds)", "",
                  "| milestone | first iteration | last iteration |", "|---|---|---|"]  # fmt: skip
        for m, d in a["amp_weights"].items():
            if not (math.isnan(d["first"]) and math.isnan(d["last"])):  # a learned one, gone
                lines.append(f"| {m} | {_f(d['first'])} | {_f(d['last'])} |")
        lines.append("")
    # --- phases
    labels = [
        p for p in [*PHASES.values(), "other"] if any(p in a["phases"] for a in arms.values())
    ]
    lines += [
        "### One iteration's phases (Table 3 style): mean seconds (% of the iteration)",
        "",
        "Mean over every iteration of every seed. The iteration = `time/total` + `time/eval` "
        "(the trainer's total leaves evaluation out; evaluation, run every `eval_every`-th "
        "iteration, is averaged over all iterations); *other* = logging and checkpoints. "
        "Wall-clock seconds on a shared machine: read the shares, not the seconds.",
        "",
        "| estimator | " + " | ".join(labels) + " | iteration |",
        "|---|" + "---|" * (len(labels) + 1),
    ]
    for arm, a in arms.items():
        ph = a["phases"]
        cells = [
            "-" if lab not in ph else f"{_r(ph[lab][0], 2):.2f} ({_r(100 * ph[lab][1], 1):.1f}%)"
            for lab in labels
        ]
        tot = ph.get("total", (float("nan"), 1.0))[0]
        lines.append(f"| {arm} | " + " | ".join(cells) + f" | {tot:.2f} |")
    lines.append("")
    return lines


def write_markdown(summaries: list[dict[str, Any]], args: argparse.Namespace, out: Path,
                   pngs: dict[str, str | None]) -> None:  # fmt: skip
    lines = [
        "# Training diagnostics: GRPO vs GiGPO vs MVPO (ALFWorld and WebShop)",
        "",
        f"Built by `{args.command}` from the runs on disk; each set's section names the "
        "command that made its "
        "runs. Every number below is read from the runs' `metrics.jsonl` (and, for the "
        "step-level alignment, from the `--alignment-json` files named there).",
        "",
    ]
    headline = [s for s in summaries if s["env"] in HEADLINE_SETS and s["found"]]
    if headline:
        lines.append(
            "**Headline**: the studies in the MVPO paper's regime, "
            + ", ".join(
                f"`{s['env']}` ({'partial' if s['partial'] else 'complete'})" for s in headline
            )
            + ", first; then the earlier run sets (committed history)."
        )
    else:
        lines.append(
            "The studies in the MVPO paper's regime (`alfworld-full`, `webshop-study`) have no runs "
            "here yet (their sections, last, say where they are looked for); the sections "
            "below are the earlier run sets."
        )
    lines += [
        "",
        "Definitions (docs/estimators.md §2/§3.7): *zero-advantage ratio* = share of rows whose "
        "final advantage is exactly 0 (no policy gradient); *zero-credit ratio* = share of rows in "
        "step groups whose returns do not vary (GRPO: the episode group; GiGPO/MVPO: the "
        "anchor-state step group; MVPO repairs these rows with its potential); *grouping ratio*: "
        "step groups = share of rows whose anchor-state step group holds at least 2 rows "
        "(`1 - adv/singleton_ratio`, GiGPO and MVPO), MVPO regions = share of rows whose "
        "region holds at least 2 rows (`adv/grouping_ratio`); *Phi* = a trajectory's mean prefix "
        "potential; *kappa* = MVPO's mixing weight, *EMA success* its success average. "
        f'"First k iterations" (k = {args.early}, or the length of the longest run of the '
        "set if shorter): the mean of each seed's first k iterations, then the mean over seeds "
        "with (min..max) and the per-seed values; a run with fewer than k iterations so far is "
        "left out of these. Figures: per iteration, mean over seeds that have it, band = "
        "min..max over them.",
        "",
    ]
    web = next((s for s in summaries if s["env"] == "webshop"), None)
    if web is not None and web["found"]:
        lines += [
            "WebShop setting of the sets `webshop` and `webshop-score` (every field in each "
            "set's settings line): "
            f"`{DIAG_WEBSHOP_ID}` was registered by this script when it made the runs (git "
            "history): `mvpo/WebShop-v0` with its bundled catalog, split, 15-step episodes, "
            "protocol and abstraction, except that the search template `search[<query>]` is "
            "filled with the task's instruction (a score-mode policy cannot write a query, and "
            'the literal template finds nothing; today `search_query="instruction"`) and the '
            "reward was chosen by `diag_reward` (`success` is today's `success_reward=True`); the "
            "encoder's tokenizer reads the observations' literal `[SEP]` as text (as the "
            "package's encoder policy does). Policy: the encoder scorer with a fresh "
            "head (`--policy encoder --model fresh`, no warm start: the runs predate WebShop's "
            "`expert_actions` hook, and a fresh head gives the near-uniform start of the MVPO paper's "
            "WebShop regime), one torch thread, only `--estimator` differing; a seed "
            "gives the three estimators the same first batch. Success = `won` (WebShop score "
            "1.0); its value at iteration 1 is the policy's initial success.",
            "",
        ]
    for s in summaries:
        lines += markdown_section(s, pngs.get(s["env"]), s["command"])
    out.write_text("\n".join(lines) + "\n")


# ====================================================================== main


def read_previous(path: str) -> dict[str, dict[str, Any]]:
    """The summaries of the previous ``diagnostics.json`` (``''`` or a missing file: none), by
    set name; read before this call overwrites it."""
    if not path or not Path(path).is_file():
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"--previous-json {path}: not JSON ({e.msg}, line {e.lineno})") from None
    return {s["env"]: s for s in data if isinstance(s, dict) and "env" in s}


def carry(prev: dict[str, Any], src: Path, out: Path) -> tuple[dict[str, Any], str | None]:
    """A history set whose runs are not on disk: its summary as last drawn (from ``src``, the
    previous json), marked as such, with its figure copied beside ``out`` when it exists."""
    s = dict(prev)
    s.setdefault("carried_from", _rel(src))
    s["note"] = (
        f"**Carried over**: the runs (`{s['base_rel']}`) are not on this machine; this section "
        f"is the set as last drawn, read back from `{s['carried_from']}` (its history: "
        f"`git log -- {s['carried_from']}`)."
        + (f" {prev['note']}" if prev.get("note") and "Carried over" not in prev["note"] else "")
    )
    fig = src.parent / f"{src.stem}_{s['env']}.png"
    dst = out.parent / f"{out.stem}_{s['env']}.png"
    if fig.is_file() and fig.resolve() != dst.resolve():
        import shutil

        shutil.copyfile(fig, dst)
    return s, (dst.name if dst.is_file() else None)


@dataclass
class SetSpec:
    """One run set of the md: where its runs are, what its study plans, who made them."""

    name: str
    base: Path
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    command: str
    plan: int | None = None  # iterations per run
    default_base: Path | None = None  # the study's own folder (alignment files name it)
    oracle: bool = False  # a step-level oracle exists (ALFWorld): the alignment section
    note: str = ""


def set_specs(args: argparse.Namespace) -> list[SetSpec]:
    """The headline sets (the two studies in the MVPO paper's regime), then the history sets."""
    full = Path(args.alfworld_full_base)
    copies = full.resolve() == ALFWORLD_FULL_COPIES.resolve()
    specs = [
        SetSpec(
            "alfworld-full", full, ALFWORLD_FULL_ARMS, tuple(args.alfworld_full_seeds),
            "python benchmarks/learning.py --arms grpo gigpo mvpo --seeds 0 1 2 3 4 "
            "--iterations 60 --num-groups 16 --group-size 8 ... --base runs/full/learning",
            STUDY_ITERATIONS, ALFWORLD_FULL_BASE, oracle=True,
            note="The full command: docs/learning_study.md, \"The MVPO paper's regime\". " + (
                "Read from the committed compact copies (`metrics.jsonl`, `config.yaml` and "
                "evaluations of each run, as far as the study had run when they were exported "
                "by `python benchmarks/study_archive.py export --base runs/full/learning --to "
                f"{_rel(ALFWORLD_FULL_COPIES)}`)." if copies else
                "The committed compact copies redraw this set without the runs: "
                f"`--alfworld-full-base {_rel(ALFWORLD_FULL_COPIES)}`."),
        ),
        SetSpec(
            "webshop-study", Path(args.webshop_study_base), WEBSHOP_STUDY_ARMS,
            tuple(args.webshop_study_seeds),
            "python benchmarks/learning.py --env webshop --base runs/webshop/learning",
            STUDY_ITERATIONS, WEBSHOP_STUDY_BASE,
        ),
        SetSpec("alfworld", Path(args.alfworld_base), ALFWORLD_ARMS, tuple(args.alfworld_seeds),
                "python benchmarks/learning.py", default_base=ALFWORLD_BASE, oracle=True),
    ]  # fmt: skip
    web = Path(args.webshop_base)  # made by this script's former --run-webshop (git history)
    specs += [
        SetSpec(name, base, WEBSHOP_ARMS, tuple(seeds), "python benchmarks/diagnostics.py --run-webshop")
        for name, base, seeds in (("webshop", web, args.webshop_seeds),
                                  ("webshop-score", web / "score", args.webshop_score_seeds))
    ]  # fmt: skip
    return specs


def analyze(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = read_previous(args.previous_json)
    alignments = [alignment_summary(read_alignment(Path(f)), Path(f)) for f in args.alignment_json]
    specs = {sp.name: sp for sp in set_specs(args)}
    loaded = {n: load_runset(n, sp.base, sp.arms, sp.seeds, sp.plan) for n, sp in specs.items()}
    alf = loaded["alfworld"]
    carried = {
        n for n in HISTORY_SETS if not loaded[n].found() and previous.get(n, {}).get("found")
    }
    if (
        args.alfworld_preview
        and "alfworld" not in carried
        and (not alf.found() or alf.partial_notes())
    ):
        quick = load_runset("alfworld-quick", Path(args.alfworld_preview), ALFWORLD_ARMS, [0])
        if quick.found():  # the study is not complete: its smoke sweep as a preview
            specs["alfworld-quick"] = SetSpec(
                "alfworld-quick", quick.base, ALFWORLD_ARMS, (0,),
                "python benchmarks/learning.py --quick",
                note=(f"**Preview only**, shown while the study (`{_rel(alf.base)}`) is "
                      "incomplete: the sweep's smoke runs (one seed, a few iterations, "
                      "otherwise the study's settings). Rerun `--analyze-only` when the study "
                      "is complete; this section then goes."),
            )  # fmt: skip
            loaded["alfworld-quick"] = quick
    summaries, pngs, matched = [], {}, set()
    for name, rs in loaded.items():
        sp = specs[name]
        png = out.parent / f"{out.stem}_{name}.png"
        if name in carried:
            s, pngs[name] = carry(previous[name], Path(args.previous_json), out)
            summaries.append(s)
            continue
        s = summarize(rs, args.early)
        s["command"], s["note"], s["base_rel"] = sp.command, sp.note, _rel(rs.base)
        bases = [rs.base] + ([sp.default_base] if sp.default_base else [])
        mine = [al for al in alignments if belongs(al, bases, rs.arms)]
        matched |= {al["file"] for al in mine}
        if mine or name in HEADLINE_SETS:
            s["oracle"] = sp.oracle
            s["alignment"] = mine
            have = {al["name"] for al in mine}
            s["alignment_missing"] = [
                f"{arm}-seed{seed}"
                for arm in rs.arms if arm.startswith("mvpo")
                for seed in sorted(rs.runs.get(arm, {}))
                if f"{arm}-seed{seed}" not in have
            ]  # fmt: skip
        drawn = plot(rs, png, s["early"], mine)
        if not drawn:
            png.unlink(missing_ok=True)  # never a figure of runs that are gone
        pngs[name] = png.name if drawn else None
        summaries.append(s)
    unmatched = [al for al in alignments if al["file"] not in matched]
    if unmatched:  # said, never dropped silently
        raise ValueError(
            "--alignment-json: no run set shown holds the run of "
            + "; ".join(f"{al['file']} (run {al['run']})" for al in unmatched)
        )
    for name in ("alfworld-quick", *specs):
        if name not in pngs:  # a set not shown this time: never a figure of it left behind
            (out.parent / f"{out.stem}_{name}.png").unlink(missing_ok=True)
    # the headline sets first when found; then the history; headline sets not run yet last
    order = [s for s in summaries if s["env"] in HEADLINE_SETS and s["found"]]
    order += [s for s in summaries if s["env"] not in HEADLINE_SETS]
    order += [s for s in summaries if s["env"] in HEADLINE_SETS and not s["found"]]
    write_markdown(order, args, out, pngs)
    out.with_suffix(".json").write_text(json.dumps(order, indent=1, default=float) + "\n")
    return order


def _rel(path: Path) -> str:
    """``path`` relative to the repository when inside it."""
    p = path.resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python benchmarks/diagnostics.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--analyze-only", action="store_true",
                   help="rebuild the md, json and figures from the runs on disk (what this "
                   "script always does; kept for the commands in the results)")  # fmt: skip
    p.add_argument("--alfworld-full-base", default=str(ALFWORLD_FULL_BASE),
                   help="the ALFWorld full-split study's runs (headline set `alfworld-full`); "
                   f"its committed compact copies: {_rel(ALFWORLD_FULL_COPIES)}")  # fmt: skip
    p.add_argument("--alfworld-full-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--webshop-study-base", default=str(WEBSHOP_STUDY_BASE),
                   help="the WebShop study's runs (headline set `webshop-study`)")  # fmt: skip
    p.add_argument("--webshop-study-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--alignment-json", action="append", default=[], metavar="PATH",
                   help=f"a file of `{ALIGNMENT_CMD}` (repeatable): its run's step-level "
                   "alignment, shown in the section of the set holding the run")  # fmt: skip
    p.add_argument("--previous-json", default=str(RESULTS / "diagnostics.json"),
                   help="history sets (alfworld, webshop, webshop-score) whose runs are not on "
                   "disk are carried over from this json as last drawn; '' for none")  # fmt: skip
    p.add_argument("--alfworld-base", default=str(ALFWORLD_BASE), help="ALFWorld sweep folder")
    p.add_argument("--alfworld-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--alfworld-preview", default=str(ROOT / "runs" / "learning-quick"),
                   help="shown as a preview set while the --alfworld-base study is incomplete: "
                   "the sweep's `--quick` runs; '' for none")  # fmt: skip
    p.add_argument("--webshop-base", default=str(WEBSHOP_BASE), help="WebShop runs folder")
    p.add_argument("--webshop-seeds", nargs="+", type=int, default=[0, 1, 2],
                   help="seeds of the main WebShop set (the MVPO paper's success reward)")  # fmt: skip
    p.add_argument("--webshop-score-seeds", nargs="*", type=int, default=[0, 1, 2],
                   help="seeds of the WebShop set with WebShop's score reward (none: skip)")  # fmt: skip
    p.add_argument("--early", type=int, default=5, help="'first iterations' of the tables")
    p.add_argument("--out", default=str(RESULTS / "diagnostics.md"))
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.command = "python benchmarks/diagnostics.py " + " ".join(
        a if a and all(c.isalnum() or c in "-_./=" for c in a) else repr(a) for a in argv
    )
    try:
        analyze(args)
    except ValueError as e:  # bad input (an alignment file, the previous json): one line
        print(f"diagnostics: {e}", file=sys.stderr)
        return 2
    print(Path(args.out).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
