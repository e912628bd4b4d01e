"""A bare ``--analyze-only`` (no other argument, the run folders of a fresh study absent)
rebuilds each committed results page with the arguments of the command the page names, into
a temporary copy of its files: byte-identical, no figure deleted; arguments that select less
than the page shows are one line, and nothing is written or deleted.
(``mvpo_train.study.page_command``; the scripts' own tests check their pages otherwise.)"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from .helpers import ROOT, load_benchmark, study_module

RESULTS = ROOT / "benchmarks" / "results"


def _copy(names: list[str], to: Path) -> dict[str, bytes]:
    """The committed ``names`` copied into ``to``; their bytes."""
    to.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(RESULTS / name, to / name)
    return {name: (RESULTS / name).read_bytes() for name in names}


def _unchanged(to: Path, before: dict[str, bytes]) -> None:
    for name, data in before.items():
        assert (to / name).is_file(), f"{name} deleted"
        assert (to / name).read_bytes() == data, f"{name} changed"


@pytest.fixture
def diag(monkeypatch, tmp_path: Path):
    d = study_module("diagnostics")
    none = tmp_path / "none"  # a clone: the studies' run folders are not there
    for name in ("ALFWORLD_FULL_BASE", "WEBSHOP_STUDY_BASE", "ALFWORLD_BASE", "WEBSHOP_BASE"):
        monkeypatch.setattr(d, name, none / name)
    monkeypatch.chdir(ROOT)  # the page's command names committed folders, relative
    return d


def test_diagnostics_rebuilds_its_page_and_keeps_its_figures(diag, monkeypatch, tmp_path) -> None:
    results = tmp_path / "results"
    names = ["diagnostics.md", "diagnostics.json"]
    names += [p.name for p in RESULTS.glob("diagnostics_*.png")]
    assert {"diagnostics_alfworld-full.png", "diagnostics_webshop-study.png"} <= set(names)
    before = _copy(names, results)
    monkeypatch.setattr(diag, "RESULTS", results)
    assert diag.main(["--analyze-only"]) == 0
    md = (results / "diagnostics.md").read_text()
    assert "Not run yet" not in md and "## alfworld-full" in md
    assert md == before["diagnostics.md"].decode()
    assert (results / "diagnostics.json").read_bytes() == before["diagnostics.json"]
    assert all((results / n).is_file() for n in names)


def test_diagnostics_refuses_to_drop_a_headline_set(diag, monkeypatch, tmp_path, capsys) -> None:
    results = tmp_path / "results"
    names = ["diagnostics.md", "diagnostics.json"]
    names += [p.name for p in RESULTS.glob("diagnostics_*.png")]
    before = _copy(names, results)
    monkeypatch.setattr(diag, "RESULTS", results)
    capsys.readouterr()
    assert diag.main(["--analyze-only", "--alfworld-full-base", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "alfworld-full" in err and "nothing written" in err
    _unchanged(results, before)


def test_tuning_grid_rebuilds_its_table_or_refuses(monkeypatch, tmp_path, capsys) -> None:
    tg = study_module("mvpo_train.study.tuning_grid")
    monkeypatch.chdir(ROOT)
    results = tmp_path / "results"
    before = _copy(["tuning_grid.md", "tuning_grid.json"], results)
    page = results / "tuning_grid.md"
    assert tg.main(["--analyze-only", "--out", str(page)]) == 0
    old, new = before["tuning_grid.md"].decode().splitlines(), page.read_text().splitlines()
    assert new[2] == old[2].replace(" -- ", f" --out {page} -- ", 1)  # and the --out given
    assert new[:2] + new[3:] == old[:2] + old[3:] and "(chosen)" in page.read_text()
    assert (results / "tuning_grid.json").read_bytes() == before["tuning_grid.json"]
    _copy(["tuning_grid.md"], results)
    argv = ["--analyze-only", "--base", str(tmp_path / "none"), "--out", str(page)]
    assert tg.main(argv) == 2
    assert "no finished grid point" in capsys.readouterr().err
    _unchanged(results, before)


def test_control_study_rebuilds_its_page_or_refuses(monkeypatch, tmp_path, capsys) -> None:
    cs = study_module("control_study")
    results = tmp_path / "benchmarks" / "results"
    names = ["control_study.md", "control_study.json", "control_study.pilot.md"]
    before = _copy(names, results)
    monkeypatch.setattr(cs, "ROOT", tmp_path)
    monkeypatch.setattr(cs, "RESULTS", results)
    monkeypatch.chdir(tmp_path)  # the page's --note is relative
    assert cs.main(["--analyze-only"]) == 0
    assert "## How the settings were chosen" in (results / "control_study.md").read_text()
    _unchanged(results, before)
    argv = shlex.split(before["control_study.md"].decode().split("`")[1])[2:]
    assert cs.main([*argv, "--jobs", "2", "--analyze-only"]) == 0  # how, not what: the same
    _unchanged(results, before)
    (results / "control_study.png").unlink()
    assert cs.main(["--analyze-only", "--arm", "grpo", "--arm", "gigpo", "--arm", "mvpo"]) == 2
    err = capsys.readouterr().err
    assert "--arm, --note differ" in err and "nothing written" in err
    _unchanged(results, before)
    assert not (results / "control_study.png").exists()


def test_alignment_rebuilds_its_page_or_refuses(monkeypatch, tmp_path, capsys) -> None:
    bench = load_benchmark("alignment", "alignment_bare")
    results = tmp_path / "results"
    before = _copy(["alignment.md", "alignment.json"], results)
    monkeypatch.setattr(bench, "OUT", results / "alignment")
    assert bench.main(["--analyze-only"]) == 0
    _unchanged(results, before)
    assert bench.main(["--analyze-only", "--seeds", "0", "1"]) == 2
    err = capsys.readouterr().err
    assert "--seeds [0, 1, 2]" in err and "nothing written" in err
    _unchanged(results, before)


def test_oracle_gain_rebuilds_its_page(monkeypatch, tmp_path) -> None:
    og = study_module("oracle_gain")
    results = tmp_path / "benchmarks" / "results"
    before = _copy(["oracle_gain.md", "oracle_gain.json"], results)
    shutil.copytree(RESULTS / "oracle_gain_runs", results / "oracle_gain_runs")
    monkeypatch.setattr(og, "ROOT", tmp_path)  # no run folder: the archive only
    monkeypatch.setattr(og, "RESULTS", results)
    og.main(["--analyze-only"])
    _unchanged(results, before)  # "--jobs 2" kept in the command and the Machine line
    og.main(["--jobs", "1", "--analyze-only"])  # valid: --jobs changes no number
    old, new = before["oracle_gain.md"].decode().splitlines(), (results / "oracle_gain.md")
    new_lines = new.read_text().splitlines()
    assert new_lines[2] == old[2].replace("--jobs 2", "--jobs 1")  # the command given
    assert new_lines[3:] == old[3:] and "2 run(s) at a time" in old[3]  # how the runs were made
