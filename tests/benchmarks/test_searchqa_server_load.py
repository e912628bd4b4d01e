"""``benchmarks/searchqa_server_load.py`` runs bounded against a real server and keeps one
section per corpus in its results page (docs/searchqa.md, "Server")."""

from __future__ import annotations

import shutil
from pathlib import Path

from mvpo_envs.searchqa.data import bundled_corpus_path, bundled_qa_path

from .helpers import study_module


def test_load_benchmark_writes_one_section_per_corpus(tmp_path: Path) -> None:
    bench = study_module("searchqa_server_load")
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(bundled_corpus_path(), data / "corpus.jsonl")
    shutil.copy(bundled_qa_path("test"), data / "test.jsonl")
    out = tmp_path / "load.md"
    common = ["--levels", "1,3", "--requests", "6", "--abusers", "1", "--out", str(out)]
    assert bench.main([*common, "--data", str(data), "--query_cache_size", "0"]) == 0
    assert bench.main(common) == 0  # the bundled section is added, the other one kept
    text = out.read_text()
    assert text.index("<!-- section: bundled -->") < text.index("<!-- section: d394 -->")
    assert text.count("| 3 clients | 6 | 0 |") == 2  # every request answered, in both
    assert text.count("| 1 x 8 MiB nested body | 1 | 0 |") == 2
    assert "Query cache: off (every request is a full search)" in text
    assert bench.main(common) == 0  # a rerun replaces its own section only
    assert out.read_text().count("<!-- section: bundled -->") == 1
