"""``benchmarks/learning.py --ray``: each run a Ray task, resumable, results gathered as locally.

A tiny sweep (2 runs of 1 iteration of the real ``mvpo-train`` on a shrunken ``cpu-tiny``
config) on a local Ray instance bound to loopback; then the same command finds both runs
finished and submits nothing; a local (no Ray) run of one seed gives the same metrics.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import study_module

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--", "--num-groups", "1", "--group-size", "2", "--max-steps", "2", "--ppo-epochs", "1"]


def _learning():
    return study_module("learning")


def _metrics(path: Path) -> list[dict]:
    rows = [json.loads(x) for x in (path / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


@pytest.fixture
def local_ray():
    yield
    ray.shutdown()


def test_ray_sweep_runs_resumes_and_matches_a_local_run(tmp_path, capsys, local_ray):
    learning = _learning()
    base, out = tmp_path / "runs", tmp_path / "results" / "learning.md"
    common = ["--estimators", "grpo", "--seeds", "0", "1", "--iterations", "1",
              "--base", str(base), "--out", str(out), "--jobs", "2", "--no-study", "--no-eval"]  # fmt: skip
    assert learning.main([*common, "--ray", *TINY]) == 0
    log = capsys.readouterr().out
    assert log.count("[submit]") == 2 and log.count(": ok") == 2
    assert ray.is_initialized()  # the runs went through Ray, not local processes
    for seed in (0, 1):
        assert len(_metrics(base / f"grpo-seed{seed}")) == 1
    table = json.loads(out.with_suffix(".json").read_text())
    assert table["arms"]["grpo"]["seeds"] == [0, 1]

    # rerun: both runs are finished, nothing is submitted, the table is rebuilt the same
    assert learning.main([*common, "--ray", *TINY]) == 0
    assert "[submit]" not in capsys.readouterr().out
    assert json.loads(out.with_suffix(".json").read_text())["arms"]["grpo"]["seeds"] == [0, 1]

    # the same run without Ray: same metrics (everything but wall times)
    local = tmp_path / "local"
    args = ["--estimators", "grpo", "--seeds", "1", "--iterations", "1", "--base", str(local),
            "--out", str(tmp_path / "local.md"), "--jobs", "1", "--no-study", "--no-eval", *TINY]  # fmt: skip
    assert learning.main(args) == 0
    assert "[start]" in capsys.readouterr().out
    assert _metrics(local / "grpo-seed1") == _metrics(base / "grpo-seed1")
