"""Every committed learning-study page whose command reads an archive of its runs in
``benchmarks/results/`` (``--base benchmarks/results/<name>_runs``: the ALFWorld study, its
GiGPO check, the WebShop study, the matched study) is rebuilt from that archive
by its own command plus ``--analyze-only``, byte for byte: page, JSON and figure. A change of
the page writer, the statistics or an archived run that alters a committed number fails here."""

from __future__ import annotations

import shlex
import shutil

import pytest

from .helpers import ROOT, study_module

RESULTS = ROOT / "benchmarks" / "results"
PREFIX = "Command: `python benchmarks/learning.py "


def _command(page: str) -> list[str]:
    line = next(line for line in page.splitlines() if line.startswith(PREFIX))
    return shlex.split(line.removeprefix(PREFIX).split("` (table and plots only", 1)[0])


def _archived_pages() -> list[str]:
    names = []
    for page in sorted(RESULTS.glob("learning*.md")):
        text = page.read_text()
        if PREFIX not in text:
            continue
        argv = _command(text)
        base = argv[argv.index("--base") + 1] if "--base" in argv else ""
        if base.startswith("benchmarks/results/") and (ROOT / base).is_dir():
            names.append(page.stem)
    return names


PAGES = _archived_pages()


def test_the_archived_pages_are_found():
    assert {"learning_full", "learning_matched", "learning_webshop"} <= set(PAGES)


@pytest.mark.parametrize("name", PAGES)
def test_an_archived_page_is_rebuilt_from_its_runs_byte_for_byte(name, tmp_path, monkeypatch):
    learning = study_module("learning")
    argv = _command((RESULTS / f"{name}.md").read_text())
    base = argv[argv.index("--base") + 1]
    out = argv[argv.index("--out") + 1] if "--out" in argv else None
    assert out == f"benchmarks/results/{name}.md"  # rebuilt where the command writes it
    shutil.copytree(ROOT / base, tmp_path / base)
    for ext in (".md", ".json", ".png"):
        shutil.copy(RESULTS / f"{name}{ext}", tmp_path / "benchmarks" / "results" / f"{name}{ext}")
    page = tmp_path / out
    page.write_text(page.read_text().replace(" | ", " |  ", 1))  # the table must be rewritten
    monkeypatch.chdir(tmp_path)
    assert learning.main([*argv, "--analyze-only"]) == 0
    for ext in (".md", ".json", ".png"):
        rebuilt, committed = page.with_suffix(ext), RESULTS / f"{name}{ext}"
        assert rebuilt.read_bytes() == committed.read_bytes(), f"{name}{ext} differs"
    assert not (tmp_path / "runs").exists()  # analysis only: nothing run
