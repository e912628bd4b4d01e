"""MVPO's repair scored on noisy-expert batches, per estimator variant
(``benchmarks/alignment.py``; docs/alignment.md): each ``(p, seed)`` batch is played once and
kept as a batch record, then every variant scores it with a fresh estimator
(:func:`mvpo_train.alignment.score_variant`).

* :func:`score_batches`: the results of every ``(p, seed)`` batch, variants scored;
* :func:`variant_lines`, :func:`context_lines`: the two tables of the page, per variant and p
  (mean and sd over seeds), and per p (rows, success, progress steps, labelled rows, GiGPO's
  own AUC);
* :func:`write_page`: the page around them, and the results JSON.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.alignment import LABEL_KEY, mean_sd, score_variant
from mvpo_train.alignment_variants import VariantError, make_variant
from mvpo_train.batch import StepBatch
from mvpo_train.study.analyze_only import kept_machine_line
from mvpo_train.study.batch_cache import cached_batch
from mvpo_train.study.run_alignment import auc_summary

__all__ = ["context_lines", "score_batches", "variant_lines", "write_page"]

Play = Callable[[float, int], tuple[StepBatch, dict[str, Any]]]


def score_batches(
    ps: Sequence[float], seeds: Sequence[int], variants: Sequence[str], cache: Path, play: Play
) -> list[dict[str, Any]]:
    """Per ``(p, seed)``, p by p: the batch ``cache(p, seed)`` (played by ``play(p, seed)`` ->
    (batch, meta) when not recorded yet), its rows, play CPU seconds, success, share of
    progress steps, tasks, and each variant's scores; a line printed per batch. A bad variant
    or a ``p`` outside [0, 1] raises :class:`~mvpo_train.alignment_variants.VariantError`
    before any batch is played."""
    for v in variants:
        make_variant(v)
    for p in ps:
        if not 0.0 <= p <= 1.0:
            raise VariantError(f"--p {p}: a probability in [0, 1]")
    out = []
    for p in ps:
        for seed in seeds:
            batch, meta, from_cache = cached_batch(
                cache(p, seed), lambda p=p, seed=seed: play(p, seed)
            )
            y = np.asarray(batch.extras[LABEL_KEY])
            entry = {
                "p": p,
                "seed": seed,
                "rows": len(batch),
                "play_cpu_s": float(meta.get("play_cpu_s", 0.0)),
                "from_cache": from_cache,
                "success": float(batch.traj_success.mean()),
                "progress_rate": float((y == 1).mean()),
                "tasks": meta.get("tasks"),
                "variants": {v: score_variant(batch, make_variant(v)) for v in variants},
            }
            out.append(entry)
            print(
                f"p={p:g} seed={seed}: {len(batch)} rows, success {entry['success']:.2f}, "
                + auc_summary(entry["variants"]),
                flush=True,
            )
    return out


def variant_lines(results: Mapping[str, Any]) -> list[str]:
    """The table of the variants: per p the mean AUC (sd) over seeds, and the repaired rows
    per batch of each p."""
    ps = sorted({b["p"] for b in results["batches"]})
    lines = [
        "| variant | " + " | ".join(f"p={p:g} AUC" for p in ps) + " | repaired rows / batch |",
        "|---|" + "---:|" * (len(ps) + 1),
    ]
    for v in results["variants"]:
        cells, rep = [], []
        for p in ps:
            sel = [b["variants"][v] for b in results["batches"] if b["p"] == p]
            m, sd = mean_sd([s["auc"] for s in sel])
            cells.append(f"{m:.3f} ({sd:.3f})")
            rep.append(f"{np.mean([s['repaired_rows'] for s in sel]):.0f}")
        lines.append(f"| `{v}` | " + " | ".join(cells) + f" | {' / '.join(rep)} |")
    return lines


def context_lines(results: Mapping[str, Any]) -> list[str]:
    """The table of the batches per p (means over seeds): rows, success, share of progress
    steps, share of repaired rows with a known label, GiGPO's AUC on the other rows (the
    first variant's scores)."""
    first_variant = results["variants"][0]
    lines = [
        "| p | rows | success | progress steps | labelled (repaired) | GiGPO AUC, other rows |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for p in sorted({b["p"] for b in results["batches"]}):
        bs = [b for b in results["batches"] if b["p"] == p]
        first = [b["variants"][first_variant] for b in bs]
        lines.append(
            f"| {p:g} | {np.mean([b['rows'] for b in bs]):.0f} | "
            f"{np.mean([b['success'] for b in bs]):.2f} | "
            f"{np.mean([b['progress_rate'] for b in bs]):.3f} | "
            f"{mean_sd([s['labelled_fraction'] for s in first])[0]:.2f} | "
            f"{mean_sd([s['gigpo_auc_other_rows'] for s in first])[0]:.3f} |"
        )
    return lines


def write_page(
    out: Path,
    results: Mapping[str, Any],
    command: str,
    size: tuple[int, int, int],
    seeds: Sequence[int],
    analyze_only: bool,
    env_name: str,
    setting: str,
) -> None:
    """The page of ``benchmarks/alignment.py`` (``out``.md: :func:`variant_lines` and
    :func:`context_lines` under the method; ``command``: the command line that wrote it; ``size``:
    tasks, rollouts and steps per batch; ``env_name`` and ``setting``: the env and its split as
    the script names them, the package names no env) and ``out``.json (``results``). With
    ``analyze_only`` the page's ``Machine:`` line is kept as it is (where the batches were
    played)."""
    tasks, rollouts, steps = size
    lines = [
        f"# Alignment of MVPO's repair with the exact {env_name} progress oracle",
        "",
        f"Generated by `{command}` (docs/alignment.md): {setting}, {tasks} tasks x {rollouts} "
        f"rollouts x {steps} steps per batch, seeds {', '.join(map(str, seeds))}. "
        "The noisy expert plays one of the oracle's optimal actions (uniformly) with "
        "probability p, else a random admissible action. Label: 1 when the step shortened the "
        "shortest plan to the goal (`d(s_t+1) < d(s_t)`), else 0. AUC (Mann-Whitney, ties 1/2) "
        "of the repair `mvpo_adv - gigpo_adv` for that label over the rows where the two "
        "differ; a fresh estimator per batch (MVPO's EMA at 0, kappa near 1). Mean over seeds "
        "(sd over seeds); `nan` where a batch's repaired rows hold one class only.",
        "",
        *variant_lines(results),
        "",
        "Context per p (mean over seeds): rows per batch, success rate, share of steps labelled "
        "1, share of repaired rows with a known label, and GiGPO's own AUC on the labelled rows "
        f"it credits outside the repair (first variant, `{results['variants'][0]}`):",
        "",
        *context_lines(results),
    ]
    play = [b["play_cpu_s"] for b in results["batches"]]
    machine = (
        f"Machine: {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}. Playing one batch (the oracle's labels and optimal "
        f"actions included): {np.mean(play):.0f} s CPU on average, once: the batches are cached "
        "as batch records under `runs/alignment-cache/`, so a rerun (new variants) takes seconds."
    )
    page = out.with_suffix(".md")
    lines += ["", kept_machine_line(page, analyze_only, machine), ""]
    page.write_text("\n".join(lines))
    out.with_suffix(".json").write_text(json.dumps(results, indent=1, allow_nan=True) + "\n")
