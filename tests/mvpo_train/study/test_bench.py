"""``mvpo_train.study.bench``: the results store, page writers and scale-table cells of the
speed benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

from mvpo_train.study import bench


def test_the_store_keeps_each_measurement_on_disk(tmp_path: Path, capsys) -> None:
    path = tmp_path / "work" / "results.json"
    store = bench.ResultStore(path)
    assert store.data == {}
    store.save("10", {"a": 1}, "size 10", 0.0)
    assert "size 10 done in" in capsys.readouterr().out
    store.save("big", [1, 2])
    assert json.loads(path.read_text()) == {"10": {"a": 1}, "big": [1, 2]}
    assert bench.ResultStore(path).data == store.data  # a rerun starts from what is done


def test_pages_and_their_sections(tmp_path: Path) -> None:
    bench.write_page(tmp_path / "sub" / "page.md", ["a", "b"])
    assert (tmp_path / "sub" / "page.md").read_text() == "a\nb"
    doc = "# T\n\n## One\nx\n\n## Two\ny\n"
    assert bench.replace_section(doc, "One", "## One\nz\n") == "# T\n\n## One\nz\n\n## Two\ny\n"
    assert bench.replace_section(doc, "Two", "## Two\nw\n") == "# T\n\n## One\nx\n\n## Two\nw\n"
    assert bench.replace_section(doc, "New", "## New\nn\n").endswith("## Two\ny\n\n## New\nn\n")
    body = bench.keep_sections("", "d10", ["## ten"], first="bundled")
    assert body == "<!-- section: d10 -->\n## ten\n<!-- end: d10 -->\n"
    body = bench.keep_sections(body, "bundled", ["## small"], first="bundled")
    body = bench.keep_sections(body, "d10", ["## ten, again"], first="bundled")
    assert body.index("## small") < body.index("## ten, again") and "## ten\n" not in body


def _cached(n: int, rss: float) -> dict:
    mem = {str(k): {"rss": rss + k, "uss": 1.0, "pss": 2.0} for k in (1, 8, 128)}
    ms = {"p50": 1.0, "p99": 2.0}
    return {"n": n, "first_s": 0.5, "mem": mem, "search_ms": ms, "search_first_ms": ms,
            "mem_after_search": {"rss": rss}}  # fmt: skip


def test_scale_table_cells_and_growth() -> None:
    assert bench.fmt(None) == "n/a" and bench.fmt(1234.5) == "1,234"
    cells = bench.env_cells(_cached(10, 100.0))
    assert cells == "0.50 | 101 | 108 | 228 | 1 | 2 | 1.00 | 1.00 | 2.00 | 1.00 / 2.00 | 100"
    assert len(cells.split("|")) == len(bench.ENV_COLUMNS.split("|"))
    small = {"cached": {"n": 1_000}}
    assert bench.env_cells({**_cached(1, 5.0), "mem": {"1": {"rss": 5.0}}}).count("n/a") == 4
    lo, hi = small, {"cached": {"n": 501_000}}
    size = lambda r: r["cached"]["n"]  # noqa: E731
    assert bench.slope(lo, hi, size, lambda r: r["cached"]["n"] / 1000) == "1,000.0"
    assert bench.slope(lo, hi, size, lambda r: r["missing"]) == "n/a"
    lo = {"cold": {"first_s": 1.0, "peak_rss": 100.0}, "cached": _cached(1_000, 100.0)}
    hi = {"cold": {"first_s": 3.0, "peak_rss": 300.0}, "cached": _cached(1_001_000, 300.0)}
    line = bench.growth_line(lo, hi, "passages", "n", lambda r: r["cached"]["n"] / 1e4)
    assert line.startswith("Growth per million passages (1,000 to 1,001,000): cold first env 2.0 s")
    assert "RSS of 128 envs 200.0 MiB" in line and line.endswith("disk 100.0 MiB")
