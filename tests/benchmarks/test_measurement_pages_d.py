"""Measurement pages that regenerate from committed data: a measuring run keeps the
figures its page prints as ``benchmarks/results/<page>.json`` beside the page, and the script's
``--analyze-only`` rebuilds the committed page byte for byte from that JSON alone (into
``--out``); a damaged JSON is one line and a non-zero exit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .helpers import ROOT, study_module

RESULTS = ROOT / "benchmarks" / "results"
#: the scripts of benchmarks/ whose page is benchmarks/results/<script>.md
PAGES = (
    "abstraction",
    "alfworld_oracle_speed",
    "control_uniform",
    "credit",
    "eta",
    "info_copy_cost",
    "learned_abstraction",
    "policy_candidates",
    "potential_kinds",
    "searchqa_server_load",
    "serve_load",
)


def _rebuild(script: str, tmp_path: Path) -> Path:
    """``script --analyze-only --out TMP/<page>.md`` beside a copy of the committed JSON."""
    shutil.copy(RESULTS / f"{script}.json", tmp_path / f"{script}.json")
    out = tmp_path / f"{script}.md"
    assert study_module(script).main(["--analyze-only", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("script", PAGES)
def test_analyze_only_rebuilds_the_committed_page(script: str, tmp_path: Path) -> None:
    out = _rebuild(script, tmp_path)
    assert out.read_bytes() == (RESULTS / f"{script}.md").read_bytes()


def test_a_damaged_json_is_one_line_and_no_page(tmp_path: Path) -> None:
    (tmp_path / "control_uniform.json").write_text('{"rows": [')
    out = tmp_path / "control_uniform.md"
    with pytest.raises(SystemExit) as err:
        study_module("control_uniform").main(["--analyze-only", "--out", str(out)])
    message = str(err.value)
    assert message.startswith("control_uniform: --analyze-only: ") and "\n" not in message
    assert err.value.code != 0 and not out.exists()


def test_a_measuring_run_writes_the_json_its_page_is_rebuilt_from(tmp_path: Path) -> None:
    out = tmp_path / "control_uniform.md"
    assert study_module("control_uniform").main(["--episodes", "2", "--out", str(out)]) == 0
    page = out.read_text()
    assert json.loads(out.with_suffix(".json").read_text())["episodes"] == 2
    out.unlink()
    assert study_module("control_uniform").main(["--analyze-only", "--out", str(out)]) == 0
    assert out.read_text() == page
