"""``benchmarks/serve_load.py`` runs bounded and writes its table (docs/integrations.md, "Load")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_load_benchmark_small_run(tmp_path):
    spec = importlib.util.spec_from_file_location("serve_load", REPO / "benchmarks/serve_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "serve_load.md"
    assert module.main(["--levels", "1,2", "--steps", "30", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| 2 | ws | 30 | 0 |" in text and "| 1 | http | 30 | 0 |" in text
    assert "Session 3 with 2 open: refused with 503" in text
