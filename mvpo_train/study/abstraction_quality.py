"""How a learned abstraction compares with an env's rule abstraction on played episodes
(``benchmarks/learned_abstraction.py``; docs/abstractions.md).

Each episode (its states, return, won flag, task group and whether the expert played it) is
replayed through both abstractions (:func:`label`); :func:`compare` fits the learned one
(k-means signatures + learned milestones) on the fit episodes and reports, on the held-out ones,
milestone agreement on expert episodes (:func:`agreement`), grouping (:func:`grouping`) and the
separation of won from lost trajectories by MVPO's region potential (:func:`phi_separation`);
:func:`markdown` writes the table.
"""

from __future__ import annotations

import argparse
import platform
import time
from typing import Any

import numpy as np

from mvpo_abstraction.base import Abstraction, AbstractionTracker
from mvpo_abstraction.learned import EmbeddingClusterAbstraction
from mvpo_abstraction.learned_milestones import MilestoneLearner
from mvpo_train.credit.potential import region_potential, viability_values
from mvpo_train.credit.regions import viability_regions
from mvpo_train.stats import auc

__all__ = ["COLUMNS", "Episode", "agreement", "compare", "grouping", "label", "markdown",
           "phi_separation"]  # fmt: skip

Episode = dict[str, Any]  # states, return, won, group, expert


def label(episodes: list[Episode], abstraction: Abstraction) -> list[dict[str, list]]:
    """Replay each episode's states through a tracker: signature of the state each action was
    taken in, milestones fired by the transition (the rollout collector's convention)."""
    out = []
    for ep in episodes:
        tracker = AbstractionTracker(abstraction)
        sigs, ms = [tracker.reset(ep["states"][0])["signature"]], []
        for s in ep["states"][1:]:
            f = tracker.step(s, "")
            sigs.append(f["signature"])
            ms.append(tuple(f["milestones"]))
        out.append({"signature": sigs[:-1], "milestones": ms})
    return out


def agreement(
    episodes: list[Episode], rules: list[dict[str, list]], learned: list[dict[str, list]]
) -> dict[str, float]:
    """On expert episodes: step-level precision (share of learned firings at a step where some
    rule milestone fires), recall (share of rule-firing steps where some learned milestone
    fires) and the share of episodes with at least one learned firing."""
    tp_l = n_l = tp_r = n_r = 0
    any_fired = n_exp = 0
    for ep, r, lrn in zip(episodes, rules, learned, strict=True):
        if not ep["expert"]:
            continue
        n_exp += 1
        rs = {t for t, m in enumerate(r["milestones"]) if m}
        ls = {t for t, m in enumerate(lrn["milestones"]) if m}
        any_fired += bool(ls)
        n_l += len(ls)
        tp_l += len(ls & rs)
        n_r += len(rs)
        tp_r += len(rs & ls)
    p = tp_l / n_l if n_l else float("nan")
    rc = tp_r / n_r if n_r else float("nan")
    return {"precision": p, "recall": rc, "expert_eps_with_firing": any_fired / max(n_exp, 1)}


def grouping(episodes: list[Episode], labels: list[dict[str, list]]) -> dict[str, float]:
    """Steps per distinct ``(task group, signature)`` and the number of distinct signatures."""
    keys = [
        (ep["group"], s) for ep, lab in zip(episodes, labels, strict=True) for s in lab["signature"]
    ]
    return {"steps_per_class": len(keys) / len(set(keys)), "signatures": len({k[1] for k in keys})}


def phi_separation(
    episodes: list[Episode], labels: list[dict[str, list]], names: list[str]
) -> dict[str, float]:
    """MVPO's region potential (milestones weighted uniformly), averaged over a trajectory's
    steps: AUC of won vs not-won trajectories and the difference of their means."""
    sig, traj, t, grp, ms, last, ret = [], [], [], [], [], [], []
    for i, (ep, lab) in enumerate(zip(episodes, labels, strict=True)):
        n = len(lab["signature"])
        sig += lab["signature"]
        ms += lab["milestones"]
        traj += [i] * n
        t += list(range(n))
        grp += [ep["group"]] * n
        last += [k == n - 1 for k in range(n)]
        ret += [float(ep["won"])] * n
    traj_a, t_a = np.asarray(traj), np.asarray(t)
    w = {n: 1.0 / max(len(names), 1) for n in names}
    m = np.asarray([sum(w.get(x, 0.0) for x in row) for row in ms])
    region = viability_regions(np.asarray(sig, dtype=object), traj_a, t_a, np.asarray(grp))
    v, _ = viability_values(m, traj_a, t_a, np.asarray(last), np.asarray(ret))
    phi, _ = region_potential(region, traj_a, v)
    per_traj = np.bincount(traj_a, weights=phi[region]) / np.bincount(traj_a)
    won = np.asarray([ep["won"] for ep in episodes])
    return {
        "auc": auc(per_traj[won], per_traj[~won]),
        "gap": float(per_traj[won].mean() - per_traj[~won].mean()),
    }


def compare(
    name: str,
    fit_eps: list[Episode],
    test_eps: list[Episode],
    rules: Abstraction,
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    """The rows of env ``name``: the rule abstraction's, then the learned one's (fitted on
    ``fit_eps`` with ``args.k``, ``args.top_k``, ``args.min_support``, ``args.seed``), both
    measured on ``test_eps``."""
    t0 = time.perf_counter()
    learned = EmbeddingClusterAbstraction(
        k=args.k,
        milestones_from="learned",
        seed=args.seed,
        learner=MilestoneLearner(top_k=args.top_k, min_support=args.min_support, seed=args.seed),
    ).fit_episodes([e["states"] for e in fit_eps], [e["return"] for e in fit_eps])
    fit_s = time.perf_counter() - t0
    rows = []
    lab_rules, lab_learned = label(test_eps, rules), label(test_eps, learned)
    for abs_name, lab, names in (
        (f"rules ({rules.name})", lab_rules, rules.milestone_names),
        ("learned", lab_learned, learned.milestone_names),
    ):
        row = {"env": name, "abstraction": abs_name, "milestones": len(names)}
        row.update(grouping(test_eps, lab))
        row.update(phi_separation(test_eps, lab, names))
        rows.append(row)
    rows[1].update(agreement(test_eps, lab_rules, lab_learned))
    rows[1]["fit_s"] = fit_s
    rows[1]["names"] = learned.milestone_names
    return rows


#: the columns of the table, in order
COLUMNS = ("env", "abstraction", "milestones", "steps_per_class", "signatures", "auc", "gap",
           "precision", "recall", "expert_eps_with_firing")  # fmt: skip


def _cell(x: Any) -> str:
    if isinstance(x, float):
        return "n/a" if np.isnan(x) else f"{x:.3f}"
    return str(x)


def markdown(
    rows: list[dict[str, Any]],
    counts: dict[str, tuple[int, int, float]],
    cmd: str,
    cpu: str | None = None,
) -> str:
    """The results page: the command, the episode counts per env (fit, held-out, held-out won
    share), the table (:data:`COLUMNS`) and the learned milestones; ``cpu``: the machine that
    ran it (default: this one)."""
    cpu = cpu or platform.processor() or platform.machine()
    lines = [
        "# Learned vs hand-written abstraction",
        "",
        f"Command: `{cmd}` (CPU: {cpu}). "
        "Method: `benchmarks/learned_abstraction.py` docstring and docs/abstractions.md.",
        "",
        "Episodes (fit / held-out, held-out won share): "
        + "; ".join(f"{k} {a} / {b}, {w:.2f}" for k, (a, b, w) in counts.items()),
        "",
        "| env | abstraction | milestones | steps per (group, signature) | distinct signatures "
        "| Phi AUC won vs not | Phi gap | precision vs rules | recall vs rules "
        "| expert eps with a firing |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append("| " + " | ".join(_cell(r.get(k, "-")) for k in COLUMNS) + " |")
    lines += ["", "Learned milestones (fit split):", ""]
    for r in rows:
        if "names" in r:
            lines.append(f"- {r['env']}: " + ", ".join(f"`{n}`" for n in r["names"]))
            lines.append(f"  (fit time {r['fit_s']:.0f} s, encoder on CPU)")
    return "\n".join(lines) + "\n"


def page(figures: dict[str, Any]) -> str:
    """:func:`markdown` of a run's figures (``rows``, ``counts``, ``command``, ``cpu``: the
    JSON ``benchmarks/learned_abstraction.py`` keeps beside its page)."""
    return markdown(figures["rows"], figures["counts"], figures["command"], figures["cpu"])
