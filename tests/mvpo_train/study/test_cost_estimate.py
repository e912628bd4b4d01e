""":mod:`mvpo_train.study.cost_estimate`: a study's CPU hours from a sized run and from committed
measurements, and the page section that states them."""

from __future__ import annotations

import json
import sys

import pytest

from mvpo_train.study.cost_estimate import measure, prior, size_lines, sized


def test_the_sized_estimate_adds_runs_and_their_evaluations() -> None:
    worker = {"setup": 60.0, "iterations": [{"rollout": 80.0, "update": 10.0}, {"rollout": 80.0}]}
    est = sized(worker, eval_cpu=100.0, eval_episodes=16, heldout_games=134, runs=9,
                iterations=20, final_episodes=4)  # fmt: skip
    assert est["iteration_cpu_s"] == [90.0, 80.0]
    assert est["run_cpu_s"] == pytest.approx(60.0 + 20 * 85.0)
    assert est["eval_run_cpu_s"] == pytest.approx(100.0 / 16 * 134 * 4)
    assert est["study_cpu_h"] == pytest.approx(9 * (1760.0 + 3350.0) / 3600.0)
    page = "\n".join(size_lines({**est, "command": "cmd", "load_avg": [1.0, 2.5]}, None))
    assert "one run = setup + 20 x 85 s + 134 games x 4 episode(s) x 6.2 s" in page
    assert "load average was 1.0 at the start and 2.5" in page


def test_the_prior_estimate_spans_a_warm_and_a_cold_embedding_cache() -> None:
    cold = {"setup": 10.0, "iterations": [{"minilm": 20.0, "env": 5.0, "update": 5.0}]}
    study = {
        "arms": {"mvpo": {"minutes": [60.0, 90.0]}},
        "settings": {"num_groups": 2, "group_size": 5, "iterations": 60,
                     "heldout_games": {"valid": 7}},
    }  # fmt: skip
    est = prior(cold, study, "valid", runs=3, iterations=10, final_episodes=2)
    assert est["iteration_cold_cpu_s"] == 30.0 and est["iteration_warm_cpu_s"] == 10.0
    assert est["play_cpu_s_per_episode"] == pytest.approx(2.5)
    assert est["eval_run_cpu_s"] == pytest.approx(2.5 * 7 * 2)
    lo, hi = est["study_cpu_h"]
    assert lo == pytest.approx(3 * (10 + 100 + 35) / 3600) and hi == pytest.approx(3 * 345 / 3600)
    page = "\n".join(size_lines(None, est))
    assert "Not measured for this study yet" in page and "the study, 3 runs: " in page
    assert size_lines(None, None) == [
        "## Size",
        "",
        "Not measured for this study yet (`--size`).",
        "",
    ]


def test_measure_runs_the_sized_run_then_the_evaluation_and_stops_on_a_failed_run(tmp_path) -> None:
    out = tmp_path / "worker.json"

    def worker(rc: int) -> list[str]:
        code = f"import json, os; json.dump({{'rc': {rc}, 'threads': os.environ['OMP_NUM_THREADS']}}, open({str(out)!r}, 'w'))"
        return [sys.executable, "-c", code]

    spin = [sys.executable, "-c", "sum(range(3_000_000))"]
    w, eval_cpu = measure(worker(0), out, spin, tmp_path, "study")
    assert w == {"rc": 0, "threads": "1"} and eval_cpu > 0.0
    with pytest.raises(SystemExit, match="study: the sized run failed \\(rc 3\\)"):
        measure(worker(3), out, spin, tmp_path, "study")
    assert json.loads(out.read_text())["rc"] == 3
