"""The scale pages (``searchqa_scale.py``, ``webshop_scale.py``, ``pyserini_overlap.py``): their
raw measurements stay in a ``--work`` folder outside git, so each page is committed with its
figures as a JSON beside it, and ``--analyze-only`` (alias ``--report``) rebuilds the committed
page byte for byte from that JSON alone; a damaged JSON is one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .helpers import ROOT, study_module

SCRIPTS = ("searchqa_scale", "webshop_scale", "pyserini_overlap")


def _copy(name: str, tmp_path: Path) -> tuple[Path, str]:
    page = ROOT / "benchmarks" / "results" / f"{name}.md"
    shutil.copy(page.with_suffix(".json"), tmp_path / f"{name}.json")
    return tmp_path / f"{name}.md", page.read_text()


@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.parametrize("flag", ["--analyze-only", "--report"])
def test_analyze_only_rebuilds_the_committed_page(name, flag, tmp_path, monkeypatch):
    script = study_module(name)
    out, committed = _copy(name, tmp_path)
    monkeypatch.setattr(script, "RESULTS", out)
    assert script.main([flag, "--work", str(tmp_path / "absent")]) == 0
    assert out.read_text() == committed
    assert not (tmp_path / "absent").exists()  # the work folder is not opened
    saved = json.loads(out.with_suffix(".json").read_text())
    assert "transcribed from the committed page" in saved["source"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_damaged_or_missing_json_is_one_line(name, tmp_path, monkeypatch):
    script = study_module(name)
    out, _ = _copy(name, tmp_path)
    monkeypatch.setattr(script, "RESULTS", out)
    out.with_suffix(".json").write_text('{"10000": {"cached": ')
    with pytest.raises(SystemExit) as err:
        script.main(["--analyze-only"])
    assert str(err.value).startswith(f"{name}: --analyze-only: ") and "\n" not in str(err.value)
    assert not out.exists()  # no page from a damaged JSON
    out.with_suffix(".json").unlink()
    with pytest.raises(SystemExit, match="not found"):
        script.main(["--analyze-only"])


def test_a_measuring_run_keeps_its_figures_beside_the_page(tmp_path, monkeypatch):
    """What a run measured (its ``--work`` results) is written as the figures JSON and the page
    from it; ``--analyze-only`` then rebuilds the same page from the JSON alone."""
    script = study_module("pyserini_overlap")
    work, out = tmp_path / "work", tmp_path / "pyserini_overlap.md"
    work.mkdir()
    row = {"passages": 394, "queries": 200, "overlap10": 0.8, "overlap50": 0.75, "top1": 0.9,
           "lucene_build_s": 39.4, "search_p50_ms": {"pyserini": 15.0, "bm25": 0.1}}  # fmt: skip
    (work / "results.json").write_text(json.dumps({"bundled": row}))
    monkeypatch.setattr(script, "RESULTS", out)
    assert script.main(["--work", str(work), "--sets", "bundled"]) == 0
    page = out.read_text()
    assert "| bundled | 394 | 200 | 0.800 | 0.750 | 0.900 | n/a | 39 (10) | 15.00 / 0.10 |" in page
    figures = json.loads(out.with_suffix(".json").read_text())
    assert figures["bundled"]["lucene_passages_per_s"] == pytest.approx(10.0)
    out.unlink()
    assert script.main(["--analyze-only"]) == 0
    assert out.read_text() == page
