"""Trainer faults (docs/training.md, "Reliability"): SIGKILL at seeded random moments then
``--resume`` is bit-exact; corrupt checkpoints are detected, named and skipped; a run folder is
never reused silently."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mvpo_train.checkpoint import LATEST, SUMS, complete_checkpoints
from mvpo_train.cli import eval_main, train_main
from mvpo_train.metrics import read_metrics, strip_timing

ITERATIONS = 4


def _rows(run: Path) -> list[dict]:
    return [strip_timing(r) for r in read_metrics(run)]


def _weights(run: Path, iteration: int = ITERATIONS) -> bytes:
    return (run / "checkpoints" / f"iter-{iteration:06d}" / "model.safetensors").read_bytes()


@pytest.fixture(scope="module")
def reference(tmp_path_factory, train_argv) -> Path:
    """An uninterrupted run of ITERATIONS iterations."""
    run = tmp_path_factory.mktemp("ref") / "run"
    assert train_main(train_argv(run, "--keep-checkpoints", "9", iterations=ITERATIONS)) == 0
    return run


# ------------------------------------------------------------------ SIGKILL, then --resume


def _spawn(argv: list[str], log: Path) -> subprocess.Popen:
    code = "import sys; from mvpo_train.cli import train_main; sys.exit(train_main())"
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv], stdout=log.open("a"), stderr=subprocess.STDOUT
    )


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _kill_at(proc: subprocess.Popen, metrics: Path, rows: int, delay: float) -> bool:
    """SIGKILL ``proc`` ``delay`` seconds after ``metrics`` reaches ``rows`` lines; False if it
    finished first."""
    deadline = time.monotonic() + 120
    while _lines(metrics) < rows:
        if proc.poll() is not None:
            return False
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the trainer made no progress within 120 s")
        time.sleep(0.005)
    time.sleep(delay)
    if proc.poll() is not None:
        return False
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return True


def test_sigkill_at_seeded_random_moments_then_resume_is_bit_exact(
    reference, tmp_path, train_argv, capsys
):
    """Two kills at seeded random moments (after ``k`` metrics rows plus a random fraction of
    an iteration, so inside a rollout, an update or a checkpoint write), then ``--resume`` to
    the end: the same metrics (apart from time) and the same weights as the reference."""
    rng = np.random.default_rng(20261130)
    iteration_seconds = float(np.median([r["time/total"] for r in read_metrics(reference)]))
    run = tmp_path / "run"
    log = tmp_path / "train.log"
    metrics = run / "metrics.jsonl"
    kills = 0
    resume: list[str] = []
    for k in sorted(rng.integers(1, ITERATIONS, size=2)):
        proc = _spawn(train_argv(run, *resume, iterations=ITERATIONS), log)
        delay = float(rng.uniform(0.0, 1.0)) * iteration_seconds
        killed = _kill_at(proc, metrics, int(k), delay)
        kills += killed
        if not killed:
            assert proc.returncode == 0, log.read_text()
        if complete_checkpoints(run):
            resume = ["--resume"]
        else:  # killed before the first checkpoint: --resume refuses, --overwrite restarts
            assert train_main(train_argv(run, "--resume")) == 2
            assert "no complete checkpoint" in capsys.readouterr().err
            resume = ["--overwrite"]
    assert kills >= 1, log.read_text()
    assert train_main(train_argv(run, *resume, iterations=ITERATIONS)) == 0, log.read_text()
    assert _rows(run) == _rows(reference)
    assert _weights(run) == _weights(reference)
    leftovers = [p.name for p in (run / "checkpoints").iterdir() if ".tmp-" in p.name]
    assert leftovers == []


# ------------------------------------------------------------------ corrupt checkpoints


def _flip_middle(path: Path) -> None:
    blob = bytearray(path.read_bytes())
    mid = len(blob) // 2
    blob[mid : mid + 8] = bytes(b ^ 0x5A for b in blob[mid : mid + 8])
    path.write_bytes(bytes(blob))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


def _garble_tensor_bytes(path: Path) -> None:
    """Overwrite 16 bytes inside the tensor data (after the safetensors header): the file still
    parses, only the weights are wrong."""
    blob = bytearray(path.read_bytes())
    header = 8 + int.from_bytes(blob[:8], "little")
    pos = header + (len(blob) - header) // 2
    blob[pos : pos + 16] = b"\xff" * 16  # NaN patterns in float32
    path.write_bytes(bytes(blob))


CORRUPTIONS = {
    "truncated-safetensors": ("model.safetensors", _truncate),
    "garbled-tensor-bytes": ("model.safetensors", _garble_tensor_bytes),
    "garbled-optimizer": ("optimizer.pt", _flip_middle),
    "garbled-rng-tensors": ("rng.pt", _flip_middle),
    "garbled-rng-json": ("rng.json", lambda p: p.write_text('{"python": ')),
    "garbled-state": ("state.json", lambda p: p.write_text("{}")),
    "garbled-checksums": (SUMS, lambda p: p.write_text("not a checksum line\n")),
    "missing-file": ("optimizer.pt", lambda p: p.unlink()),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_corrupt_latest_checkpoint_falls_back_to_the_newest_intact(
    name, reference, tmp_path, train_argv, capsys
):
    """The newest checkpoint (iteration 3) is damaged: ``--resume`` names the file, sets the
    checkpoint aside, resumes from iteration 2, and ends bit-exact with the reference."""
    run = tmp_path / "run"
    first = train_argv(run, "--keep-checkpoints", "9", "--stop-after", "3")
    assert train_main(first + ["--iterations", str(ITERATIONS)]) == 0
    fname, damage = CORRUPTIONS[name]
    damage(run / "checkpoints" / "iter-000003" / fname)
    (run / "checkpoints" / f"{LATEST}.tmp-99999").write_text("iter-000003\n")  # a killed writer
    capsys.readouterr()
    argv = train_argv(run, "--resume", "--keep-checkpoints", "9", iterations=ITERATIONS)
    assert train_main(argv) == 0
    err = capsys.readouterr().err
    assert "corrupt checkpoint" in err and f"iter-000003/{fname}" in err, err
    assert "resuming from the newest intact checkpoint, iter-000002" in err, err
    assert (run / "checkpoints" / "iter-000003.corrupt").is_dir()
    assert not (run / "checkpoints" / f"{LATEST}.tmp-99999").exists()
    assert _rows(run) == _rows(reference)
    assert _weights(run) == _weights(reference)


def test_no_intact_checkpoint_is_one_line_naming_the_file(tmp_path, train_argv, capsys):
    run = tmp_path / "run"
    assert train_main(train_argv(run, "--keep-checkpoints", "1", iterations=1)) == 0
    _truncate(run / "checkpoints" / "iter-000001" / "model.safetensors")
    before = (run / "metrics.jsonl").read_bytes()
    capsys.readouterr()
    assert train_main(train_argv(run, "--resume", iterations=2)) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "iter-000001/model.safetensors: checksum mismatch" in err[0]
    assert (run / "metrics.jsonl").read_bytes() == before  # nothing truncated
    assert (run / "checkpoints" / "iter-000001").is_dir()  # nothing moved
    for argv in (["--run-dir", str(run)], ["--model", str(run / "checkpoints" / "iter-000001")]):
        assert eval_main(argv) == 2
        err = capsys.readouterr().err.splitlines()
        assert "iter-000001/model.safetensors: checksum mismatch" in err[-1], err


# ------------------------------------------------------------------ run-folder reuse


def test_a_fresh_run_refuses_a_folder_that_holds_a_run(reference, tmp_path, train_argv, capsys):
    """The issue's sequence: a 2-iteration run, then a fresh run into the same folder, then a
    resume. Nothing is lost or mixed: the fresh run is refused; --overwrite moves the old run
    aside whole; a later --resume continues the new run, not the old one."""
    run = tmp_path / "run"
    assert train_main(train_argv(run, "--seed", "7", iterations=2)) == 0
    old_rows = _rows(run)
    capsys.readouterr()
    assert train_main(train_argv(run, iterations=ITERATIONS)) == 2
    err = capsys.readouterr().err
    assert "already holds a run (config.yaml, metrics.jsonl, checkpoints, records)" in err, err
    assert "--resume" in err and "--overwrite" in err
    assert _rows(run) == old_rows
    # --overwrite: the old run moves to run.old-1, whole; the new run starts from nothing
    assert train_main(train_argv(run, "--overwrite", "--stop-after", "1", iterations=4)) == 0
    assert "moved the previous run" in capsys.readouterr().err
    assert _rows(tmp_path / "run.old-1") == old_rows
    assert [it for it, _ in complete_checkpoints(tmp_path / "run.old-1")] == [1, 2]
    assert [r["iteration"] for r in _rows(run)] == [1]
    # a resume continues the new run (whose checkpoint pruning never removed its own)
    assert train_main(train_argv(run, "--resume", iterations=ITERATIONS)) == 0
    assert _rows(run) == _rows(reference)
    assert [it for it, _ in complete_checkpoints(run)] == [3, 4]
    assert (run / "checkpoints" / LATEST).read_text().strip() == "iter-000004"


def test_resume_refuses_a_changed_config_and_lists_the_fields(tmp_path, train_argv, capsys):
    run = tmp_path / "run"
    assert train_main(train_argv(run, iterations=1)) == 0
    saved = json.loads(json.dumps((run / "config.yaml").read_text()))
    capsys.readouterr()
    argv = train_argv(run, "--resume", "--lr", "0.5", "--group-size", "3", iterations=2)
    assert train_main(argv) == 2
    err = capsys.readouterr().err
    assert "group_size: 2 -> 3" in err and "lr: 0.005 -> 0.5" in err, err
    assert (run / "config.yaml").read_text() == saved
    # declared safe: iterations, checkpointing, logging
    argv = train_argv(run, "--resume", "--keep-checkpoints", "1", "--progress", iterations=2)
    assert train_main(argv) == 0
    assert [r["iteration"] for r in _rows(run)] == [1, 2]
    # a finished run: nothing to do, nothing changed
    assert train_main(train_argv(run, "--resume", iterations=2)) == 0
    assert "nothing to do" in capsys.readouterr().err
    assert train_main(train_argv(run, "--resume", iterations=1)) == 2
    assert "iterations: the run is already at iteration 2" in capsys.readouterr().err
