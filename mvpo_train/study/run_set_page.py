"""The diagnostics page of run sets (``benchmarks/diagnostics.py``; docs/learning_study.md,
"Diagnostics"): one section a set with the tables of :mod:`mvpo_train.study.run_set_report`, the
MVPO paper's numbers beside ours and the step-level alignment of MVPO's repair. The words that
name the envs and the paper's numbers are the script's data, a :class:`PageText`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

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

__all__ = ["PageText", "alignment_lines", "markdown_section", "write_markdown"]


class PageText(NamedTuple):
    """The page's words that name envs and quote the MVPO paper (data of the script)."""

    title: str  # the first line
    set_notes: dict[str, str]  # set name -> the line under its heading
    form_note: str  # under the heading of a set carried over from the previous page
    oracle_env: str  # the env whose progress oracle labels the steps (the alignment)
    paper_env: str  # the env of the MVPO paper's early zero-advantage ratios
    paper_zero_adv: dict[str, str]  # estimator -> that ratio, quoted
    paper_zero_adv_sets: tuple[str, ...]  # the sets whose table shows it in a column
    paper_kappa: dict[str, str]  # env family -> the MVPO paper's kappa over its run
    names: dict[str, str]  # estimator -> how the page names it
    headline_sets: tuple[str, ...]  # the studies in the MVPO paper's regime
    set_intros: dict[str, str]  # set name -> a paragraph of the introduction when it is found


def alignment_lines(s: dict[str, Any], oracle_env: str) -> list[str]:
    """The step-level alignment table of one set from the ``--alignment-json`` files matched
    to it; "not measured yet" for its MVPO runs without one. ``oracle_env``: the env whose
    progress oracle labels the steps."""
    lines = [
        "### Step-level alignment: oracle AUC of MVPO's repair (docs/alignment.md)",
        "",
    ]
    missing = s.get("alignment_missing", [])
    if not s.get("oracle", True) and not s["alignment"]:
        return lines + [
            f"**Not measured yet**: the exact progress oracle exists for {oracle_env} only "
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
        f"Per recorded batch of the run (`--relabel`: every step labelled by the {oracle_env} "
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


def markdown_section(s: dict[str, Any], png: str | None, text: PageText) -> list[str]:
    """One run set's section: its note, runs and plan, settings, figure, the zero-advantage
    table beside the MVPO paper's numbers, then the tables of
    :mod:`mvpo_train.study.run_set_report` and the step-level alignment."""
    env, command = s["env"], s["command"]
    early = s.get("early", 0)
    lines = [f"## {env}", "", text.set_notes.get(env, ""), ""]
    if s.get("carried_from"):  # drawn before 2026-12-01: the v1 form
        lines += [text.form_note, ""]
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
    seeds_col = env in text.paper_zero_adv_sets
    head = (
        f"| estimator | seeds in the window, of found | iterations | zero-advantage ratio, it. 1 "
        f"| zero-advantage ratio, first {early} it. (min..max; per seed) "
        f"| zero-credit ratio, first {early} it. | batch success, it. 1 "
        f"| batch success, first {early} it. |"
    )
    sep = "|---|---|---|---|---|---|---|---|"
    if seeds_col:
        head += f" the MVPO paper's, {text.paper_env}, early |"
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
            row += f" {text.paper_zero_adv.get(arm, '-')} |"
        lines.append(row)
    lines.append("")
    paper = ", ".join(f"{text.names[a]} {v}" for a, v in text.paper_zero_adv.items())
    if seeds_col:
        lines += [f"Last column: the MVPO paper's early zero-advantage ratio on {text.paper_env} "
                  f"({paper}; their win-only reward), quoted, not measured here.", ""]  # fmt: skip
    else:
        lines += [f"For reference, the MVPO paper reports the early zero-advantage ratio on "
                  f"{text.paper_env} only ({paper}); it gives no figure for this setting.", ""]  # fmt: skip
    lines += kappa_lines(arms)
    lines += [
        f"The MVPO paper: kappa {text.paper_kappa.get(env.split('-')[0], '-')} over 150 iterations.",
        "",
    ]
    lines += phi_sign_lines(arms) + phi_split_lines(arms)
    if s.get("alignment") is not None:
        lines += alignment_lines(s, text.oracle_env)
    lines += amp_lines(arms) + phase_lines(arms)
    return lines


def write_markdown(
    summaries: list[dict[str, Any]],
    command: str,
    early: int,
    out: Path,
    pngs: dict[str, str | None],
    text: PageText,
) -> None:
    """The page: how it was built (``command``), the headline, the definitions (``early``: the
    first iterations), each found set's introduction, then every set's section."""
    lines = [
        text.title,
        "",
        f"Built by `{command}` from the runs on disk; each set's section names the "
        "command that made its "
        "runs. Every number below is read from the runs' `metrics.jsonl` (and, for the "
        "step-level alignment, from the `--alignment-json` files named there).",
        "",
    ]
    headline = [s for s in summaries if s["env"] in text.headline_sets and s["found"]]
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
            "The studies in the MVPO paper's regime "
            f"({', '.join(f'`{n}`' for n in text.headline_sets)}) have no runs "
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
        f'"First k iterations" (k = {early}, or the length of the longest run of the '
        "set if shorter): the mean of each seed's first k iterations, then the mean over seeds "
        "with (min..max) and the per-seed values; a run with fewer than k iterations so far is "
        "left out of these. Figures: per iteration, mean over seeds that have it, band = "
        "min..max over them.",
        "",
    ]
    found = {s["env"] for s in summaries if s["found"]}
    for name, words in text.set_intros.items():
        if name in found:
            lines += [words, ""]
    for s in summaries:
        lines += markdown_section(s, pngs.get(s["env"]), text)
    out.write_text("\n".join(lines) + "\n")
