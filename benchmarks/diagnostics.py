"""The seeds' training diagnostics, measured and drawn: GRPO vs GiGPO vs MVPO on ALFWorld and WebShop.

From the runs on disk (each run folder: ``metrics.jsonl``, one JSON line per iteration, and
``config.yaml``), per environment:

* zero-advantage ratio (rows whose advantage is exactly 0) and zero-credit ratio (rows of
  step groups whose returns do not vary) over the first iterations, per estimator: mean over
  seeds and the per-seed spread (docs/estimators.md §2/§3.7);
* MVPO's kappa and EMA success over training;
* MVPO's mean prefix potential Phi of successful vs failed trajectories over training, and the
  check whether the sign of the gap ever flips;
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

Run sets:

* ``alfworld``: the learning sweep of ``python benchmarks/learning.py`` (its defaults), run
  folders ``runs/learning-study/<arm>-seed<k>/`` with arms ``grpo``, ``gigpo``, ``mvpo``,
  ``mvpo-learned``; this script never trains them. While the study is incomplete, the
  sweep's smoke runs (``--quick``, ``runs/learning-quick/``) are shown too, as the set
  ``alfworld-quick`` marked as a preview.
* ``webshop`` and ``webshop-score`` (``--run-webshop``): GRPO, GiGPO and MVPO on WebShop
  (bundled catalog, default ``train`` split, 15-step episodes, 8 tasks x 8 rollouts), same
  seeds, only ``--estimator`` differing, 5 iterations, one process at a time under
  ``nice -n 15`` with one torch thread, into ``runs/diagnostics-webshop/<estimator>-seed<k>/``
  (the seeds' reward: 1 for a won episode, else 0, as verl-agent's WebShop) and
  ``runs/diagnostics-webshop/score/<estimator>-seed<k>/`` (WebShop's own score reward).
  Resumable: a finished run is skipped, an interrupted one continues with
  ``mvpo-train --resume``.

  The policy is the encoder scorer (docs/policies.md) with a fresh head (its first scores
  barely differ: close to uniform over the admissible actions). No warm start (the runs were
  made before WebShop had the ``expert_actions`` hook that ``python -m
  mvpo_train.encoder_policy`` reads, docs/webshop.md "Expert plans"). Two things stopped the
  trainer's score mode on ``mvpo/WebShop-v0`` as it was, and were bridged here:

  - the search page's one admissible action is the template ``search[<query>]``, which a
    score-mode policy can only send literally (a search for "<query>": no results, success
    0; the trainer now refuses it). The runs use the env id
    ``mvpo-diag/WebShop-InstructionSearch-v0`` registered here: ``mvpo/WebShop-v0`` with
    ``search_query="instruction"`` (the template in ``info["admissible_actions"]`` filled with
    the task's instruction, the query WebShop's own random player sends,
    ``mvpo_envs.webshop.expert.random_episode``; docs/webshop.md "Score mode"; this script's
    earlier wrapper did the same, step for step) and the reward chosen by the keyword
    ``diag_reward`` (``"success"`` | ``"original"``);
  - the encoder policy splits its prompt at the tokenizer's ``[SEP]`` id, which WebShop's
    ``" [SEP] "``-joined observations also produce: :func:`literal_sep_workaround`.

Commands (from the repository root)::

    python benchmarks/learning.py                      # the ALFWorld sweep (the lead's)
    python benchmarks/diagnostics.py --run-webshop     # WebShop runs (~10 min), then analysis
    python benchmarks/diagnostics.py --analyze-only    # rebuild md + figures from the runs
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ALFWORLD_BASE = ROOT / "runs" / "learning-study"
WEBSHOP_BASE = ROOT / "runs" / "diagnostics-webshop"
ALFWORLD_ARMS = ("grpo", "gigpo", "mvpo", "mvpo-learned")
WEBSHOP_ARMS = ("grpo", "gigpo", "mvpo")
DIAG_WEBSHOP_ID = "mvpo-diag/WebShop-InstructionSearch-v0"
SEARCH_TEMPLATE = "search[<query>]"
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
#: the seeds' numbers (issue text of the MVPO paper's diagnostics) shown next to ours
SEEDS_ZERO_ADV_WEBSHOP = {"grpo": ">0.90", "gigpo": "~0.65"}
SEEDS_KAPPA = {
    "alfworld": "1 -> ~0.2 (EMA success 0.82)",
    "webshop": "1 -> ~0.4 (EMA success 0.61)",
}


# ====================================================================== WebShop env for score mode


def make_instruction_search_webshop(diag_reward: str = "success", **kwargs: Any) -> Any:
    """``mvpo/WebShop-v0`` with ``search_query="instruction"``: the admissible
    ``search[<query>]`` template filled with the task's instruction (module docstring).
    ``diag_reward``: ``"success"`` = the seeds' rule (verl-agent's WebShop worker: reward only
    for a won episode; 1.0 here, as ALFWorld's), ``"original"`` = WebShop's score at the
    purchase. Everything else is the env's own."""
    import gymnasium as gym

    if diag_reward not in ("success", "original"):
        raise ValueError(f"diag_reward must be 'success' or 'original', got {diag_reward!r}")

    from mvpo_envs.webshop.env import WebShopEnv

    class DiagReward(gym.Wrapper):
        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
            obs, reward, terminated, truncated, info = self.env.step(action)
            if diag_reward == "success":
                reward = 1.0 if (terminated and info.get("won")) else 0.0
            return obs, reward, terminated, truncated, info

    return DiagReward(WebShopEnv(**{"search_query": "instruction", **kwargs}))


def register_diag_envs() -> None:
    """Register :data:`DIAG_WEBSHOP_ID` (15 steps, as ``mvpo/WebShop-v0``); idempotent."""
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the mvpo ids)

    if DIAG_WEBSHOP_ID not in gym.registry:
        gym.register(
            id=DIAG_WEBSHOP_ID,
            entry_point=make_instruction_search_webshop,
            max_episode_steps=gym.spec("mvpo/WebShop-v0").max_episode_steps,
        )


# ====================================================================== WebShop runs


@dataclass
class WebShopSet:
    """One WebShop run set: its name in the md, folder, reward and seeds."""

    name: str
    base: Path
    reward: str  # diag_reward: "success" | "original"
    seeds: list[int]


def webshop_sets(args: argparse.Namespace) -> list[WebShopSet]:
    """The WebShop run sets: the main one (the seeds' success reward), then WebShop's own
    score reward (``<base>/score``)."""
    base = Path(args.webshop_base)
    return [
        WebShopSet("webshop", base, "success", list(args.webshop_seeds)),
        WebShopSet("webshop-score", base / "score", "original", list(args.webshop_score_seeds)),
    ]


def webshop_train_cmd(
    path: Path, estimator: str, seed: int, ws: WebShopSet, args: argparse.Namespace
) -> list[str]:
    """The ``mvpo-train`` flags of one WebShop run (through this script's ``--train-child``)."""
    cmd = [
        "nice", "-n", "15", sys.executable, str(Path(__file__).resolve()), "--train-child", "--",
        "--env-id", DIAG_WEBSHOP_ID, "--env-kwargs", json.dumps({"diag_reward": ws.reward}),
        "--policy", "encoder", "--model", "fresh",
        "--estimator", estimator, "--seed", str(seed), "--tasks", "[]",
        "--max-steps", "15", "--num-groups", str(args.num_groups),
        "--group-size", str(args.group_size), "--iterations", str(args.iterations),
        "--lr", str(args.lr), "--run-dir", str(path), "--threads", "1",
        "--no-progress", "--no-tensorboard", "--save-every", "1",
    ]  # fmt: skip
    if (path / "checkpoints" / "LATEST").is_file():
        cmd.append("--resume")
    elif path.exists() and any(path.iterdir()):
        cmd.append("--overwrite")
    return cmd


def n_lines(path: Path) -> int:
    f = path / "metrics.jsonl"
    return sum(1 for x in f.open() if x.strip()) if f.is_file() else 0


def run_webshop(args: argparse.Namespace) -> None:
    """Train every (estimator, seed) WebShop run not finished yet, one process at a time."""
    t_start = time.time()
    jobs = [
        (ws.base / f"{est}-seed{seed}", est, seed, ws)
        for ws in webshop_sets(args)
        for seed in ws.seeds
        for est in WEBSHOP_ARMS
    ]
    for path, est, seed, ws in jobs:
        if n_lines(path) >= args.iterations:
            print(f"[skip]  {path}: {args.iterations} iterations done", flush=True)
            continue
        path.mkdir(parents=True, exist_ok=True)
        cmd = webshop_train_cmd(path, est, seed, ws, args)
        print(f"[start] {path}: {' '.join(cmd[5:])}", flush=True)
        t0 = time.time()
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
        with open(path / "train.log", "a") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=log, cwd=ROOT, env=env).returncode
        status = "ok" if rc == 0 else f"FAILED ({rc}, see {path}/train.log)"
        print(f"[done]  {path} in {time.time() - t0:.0f} s: {status}", flush=True)
        if rc != 0:
            raise SystemExit(f"WebShop run {path.name} failed ({rc}); see {path}/train.log")
    print(f"WebShop runs: {time.time() - t_start:.0f} s wall in this call", flush=True)


def literal_sep_workaround() -> bool:
    """Make the encoder policy read a literal ``[SEP]`` in a text as text; True if needed.

    WebShop's observations join the page's strings with ``" [SEP] "``; the MiniLM tokenizer
    turns that text into its special separator id, which the encoder policy uses to split a
    prompt into (task, observation, previous action), so every WebShop prompt fails with
    "prompt ids have N segments, expected 3". Until ``SegmentEmbedder.ids`` tokenizes with
    ``split_special_tokens=True`` itself, this process patches it to do so (ALFWorld's texts
    hold no ``[SEP]``: their ids are unchanged). Applied only when the package still has
    the behaviour, so the patch disappears once the package is fixed.
    """
    from mvpo_train.encoder_policy import SegmentEmbedder

    if getattr(SegmentEmbedder.ids, "_diag_patched", False):
        return True
    emb = SegmentEmbedder.__new__(SegmentEmbedder)
    from transformers import AutoTokenizer

    from mvpo_abstraction.learned import default_embedding_model_path

    emb.tokenizer = AutoTokenizer.from_pretrained(default_embedding_model_path())
    if emb.tokenizer.sep_token_id not in SegmentEmbedder.ids(emb, "a [SEP] b", 16):
        return False

    def ids(self: Any, text: str, limit: int) -> list[int]:
        enc = self.tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)
        return list(enc)[:limit]

    ids._diag_patched = True  # type: ignore[attr-defined]
    SegmentEmbedder.ids = ids  # type: ignore[method-assign]
    return True


def train_child(argv: Sequence[str]) -> int:
    """``mvpo-train`` with :data:`DIAG_WEBSHOP_ID` registered (and the ``[SEP]`` workaround)."""
    register_diag_envs()
    if literal_sep_workaround():
        print(
            "diagnostics: encoder tokenizer reads literal '[SEP]' as text (workaround)", flush=True
        )
    from mvpo_train.cli import train_main

    return train_main(list(argv))


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


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The rows of ``path/metrics.jsonl`` (a torn last line of a running job is dropped)."""
    rows = []
    lines = (path / "metrics.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:  # being written right now
                break
            raise ValueError(f"{path}/metrics.jsonl line {i + 1} is not JSON") from None
    return rows


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


def load_runset(env: str, base: Path, arms: Iterable[str], seeds: Iterable[int]) -> RunSet:
    rs = RunSet(env=env, base=base, arms=tuple(arms), seeds=tuple(seeds))
    for arm in rs.arms:
        for seed in rs.seeds:
            path = base / f"{arm}-seed{seed}"
            if (path / "metrics.jsonl").is_file():
                rows = derive(read_metrics(path))
                if rows:
                    cfg = read_config(path)
                    it = cfg.get("iterations")
                    planned = int(it) if isinstance(it, int) else None
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
    """Per iteration up to the longest run: mean, min and max over the seeds that have that
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


# ====================================================================== figures


def plot(rs: RunSet, out: Path, early: int) -> bool:
    """Six panels for one run set; False (nothing drawn) when no run was found."""
    if not rs.found():
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, 3, figsize=(12.5, 6.8))
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
    if "mvpo" in mv:
        by_seed = rs.rows("mvpo")
        for j, m in enumerate(milestones(by_seed)):
            band(axes[1, 2], "mvpo", f"adv/amp_weights/{m}", m, color=f"C{j}")
    titles = [
        ("zero-advantage ratio", "share of rows"),
        ("zero-credit ratio", "share of rows"),
        ("MVPO kappa (solid) and EMA success (dashed)", ""),
        ("grouping ratio: step groups (dashed), MVPO regions (solid)", "share of rows"),
        ("MVPO mean prefix potential Phi per trajectory", "Phi"),
        ("MVPO AMP weights per milestone (arm mvpo)", "weight"),
    ]
    for ax, (title, ylab) in zip(axes.flat, titles, strict=True):
        ax.set(title=title, xlabel="iteration", ylabel=ylab)
        ax.title.set_fontsize(10)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
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
    per = ", ".join(f"{v:.3f}" for _, v in sorted(d["per_seed"].items()))
    return f"{d['mean']:.3f} ({d['min']:.3f}..{d['max']:.3f}; {per})"


#: one line under each run set's heading
SET_NOTES = {
    "alfworld": "ALFWorld: the learning sweep's runs (its settings are in "
    "`benchmarks/results/learning.md`).",
    "alfworld-quick": "ALFWorld: the learning sweep's smoke runs.",
    "webshop": "WebShop, the seeds' reward: 1.0 for a won episode, else 0 (verl-agent's WebShop "
    "rule, there 10 for a win), so a group without a win has zero advantage under GRPO.",
    "webshop-score": "WebShop, WebShop's own reward (the env default): the purchase's score "
    "in [0, 1] (partial credit), so a GRPO group has zero advantage only when its scores are "
    "all equal.",
}


def markdown_section(s: dict[str, Any], png: str | None, command: str) -> list[str]:
    env = s["env"]
    early = s.get("early", 0)
    lines = [f"## {env}", "", SET_NOTES.get(env, ""), ""]
    lines.append(f"Runs: `{s['base_rel']}/<arm>-seed<k>/`, made by `{command}`.")
    lines.append("")
    if s.get("note"):
        lines += [s["note"], ""]
    if not s["found"]:
        return lines + ["**Not run yet**: no run folder with metrics was found.", ""]
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
    seeds_col = env == "webshop"
    head = (
        f"| estimator | seeds in the window, of found | iterations | zero-advantage ratio, it. 1 "
        f"| zero-advantage ratio, first {early} it. (min..max; per seed) "
        f"| zero-credit ratio, first {early} it. | batch success, it. 1 "
        f"| batch success, first {early} it. |"
    )
    sep = "|---|---|---|---|---|---|---|---|"
    if seeds_col:
        head += " seeds' paper, early |"
        sep += "---|"
    lines += [f"### Zero-advantage and zero-credit ratio, first {early} iterations", "", head, sep]
    for arm, a in arms.items():
        row = (
            f"| {arm} | {len(a['early_seeds'])} of {len(a['seeds'])} "
            f"| {min(a['iterations'])}..{max(a['iterations'])} "
            f"| {_f(a.get('zero_adv_first_iteration'))} | {_spread(a.get('adv/zero_adv_ratio'))} "
            f"| {_spread(a.get('adv/zero_credit_ratio'))} | {_f(a.get('success_first_iteration'))} "
            f"| {_spread(a.get('success'))} |"
        )
        if seeds_col:
            row += f" {SEEDS_ZERO_ADV_WEBSHOP.get(arm, '-')} |"
        lines.append(row)
    lines.append("")
    # --- kappa / EMA / grouping
    lines += [
        "### kappa, EMA success and grouping ratios (mean over seeds, first -> last iteration)",
        "",
        "Last = the longest run's last iteration, mean over the seeds that have reached it.",
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
        f"Seeds' paper: kappa {SEEDS_KAPPA.get(env.split('-')[0], '-')} over 150 iterations."
    )
    lines.append("")
    # --- Phi
    lines += ["### Prefix potential Phi: successful vs failed trajectories", ""]
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
            f"(seed, iteration): {p['flips'][:12]}{' ...' if len(p['flips']) > 12 else ''}"
        )
        lines.append(
            f"* `{arm}`: {p['iterations_with_both']} (seed, iteration) pairs with both kinds; "
            f"gap Phi(success) - Phi(failure) mean {_f(p['gap_mean'])}, min {_f(p['gap_min'])}; "
            f"the sign {verdict}."
        )
    if not any_phi:
        lines.append("No MVPO run in this set.")
    lines.append("")
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
    import platform

    lines = [
        "# Training diagnostics: GRPO vs GiGPO vs MVPO (ALFWorld and WebShop)",
        "",
        "Built by `python benchmarks/diagnostics.py --analyze-only` from the runs on disk "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
        f"{os.cpu_count()} CPU cores); the WebShop runs by "
        "`python benchmarks/diagnostics.py --run-webshop`, the ALFWorld runs by "
        "`python benchmarks/learning.py`. Every number below is read from the runs' "
        "`metrics.jsonl`.",
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
        "left out of these. Figures: per iteration, mean over the seeds that have it, band = "
        "min..max over them.",
        "",
    ]
    web = next((s for s in summaries if s["env"] == "webshop"), None)
    if web is not None:
        lines += [
            "WebShop setting (both WebShop sets; every field in each set's settings line): "
            f"`{DIAG_WEBSHOP_ID}` is registered by this script: `mvpo/WebShop-v0` with its "
            "bundled catalog, split, 15-step episodes, protocol and abstraction, except that the "
            "search template `search[<query>]` is filled with the task's instruction (a "
            "score-mode policy cannot write a query, and the literal template finds nothing) "
            "and the reward is chosen by `diag_reward`; the encoder's tokenizer reads the "
            "observations' literal `[SEP]` as text (as the package's encoder policy does since "
            "it was fixed; the runs were made with the script's bridge, the same ids). Policy: the encoder scorer with a fresh "
            "head (`--policy encoder --model fresh`, no warm start: the runs predate WebShop's "
            "`expert_actions` hook, and a fresh head gives the near-uniform start of the seeds' "
            "WebShop regime), one torch thread, only `--estimator` differing; a seed "
            "gives the three estimators the same first batch. Success = `won` (WebShop score "
            "1.0); its value at iteration 1 is the policy's initial success.",
            "",
        ]
    for s in summaries:
        lines += markdown_section(s, pngs.get(s["env"]), s["command"])
    out.write_text("\n".join(lines) + "\n")


# ====================================================================== main


def analyze(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    alf = load_runset("alfworld", Path(args.alfworld_base), ALFWORLD_ARMS, args.alfworld_seeds)
    commands = {"alfworld": "python benchmarks/learning.py"}
    notes: dict[str, str] = {}
    sets = [alf]
    if args.alfworld_preview and (not alf.found() or alf.partial_notes()):
        quick = load_runset("alfworld-quick", Path(args.alfworld_preview), ALFWORLD_ARMS, [0])
        if quick.found():  # the study is not complete: its smoke sweep as a preview
            notes["alfworld-quick"] = (
                f"**Preview only**, shown while the study (`{_rel(alf.base)}`) is incomplete: "
                "the sweep's smoke runs (one seed, a few iterations, otherwise the study's "
                "settings). Rerun `--analyze-only` when the study is complete; this section "
                "then goes."
            )
            commands["alfworld-quick"] = "python benchmarks/learning.py --quick"
            sets.append(quick)
    sets += [load_runset(ws.name, ws.base, WEBSHOP_ARMS, ws.seeds) for ws in webshop_sets(args)]
    summaries, pngs = [], {}
    for rs in sets:
        s = summarize(rs, args.early)
        s["command"] = commands.get(rs.env, "python benchmarks/diagnostics.py --run-webshop")
        s["note"] = notes.get(rs.env, "")
        s["base_rel"] = _rel(rs.base)
        png = out.parent / f"{out.stem}_{rs.env}.png"
        drawn = plot(rs, png, s["early"])
        if not drawn:
            png.unlink(missing_ok=True)  # never a figure of runs that are gone
        pngs[rs.env] = png.name if drawn else None
        summaries.append(s)
    for name in ("alfworld", "alfworld-quick", *(ws.name for ws in webshop_sets(args))):
        if name not in pngs:  # a set not shown this time: never a figure of it left behind
            (out.parent / f"{out.stem}_{name}.png").unlink(missing_ok=True)
    write_markdown(summaries, args, out, pngs)
    out.with_suffix(".json").write_text(json.dumps(summaries, indent=1, default=float) + "\n")
    return summaries


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
    p.add_argument("--run-webshop", action="store_true",
                   help="train the WebShop runs not finished yet, then analyse")  # fmt: skip
    p.add_argument("--analyze-only", action="store_true",
                   help="only rebuild the md, json and figures from the runs on disk")  # fmt: skip
    p.add_argument("--alfworld-base", default=str(ALFWORLD_BASE), help="ALFWorld sweep folder")
    p.add_argument("--alfworld-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--alfworld-preview", default=str(ROOT / "runs" / "learning-quick"),
                   help="shown as a preview set while the --alfworld-base study is incomplete: "
                   "the sweep's `--quick` runs; '' for none")  # fmt: skip
    p.add_argument("--webshop-base", default=str(WEBSHOP_BASE), help="WebShop runs folder")
    p.add_argument("--webshop-seeds", nargs="+", type=int, default=[0, 1, 2],
                   help="seeds of the main WebShop set (the seeds' success reward)")  # fmt: skip
    p.add_argument("--webshop-score-seeds", nargs="*", type=int, default=[0, 1, 2],
                   help="seeds of the WebShop set with WebShop's score reward (none: skip)")  # fmt: skip
    p.add_argument("--iterations", type=int, default=5, help="WebShop iterations per run")
    p.add_argument("--num-groups", type=int, default=8, help="WebShop tasks per iteration")
    p.add_argument("--group-size", type=int, default=8, help="WebShop rollouts per task")
    p.add_argument("--lr", type=float, default=1e-3, help="WebShop runs' learning rate")
    p.add_argument("--early", type=int, default=5, help="'first iterations' of the tables")
    p.add_argument("--out", default=str(RESULTS / "diagnostics.md"))
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--train-child"]:
        rest = argv[1:]
        return train_child(rest[1:] if rest[:1] == ["--"] else rest)
    args = build_parser().parse_args(argv)
    if args.run_webshop and args.analyze_only:
        print("--run-webshop and --analyze-only exclude each other", file=sys.stderr)
        return 2
    if args.run_webshop:
        run_webshop(args)
    analyze(args)
    print(Path(args.out).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
