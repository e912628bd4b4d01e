"""``mvpo_train.study.bench``: the results store and page writers of the speed benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_a_damaged_or_linked_results_file_is_one_line_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text('{"10": {"a": 1}')  # torn
    with pytest.raises(bench.ResultStoreError, match="damaged"):
        bench.ResultStore(path)
    assert path.read_text() == '{"10": {"a": 1}'  # nothing overwritten
    path.write_text("[1, 2]")
    with pytest.raises(bench.ResultStoreError, match="not an object"):
        bench.ResultStore(path)
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(bench.ResultStoreError, match="not a regular file"):
        bench.ResultStore(link)


def test_a_save_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    store = bench.ResultStore(path)
    store.save("a", 1)
    store.save("b", 2)
    assert json.loads(path.read_text()) == {"a": 1, "b": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary left


def test_a_script_stops_with_one_line_on_a_damaged_file(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("{")
    with pytest.raises(SystemExit, match=r"^error: .*results.json: damaged"):
        bench.open_store(path)
    assert bench.open_store(tmp_path / "new.json").data == {}
