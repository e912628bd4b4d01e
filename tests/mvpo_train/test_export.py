"""``mvpo-export`` (docs/inspect.md, "Export"): a real run's records round-trip through Hugging
Face ``datasets``, parquet and JSON lines; old records export what they have and say what is
missing in one line; verl rows for an env and split."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import gymnasium as gym
import numpy as np
import pyarrow.parquet as pq
import pytest

from mvpo_train.config import ConfigError, TrainConfig
from mvpo_train.export import export_run, main, parse_iterations, verl_rows, write_verl
from mvpo_train.records import find_records, read_batch_record, write_batch_record
from mvpo_train.trainer import train


@pytest.fixture(scope="module")
def run(micro, tmp_path_factory) -> Path:
    """Two iterations of a real run (the micro model on the mini ALFWorld rooms)."""
    run_dir = tmp_path_factory.mktemp("export") / "run"
    cfg = TrainConfig(
        run_dir=str(run_dir), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, num_groups=2, group_size=2, max_steps=3, iterations=2,
        micro_batch_size=16, save_every=0, tasks=[3, 13], env_kwargs={"preset": "mini"},
        estimator="mvpo", seed=0,
    )  # fmt: skip
    train(cfg)
    return run_dir


def _records(run_dir: Path):
    return [read_batch_record(p) for p in find_records(run_dir).values()]


def test_records_keep_what_the_export_needs(run):
    for r in _records(run):
        n = len(r.batch)
        assert {"prompt", "admissible_actions", "task_id", "task_index"} <= set(r.extras)
        for k in range(n):
            adm = r.extras["admissible_actions"][k]
            assert isinstance(adm, tuple) and adm and all(isinstance(a, str) for a in adm)
            # the prompt the policy read: the first one shows the first observation
            if r.batch.t[k] == 0:
                assert r.batch.anchor[k].strip() in r.extras["prompt"][k]
            assert r.batch.action[k] in {" ".join(a.lower().split()) for a in adm}
        # a group plays one task: one task id and index per group
        for g in set(r.batch.group.tolist()):
            rows = r.batch.group == g
            assert len(set(r.extras["task_id"][rows].tolist())) == 1
            assert len(set(r.extras["task_index"][rows].tolist())) == 1
        assert set(r.extras["task_index"].astype(int).tolist()) <= {3, 13}


def _check_steps(steps, records, extra_estimators=()):
    """The exported step rows are the records' rows, in order."""
    by_iter = {r.iteration: r for r in records}
    start = 0
    for it, r in sorted(by_iter.items()):
        n = len(r.batch)
        part = steps.select(range(start, start + n))
        start += n
        assert part["iteration"] == [it] * n
        assert part["action"] == r.batch.action.tolist()
        assert part["reward"] == r.batch.reward.tolist()
        assert part["advantage"] == r.advantages.tolist()
        assert part["terminated"] == r.batch.terminated.tolist()
        assert part["milestones"] == [list(m) for m in r.batch.milestones.tolist()]
        assert part["prompt"] == r.extras["prompt"].tolist()
        assert part["admissible_actions"] == [list(a) for a in r.extras["admissible_actions"]]
        assert part["task_id"] == r.extras["task_id"].tolist()
        assert part["estimator"] == ["mvpo"] * n
        for name in extra_estimators:
            expected, _ = r.make_estimator(name)(r.batch)
            np.testing.assert_array_equal(np.asarray(part[f"advantage_{name}"]), expected)
    assert start == len(steps)


def test_datasets_round_trip(run, tmp_path, capsys):
    out = tmp_path / "hf"
    argv = [str(run), "--format", "datasets", "--out", str(out), "--estimators", "grpo,mvpo"]
    assert main([*argv, "--no-progress"]) == 0
    assert "export without" not in capsys.readouterr().err  # nothing missing in new records
    dd = datasets.load_from_disk(str(out))
    records = _records(run)
    _check_steps(dd["steps"], records, ("grpo", "mvpo"))
    # the trained estimator recomputed from the record is the recorded advantage
    assert dd["steps"]["advantage_mvpo"] == dd["steps"]["advantage"]
    eps = dd["episodes"]
    assert len(eps) == sum(r.batch.n_traj for r in records)
    for r in records:
        rows = eps.filter(lambda e, it=r.iteration: e["iteration"] == it)
        np.testing.assert_allclose(rows["return"], r.batch.traj_return)
        assert rows["success"] == r.batch.traj_success.tolist()
        assert rows["length"] == r.batch.traj_length.tolist()
    # the episode table joins the step table on "episode"
    steps = dd["steps"].to_pandas()
    sums = steps.groupby("episode")["reward"].sum()
    for e in eps:
        assert sums[e["episode"]] == pytest.approx(e["return"])
    # an existing output is not overwritten silently
    assert main([*argv, "--no-progress"]) == 2
    assert "exists and is not empty" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_parquet_and_jsonl_round_trip(run, tmp_path, fmt):
    res = export_run(run, tmp_path / fmt, fmt, iterations="last")
    last = _records(run)[-1]
    assert res.iterations == [last.iteration] and res.steps == len(last.batch)
    if fmt == "parquet":
        table = pq.read_table(tmp_path / fmt / "steps.parquet").to_pylist()
    else:
        text = (tmp_path / fmt / "steps.jsonl").read_text(encoding="utf-8")
        table = [json.loads(line) for line in text.splitlines()]
    assert [row["action"] for row in table] == last.batch.action.tolist()
    assert [row["reward"] for row in table] == last.batch.reward.tolist()
    assert [row["advantage"] for row in table] == last.advantages.tolist()
    assert [row["admissible_actions"] for row in table] == [
        list(a) for a in last.extras["admissible_actions"]
    ]


def test_old_records_export_what_they_have_and_say_what_is_missing(run, tmp_path, capsys):
    old_run = tmp_path / "old"
    for r in _records(run):  # the same batches, recorded without the new fields
        batch = r.batch
        kept = {k: v for k, v in r.extras.items() if k in ("env_reward", "task_type")}
        object.__setattr__(batch, "extras", kept)
        write_batch_record(
            old_run, r.iteration, batch, estimator=r.make_estimator(),
            estimator_state=r.estimator_state, advantages=r.advantages,
        )  # fmt: skip
    out = tmp_path / "out"
    assert main([str(old_run), "--format", "parquet", "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "prompt, admissible_actions, task_id, task_index (iterations 1-2)" in err[0]
    table = pq.read_table(out / "steps.parquet")
    assert "prompt" not in table.column_names and "action" in table.column_names
    assert (
        table.column("advantage").to_pylist()
        == np.concatenate([r.advantages for r in _records(run)]).tolist()
    )


def test_iteration_specs_and_errors(run, tmp_path, capsys):
    assert parse_iterations("1,2", [1, 2]) == [1, 2]
    assert parse_iterations("1-2", [1, 2, 3]) == [1, 2]
    assert parse_iterations(None, [4, 9]) == [4, 9]
    assert main([str(run), "--iterations", "7", "--out", str(tmp_path / "x")]) == 2
    assert "no record of iteration 7; recorded: 1-2" in capsys.readouterr().err
    assert main([str(run), "--iterations", "a-b", "--out", str(tmp_path / "x")]) == 2
    assert "is not N or A-B" in capsys.readouterr().err
    assert main([str(tmp_path / "nothing"), "--out", str(tmp_path / "y")]) == 2
    assert "no such run folder" in capsys.readouterr().err
    assert main([str(run), "--format", "csv"]) == 2  # a bad flag is one line, no usage dump
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice: 'csv'" in err
    # the YAML spelling of a flag works too
    assert main([str(run), "--iterations", "2", "--out", str(tmp_path / "u"), "--no_progress"]) == 0


def test_verl_rows_for_an_env_and_split(tmp_path):
    rows = verl_rows("mvpo/ALFWorld-v0", "eval", {"preset": "mini"}, progress=False)
    env = gym.make("mvpo/ALFWorld-v0", preset="mini", split="eval")
    ids = list(env.unwrapped.task_ids)
    env.close()
    assert len(rows) == len(ids) > 1  # one row per task of the split, in task order
    assert [r["extra_info"]["task_id"] for r in rows] == ids
    for i, row in enumerate(rows):
        spec = row["extra_info"]["mvpo_env"]
        assert spec == {
            "env_id": "mvpo/ALFWorld-v0", "seed": i, "template": "paper",
            "env_kwargs": {"preset": "mini", "split": "eval"},
        }  # fmt: skip
        assert row["agent_name"] == "mvpo_env" and row["extra_info"]["index"] == i
        assert (
            row["prompt"][0]["role"] == "user" and "Your task is to" in row["prompt"][0]["content"]
        )
    path = write_verl(tmp_path / "v", "mvpo/ALFWorld-v0", "eval", {"preset": "mini"}, max_tasks=4,
                      progress=False)  # fmt: skip
    assert path.name == "eval.parquet"
    table = pq.read_table(path).to_pylist()
    assert [r["extra_info"]["mvpo_env"]["seed"] for r in table] == [0, 1, 2, 3]
    # the splits of an env share the folder; a split's file is not replaced silently
    other = write_verl(tmp_path / "v", "mvpo/ALFWorld-v0", "train", {"preset": "mini"},
                       max_tasks=1, progress=False)  # fmt: skip
    assert other.name == "train.parquet" and path.is_file()
    with pytest.raises(ConfigError, match="eval.parquet exists"):
        write_verl(tmp_path / "v", "mvpo/ALFWorld-v0", "eval", {"preset": "mini"}, max_tasks=1)
