"""Run sets on disk and their statistics over seeds: what the training diagnostics of a study
draw (``benchmarks/diagnostics.py``; docs/estimators.md §2, §3.7).

A run set is ``<base>/<arm>-seed<k>/`` folders, each with ``metrics.jsonl`` (read with
:func:`mvpo_train.metrics.read_metrics`) and ``config.yaml``. :func:`load_runset` reads one,
:func:`summarize` gives every number of its section (per arm: early zero-advantage and
zero-credit ratios per seed, first -> last of kappa, EMA success, step grouping and the
milestone weights, MVPO's potential checks, the time per phase), :func:`settings` the config
fields its runs share and those that differ. :func:`read_alignment` and
:func:`alignment_summary` read the step-level alignment files of ``benchmarks/alignment.py``,
:func:`belongs` says which set holds the run of one. Nothing here names an env.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.metrics import read_metrics

__all__ = [
    "ALIGNMENT_CMD",
    "PHASES",
    "PHI_SPLIT",
    "PHI_SPLIT_ROWS",
    "SETTINGS",
    "STEP_GROUPING",
    "Run",
    "RunSet",
    "alignment_summary",
    "belongs",
    "curve",
    "derive",
    "early_per_seed",
    "has_key",
    "load_runset",
    "milestones",
    "phase_table",
    "phi_sign_check",
    "phi_split_summary",
    "read_alignment",
    "read_config",
    "rel_path",
    "run_key",
    "series",
    "settings",
    "summarize",
    "value",
]

#: the trainer's non-circular statistic of MVPO's potential (docs/estimators.md §3.7)
PHI_SPLIT = "adv/phi_split_spearman_failed"
PHI_SPLIT_ROWS = "adv/phi_split_rows"
#: the command whose ``--json`` files :func:`read_alignment` reads
ALIGNMENT_CMD = "python benchmarks/alignment.py --run-dir RUN --relabel --json OUT"
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


def alignment_summary(doc: dict[str, Any], path: Path, root: Path) -> dict[str, Any]:
    """Per variant: iterations scored, those with an AUC (NaN where the repaired rows' known
    labels are all of one kind, docs/alignment.md "The measure"), the AUC's mean over them,
    min, max, the mean repaired rows per iteration, and the curve for the figure; ``file`` is
    ``path`` relative to ``root``."""
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
        "file": rel_path(Path(path), root),
        "run": doc["run"],
        "name": Path(doc["run"]).name,
        "variants": variants,
        "unverified_trajectories": doc.get("unverified_trajectories"),
        "trajectories": doc.get("trajectories"),
        "command": doc.get("command") or "",
    }


def run_key(run: str, root: Path) -> tuple[Path, str, int] | None:
    """``(folder holding the run, arm, seed)`` of a run folder ``.../<arm>-seed<k>`` (a
    relative path is read from ``root``); None for another name."""
    p = Path(run) if Path(run).is_absolute() else root / run
    m = re.fullmatch(r"(.+)-seed(\d+)", p.name)
    return (p.resolve().parent, m.group(1), int(m.group(2))) if m else None


def belongs(al: dict[str, Any], bases: Iterable[Path], arms: Iterable[str], root: Path) -> bool:
    """Whether an alignment file's run is ``<base>/<arm>-seed<k>`` of a set: ``bases`` are the
    set's folder and its study's default folder, so a file made on the live runs matches the
    set drawn from their compact copies too (a relative run path is read from ``root``)."""
    key = run_key(al["run"], root)
    return key is not None and key[1] in arms and key[0] in {b.resolve() for b in bases}


def rel_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it, else absolute."""
    p = Path(path).resolve()
    return str(p.relative_to(root)) if p.is_relative_to(root) else str(p)
