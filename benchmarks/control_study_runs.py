"""The control study's arms, runs and results: arm specs, the ``mvpo-train`` command of each run,
its compact ``result.json``, the per-arm summary over seeds (``benchmarks/control_study.py``)."""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_envs.data_files import DataFileError, load_json
from mvpo_train.stats import SMOOTH, bootstrap_ci, censored, curve_band, first_reach, moving_average
from mvpo_train.study.arms import Arm, StudyError, parse_arm, parse_arms  # noqa: F401  (the study's names)
from mvpo_train.study.runs import (
    metric_rows,
    n_metrics,
    python_entry,
    resume_flag,
    run_dir,
)
from mvpo_train.study.summary import intervals, pair_rows, paired

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV_ID = "mvpo/MilestoneChain-v0"
RESULT = "result.json"
#: metrics.jsonl key -> the compact result's curve name (None where an iteration lacks it)
CURVES = {
    "success": "success",
    "adv/zero_credit_ratio": "zero_credit_ratio",
    "adv/zero_adv_ratio": "zero_adv_ratio",
    "adv/repaired_ratio": "repaired_ratio",
}
BASELINES = ("grpo", "gigpo")
#: the trainer's alignment metrics shown in the table and plot (docs/alignment.md); every
#: ``align/*`` key is kept in the compact results
ALIGN_SHOWN = ("align/auc", "align/labelled_fraction", "align/positives", "align/negatives")


def default_pairs(arms: list[Arm]) -> list[tuple[str, str]]:
    """Each non-baseline arm minus GRPO and minus GiGPO, GiGPO minus GRPO, and an arm with
    keywords minus the plain arm of its estimator (``mvpo-paper - mvpo``)."""
    names = {a.name for a in arms}
    pairs = [(a.name, b) for a in arms if a.name not in BASELINES for b in BASELINES if b in names]
    if set(BASELINES) <= names:
        pairs.append(("gigpo", "grpo"))
    pairs += [(a.name, a.estimator) for a in arms if a.kwargs and a.estimator in names
              and a.estimator != a.name]  # fmt: skip
    return pairs


def credit_code_sha256() -> str:
    """SHA-256 over the credit estimators' sources (``mvpo_train/credit/*.py``, by name): a
    result made with other estimator code is flagged in the table (resuming does not see
    code changes)."""
    h = hashlib.sha256()
    for f in sorted((ROOT / "mvpo_train" / "credit").glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Everything a run's numbers depend on besides the arm and the seed."""
    return {
        "env_id": ENV_ID, "difficulty": args.difficulty, "num_milestones": args.num_milestones,
        "num_groups": args.num_groups, "group_size": args.group_size,
        "max_steps": args.max_steps, "iterations": args.iterations, "lr": args.lr,
        "ppo_epochs": args.ppo_epochs, "policy": "encoder", "model": "fresh",
        "eval_episodes": args.eval_episodes, "eval_max_tasks": args.eval_max_tasks,
        "extra": list(args.extra),
    }  # fmt: skip


def train_cmd(path: Path, arm: Arm, seed: int, args: argparse.Namespace) -> list[str]:
    env_kwargs = {"difficulty": args.difficulty, "num_milestones": args.num_milestones}
    cmd = [
        *python_entry("train_main"), "--preset", "cpu-tiny", "--env-id", ENV_ID,
        "--env-kwargs", json.dumps(env_kwargs), "--tasks", "[]",
        "--max-steps", str(args.max_steps), "--policy", "encoder", "--model", "fresh",
        "--num-groups", str(args.num_groups), "--group-size", str(args.group_size),
        "--ppo-epochs", str(args.ppo_epochs), "--lr", str(args.lr), *arm.flags(),
        "--seed", str(seed), "--iterations", str(args.iterations), "--run-dir", str(path),
        "--threads", "1", "--no-progress", "--no-tensorboard", "--save-every", "5",
        "--embedding-cache", str(Path(args.base) / "embeddings.npz"),
        # the held-out evaluation: in the run, after its last iteration (one model load)
        "--eval-split", "eval", "--eval-every", str(args.iterations), "--no-eval-greedy",
        "--eval-episodes", str(args.eval_episodes), "--eval-max-tasks", str(args.eval_max_tasks),
    ]  # fmt: skip
    # an interrupted run resumes from its checkpoint; a run folder without one starts over
    return cmd + resume_flag(path) + list(args.extra)


def compact_cmd(path: Path, arm: Arm, seed: int, args: argparse.Namespace) -> list[str]:
    """The command that writes the run's compact result, the last step of its script."""
    code = (
        "import json, sys; sys.path.insert(0, 'benchmarks'); import control_study as c; "
        "c.write_result(*json.loads(sys.argv[1]))"
    )
    payload = [str(path), arm.name, arm.spec(), seed, settings(args)]
    return [sys.executable, "-c", code, json.dumps(payload)]


def _num(x: Any) -> str:
    return "-" if x is None else f"{float(x):.3f}"


def write_result(path: str, arm: str, spec: dict, seed: int, conf: dict) -> dict[str, Any]:
    """The run's compact result (``result.json``) from its ``metrics.jsonl`` and held-out eval;
    refuses an incomplete run (fewer iterations than ``conf["iterations"]``)."""
    run = Path(path)
    rows = metric_rows(run)[: conf["iterations"]]
    if len(rows) < conf["iterations"]:
        raise StudyError(f"{run}: {len(rows)} of {conf['iterations']} iterations in metrics.jsonl")
    held = rows[-1]
    if "eval/success" not in held:
        raise StudyError(f"{run}: no held-out evaluation (eval/success) in its last iteration")
    curves: dict[str, list] = {name: [r.get(key) for r in rows] for key, name in CURVES.items()}
    for key in sorted({k for r in rows for k in r if k.startswith("align/")}):
        curves[key] = [r.get(key) for r in rows]
    for name, values in curves.items():  # NaN (e.g. an AUC with one class) -> null
        curves[name] = [None if v is None or not np.isfinite(v) else v for v in values]
    result = {
        "arm": arm, "spec": spec, "seed": seed, "settings": conf, "curves": curves,
        "eval": {"split": "eval", "success": float(held["eval/success"]),
                 "episodes": int(held.get("eval/episodes", 0))},
        "credit_code_sha256": credit_code_sha256(),
        "minutes": sum(float(r.get("time/total", 0.0)) + float(r.get("time/eval", 0.0))
                       for r in rows) / 60,
    }  # fmt: skip
    for i in range(len(rows)):  # the per-iteration log, into the run's train.log
        cells = [f"{name} {_num(curves[name][i])}" for name in curves if name != "repaired_ratio"]
        print(f"iteration {i + 1}: " + ", ".join(cells))
    print(f"held-out eval success {result['eval']['success']:.3f}")
    tmp = run / (RESULT + ".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(run / RESULT)
    return result


def read_result(path: Path, arm: Arm, conf: dict[str, Any]) -> dict[str, Any] | None:
    """A run's compact result, or None if it has none; one made with another spec or other
    settings raises :class:`StudyError` naming the file (never mixed into the study)."""
    f = path / RESULT
    if not f.is_file():
        return None
    try:
        res = load_json(f, "compact result")
    except DataFileError as err:
        raise StudyError(str(err)) from None
    if not isinstance(res, dict) or not isinstance(res.get("settings"), dict):
        raise StudyError(f"{f}: not a compact result of this study (no settings mapping)")
    if res.get("spec") != arm.spec():
        raise StudyError(f"{f}: made with another spec ({res.get('spec')}, this arm: "
                         f"{arm.spec()}); use another --base or --fresh to retrain")  # fmt: skip
    theirs = res["settings"]
    diff = {k: (theirs.get(k), v) for k, v in conf.items() if theirs.get(k) != v}
    diff.update({k: (v, None) for k, v in theirs.items() if k not in conf})
    if diff:
        shown = ", ".join(f"{k} {a!r} (now {b!r})" for k, (a, b) in sorted(diff.items()))
        raise StudyError(f"{f}: made with other settings: {shown}; use another --base or "
                         "--fresh to retrain")  # fmt: skip
    return res


def pending_runs(args: argparse.Namespace, arms: list[Arm]) -> list[tuple[str, Path, str]]:
    """(name, folder, shell script) of every (arm, seed) without a result, seed by seed."""
    base, conf = Path(args.base), settings(args)
    out = []
    for seed in args.seeds:
        for arm in arms:
            path = run_dir(base, arm.name, seed)
            if args.fresh and path.exists():
                shutil.rmtree(path)
            if read_result(path, arm, conf) is not None:
                continue
            cmds = []
            if n_metrics(path) < args.iterations:
                cmds.append(train_cmd(path, arm, seed, args))
            cmds.append(compact_cmd(path, arm, seed, args))
            out.append((f"{arm.name}-seed{seed}", path, " && ".join(shlex.join(c) for c in cmds)))
    return out


def _curve(results: list[dict], key: str) -> np.ndarray:
    """Seeds x iterations of one curve; NaN where a run lacks the value (or the key)."""
    n = len(results[0]["curves"]["success"]) if results else 0
    rows = []
    for r in results:
        v = r["curves"].get(key) or [None] * n
        rows.append([np.nan if x is None else float(x) for x in v])
    return np.array(rows, dtype=np.float64).reshape(len(results), n)


def _nanmean_rows(x: np.ndarray) -> list[float | None]:
    """Mean over seeds (rows) per iteration, ignoring missing values; None where all are."""
    out: list[float | None] = []
    for col in x.T:
        ok = col[np.isfinite(col)]
        out.append(float(ok.mean()) if ok.size else None)
    return out


def per_seed(res: dict[str, Any], threshold: float) -> dict[str, Any]:
    succ = np.asarray(res["curves"]["success"], dtype=np.float64)
    zc = _curve([res], "zero_credit_ratio")[0]
    return {
        "auc": float(succ.mean()),
        "first": float(succ[:SMOOTH].mean()),
        "final": float(succ[-SMOOTH:].mean()),
        "reach": first_reach(succ, threshold),
        "zero_credit_early": float(np.nanmean(zc[:SMOOTH])) if np.isfinite(zc).any() else None,
        "eval": res["eval"]["success"],
        "minutes": res["minutes"],
    }


def summarize(results: dict[str, dict[int, dict]], threshold: float, iterations: int,
              pairs: list[tuple[str, str]]) -> dict[str, Any]:  # fmt: skip
    """Per arm: curves with bands and per-seed values with CIs; per pair: paired differences
    over seeds both arms finished (the success-curve difference with a band too)."""
    table: dict[str, Any] = {"arms": {}, "pairs": {}}
    for arm, runs in results.items():
        if not runs:
            continue
        seeds = sorted(runs)
        rs = [runs[s] for s in seeds]
        vals = {s: per_seed(runs[s], threshold) for s in seeds}
        mean, lo, hi = curve_band(moving_average(_curve(rs, "success")))
        row: dict[str, Any] = {
            "spec": rs[0]["spec"], "seeds": seeds, "per_seed": {str(s): vals[s] for s in seeds},
            "curve": mean.tolist(), "curve_lo": lo.tolist(), "curve_hi": hi.tolist(),
            "reached": sum(vals[s]["reach"] is not None for s in seeds),
        }  # fmt: skip
        keys = sorted({k for r in rs for k in r["curves"]} - {"success"})
        row["curves"] = {k: _nanmean_rows(_curve(rs, k)) for k in keys}
        keys = ("auc", "first", "final", "zero_credit_early", "eval", "minutes")
        row.update(intervals((vals[s] for s in seeds), keys))
        row["reach"] = bootstrap_ci([censored(vals[s]["reach"], iterations) for s in seeds])
        table["arms"][arm] = row
    for a, b in pairs:
        if (both := pair_rows(table["arms"], a, b)) is None:
            continue
        common, pa, pb = both
        entry: dict[str, Any] = {"seeds": common}
        entry.update(paired(pa, pb, ("auc", "final", "eval", "reach"), iterations))
        diff = moving_average(
            _curve([results[a][s] for s in common], "success")
            - _curve([results[b][s] for s in common], "success")
        )
        m, lo, hi = curve_band(diff)
        entry.update(curve=m.tolist(), curve_lo=lo.tolist(), curve_hi=hi.tolist())
        table["pairs"][f"{a} - {b}"] = entry
    return table


def load_results(args: argparse.Namespace, arms: list[Arm]) -> dict[str, dict[int, dict]]:
    base, conf = Path(args.base), settings(args)
    out: dict[str, dict[int, dict]] = {}
    for arm in arms:
        out[arm.name] = {}
        for seed in args.seeds:
            res = read_result(run_dir(base, arm.name, seed), arm, conf)
            if res is not None:
                out[arm.name][seed] = res
    return out
