"""A run's compact result (:mod:`mvpo_train.study.compact`): written from its metrics, read back
only for the same arm and settings."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mvpo_train.study.arms import StudyError
from mvpo_train.study.compact import (
    RESULT,
    credit_code_sha256,
    curve_matrix,
    nanmean_rows,
    read_result,
    write_result,
)

CONF = {"iterations": 3, "lr": 0.001}
SPEC = {"estimator": "mvpo", "estimator_kwargs": {}}


def _run(path, rows):
    path.mkdir(parents=True, exist_ok=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_finished_run_condenses_and_reads_back(tmp_path, capsys):
    rows = [{"iteration": i + 1, "success": i / 4, "align/auc": 0.5, "time/total": 30.0}
            for i in range(3)]  # fmt: skip
    rows[1]["align/auc"] = math.nan  # an AUC with one class: kept as null
    rows[-1] |= {"eval/success": 0.25, "eval/episodes": 64, "time/eval": 30.0}
    _run(tmp_path, rows)
    res = write_result(str(tmp_path), "mvpo", SPEC, 0, CONF)
    assert res["curves"]["success"] == [0.0, 0.25, 0.5]
    assert res["curves"]["align/auc"] == [0.5, None, 0.5]
    assert res["curves"]["zero_credit_ratio"] == [None, None, None]
    assert res["eval"] == {"split": "eval", "success": 0.25, "episodes": 64}
    assert res["minutes"] == 2.0 and res["credit_code_sha256"] == credit_code_sha256()
    assert "iteration 3: success 0.500" in capsys.readouterr().out
    assert read_result(tmp_path, SPEC, CONF) == json.loads((tmp_path / RESULT).read_text())
    with pytest.raises(StudyError, match="another spec"):
        read_result(tmp_path, {"estimator": "gigpo", "estimator_kwargs": {}}, CONF)
    with pytest.raises(StudyError, match=r"other settings: lr 0.001 \(now 0.01\)"):
        read_result(tmp_path, SPEC, {**CONF, "lr": 0.01})
    assert read_result(tmp_path / "none", SPEC, CONF) is None
    m = curve_matrix([res, res], "align/auc")
    assert m.shape == (2, 3) and np.isnan(m[:, 1]).all()
    assert nanmean_rows(m) == [0.5, None, 0.5]


def test_an_unfinished_run_is_refused(tmp_path):
    _run(tmp_path, [{"iteration": 1, "success": 0.0}])
    with pytest.raises(StudyError, match="1 of 3 iterations"):
        write_result(str(tmp_path), "mvpo", SPEC, 0, CONF)
    _run(tmp_path, [{"iteration": i, "success": 0.0} for i in (1, 2, 3)])
    with pytest.raises(StudyError, match="no held-out evaluation"):
        write_result(str(tmp_path), "mvpo", SPEC, 0, CONF)
    assert not (tmp_path / RESULT).exists()
