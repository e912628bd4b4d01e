"""A run's compact result, ``result.json``: what a study keeps of a run and reads back
(``benchmarks/control_study.py``; docs/control_task.md, "Results").

:func:`write_result` condenses the run's ``metrics.jsonl`` (:data:`CURVES`, every ``align/*``
key, the last iteration's held-out evaluation, the minutes) and stamps it with the settings it
was made with and :func:`credit_code_sha256`; :func:`read_result` reads it back and refuses one
made with another arm or other settings. :func:`curve_matrix` and :func:`nanmean_rows` turn
the results of an arm's seeds into seeds x iterations arrays and their per-iteration means.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_envs.data_files import DataFileError, load_json
from mvpo_train import credit
from mvpo_train.atomic_write import write_text_atomic
from mvpo_train.study.arms import StudyError
from mvpo_train.study.runs import metric_rows

__all__ = [
    "CURVES",
    "RESULT",
    "credit_code_sha256",
    "curve_matrix",
    "nanmean_rows",
    "read_result",
    "write_result",
]

RESULT = "result.json"
#: metrics.jsonl key -> the compact result's curve name (None where an iteration lacks it)
CURVES = {
    "success": "success",
    "adv/zero_credit_ratio": "zero_credit_ratio",
    "adv/zero_adv_ratio": "zero_adv_ratio",
    "adv/repaired_ratio": "repaired_ratio",
}


def credit_code_sha256() -> str:
    """SHA-256 over the credit estimators' sources (``mvpo_train/credit/*.py``, by name): a
    result made with other estimator code is flagged in the table (resuming does not see
    code changes)."""
    h = hashlib.sha256()
    for f in sorted(Path(credit.__file__).parent.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _num(x: Any) -> str:
    return "-" if x is None else f"{float(x):.3f}"


def write_result(
    path: str, arm: str, spec: dict, seed: int, conf: dict, split: str = "eval"
) -> dict[str, Any]:
    """The run's compact result (``result.json``) from its ``metrics.jsonl``: the
    :data:`CURVES` and every ``align/*`` key per iteration, the held-out evaluation of its last
    iteration (on ``split``), :func:`credit_code_sha256` and its minutes; the per-iteration log
    is printed (into the run's ``train.log``). Refuses, as a :class:`StudyError`, an
    incomplete run (fewer iterations than ``conf["iterations"]``) or one without that
    evaluation."""
    run = Path(path)
    rows = metric_rows(run)[: conf["iterations"]]
    if len(rows) < conf["iterations"]:
        raise StudyError(f"{run}: {len(rows)} of {conf['iterations']} iterations in metrics.jsonl")
    held = rows[-1]
    if "eval/success" not in held:
        raise StudyError(f"{run}: no held-out evaluation (eval/success) in its last iteration")
    curves: dict[str, list] = {name: [r.get(key) for r in rows] for key, name in CURVES.items()}
    for key in sorted({k for r in rows for k in r if k.startswith("align/")}):
        curves[key] = [r.get(key) for r in rows]
    for name, values in curves.items():  # NaN (e.g. an AUC with one class) -> null
        curves[name] = [None if v is None or not np.isfinite(v) else v for v in values]
    result = {
        "arm": arm, "spec": spec, "seed": seed, "settings": conf, "curves": curves,
        "eval": {"split": split, "success": float(held["eval/success"]),
                 "episodes": int(held.get("eval/episodes", 0))},
        "credit_code_sha256": credit_code_sha256(),
        "minutes": sum(float(r.get("time/total", 0.0)) + float(r.get("time/eval", 0.0))
                       for r in rows) / 60,
    }  # fmt: skip
    for i in range(len(rows)):  # the per-iteration log, into the run's train.log
        cells = [f"{name} {_num(curves[name][i])}" for name in curves if name != "repaired_ratio"]
        print(f"iteration {i + 1}: " + ", ".join(cells))
    print(f"held-out eval success {result['eval']['success']:.3f}")
    write_text_atomic(run / RESULT, json.dumps(result, indent=1) + "\n")
    return result


def read_result(path: Path, spec: dict[str, Any], conf: dict[str, Any]) -> dict[str, Any] | None:
    """A run's compact result, or None if it has none; one made with another arm ``spec``
    (:meth:`~mvpo_train.study.arms.Arm.spec`) or other settings ``conf`` raises
    :class:`StudyError` naming the file (never mixed into the study)."""
    f = path / RESULT
    if not f.is_file():
        return None
    try:
        res = load_json(f, "compact result")
    except DataFileError as err:
        raise StudyError(str(err)) from None
    if not isinstance(res, dict) or not isinstance(res.get("settings"), dict):
        raise StudyError(f"{f}: not a compact result of this study (no settings mapping)")
    if res.get("spec") != spec:
        raise StudyError(f"{f}: made with another spec ({res.get('spec')}, this arm: "
                         f"{spec}); use another --base or --fresh to retrain")  # fmt: skip
    theirs = res["settings"]
    diff = {k: (theirs.get(k), v) for k, v in conf.items() if theirs.get(k) != v}
    diff.update({k: (v, None) for k, v in theirs.items() if k not in conf})
    if diff:
        shown = ", ".join(f"{k} {a!r} (now {b!r})" for k, (a, b) in sorted(diff.items()))
        raise StudyError(f"{f}: made with other settings: {shown}; use another --base or "
                         "--fresh to retrain")  # fmt: skip
    return res


def curve_matrix(results: list[dict], key: str) -> np.ndarray:
    """Seeds x iterations of one curve; NaN where a run lacks the value (or the key)."""
    n = len(results[0]["curves"]["success"]) if results else 0
    rows = []
    for r in results:
        v = r["curves"].get(key) or [None] * n
        rows.append([np.nan if x is None else float(x) for x in v])
    return np.array(rows, dtype=np.float64).reshape(len(results), n)


def nanmean_rows(x: np.ndarray) -> list[float | None]:
    """Mean over seeds (rows) per iteration, ignoring missing values; None where all are."""
    out: list[float | None] = []
    for col in x.T:
        ok = col[np.isfinite(col)]
        out.append(float(ok.mean()) if ok.size else None)
    return out
