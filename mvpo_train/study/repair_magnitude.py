"""How much of a trained MVPO run's advantage its repair carried, read from the run's batch
records (docs/alignment.md, "The oracle-gain study on ALFWorld"): per record, the repair is
the advantage the run trained on minus GiGPO's on the same batch (GiGPO built with the run's
shared settings: MVPO's first step *is* GiGPO's advantage), non-zero only on routed rows
(a routed row whose potential does not change keeps a repair of 0). Three numbers per run, means over its records:

* ``repair_share``: the repair's share of the batch's sum of squared advantages (the weight
  of the policy gradient it carries, up to the PPO ratio);
* ``repair_sd``: the repair's standard deviation over the rows it changed;
* ``gigpo_sd``: GiGPO's over the rows where it is non-zero (the credit beside it).

:mod:`mvpo_train.study.credit_mass` recomputes MVPO's *own* repair from its potential; this
reads the repair a run trained on, whatever its source (the oracle repair included).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from mvpo_train.credit import get_estimator
from mvpo_train.records import find_records, read_batch_record

__all__ = ["RecordsError", "repair_magnitude"]

#: |difference| above which a row counts as changed by the repair
CHANGED_EPS = 1e-9


class RecordsError(ValueError):
    """The run folder holds no MVPO batch record to read."""


def _gigpo_advantages(record, fields: set[str]) -> np.ndarray:
    """GiGPO's advantages of the record's batch, with the settings (GiGPO's config
    ``fields``) it shares with the run."""
    shared = {k: v for k, v in (record.estimator_config or {}).items() if k in fields}
    return np.asarray(get_estimator("gigpo", **shared)(record.batch)[0], dtype=np.float64)


def repair_magnitude(run_dir: str | Path) -> dict[str, float]:
    """The module docstring's three numbers for the MVPO run in ``run_dir`` (its
    ``records/iter-*.npz``), with ``records``: how many were read and ``changed``: the mean share
    of rows the repair changed (:class:`RecordsError` when it has no MVPO record)."""
    fields = {f.name for f in dataclasses.fields(get_estimator("gigpo").config)}
    share, rep_sd, gig_sd, changed_share = [], [], [], []
    for path in find_records(run_dir).values():
        record = read_batch_record(path)
        if record.estimator_name != "mvpo" or record.advantages is None:
            continue
        total = np.asarray(record.advantages, dtype=np.float64)
        gigpo = _gigpo_advantages(record, fields)
        repair = total - gigpo
        changed = np.abs(repair) > CHANGED_EPS
        share.append(float((repair**2).sum() / max(float((total**2).sum()), 1e-12)))
        rep_sd.append(float(repair[changed].std()) if changed.any() else 0.0)
        nonzero = np.abs(gigpo) > CHANGED_EPS
        gig_sd.append(float(gigpo[nonzero].std()) if nonzero.any() else 0.0)
        changed_share.append(float(changed.mean()))
    if not share:
        raise RecordsError(f"{run_dir}: no batch record of an MVPO run (records/iter-*.npz)")
    return {
        "records": len(share),
        "changed": float(np.mean(changed_share)),
        "repair_share": float(np.mean(share)),
        "repair_sd": float(np.mean(rep_sd)),
        "gigpo_sd": float(np.mean(gig_sd)),
    }
