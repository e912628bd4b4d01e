"""The results pages of the oracle-gain studies (docs/alignment.md, "The oracle-gain study"), each
written from its results dict alone, so that ``--analyze-only`` rebuilds it byte for byte
from the committed JSON and archives: :func:`oracle_gain_page` (``benchmarks/oracle_gain.py``)
and :func:`potential_learning_page` (``benchmarks/potential_learning.py``), and the ALFWorld
one (:func:`one_setting_page`, its results section :func:`held_out_results`). Their tables:
:mod:`mvpo_train.study.gain_table`."""

from __future__ import annotations

import json
import math
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mvpo_train.study.analyze_only import kept_machine_line
from mvpo_train.study.cost_estimate import size_lines
from mvpo_train.study.gain_table import PAIR_HEAD, boot_cell, metric_cells, pair_row
from mvpo_train.study.paired import SEEDS, fmt_interval

__all__ = [
    "held_out_results",
    "one_setting_page",
    "oracle_gain_machine",
    "oracle_gain_page",
    "potential_learning_page",
]


def oracle_gain_machine(page: Path, analyze_only: bool, jobs: int) -> str:
    """The oracle-gain page's ``Machine:`` line: this machine, ``jobs`` runs at a time; when
    rebuilding the page (``analyze_only``), the line of ``page`` as it is (where and how its
    runs were made, whatever ``--jobs`` the rebuild is given)."""
    fresh = (
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores (shared), "
        f"{jobs} run(s) at a time, 1 torch thread each."
    )
    return kept_machine_line(page, analyze_only, fresh)


def oracle_gain_page(out: Mapping[str, Any], machine: str, png: str, archive: str) -> str:
    """The oracle-gain study's page (``benchmarks/oracle_gain.py``) of its results ``out``:
    the ``machine`` line (:func:`oracle_gain_machine`), the figure ``png`` beside it, the
    per-run archive ``archive`` (a folder name)."""
    prog = out["progress"]
    st = out["settings"]
    lines = [
        "# Oracle-gain study: does an aligned potential speed learning?",
        "",
        f"Command: `{out['command']}` (table and plot only: add `--analyze-only`).",
        machine,
        "",
    ]
    if prog["partial"]:
        lines += [
            f"**Partial: {prog['runs_done']} of {prog['runs_planned']} runs done.** The sweep "
            "resumes with the same command; the numbers below are over the finished runs only.",
            "",
        ]
    lines += [
        f"Settings: encoder policy with a fresh head, `{st['env_id']}` (K = 4, "
        f"show_progress={st['show_progress']}, show_route={st.get('show_route', False)}"
        + (f", num_tasks={st['num_tasks']}" if "num_tasks" in st else "")
        + f"), {st['num_groups']} layouts x {st['group_size']} "
        f"rollouts x 50 steps per iteration, {st['iterations']} iterations, lr {st['lr']}, "
        f"{st['ppo_epochs']} PPO epochs, seeds {st[SEEDS]}; held-out: the final checkpoint on "
        f"the `eval` layouts, sampled, {st['eval_episodes']} episode(s) per layout.",
        "",
    ]
    if not st.get("show_route"):
        lines += [
            "**This setting failed the study's first check** (show_route off: the positive "
            "control does not learn, benchmarks/results/oracle_gain_pilot.md); the study's "
            'setting is show_route on (docs/alignment.md, "The oracle-gain study").',
            "",
        ]
    lines += [
        f"![oracle gain]({png})",
        "",
        "Means over seeds with t-based 95% intervals. Area = mean batch success over all "
        "iterations; final = last 5; iterations to 5% / 10%: first iteration whose 5-iteration "
        f"moving average reaches it ({st['iterations'] + 1} = never). `align/auc`: the "
        "trainer's AUC of the repair for `oracle_progress` (mean over iterations and seeds). "
        "Zero-credit: share of rows in zero-credit step groups, first 5 iterations. Entropy: "
        "the policy's mean action entropy (`loss/entropy`), last 5 iterations.",
        "",
        "| arm | difficulty | rho | seeds | area | final | it. to 5% | it. to 10% | held-out "
        "| align/auc | zero-credit | kappa | entropy | min/run |",
        "|---|---:|---:|---:|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, a in out["arms"].items():
        rho = "-" if a["rho"] is None else f"{a['rho']:g}"
        auc = "-" if a["auc"] is None else f"{a['auc']:.3f}"
        mark = " (c)" if a.get("carried") else ""
        lines.append(
            f"| {name}{mark} | {a['difficulty']} | {rho} | {len(a[SEEDS])} | {metric_cells(a)} | "
            f"{auc} | {a['zero_credit']:.2f} | {a['kappa']:.2f} | "
            f"{'-' if a['entropy'] is None else format(a['entropy'], '.2f')} | "
            f"{a['minutes_per_run']:.1f} |"
        )
    if any(a.get("carried") for a in out["arms"].values()):
        lines += [
            "",
            "(c): carried from the sweep of 2026-12-03, whose run folders were not kept: per-seed "
            f"metrics and curve bands from `{archive}/carried.json`; every other "
            f"arm is built from its runs' compact results in `{archive}/`.",
        ]
    lines += [
        "",
        "Paired against GiGPO at the same difficulty (per seed: same initial head and task "
        "draws): mean difference, t-based 95% interval, percentile-bootstrap interval "
        "(10,000 resamples) beside it.",
        "",
        *PAIR_HEAD,
        *(pair_row(name, p) for name, p in out["pairs"].items()),
    ]
    f = out["fit"]
    lines += ["", "## Gain against alignment x strength x zero-credit", ""]
    if "note" in f:
        lines.append(f["note"] + ".")
    else:
        lines.append(
            f"Over {len(f['arms'])} oracle arms: area gain = {f['product_b']:.3f} x rho x kappa "
            f"x zero-credit, R^2 {f['product_r2']:.2f}; the additive fit (intercept + three "
            f"terms) R^2 {f['additive_r2']:.2f}."
        )
    rs = out["rho_star"]
    lines += ["", "## rho*", ""]
    if rs.get("rho") is None:
        lines.append(rs["note"] + ".")
    else:
        lines.append(f"rho* = {rs['rho']:g} (`{rs['arm']}`), measured `align/auc` {rs['auc']:.3f}.")
    return "\n".join(lines) + "\n"


def potential_learning_page(
    out: Mapping[str, Any], machine: str, cost: Sequence[str], reused: Sequence[str]
) -> str:
    """The potential-learning study's page (``benchmarks/potential_learning.py``) of its
    results ``out``: the ``machine`` line, the ``cost`` section
    (:func:`mvpo_train.study.estimator_cost.cost_lines`), the names of the ``reused`` arms."""
    st, prog = out["settings"], out["progress"]
    lines = [
        "# Potential options on the control task: learning against GRPO, GiGPO and the "
        "paper's form",
        "",
        f"Command: `{out['command']}` (table and plot only: add `--analyze-only`).",
        machine,
        "",
        f"Settings: exactly the oracle-gain study's (benchmarks/results/oracle_gain.md; settings "
        f"fingerprint `{st['fingerprint']}`, checked against the reused runs' settings record): "
        f"encoder policy with a fresh head, `{st['env_id']}` (K = 4, "
        f"show_progress={st['show_progress']}, show_route={st.get('show_route', False)}), "
        f"{st['num_groups']} layouts x {st['group_size']} rollouts x {st['max_steps']} steps per "
        f"iteration, {st['iterations']} iterations, lr {st['lr']}, {st['ppo_epochs']} PPO "
        f"epochs, seeds {st[SEEDS]}; held-out: the final checkpoint on the `eval` layouts, "
        f"sampled, {st['eval_episodes']} episode(s) per layout. The runs of "
        f"{', '.join(f'`{n}`' for n in reused)} are the oracle-gain study's, read from its "
        f"archive `{out['reuse_archive']}` (else `{out['reuse_base']}`); the new arms run in "
        "their own folder and are archived beside this page.",
        "",
    ]
    if prog["partial"]:
        lines += [
            f"**Partial: {prog['runs_done']} of {prog['runs_planned']} runs exist.** The "
            "numbers below are over the finished runs only (the seed-count column says which); the "
            "command resumes the sweep.",
            "",
        ]
    if not any(not a["reused"] for a in out["arms"].values()):
        lines += [
            "**None of the new arms has run yet**: the tables below hold the reused runs only; "
            f"`{out['command']}` runs the new arms (resumable).",
            "",
        ]
    lines += [
        "Runs that exist: "
        + "; ".join(f"`{n}` seeds {a[SEEDS]}" for n, a in out["arms"].items())
        + ("." if out["arms"] else "none."),
        "",
        f"![learning curves]({Path('potential_learning.png')})",
        "",
        "Means over seeds with t-based 95% intervals. Area = mean batch success over all "
        "iterations; final = last 5; iterations to 5% / 10%: first iteration whose 5-iteration "
        f"moving average reaches it ({st['iterations'] + 1} = never); `align/auc`: the "
        "trainer's AUC of the repair on the routed rows for `oracle_progress` (mean over "
        "iterations); estimator s/it.: `time/advantage` per iteration (mean over runs).",
        "",
        "| arm | kwargs | seeds | area | final | it. to 5% | it. to 10% | held-out | align/auc "
        "| estimator s/it. | min/run |",
        "|---|---|---:|---|---|---|---|---|---|---:|---:|",
    ]
    for name, a in out["arms"].items():
        kw = json.dumps(a["kwargs"], sort_keys=True) if a["kwargs"] else "-"
        adv = "-" if a["advantage_s"] is None else f"{a['advantage_s']:.4f}"
        mark = (" (reused)" if a["reused"] else "") + (" (c)" if a.get("carried") else "")
        lines.append(
            f"| {name}{mark} | `{kw}` | {len(a[SEEDS])} | {metric_cells(a)} | "
            f"{fmt_interval(a['auc'])} | {adv} | "
            f"{a['minutes_per_run']:.1f} |"
        )
    if any(a.get("carried") for a in out["arms"].values()):
        lines += [
            "",
            "(c): carried from the runs of 2026-12-03, whose run folders were not kept: per-seed "
            "values and curve bands from `potential_learning_runs/carried.json`; every other arm "
            "is built from its runs' compact results in the committed archives "
            "(`potential_learning_runs/`, `oracle_gain_runs/`).",
        ]
    for ref, title in (("gigpo", "GiGPO"), ("mvpo", "the paper's form (`mvpo`)")):
        lines += [
            "",
            f"## Paired against {title}",
            "",
            "Per seed (same initial head and task draws), the difference arm - reference: mean, "
            "t-based 95% interval, percentile-bootstrap interval (10,000 resamples) beside it.",
            "",
            *PAIR_HEAD,
        ]
        rows = {n: p for n, p in out["pairs"].items() if p["reference"] == ref}
        lines += [pair_row(name, p) for name, p in rows.items()]
        if not rows:
            lines.append("| (no pair yet) | 0 | - | - | - | - | - |")
    lines += cost
    return "\n".join(lines) + "\n"


def held_out_results(out: Mapping[str, Any], final: int) -> list[str]:
    """The "Results" section of a study paired by seed against GiGPO with a held-out split
    (``benchmarks/oracle_gain_alfworld.py``): per arm area, final (the last ``final``
    iterations), held-out success and ``align/auc``; per pair the differences with their
    bootstrap intervals; a line saying no run has finished when none has."""
    prog = out["progress"]
    lines = [f"## Results ({prog['runs_done']} of {prog['runs_planned']} runs)", ""]
    if not out["arms"]:
        return [*lines, "No run has finished yet."]
    lines += [
        "Means over seeds with t-based 95% intervals. Area = mean batch success over all "
        f"iterations; final = the last {final}; `align/auc`: the trainer's AUC of the credit "
        "the arm adds for `oracle_progress` (mean over iterations and seeds).",
        "",
        "| arm | seeds | area | final | held-out | align/auc |",
        "|---|---:|---|---|---|---:|",
    ]
    for name, a in out["arms"].items():
        auc = "-" if a["auc"] is None or not math.isfinite(a["auc"]) else f"{a['auc']:.3f}"
        lines.append(
            f"| {name} | {len(a[SEEDS])} | {fmt_interval(a['area'])} | "
            f"{fmt_interval(a['final'])} | {fmt_interval(a['heldout'])} | {auc} |"
        )
    lines += [
        "",
        "Paired by seed (same warm start, task draws and held-out games), against GiGPO and, "
        "for alignment alone (the same routing, kappa and magnitude), `rho = 1` against "
        "`rho = 0`: mean difference, t-based 95% interval, percentile-bootstrap interval "
        "(10,000 resamples).",
        "",
        "| pair | seeds | area | area (bootstrap) | final | held-out | held-out (bootstrap) |",
        "|---|---:|---|---|---|---|---|",
    ]
    for name, p in out["pairs"].items():
        lines.append(
            f"| {name} | {len(p[SEEDS])} | {fmt_interval(p['area'])} | "
            f"{boot_cell(p['area'])} | {fmt_interval(p['final'])} | {fmt_interval(p['heldout'])} | "
            f"{boot_cell(p['heldout'])} |"
        )
    return lines


def one_setting_page(out: Mapping[str, Any], head: Sequence[str], final: int) -> str:
    """The page of a one-setting oracle-gain study (``benchmarks/oracle_gain_alfworld.py``):
    ``head`` (its title, command, machine line and settings, which name the env and so are the
    script's), the cost estimates (:func:`mvpo_train.study.cost_estimate.size_lines`) and
    :func:`held_out_results` (``final``: the iterations of the final success)."""
    lines = [*head, *size_lines(out["sizing"], out["prior_estimate"])]
    return "\n".join([*lines, *held_out_results(out, final)]) + "\n"
