"""``mvpo_train.study.runs``: which runs of a study are finished, how an unfinished one goes on
(from the checkpoint module's own notion of the latest complete checkpoint), the runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from mvpo_train.checkpoint import save_checkpoint
from mvpo_train.errors import ConfigError
from mvpo_train.study import runs


def _metrics(path: Path, n: int, torn: bool = False) -> None:
    path.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps({"iteration": i + 1, "success": i / 10}) + "\n" for i in range(n))
    (path / "metrics.jsonl").write_text(text + ('{"iteration": ' if torn else ""))


def test_finished_runs_are_counted_by_whole_rows(tmp_path: Path) -> None:
    _metrics(runs.run_dir(tmp_path, "mvpo", 0), 3, torn=True)  # killed while writing row 4
    _metrics(runs.run_dir(tmp_path, "mvpo", 1), 5)
    assert runs.n_metrics(runs.run_dir(tmp_path, "mvpo", 0)) == 3
    assert runs.n_metrics(runs.run_dir(tmp_path, "grpo", 0)) == 0  # no folder: nothing yet
    done = runs.load_runs(tmp_path, ["mvpo", "grpo"], [0, 1], iterations=4)
    assert list(done["mvpo"]) == [1] and len(done["mvpo"][1]) == 4 and done["grpo"] == {}
    (runs.run_dir(tmp_path, "mvpo", 1) / "metrics.jsonl").write_text("{}\nnot json\n{}\n")
    with pytest.raises(ConfigError, match="line 2"):  # damaged data: one clear error
        runs.n_metrics(runs.run_dir(tmp_path, "mvpo", 1))


def test_resume_follows_the_latest_complete_checkpoint(tmp_path: Path) -> None:
    path = runs.run_dir(tmp_path, "mvpo", 0)
    assert runs.resume_flag(path) == []  # a new run
    path.mkdir(parents=True)
    (path / "train.log").write_text("started\n")
    assert runs.resume_flag(path) == []  # only its log: still new
    _metrics(path, 2)
    assert runs.resume_flag(path) == ["--overwrite"]  # rows but no checkpoint: start over
    (path / "checkpoints").mkdir()
    (path / "checkpoints" / "LATEST").write_text("iter-000002\n")  # a pointer to nothing
    assert runs.resume_flag(path) == ["--overwrite"]
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=16, n_positions=8))
    opt = torch.optim.Adam(model.parameters())
    save_checkpoint(path, 2, model, opt, rng={}, state={})
    assert runs.resume_flag(path) == ["--resume"]


def test_fingerprint_and_eval_files(tmp_path: Path) -> None:
    assert runs.fingerprint({"a": 1, "b": [2]}) == runs.fingerprint({"b": [2], "a": 1})
    assert runs.fingerprint({"a": 1}) != runs.fingerprint({"a": 2})
    runs.eval_file(tmp_path, "test").write_text(json.dumps({"success": 0.25, "success/pick": 0.5}))
    assert (
        runs.read_eval(tmp_path, "test") == 0.25
        and runs.read_eval(tmp_path, "test", "score") is None
    )
    assert runs.read_eval(tmp_path, "valid") is None
    assert runs.read_eval_types(tmp_path, "test") == {"pick": 0.5}


def test_local_runner_runs_each_script_and_names_the_failures(tmp_path: Path) -> None:
    a, b = tmp_path / "a-seed0", tmp_path / "b-seed0"
    failed = runs.run_local(
        [("a", a, "echo hi > out.txt"), ("b", b, "exit 3")], jobs=2, cwd=tmp_path
    )
    assert failed == ["b"]
    assert (tmp_path / "out.txt").read_text() == "hi\n"  # ran in cwd
    assert (a / "train.log").is_file() and (b / "train.log").is_file()


def test_train_cmd_puts_the_run_flags_before_what_may_override_them(tmp_path: Path) -> None:
    path = runs.run_dir(tmp_path, "mvpo", 2)
    cmd = runs.train_cmd(path, 2, 7, ["--estimator", "mvpo"], ["--lr", "0.1"])
    at = cmd.index("--preset")
    assert cmd[at : at + 4] == ["--preset", "cpu-tiny", "--estimator", "mvpo"]
    assert cmd[cmd.index("--seed") + 1] == "2" and cmd[cmd.index("--iterations") + 1] == "7"
    assert cmd[-2:] == ["--lr", "0.1"]  # a new folder: neither --resume nor --overwrite
    _metrics(path, 1)  # a folder with rows and no checkpoint starts over
    assert runs.train_cmd(path, 2, 7, [])[-1] == "--overwrite"
    child = runs.train_cmd(path, 2, 7, [], child=tmp_path / "child.py")
    assert child[1:3] == [str(tmp_path / "child.py"), "train_main"]


def test_pending_runs_are_queued_seed_by_seed_and_fresh_starts_over(tmp_path: Path) -> None:
    _metrics(runs.run_dir(tmp_path, "grpo", 0), 2)

    def commands(path: Path, arm: str, seed: int) -> list[list[str]]:
        done = runs.n_metrics(path) >= 2
        return [] if done else [["echo", arm, f"seed {seed}"], ["true"]]

    pending = runs.pending_runs(tmp_path, ["grpo", "mvpo"], [0, 1], commands)
    assert [name for name, _, _ in pending] == ["mvpo-seed0", "grpo-seed1", "mvpo-seed1"]
    name, path, script = pending[0]
    assert path == tmp_path / "mvpo-seed0" and script == "echo mvpo 'seed 0' && true"
    again = runs.pending_runs(tmp_path, ["grpo"], [0], commands, fresh=True)
    assert [n for n, _, _ in again] == ["grpo-seed0"] and not (tmp_path / "grpo-seed0").exists()
