"""``benchmarks/searchqa_scale.py``'s page (:mod:`mvpo_envs.bench.searchqa_scale_page`) says
which dense rows are real (docs/searchqa.md, "Large corpora")."""

from __future__ import annotations

from mvpo_envs.bench import searchqa_scale_page as scale


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


def test_ivf_section_says_which_rows_are_real() -> None:
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
