"""A before/after benchmark's tasks measured with every variant (mvpo_train/study/variant_pairs.py)."""

from __future__ import annotations

from pathlib import Path

from mvpo_train.study.variant_pairs import measure_tasks


def test_cold_then_warm_where_cached_the_caches_deleted_before_cold(tmp_path: Path) -> None:
    calls: list[tuple[str, str, bool]] = []

    def measure(task: str, variant: str, cache: Path) -> dict:
        calls.append((task, variant, cache.exists()))
        cache.write_text("embedded")  # what the measured run leaves for the warm one
        secs = 2.0 if variant == "before" else 1.0
        return {"setup": 0.5, "iterations": [{"rollout": secs}, {"rollout": secs}], "eval": 0.1,
                "total": 5.0}  # fmt: skip

    (tmp_path / "study-before-emb.npz").write_text("stale")
    md, out = ["# page"], tmp_path / "page.md"
    res = measure_tasks(["study", "tiny", "showcase"], ["before", "after"], measure, tmp_path, 2,
                        {"study"}, 2, md, out)  # fmt: skip
    assert sorted(calls) == sorted([
        ("study", "before", False), ("study", "after", False),  # cold: the stale cache deleted
        ("study", "before", True), ("study", "after", True),  # warm: the cold run's caches
        ("tiny", "before", False), ("tiny", "after", False),
        ("showcase", "before", False), ("showcase", "after", False),
    ])  # fmt: skip
    assert list(res) == ["study/before/cold", "study/after/cold", "study/before/warm",
                         "study/after/warm", "tiny/before/cold", "tiny/after/cold", "showcase"]  # fmt: skip
    page = out.read_text()
    assert (
        page.startswith("# page\n") and "- study, warm: iteration 2.0 -> 1.0 CPU s (x0.50)" in page
    )
    assert "### showcase (`mvpo-showcase --iterations 2`" in page
