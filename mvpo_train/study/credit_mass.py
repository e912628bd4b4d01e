"""Where MVPO's advantage mass goes in a run, and whether its repair points at success: read
from the run's batch records (docs/learning_study.md, "Ablations"; docs/inspect.md), each
recomputed bit for bit with the trained estimator in its recorded state."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

from mvpo_train.credit.gigpo import gigpo_parts
from mvpo_train.credit.mvpo import potential_terms, repair_term
from mvpo_train.records import find_records, read_batch_record

__all__ = ["credit_alignment"]


def credit_alignment(run: Path, who: str = "ablations") -> dict[str, float]:
    """Where MVPO's advantage mass goes and whether it points at success, from the run's batch
    records (docs/learning_study.md, "Ablations"; docs/inspect.md for the records).

    Each record is recomputed with the trained estimator in its recorded pre-call state (the
    record's own check makes that bit-exact), split into GiGPO's part and the repair:

    * ``repair_share``: share of the total advantage mass ``sum |A|`` on repaired rows;
    * ``alignment_repair``: on repaired rows of *mixed* groups (a success and a failure, so the
      outcome is known), ``sum A * y / sum |A|`` with ``y = +1`` on successful and ``-1`` on
      failed trajectories: +1 = every repaired push points towards success, 0 = unrelated.
      Not an independent check when ``c_succ > 0``: the potential then averages the group's
      own outcomes;
    * ``phi_split_spearman_failed``: the estimator's non-circular statistic
      (docs/estimators.md §3.7): the potential estimated from the other half of each group
      against the milestones a *failed* trajectory still reaches; no outcome on either side.
      (The same alignment for GiGPO's part of the advantage is not reported: it contains
      ``A^E``, which is the outcome, so its +1 was guaranteed rather than measured);
    * ``loop_share``: share of the variance of the potential difference ``D`` on repaired rows
      that is the loop term's, ``Var(D - D[lambda_L=0]) / Var(D)`` (0 when ``lambda_L`` is 0).

    Means over the run's iterations (NaN where no iteration has such rows). A run without
    batch records gives NaN everywhere, said in one line on stderr (prefixed ``who``).
    """
    if not find_records(run):  # records stay on the machine that ran the study
        print(f"{who}: {run}: no batch records (records/iter-*.npz); its credit columns "
              "are NaN (docs/learning_study.md, \"What a study keeps\")", file=sys.stderr)  # fmt: skip
    out: dict[str, list[float]] = {"repair_share": [], "alignment_repair": [],
                                   "phi_split_spearman_failed": [], "loop_share": []}  # fmt: skip
    for _, path in sorted(find_records(run).items()):
        rec = read_batch_record(path)
        if rec.estimator_name != "mvpo":
            continue
        est = rec.make_estimator()
        cfg, sb = est.config, rec.batch.canonical()
        parts = gigpo_parts(sb, cfg)
        pot = potential_terms(sb, cfg, est.amp)
        routed = parts.zero_credit | ((parts.size < 2) if cfg.repair_singletons else False)
        a_phi, _ = repair_term(pot, routed, cfg)
        d = pot.d[routed]
        if d.size > 1 and d.var() > 0:
            no_loop = potential_terms(sb, dataclasses.replace(cfg, lambda_L=0.0), est.amp).d
            out["loop_share"].append(float((d - no_loop[routed]).var() / d.var()))
        adv, diag = est.compute(sb)
        if rec.advantages is not None and not np.array_equal(adv, rec.advantages[rec.batch.order]):
            raise RuntimeError(f"{path}: the recomputed advantages differ from the recorded ones")
        repair = np.where(routed, cfg.omega * est.kappa * a_phi, 0.0)
        rho = diag.get("phi_split_spearman_failed", float("nan"))
        if np.isfinite(rho):
            out["phi_split_spearman_failed"].append(float(rho))
        total = np.abs(adv).sum()
        if total > 0:
            out["repair_share"].append(float(np.abs(repair).sum() / total))
        succ_by_group = np.bincount(sb.group_index, weights=sb.success.astype(float))
        rows_by_group = np.bincount(sb.group_index)
        frac = succ_by_group[sb.group_index] / rows_by_group[sb.group_index]
        mixed = (frac > 0) & (frac < 1)
        y = np.where(sb.success, 1.0, -1.0)
        sel = mixed & (repair != 0)
        if sel.any():
            out["alignment_repair"].append(
                float((repair[sel] * y[sel]).sum() / np.abs(repair[sel]).sum())
            )
    return {k: float(np.mean(v)) if v else float("nan") for k, v in out.items()}
