"""``benchmarks/serve_load.py`` runs bounded and writes its table (docs/integrations.md, "Load")."""

from __future__ import annotations

from .helpers import study_module


def test_load_benchmark_small_run(tmp_path):
    out = tmp_path / "serve_load.md"
    assert (
        study_module("serve_load").main(["--levels", "1,2", "--steps", "30", "--out", str(out)])
        == 0
    )
    text = out.read_text()
    assert "| 2 | ws | 30 | 0 |" in text and "| 1 | http | 30 | 0 |" in text
    assert "Session 3 with 2 open: refused with 503" in text
