"""``benchmarks/alignment.py`` and the ``align/*`` training metrics (docs/alignment.md): variants
parse into estimator keywords, noisy-expert batches are cached and scored, and a real tiny run
with ``progress_oracle`` logs the metrics, records the labels, and is scored from its records
(benchmark and ``mvpo-inspect``'s numbers)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from mvpo_train.alignment import LABEL_KEY, gigpo_twin, repair_alignment
from mvpo_train.cli import train_main
from mvpo_train.inspect.data import build_inspect_data
from mvpo_train.records import find_records, read_batch_record

from .helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield load_benchmark("alignment", "alignment_bench")
    sys.modules.pop("alignment_bench", None)


def test_variants_parse_into_estimator_keywords(bench):
    assert bench.parse_variant("mvpo") == ("mvpo", {})
    assert bench.parse_variant("mvpo:lambda_L=0,kappa_schedule=constant") == (
        "mvpo",
        {"lambda_L": 0, "kappa_schedule": "constant"},
    )
    assert bench.make_variant("mvpo:lambda_L=0").config.lambda_L == 0.0
    with pytest.raises(bench.BenchError, match="not key=value"):
        bench.parse_variant("mvpo:lambda_L")
    with pytest.raises(bench.BenchError, match="no_such_field"):
        bench.make_variant("mvpo:no_such_field=1")


def test_noisy_expert_batches_are_cached_and_scored(bench, tmp_path):
    args = ["--tasks", "2", "--rollouts", "2", "--steps", "10", "--seeds", "0", "--p", "1.0",
            "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "res"),
            "--variant", "mvpo", "--variant", "mvpo:lambda_L=0"]  # fmt: skip
    assert bench.main(args) == 0
    res = json.loads((tmp_path / "res.json").read_text())
    (entry,) = res["batches"]
    assert entry["success"] == 1.0  # p = 1: the oracle's optimal actions always win
    assert entry["progress_rate"] == 1.0  # ... and every step is progress
    assert not entry["from_cache"]
    assert bench.main(args) == 0  # second run: from the cache, the same numbers
    again = json.loads((tmp_path / "res.json").read_text())["batches"][0]
    assert again["from_cache"] and again["variants"] == entry["variants"]
    assert "| `mvpo:lambda_L=0` |" in (tmp_path / "res.md").read_text()
    assert bench.main([*args, "--variant", "nosuch"]) == 2


def test_a_tiny_run_logs_align_metrics_and_its_records_are_scored(bench, tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["--preset", "cpu-tiny", "--estimator", "mvpo", "--iterations", "2", "--seed", "0",
            "--run-dir", str(run), "--num-groups", "2", "--group-size", "4", "--max-steps", "6",
            "--ppo-epochs", "1", "--threads", "1", "--no-progress", "--no-tensorboard",
            "--eval-every", "0", "--record-every", "1",
            "--env-kwargs", '{"progress_oracle": true}']  # fmt: skip
    assert train_main(argv) == 0
    rows = [json.loads(x) for x in (run / "metrics.jsonl").open()]
    assert all("align/repaired_rows" in r and "align/auc" in r for r in rows)
    records = find_records(run)
    rec = read_batch_record(records[1])
    labels = rec.extras[LABEL_KEY]
    assert len(labels) == len(rec.batch) and set(np.unique(labels)) <= {0.0, 1.0}
    est = rec.make_estimator()
    adv, _ = est(rec.batch)
    expected = repair_alignment(rec.batch, adv, gigpo_twin(est)(rec.batch)[0], labels)
    assert rows[0]["align/repaired_rows"] == expected.repaired_rows

    assert bench.main(["--run-dir", str(run), "--variant", "mvpo:lambda_L=0"]) == 0
    text = capsys.readouterr().out
    out = json.loads(text[text.index("\n{") + 1 :])  # the per-iteration lines, then the JSON
    first = out["iterations"][0]["variants"]
    assert first["trained"]["repaired_rows"] == expected.repaired_rows
    assert "mvpo:lambda_L=0" in first

    data = build_inspect_data(rec, ["gigpo", "mvpo"])
    assert data.diag["mvpo"]["align/repaired_rows"] == expected.repaired_rows
    assert "align/auc" not in data.diag["gigpo"]


def test_records_without_labels_are_refused(bench, tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["--preset", "cpu-tiny", "--estimator", "mvpo", "--iterations", "1", "--seed", "0",
            "--run-dir", str(run), "--num-groups", "1", "--group-size", "2", "--max-steps", "3",
            "--ppo-epochs", "1", "--threads", "1", "--no-progress", "--no-tensorboard",
            "--eval-every", "0", "--record-every", "1"]  # fmt: skip
    assert train_main(argv) == 0
    rows = [json.loads(x) for x in (run / "metrics.jsonl").open()]
    assert not any(k.startswith("align/") for k in rows[0])
    assert bench.main(["--run-dir", str(run)]) == 2
    assert "progress_oracle" in capsys.readouterr().err
