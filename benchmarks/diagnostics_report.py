"""The diagnostics' figures and markdown (``benchmarks/diagnostics.py``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from diagnostics_data import (
    DIAG_WEBSHOP_ID,
    HEADLINE_SETS,
    NAMES,
    PAPER_KAPPA,
    PAPER_ZERO_ADV_SETS,
    PAPER_ZERO_ADV_WEBSHOP,
)

from mvpo_train.study.run_set_report import (
    amp_lines,
    cell,
    kappa_lines,
    phase_lines,
    phi_sign_lines,
    phi_split_lines,
    spread,
)
from mvpo_train.study.run_sets import ALIGNMENT_CMD
from mvpo_train.study.tables import n_seeds

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
                f"| {cell(d['mean'])} | {cell(d['min'])}..{cell(d['max'])} "
                f"| {cell(d['repaired_mean'], 0)} | {unv_s} |"
            )
    lines += ["", "Made by:"]
    lines += [f"* `{al['name']}` (`{al['file']}`): `{al['command'] or '(no command in the file)'}`"
              for al in s["alignment"]]  # fmt: skip
    if missing:
        lines += ["", "Not measured yet: " + ", ".join(f"`{m}`" for m in missing) + "."]
    return lines + [""]


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
            f"| {cell(a.get('zero_adv_first_iteration'))} | {spread(a.get('adv/zero_adv_ratio'))} "
            f"| {spread(a.get('adv/zero_credit_ratio'))} | {cell(a.get('success_first_iteration'))} "
            f"| {spread(a.get('success'))} |"
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
    lines += kappa_lines(arms)
    lines += [
        f"The MVPO paper: kappa {PAPER_KAPPA.get(env.split('-')[0], '-')} over 150 iterations.",
        "",
    ]
    lines += phi_sign_lines(arms) + phi_split_lines(arms)
    if s.get("alignment") is not None:
        lines += alignment_lines(s)
    lines += amp_lines(arms) + phase_lines(arms)
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
