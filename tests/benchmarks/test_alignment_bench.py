"""``benchmarks/alignment.py`` and the ``align/*`` training metrics (docs/alignment.md): variants
parse into estimator keywords, noisy-expert batches are cached and scored, and a real tiny run
with ``progress_oracle`` logs the metrics, records the labels, and is scored from its records
(benchmark and ``mvpo-inspect``'s numbers); a run without it is relabelled by verified replay
(``--relabel``) to the labels the same run logs with it, and a corrupted record is reported."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys

import numpy as np
import pytest

from mvpo_train.alignment import LABEL_KEY, gigpo_twin, repair_alignment
from mvpo_train.alignment_variants import (
    VariantError,
    make_variant,
    parse_variant,
    recorded_variant,
)
from mvpo_train.batch import StepBatch
from mvpo_train.cli import train_main
from mvpo_train.inspect.data import build_inspect_data
from mvpo_train.records import find_records, read_batch_record, write_batch_record

from .helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield load_benchmark("alignment", "alignment_bench", register=True)  # --workers pickles by name
    sys.modules.pop("alignment_bench", None)


def test_variants_parse_into_estimator_keywords():
    assert parse_variant("mvpo") == ("mvpo", {})
    assert parse_variant("mvpo:lambda_L=0,kappa_schedule=constant") == (
        "mvpo",
        {"lambda_L": 0, "kappa_schedule": "constant"},
    )
    assert make_variant("mvpo:lambda_L=0").config.lambda_L == 0.0
    with pytest.raises(VariantError, match="not key=value"):
        parse_variant("mvpo:lambda_L")
    with pytest.raises(VariantError, match="no_such_field"):
        make_variant("mvpo:no_such_field=1")


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


# -- relabelling a run that played without the oracle (docs/alignment.md, "Relabelling") -------
def _train(run, estimator: str, env_kwargs: str) -> None:
    argv = ["--preset", "cpu-tiny", "--estimator", estimator, "--iterations", "2", "--seed", "0",
            "--run-dir", str(run), "--num-groups", "2", "--group-size", "4", "--max-steps", "6",
            "--ppo-epochs", "1", "--threads", "1", "--no-progress", "--no-tensorboard",
            "--eval-every", "0", "--record-every", "1", "--env-kwargs", env_kwargs]  # fmt: skip
    assert train_main(argv) == 0


@pytest.fixture(scope="module")
def twin_runs(tmp_path_factory):
    """The same GiGPO run (bundled ``mini`` rooms, seed 0) played without and with the oracle,
    and an MVPO run without it."""
    root = tmp_path_factory.mktemp("relabel")
    _train(root / "plain", "gigpo", '{"preset": "mini"}')
    _train(root / "oracle", "gigpo", '{"preset": "mini", "progress_oracle": true}')
    _train(root / "mvpo", "mvpo", '{"preset": "mini"}')
    return root


def _relabel(bench, run, tmp_path, *extra):
    out = tmp_path / f"{run.name}.json"
    argv = ["--run-dir", str(run), "--relabel", "--cache", str(tmp_path / "cache"),
            "--json", str(out), *extra]  # fmt: skip
    return bench.main(argv), (json.loads(out.read_text()) if out.is_file() else None)


def test_relabelled_labels_equal_the_oracle_runs_row_for_row(bench, twin_runs, tmp_path):
    plain, oracle = twin_runs / "plain", twin_runs / "oracle"
    assert bench.main(["--run-dir", str(plain)]) == 2  # no labels recorded: refused
    replayer = bench.RunReplayer(plain, tmp_path / "cache")
    try:
        assert replayer.map_cached is False  # built once ...
        for it, path in find_records(plain).items():
            rec = read_batch_record(path)
            ref = read_batch_record(find_records(oracle)[it])
            assert LABEL_KEY not in rec.extras
            assert list(rec.batch.action) == list(ref.batch.action)  # same seed, same play
            res = replayer.relabel(rec)
            assert res.unverified == [] and res.trajectories == 8
            np.testing.assert_array_equal(res.labels, ref.extras[LABEL_KEY].astype(np.int64))
            assert set(np.unique(res.labels)) <= {0, 1}
    finally:
        replayer.close()
    assert bench.RunReplayer(plain, tmp_path / "cache").map_cached  # ... then read back

    status, res = _relabel(bench, plain, tmp_path)
    assert status == 0
    assert res["run"] == str(plain) and res["command"].startswith("python benchmarks/alignment.py")
    assert (res["trajectories"], res["unverified_trajectories"]) == (16, 0)
    assert list(res["variants"]) == list(bench.DEFAULT_VARIANTS)  # GiGPO run: MVPO's defaults
    # the recorded labels of the oracle run give the same numbers, variant by variant
    assert bench.main(["--run-dir", str(oracle), "--json", str(tmp_path / "o.json")]) == 0
    ref = json.loads((tmp_path / "o.json").read_text())
    for v, series in res["variants"].items():
        assert series["iterations"] == [1, 2]
        assert series["repaired_rows"] == ref["variants"][v]["repaired_rows"]
        np.testing.assert_array_equal(series["auc"], ref["variants"][v]["auc"])
    # --iterations: only iteration 2 is replayed; the chained variants still saw batch 1
    status, only = _relabel(bench, plain, tmp_path, "--iterations", "2")
    assert status == 0 and only["complete"] and only["trajectories"] == 8
    for v, series in only["variants"].items():
        assert series["iterations"] == [2]
        assert series["repaired_rows"] == res["variants"][v]["repaired_rows"][1:]
        np.testing.assert_array_equal(series["auc"], res["variants"][v]["auc"][1:])
    assert bench.main(["--run-dir", str(plain), "--relabel", "--iterations", "x"]) == 2


def test_a_corrupted_record_is_reported_unverified(bench, twin_runs, tmp_path):
    run = tmp_path / "corrupt"
    shutil.copytree(twin_runs / "plain", run)
    path = find_records(run)[1]
    rec = read_batch_record(path)
    b = rec.batch
    row = int(np.flatnonzero((b.traj == 5) & (b.t == 1))[0])  # traj 5's second action
    actions = b.action.copy()
    actions[row] = "inventory" if actions[row] != "inventory" else "look"
    fields = {f: getattr(b, f) for f in ("group", "traj", "t", "reward", "terminated",
              "truncated", "anchor", "signature", "milestones", "success")}  # fmt: skip
    bad = StepBatch(**fields, action=actions, extras=dict(rec.extras))
    write_batch_record(run, 1, bad, estimator=rec.make_estimator(),
                       estimator_state=rec.estimator_state, path=path)  # fmt: skip

    status, res = _relabel(bench, run, tmp_path)
    assert status == 1  # 1 of 16 trajectories > the 1% allowed
    assert (res["trajectories"], res["unverified_trajectories"]) == (16, 1)
    (u,) = res["unverified"]
    assert (u["iteration"], u["traj"]) == (1, 5) and "t=" in u["reason"]
    replayer = bench.RunReplayer(run, tmp_path / "cache")
    try:
        labels = replayer.relabel(read_batch_record(path)).labels
    finally:
        replayer.close()
    ref = read_batch_record(find_records(twin_runs / "oracle")[1]).extras[LABEL_KEY]
    assert np.all(labels[b.traj == 5] == -1)  # never labelled ...
    np.testing.assert_array_equal(labels[b.traj != 5], ref[b.traj != 5])  # ... the rest exact
    status, res = _relabel(bench, run, tmp_path, "--max-unverified", "0.1")
    assert status == 0 and res["unverified_trajectories"] == 1
    # two processes share out each batch's groups: the same result
    status, split = _relabel(bench, run, tmp_path, "--max-unverified", "0.1", "--workers", "2")
    assert status == 0 and split["unverified"] == res["unverified"]
    assert split["variants"] == res["variants"]


def test_an_mvpo_run_is_relabelled_and_chained_state_matches_the_trainers(
    bench, twin_runs, tmp_path
):
    run = twin_runs / "mvpo"
    status, res = _relabel(bench, run, tmp_path, "--variant", "mvpo:lambda_L=0")
    assert status == 0 and res["unverified_trajectories"] == 0
    assert list(res["variants"]) == ["trained", "mvpo:lambda_L=0"]
    # --state chained: a variant the run did not train, carried over the run's batches, is in
    # the state the trained MVPO had before each call (the iteration-matched state)
    recs = [read_batch_record(p) for p in find_records(run).values()]
    chained: dict = {}
    for rec in recs:
        as_other = dataclasses.replace(rec, estimator_name="gigpo")
        est = recorded_variant("mvpo", as_other, 0.95, chained, "chained")
        assert est.state_dict() == rec.estimator_state
        est(rec.batch)
    assert bench.main(["--run-dir", str(run), "--relabel", "--state", "chained",
                       "--cache", str(tmp_path / "cache"), "--variant", "gigpo"]) == 0  # fmt: skip
