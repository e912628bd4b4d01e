"""Benchmark: learned vs hand-written abstraction on ALFWorld and WebShop (docs/abstractions.md).

For each environment, episodes of three behaviours per task (the expert, the expert cut two
steps short then random, random; ``--per-task`` episodes per task, cycling) are played on a fit
split and on a held-out split. The learned abstraction (k-means signatures + learned
milestones) is fitted on the fit split and replayed, like the env's rule abstraction, on the
held-out episodes. Reported on the held-out episodes:

* **milestone agreement on expert episodes**: step-level precision (share of learned firings at
  a step where some rule milestone fires), recall (share of rule-firing steps where some
  learned milestone fires) and the share of expert episodes with at least one learned firing;
* **grouping**: steps per distinct ``(task group, signature)`` (higher = more sharing, what
  GiGPO/MVPO regions feed on) and the number of distinct signatures;
* **Phi separation**: MVPO's region potential (:func:`mvpo_train.credit.potential.region_potential`
  over :func:`~mvpo_train.credit.regions.viability_regions`, milestones weighted uniformly), the
  mean Phi of a trajectory's steps; AUC of won vs not-won trajectories and the mean difference.

Run from the repository root (CPU; minutes)::

    python benchmarks/learned_abstraction.py            # writes benchmarks/results/learned_abstraction.md
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_abstraction.base import Abstraction, AbstractionTracker
from mvpo_abstraction.learned import EmbeddingClusterAbstraction
from mvpo_abstraction.learned_milestones import MilestoneLearner
from mvpo_envs.webshop.expert import expert_episode
from mvpo_train.credit.potential import region_potential, viability_values
from mvpo_train.credit.regions import viability_regions
from mvpo_train.stats import auc

HERE = Path(__file__).resolve().parent

Episode = dict[str, Any]  # states, actions, return, won, group


# -- episodes ------------------------------------------------------------------------------------
def _play(env, scripted: list[str], budget: int, rng, reset_kwargs) -> Episode:
    _, info = env.reset(**reset_kwargs)
    states, ret = [info["state"]], 0.0
    for t in range(budget):
        acts = info["admissible_actions"]
        action = scripted[t] if t < len(scripted) else acts[int(rng.integers(len(acts)))]
        _, r, term, trunc, info = env.step(action)
        states.append(info["state"])
        ret += float(r)
        if term or trunc:
            break
    return {"states": states, "return": ret, "won": bool(info["won"])}


def alfworld_episodes(split: str, per_task: int, seed: int, extra: int) -> list[Episode]:
    env = gym.make("mvpo/ALFWorld-v0", preset="standard", split=split, max_episode_steps=200)
    rng = np.random.default_rng(seed)
    out = []
    for task in range(len(env.unwrapped.task_ids)):
        _, info = env.reset(options={"task_index": task})
        walk = json.loads(open(info["gamefile"]).read())["walkthrough"]
        for j in range(per_task):
            mode = j % 3
            scripted = walk if mode == 0 else walk[: max(len(walk) - 2, 0)] if mode == 1 else []
            budget = len(walk) if mode == 0 else len(walk) + extra
            ep = _play(env, scripted, budget, rng, {"options": {"task_index": task}})
            out.append({**ep, "group": task, "expert": mode == 0})
    return out


def webshop_episodes(split: str, tasks: int, per_task: int, seed: int) -> list[Episode]:
    env = gym.make("mvpo/WebShop-v0", split=split)
    rng = np.random.default_rng(seed)
    out = []
    for task in range(min(tasks, len(env.unwrapped.task_ids))):
        _, walk = expert_episode(env, task)
        for j in range(per_task):
            mode = j % 3
            scripted = walk if mode == 0 else walk[: max(len(walk) - 2, 0)] if mode == 1 else []
            budget = len(walk) if mode == 0 else 15
            ep = _play(env, scripted, budget, rng, {"options": {"task_index": task}})
            out.append({**ep, "group": task, "expert": mode == 0})
    return out


# -- labelling -----------------------------------------------------------------------------------
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


def agreement(episodes, rules, learned) -> dict[str, float]:
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


def grouping(episodes, labels) -> dict[str, float]:
    keys = [
        (ep["group"], s) for ep, lab in zip(episodes, labels, strict=True) for s in lab["signature"]
    ]
    return {"steps_per_class": len(keys) / len(set(keys)), "signatures": len({k[1] for k in keys})}


def phi_separation(episodes, labels, names: list[str]) -> dict[str, float]:
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


# -- main ----------------------------------------------------------------------------------------
def run_env(name: str, fit_eps, test_eps, rules: Abstraction, args) -> list[dict[str, Any]]:
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--min-support", type=int, default=3)
    p.add_argument("--per-task", type=int, default=6)
    p.add_argument("--webshop-tasks", type=int, default=24)
    p.add_argument("--extra-steps", type=int, default=8, help="random steps after a cut expert")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(HERE / "results" / "learned_abstraction.md"))
    args = p.parse_args()
    rows = []
    alf_fit = alfworld_episodes("train", args.per_task, args.seed, args.extra_steps)
    alf_test = alfworld_episodes("eval", args.per_task, args.seed + 1, args.extra_steps)
    rules = gym.make("mvpo/ALFWorld-v0").unwrapped.abstraction
    rows += run_env("ALFWorld (standard: fit train, test eval)", alf_fit, alf_test, rules, args)
    ws_fit = webshop_episodes("train", args.webshop_tasks, args.per_task, args.seed)
    ws_test = webshop_episodes("test", args.webshop_tasks, args.per_task, args.seed + 1)
    rules = gym.make("mvpo/WebShop-v0").unwrapped.abstraction
    rows += run_env("WebShop (bundled: fit train, test test)", ws_fit, ws_test, rules, args)
    counts = {
        "ALFWorld": (len(alf_fit), len(alf_test), np.mean([e["won"] for e in alf_test])),
        "WebShop": (len(ws_fit), len(ws_test), np.mean([e["won"] for e in ws_test])),
    }
    write(rows, counts, args)


#: the columns of the table, in order
COLUMNS = ("env", "abstraction", "milestones", "steps_per_class", "signatures", "auc", "gap",
           "precision", "recall", "expert_eps_with_firing")  # fmt: skip


def _f(x: Any) -> str:
    if isinstance(x, float):
        return "n/a" if np.isnan(x) else f"{x:.3f}"
    return str(x)


def write(rows, counts, args) -> None:
    cmd = "python benchmarks/learned_abstraction.py" + "".join(
        f" --{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"
    )
    lines = [
        "# Learned vs hand-written abstraction",
        "",
        f"Command: `{cmd}` (CPU: {platform.processor() or platform.machine()}). "
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
        lines.append("| " + " | ".join(_f(r.get(k, "-")) for k in COLUMNS) + " |")
    lines += ["", "Learned milestones (fit split):", ""]
    for r in rows:
        if "names" in r:
            lines.append(f"- {r['env']}: " + ", ".join(f"`{n}`" for n in r["names"]))
            lines.append(f"  (fit time {r['fit_s']:.0f} s, encoder on CPU)")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
