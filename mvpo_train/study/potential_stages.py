"""The stages MVPO runs on top of GiGPO, each timed alone on the synthetic batches of
:mod:`mvpo_train.study.synthetic` (``benchmarks/abstraction.py``; docs/estimators.md
§3.1-§3.3): signature codes, Union-Find viability regions, viability values, the region
potential, the AMP update and all of MVPO's potential terms together.

:func:`stages` gives each stage as a function of a batch whose inputs from earlier stages
:func:`prepare` computed before timing; :func:`time_stages` times them, interleaved.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit.mvpo import MVPOConfig, hit_names, potential_terms
from mvpo_train.credit.potential import AMPWeights, region_potential, viability_values
from mvpo_train.credit.regions import viability_regions
from mvpo_train.segments import factorize
from mvpo_train.study.synthetic import fresh, process_times

__all__ = ["PREPARED", "prepare", "stages", "time_stages"]

#: the inputs :func:`prepare` stores on a batch (in its ``__dict__``) for the later stages
PREPARED = ("_m", "_v", "_amp", "_region")


def stages() -> dict[str, Callable[[StepBatch], object]]:
    """Each stage as a function of a newly built batch (its inputs computed inside, untimed
    where they belong to an earlier stage: see :func:`prepare`)."""
    cfg = MVPOConfig()

    def regions(b: StepBatch) -> object:
        return viability_regions(b.signature, b.traj, b.t, b.group_index)

    def values(b: StepBatch) -> object:
        return viability_values(b.__dict__["_m"], b.traj, b.t, b.is_last, b.returns)

    def potential(b: StepBatch) -> object:
        return region_potential(b.__dict__["_region"], b.traj, b.__dict__["_v"])

    def amp_update(b: StepBatch) -> object:
        amp, hn = b.__dict__["_amp"]
        rows, _ = b.milestone_hits
        return amp.update(b.traj_index[rows], hn, b.t[rows], b.traj_success)

    def full(b: StepBatch) -> object:
        amp = AMPWeights()
        return potential_terms(b, cfg, amp)

    return {
        "signature codes (factorize)": lambda b: factorize(b.signature),
        "viability_regions (incl. codes)": regions,
        "viability_values (p, g)": values,
        "region_potential (phi, L)": potential,
        "AMP update": amp_update,
        "all of MVPO's potential terms": full,
    }


def prepare(b: StepBatch) -> StepBatch:
    """A newly built copy of ``b`` holding the inputs of the later stages (:data:`PREPARED`),
    computed before timing."""
    amp = AMPWeights()
    hn = hit_names(b, amp)
    rows, _ = b.milestone_hits
    m = np.bincount(rows, weights=amp.weights[hn], minlength=len(b))
    p, g = viability_values(m, b.traj, b.t, b.is_last, b.returns)
    b.__dict__.update(
        _m=m, _v=p + g, _amp=(amp, hn),
        _region=viability_regions(b.signature, b.traj, b.t, b.group_index),
    )  # fmt: skip
    out = fresh(b)
    out.__dict__.update({k: b.__dict__[k] for k in PREPARED})
    return out


def time_stages(base: StepBatch, repeats: int) -> dict[str, float]:
    """Median process seconds of each stage on ``base``, repeats interleaved across stages,
    each call on a newly prepared batch (the AMP update on its own copy of the weights)."""
    st = stages()

    def setup(name: str) -> Callable[[], object]:
        b = prepare(fresh(base))
        if name == "AMP update":
            amp, hn = b.__dict__["_amp"]
            b.__dict__["_amp"] = (AMPWeights(names=list(amp.names), weights=amp.weights), hn)
        return partial(st[name], b)

    times = process_times(st, setup, repeats)
    return {k: float(np.median(v)) for k, v in times.items()}
