"""Advantage construction time per estimator on the synthetic batches of
:mod:`mvpo_train.study.synthetic` (``benchmarks/credit.py``; docs/estimators.md §5, "Cost").

:func:`time_estimators` gives each estimator's median seconds per call and its median ratio to
GiGPO, the repeats interleaved across estimators; :func:`time_build` the seconds to build the
batch from step dicts; :func:`timing_rows` the markdown table of both sizes (:func:`figure_rows`
of :func:`timing_figures`); :func:`page` ``benchmarks/credit.py``'s page of its figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.study.synthetic import REFERENCE_STEP_S, fresh, process_times

__all__ = [
    "VARIANTS",
    "figure_rows",
    "make",
    "page",
    "time_build",
    "time_estimators",
    "timing_figures",
    "timing_rows",
]

#: a timed name that is a registered estimator with a config (docs/estimators.md §3.8)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {"mvpo-paper": ("mvpo", {"form": "paper"})}


def make(name: str) -> Any:
    """A new estimator: a registered name or one of :data:`VARIANTS` (name + config)."""
    base, kwargs = VARIANTS.get(name, (name, {}))
    return get_estimator(base, **kwargs)


def time_estimators(
    names: Sequence[str], batch: StepBatch, repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds of one call per estimator, and the median ratio to GiGPO (which must be
    among ``names``).

    Repeats are interleaved across estimators and each ratio is taken within one round, so a
    busy machine slows both sides alike. Each call gets a fresh batch and a fresh estimator.
    """
    times = process_times(names, lambda n: partial(make(n), fresh(batch)), repeats)
    ref = np.asarray(times["gigpo"])
    med = {n: float(np.median(v)) for n, v in times.items()}
    ratio = {n: float(np.median(np.asarray(v) / ref)) for n, v in times.items()}
    return med, ratio


def time_build(batch: StepBatch, repeats: int = 5) -> float:
    """Median seconds to build the batch from one dict per step (shared by every estimator)."""
    steps = [{f: getattr(batch, f)[k] for f in FIELDS} for k in range(len(batch))]
    times = process_times(["build"], lambda _: partial(StepBatch.from_steps, steps), repeats)
    return float(np.median(times["build"]))


def timing_rows(
    names: Sequence[str], res: dict[str, dict[str, float]], ratio: dict[str, dict[str, float]]
) -> list[str]:
    """Markdown rows: ms and ratio to GiGPO at both sizes (keys ``"6,400"`` and ``"64,000"`` of
    ``res`` and ``ratio``), share of the MVPO paper's reference step."""
    return figure_rows(timing_figures(names, res, ratio))


def timing_figures(
    names: Sequence[str], res: dict[str, dict[str, float]], ratio: dict[str, dict[str, float]]
) -> dict[str, list[float]]:
    """Per estimator what its row prints: ms at 6,400 and 64,000 rows, ratio to GiGPO at both,
    % of the MVPO paper's reference step (6,400 rows)."""
    return {
        n: [
            res["6,400"][n] * 1e3,
            res["64,000"][n] * 1e3,
            ratio["6,400"][n],
            ratio["64,000"][n],
            res["6,400"][n] / REFERENCE_STEP_S * 100,
        ]
        for n in names
    }


def figure_rows(figures: dict[str, list[float]]) -> list[str]:
    """The markdown table of :func:`timing_figures`."""
    lines = [
        "| estimator | ms @ 6,400 rows | ms @ 64,000 rows | x GiGPO (6,400) | x GiGPO (64,000) "
        "| share of a 340 s step (6,400) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for n, (a, b, ra, rb, share) in figures.items():
        lines.append(f"| {n} | {a:.2f} | {b:.1f} | {ra:.2f} | {rb:.2f} | {share:.5f}% |")
    return lines


def page(figures: dict[str, Any], method: Sequence[str], reference: str) -> str:
    """``benchmarks/credit.py``'s page of its figures (the JSON kept beside it): its
    ``method`` lines (the script's: they name the env the batches imitate), both tables
    (``figures["tables"]``: ``time`` and ``traj`` order), the batch build, MVPO's diagnostics,
    the paper form's time over the default's and the machine; an optional ``note`` paragraph
    after the method; ``reference``: where the reference step's time comes from."""
    d, paper, vs = figures["mvpo"], figures["mvpo_paper"], figures["vs_mvpo"]
    note = [figures["note"], ""] if figures.get("note") else []
    lines = [
        "# Advantage construction time per estimator",
        "",
        *method,
        "",
        *note,
        f"Reference step: {reference}: **{figures['reference_step_s']:.1f} s** per",
        f"training step, of which {figures['reference_adv_s']} s advantage construction "
        "(16 x 8 x 50 rows).",
        "",
        "## Rows in rollout order (time-major, as `rollout.collect()` emits them)",
        "",
        *figure_rows(figures["tables"]["time"]),
        "",
        "## Rows already sorted by trajectory (no sort needed: the lowest cost of every estimator)",
        "",
        *figure_rows(figures["tables"]["traj"]),
        "",
        f"Building the 6,400-row StepBatch from step dicts (shared by all estimators, not in the "
        f"tables): {figures['build_ms']:.1f} ms.",
        "",
        f"MVPO on the 6,400-row batch: zero_credit_ratio {d['zero_credit_ratio']:.3f}, "
        f"grouping_ratio {d['grouping_ratio']:.3f}, {d['num_regions']} regions, "
        f"success rate {d['success_rate']:.3f}.",
        "",
        '`mvpo-paper` is `mvpo` with `form="paper"` (docs/estimators.md §3.8); its time over '
        "the default MVPO's (ratio of medians): "
        + ", ".join(
            f"{x:.2f}x ({k} rows, {'rollout' if o == 'time' else 'sorted'} order)"
            for o, by_size in vs.items()
            for k, x in by_size.items()
        )
        + f". Its non-circular statistic on the 6,400-row batch: phi_split_spearman_failed "
        f"{paper['phi_split_spearman_failed']:+.3f} over {paper['phi_split_rows']} rows "
        f"(default form: {d['phi_split_spearman_failed']:+.3f}).",
        "",
        f"Machine: {figures['machine']}.",
        "",
    ]
    return "\n".join(lines)
