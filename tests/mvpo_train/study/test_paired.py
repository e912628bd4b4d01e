"""mvpo_train.study.paired: intervals, cells, JSON and the settings record of a study folder."""

from __future__ import annotations

import json
import math

import pytest
from scipy.stats import t as student_t

from mvpo_train.study.paired import check_settings, fmt_interval, interval, json_clean


def test_interval_is_the_t_interval_with_the_bootstrap_beside_it():
    values = [0.1, 0.3, 0.2, float("nan")]  # the NaN (a missing held-out) is dropped
    c = interval(values)
    half = student_t.ppf(0.975, 2) * 0.1 / math.sqrt(3)
    assert c["n"] == 3 and c["mean"] == pytest.approx(0.2)
    assert c["t95"] == pytest.approx([0.2 - half, 0.2 + half])
    assert 0.1 <= c["boot95"][0] < 0.2 < c["boot95"][1] <= 0.3  # within the values' range
    assert interval([0.5])["t95"] is None and interval([0.5])["mean"] == 0.5
    assert interval([float("nan")]) == {"mean": None, "t95": None, "boot95": None, "n": 0}
    assert fmt_interval(c) == f"0.200 [{0.2 - half:.3f}, {0.2 + half:.3f}]"
    assert fmt_interval(interval([0.5]), 1) == "0.5" and fmt_interval(interval([])) == "-"


def test_json_clean_rounds_and_nulls_the_non_finite():
    out = json_clean({"a": [1.23456789, float("nan")], "b": (float("inf"), 2), "c": "x"})
    assert out == {"a": [1.234568, None], "b": [None, 2], "c": "x"}
    json.dumps(out, allow_nan=False)


def test_check_settings_records_once_then_refuses_a_change_in_one_line(tmp_path):
    base = tmp_path / "study"
    check_settings(base, {"lr": 0.1, "kl": 0.0}, "f1", "my_study")
    saved = json.loads((base / "settings.json").read_text())
    assert saved == {"fingerprint": "f1", "settings": {"lr": 0.1, "kl": 0.0}}
    check_settings(base, {"lr": 0.1, "kl": 0.0}, "f1", "my_study")  # the same: accepted
    with pytest.raises(SystemExit, match=r"^my_study: .* \(changed: \['lr'\]\)") as err:
        check_settings(base, {"lr": 0.2, "kl": 0.0}, "f2", "my_study")
    assert "\n" not in str(err.value)
