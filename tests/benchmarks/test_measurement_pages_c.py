"""Measurement pages rebuilt from their committed JSON: each script's
``--analyze-only``, run on a copy of the committed ``benchmarks/results/<page>.json`` in a
temporary folder, writes the committed ``<page>.md`` byte for byte; a damaged JSON is one line
of error and a non-zero exit, nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .helpers import ROOT, load_benchmark

RESULTS = ROOT / "benchmarks" / "results"

#: script -> the arguments that point its --analyze-only page into a folder
PAGES: dict[str, list[str]] = {
    "alfworld_env": ["--out", "{dir}/alfworld_env.md"],
    "alfworld_generate": ["--markdown", "{dir}/alfworld_generate.md"],
    "alfworld_listing": ["--out", "{dir}/alfworld_listing.md"],
    "alfworld_stats": ["--markdown", "{dir}/alfworld_stats.md"],
    "cache_faults": ["--markdown", "{dir}/cache_faults.md"],
    "cpu_cost": ["--out", "{dir}/cpu_cost.md"],
    "embedding_batching": ["--out", "{dir}/embedding_batching.md"],
    "scaling": ["--out", "{dir}/scaling.md"],
    "searchqa_env": ["--out", "{dir}/searchqa_env.md"],
    "threads": ["--out", "{dir}/threads"],
    "webshop_env": ["--out", "{dir}/webshop_env.md"],
}


def _rebuild(script: str, folder: Path) -> int | None:
    bench = load_benchmark(script, f"{script}_page_c")
    argv = ["--analyze-only", *(a.format(dir=folder) for a in PAGES[script])]
    return bench.main(argv)


@pytest.mark.parametrize("script", sorted(PAGES))
def test_analyze_only_rebuilds_the_committed_page(script: str, tmp_path: Path) -> None:
    json_name, committed = f"{script}.json", (RESULTS / f"{script}.md").read_text()
    shutil.copy(RESULTS / json_name, tmp_path / json_name)
    # a stale page: only the sections written by hand after the run (cpu_cost) are kept
    hand = committed[committed.find("\n## ") + 1 :] if script == "cpu_cost" else ""
    (tmp_path / f"{script}.md").write_text("# stale 0.0\n\n" + hand)
    assert _rebuild(script, tmp_path) in (0, None)
    assert (tmp_path / f"{script}.md").read_bytes() == (RESULTS / f"{script}.md").read_bytes()
    assert (tmp_path / json_name).read_bytes() == (RESULTS / json_name).read_bytes()


def test_a_damaged_json_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "cache_faults.json").write_text('{"command": ')
    with pytest.raises(SystemExit) as err:
        _rebuild("cache_faults", tmp_path)
    message = str(err.value)
    assert err.value.code != 0 and len(message.splitlines()) == 1
    assert "cache_faults.json" in message and "invalid JSON" in message
    assert not (tmp_path / "cache_faults.md").exists()


def test_showcase_page_prints_the_screen_of_its_committed_json() -> None:
    """``showcase.md`` is written by hand around what ``mvpo-showcase`` printed (nothing
    regenerates it); its first screen is the summary of the committed ``showcase.json``."""
    from mvpo_train.showcase import summary_text

    page = (RESULTS / "showcase.md").read_text()
    start = page.index("```\nmvpo-showcase: ") + len("```\n")
    screen = page[start : page.index("```", start)].rstrip("\n")
    result = json.loads((RESULTS / "showcase.json").read_text())
    assert screen == summary_text(result)
