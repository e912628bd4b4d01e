"""``benchmarks/control_uniform.py`` runs and reports every difficulty (docs/control_task.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mvpo_envs.milestone_chain.layout import DIFFICULTIES

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "control_uniform.py"


def test_the_benchmark_writes_one_row_per_difficulty(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("control_uniform", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "uniform.md"
    assert module.main(["--episodes", "20", "--out", str(out)]) == 0
    rows = [
        line
        for line in out.read_text().splitlines()
        if line.startswith("| ") and "|---" not in line
    ]
    assert len(rows) == 1 + len(DIFFICULTIES)  # the header, then one row per difficulty
    assert all(row.split(" | ")[-2] == "1.00" for row in rows[1:])  # the expert always wins
    assert module.main(["--episodes", "0", "--out", "-"]) == 2
