"""A training run's recorded batches scored for the alignment of MVPO's repair
(docs/alignment.md, "Relabelling a run after the fact"; ``benchmarks/alignment.py --run-dir``).

:func:`score_run` reads ``RUN/records/iter-*.npz``; the labels come from the records, or with
``--relabel`` from a verified replay of every recorded trajectory (a
:class:`~mvpo_train.run_relabeller.RunReplayer`; an unverified trajectory's rows count as
unknown, and more than ``max_unverified`` of them make the exit status 1). Each variant is
:func:`~mvpo_train.alignment_variants.recorded_variant` (the trained estimator in its recorded
pre-call state, or another one chained over the run's batches or fresh per batch) scored by
:func:`~mvpo_train.alignment.score_variant`. The results JSON (docs/alignment.md) is written
after every batch with ``"complete": false`` until the end.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.alignment import LABEL_KEY, score_variant
from mvpo_train.alignment_variants import (
    VariantError,
    make_variant,
    parse_variant,
    recorded_variant,
)
from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.config import load_config
from mvpo_train.records import find_records, read_batch_record

__all__ = [
    "DEFAULT_RUN_VARIANTS",
    "SERIES",
    "auc_summary",
    "parse_iterations",
    "score_run",
    "write_json",
]

#: the variants scored on a run that did not train MVPO (an MVPO run: its own, ``trained``)
DEFAULT_RUN_VARIANTS = ("mvpo", "mvpo:lambda_L=0")


#: the per-variant series of the run JSON (docs/alignment.md), "iterations" first
SERIES = ("iterations", "auc", "repaired_rows", "positives", "negatives", "labelled_fraction")


def auc_summary(variants: dict[str, dict[str, Any]]) -> str:
    """``name AUC 0.812 (3 repaired), ...``: the progress line of one batch's variants."""
    return ", ".join(
        f"{v} AUC {s['auc']:.3f} ({s['repaired_rows']} repaired)" for v, s in variants.items()
    )


def score_run(
    args: Any, replayer: Callable[[Path, Path, int], Any], no_labels: str
) -> tuple[dict[str, Any], int]:
    """Score a run's recorded batches; ``(results, exit status)`` (module docstring).

    ``args``: the command line's ``run_dir``, ``variant`` (None: the defaults), ``cache``,
    ``relabel``, ``workers``, ``iterations`` (text or None), ``state``, ``max_unverified``,
    ``json`` (None: not written) and ``command``; ``replayer(run_dir, cache, workers)``: the
    :class:`~mvpo_train.run_relabeller.RunReplayer` of ``--relabel``; ``no_labels``: what a
    record without labels lacks (the env and its option), for the one-line refusal."""
    run_dir = Path(args.run_dir)
    records = find_records(run_dir)
    if not records:
        raise VariantError(
            f"--run-dir {run_dir}: no records/iter-*.npz (train with --record-every; records "
            'stay on the machine that ran the study: docs/learning_study.md, "What a study keeps")'
        )
    first = read_batch_record(next(iter(records.values())))
    trained_mvpo = first.estimator_name == "mvpo"
    variants = list(args.variant or ([] if trained_mvpo else DEFAULT_RUN_VARIANTS))
    for v in variants:
        make_variant(v)  # a bad variant fails before any replay
    if args.state == "chained" and any(
        parse_variant(v)[0] != first.estimator_name for v in variants
    ):
        if list(records) != list(range(1, len(records) + 1)):
            raise VariantError(
                f"--state chained needs the record of every iteration from 1 ({run_dir} has "
                f"{len(records)} from {min(records)} to {max(records)}); use --state fresh"
            )
    config_path = run_dir / "config.yaml"
    gamma = float(load_config(config_path).get("gamma", 0.95)) if config_path.is_file() else 0.95
    t0 = time.perf_counter()
    replayer = replayer(run_dir, Path(args.cache), args.workers) if args.relabel else None
    names = (["trained"] if trained_mvpo else []) + variants
    out: dict[str, Any] = {
        "run": str(args.run_dir),
        "variants": {v: {k: [] for k in SERIES} for v in names},
        "unverified_trajectories": 0,
        "trajectories": 0,
        "command": args.command,
        "relabelled": bool(args.relabel),
        "state": args.state,
        "max_unverified": args.max_unverified,
        "complete": False,
        "unverified": [],
        "iterations": [],
    }
    if replayer is not None:
        out["reset_map"] = {
            "tasks": sum(len(v) for v in replayer.map.values()),
            "distinct_first_observations": len(replayer.map),
            "build_seconds": replayer.map_seconds,
            "from_cache": replayer.map_cached,
        }
    chained: dict[str, Any] = {}
    selected = parse_iterations(args.iterations) if args.iterations else None
    try:
        for it, path in records.items():
            rec = read_batch_record(path)
            if selected is not None and it not in selected:
                for v in variants:  # a chained variant still sees the batch, in order
                    if parse_variant(v)[0] != rec.estimator_name and args.state == "chained":
                        recorded_variant(v, rec, gamma, chained, args.state)(rec.batch)
                continue
            row: dict[str, Any] = {"iteration": it, "rows": len(rec.batch), "variants": {}}
            if replayer is not None:
                res = replayer.relabel(rec)
                labels = res.labels
                out["trajectories"] += res.trajectories
                out["unverified_trajectories"] += len(res.unverified)
                out["unverified"] += [
                    {"iteration": it, "group": u.group, "traj": u.traj, "reason": u.reason}
                    for u in res.unverified
                ]
                row["unverified_trajectories"] = len(res.unverified)
            elif LABEL_KEY in rec.extras:
                labels = rec.extras[LABEL_KEY].astype(np.int64)
                out["trajectories"] += len(np.unique(rec.batch.traj))
            else:
                raise VariantError(
                    f"{path}: no {LABEL_KEY!r} column: the run did not play {no_labels} (add "
                    "--relabel to recover the labels by replay)"
                )
            batch = StepBatch(  # the recorded extras too: a pooled MVPO reads the task labels
                **{f: getattr(rec.batch, f) for f in FIELDS},
                extras={**rec.batch.extras, LABEL_KEY: labels},
            )
            if trained_mvpo:
                row["variants"]["trained"] = score_variant(batch, rec.make_estimator(), labels)
            for v in variants:
                est = recorded_variant(v, rec, gamma, chained, args.state)
                row["variants"][v] = score_variant(batch, est, labels)
            for v, s in row["variants"].items():
                series = out["variants"][v]
                series["iterations"].append(it)
                for k in SERIES[1:]:
                    series[k].append(s[k])
            out["iterations"].append(row)
            lost = f"{row['unverified_trajectories']} unverified, " if replayer else ""
            print(f"iteration {it}: {lost}" + auc_summary(row["variants"]), flush=True)
            out["seconds"] = time.perf_counter() - t0
            write_json(args.json, out)  # after every batch: a long replay shows its progress
    finally:
        if replayer is not None:
            replayer.close()
    out["seconds"] = time.perf_counter() - t0
    out["complete"] = True
    m, n = out["trajectories"], out["unverified_trajectories"]
    status = 0
    if m and n / m > args.max_unverified:
        print(
            f"alignment: {n} of {m} trajectories unverified ({n / m:.1%} > --max-unverified "
            f"{args.max_unverified:.1%}); the reasons are in the JSON's 'unverified'",
            file=sys.stderr,
        )
        status = 1
    return out, status


def write_json(path: str | None, results: dict[str, Any]) -> None:
    """``results`` to ``path`` (atomically; nothing when ``path`` is None)."""
    if not path:
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(results, indent=1, allow_nan=True) + "\n")
    tmp.replace(target)


def parse_iterations(text: str) -> set[int]:
    """``"1,5,10-12"`` -> ``{1, 5, 10, 11, 12}`` (``--iterations``)."""
    out: set[int] = set()
    try:
        for part in filter(None, (p.strip() for p in text.split(","))):
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    except ValueError:
        raise VariantError(f"--iterations {text!r}: a list such as 1,5,10-12") from None
    if not out:
        raise VariantError(f"--iterations {text!r}: no iteration")
    return out
