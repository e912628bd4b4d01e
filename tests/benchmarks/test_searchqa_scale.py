"""``benchmarks/searchqa_scale.py`` and ``benchmarks/proc_stats.py``: the results page says
which dense rows are real, and the shared measurements compute what they say
(docs/searchqa.md, "Large corpora")."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scale():
    return _load("searchqa_scale")


def _cached(n: int, rss: float) -> dict:
    mem = {str(k): {"rss": rss + k, "uss": 1.0, "pss": 2.0} for k in (1, 8, 128)}
    ms = {"p50": 1.0, "p99": 2.0}
    return {
        "passages": n,
        "first_s": 0.5,
        "mem": mem,
        "search_ms": ms,
        "search_first_ms": ms,
        "faiss_ms": ms,
        "mem_after_search": {"rss": rss},
        "retriever_kwargs": {"index": "ivf", "nprobe": 16},
        "peak_rss": rss,
    }


def test_ivf_section_says_which_rows_are_real(scale) -> None:
    sweep = [
        {"nprobe": p, "recall": {"1": r, "3": r, "10": r}, "faiss_ms": {"p50": 0.1, "p99": 0.2}}
        for p, r in ((1, 0.5), (16, 0.95))
    ]
    size = {
        "rows": 12_288,
        "nlist": 111,
        "train_size": 7104,
        "build_s": 3.0,
        "sweep": sweep,
        "exact_faiss_ms": {"p50": 1.0, "p99": 2.0},
    }
    ivf = {
        "recall": {"rows": 12_288, "queries": 1000, "sizes": [size]},
        "plant": {"passages": 1_000_394, "real_rows": 12_288, "nlist": 1000, "index_mib": 1470},
        "cached": [_cached(1_000_394, 300.0)],
        "async": [],
    }
    text = "\n".join(scale.ivf_report(ivf))
    assert "the first 12,288 passages" in text
    assert "only 12,288 rows are real embeddings" in text and "rankings mean nothing" in text
    assert "| 12,288 | IVF-Flat | 111 | 7,104 | 16 | 14.4% | 0.950 | 0.950 | 0.950 |" in text
    assert "| 16 | 0.50 | 301 |" in text  # the full-size row: nprobe, first env s, RSS 1
    # once every row has its real embedding, the full-size index is the retriever's own
    ivf["plant"] = {**ivf["plant"], "real_rows": 1_000_394}
    text = "\n".join(scale.ivf_report(ivf))
    assert "every row is a real embedding" in text and "rankings mean nothing" not in text


def test_proc_stats_measure_what_they_say(tmp_path: Path) -> None:
    ps = _load("proc_stats")
    assert ps.percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    assert ps.p50_p99([1.0, 2.0, 3.0]) == {"p50": 2.0, "p99": pytest.approx(2.98)}
    rss, hwm = ps.rss_hwm(os.getpid())
    assert 0 < rss <= hwm
    mem = ps.memory()
    assert 0 < mem["uss"] <= mem["rss"]
    lo, hi = {"cached": {"n": 1_000}}, {"cached": {"n": 501_000}}
    assert (
        ps.slope(lo, hi, lambda r: r["cached"]["n"], lambda r: r["cached"]["n"] / 1000) == "1,000.0"
    )
    assert ps.slope(lo, hi, lambda r: r["cached"]["n"], lambda r: r["missing"]) == "n/a"

    class Env:
        def reset(self, seed: int) -> None:
            self.seed = seed

    grown = ps.grow_envs(lambda k: Env(), (1, 8, 128), 8)
    assert sorted(grown["mem"]) == ["1", "8"] and [e.seed for e in grown["envs"]] == list(range(8))
    cells = ps.env_cells(_cached(10, 100.0))
    assert cells == "0.50 | 101 | 108 | 228 | 1 | 2 | 1.00 | 1.00 | 2.00 | 1.00 / 2.00 | 100"
    ps.write_page(tmp_path / "sub" / "page.md", ["a", "b"])
    assert (tmp_path / "sub" / "page.md").read_text() == "a\nb"
