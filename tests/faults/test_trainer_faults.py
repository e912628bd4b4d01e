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

ITERATIONS = 4  # the shared ``reference`` run's (conftest.py)


def _rows(run: Path) -> list[dict]:
    return [strip_timing(r) for r in read_metrics(run)]


def _weights(run: Path, iteration: int = ITERATIONS) -> bytes:
    return (run / "checkpoints" / f"iter-{iteration:06d}" / "model.safetensors").read_bytes()


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


# ------------------------------------------------------------------ evidence is kept, never followed


def _corrupt_iteration_3(run: Path, train_argv) -> None:
    first = train_argv(run, "--keep-checkpoints", "9", "--stop-after", "3")
    assert train_main(first + ["--iterations", str(ITERATIONS)]) == 0
    _flip_middle(run / "checkpoints" / "iter-000003" / "optimizer.pt")


def test_older_evidence_and_a_symlinked_corrupt_name_are_kept(
    reference, tmp_path, train_argv, capsys
):
    """``iter-000003`` is found corrupt while ``iter-000003.corrupt`` (an earlier finding, a
    real folder) and ``iter-000003.corrupt-2`` (a symbolic link to a folder outside the run)
    exist: both stay as they are (they were deleted, or the link made rmtree raise), the new
    finding becomes ``iter-000003.corrupt-3``, and the run ends bit-exact."""
    run = tmp_path / "run"
    _corrupt_iteration_3(run, train_argv)
    root = run / "checkpoints"
    (root / "iter-000003.corrupt").mkdir()
    (root / "iter-000003.corrupt" / "note.txt").write_text("first finding\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the run's\n")
    (root / "iter-000003.corrupt-2").symlink_to(outside, target_is_directory=True)
    capsys.readouterr()
    argv = train_argv(run, "--resume", "--keep-checkpoints", "9", iterations=ITERATIONS)
    assert train_main(argv) == 0
    err = capsys.readouterr().err
    assert "kept as iter-000003.corrupt-3" in err, err
    assert (root / "iter-000003.corrupt" / "note.txt").read_text() == "first finding\n"
    assert (root / "iter-000003.corrupt-2").is_symlink()
    assert (outside / "keep.txt").read_text() == "not the run's\n"
    assert (root / "iter-000003.corrupt-3" / "optimizer.pt").is_file()
    assert _rows(run) == _rows(reference)
    assert _weights(run) == _weights(reference)


# ------------------------------------------------------------------ checksums stay inside


def _add_entry(ckpt: Path, rel: str, target: Path) -> None:
    import hashlib

    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    with open(ckpt / SUMS, "a") as fh:
        fh.write(f"{digest}  {rel}\n")


def _escape_dotdot(ckpt: Path, outside: Path) -> str:
    rel = "../" * len(ckpt.parts) + outside.as_posix().lstrip("/")
    _add_entry(ckpt, rel, outside)
    return "which is not a plain file name inside"


def _escape_absolute(ckpt: Path, outside: Path) -> str:
    _add_entry(ckpt, outside.as_posix(), outside)
    return "which is not a plain file name inside"


def _symlinked_file(ckpt: Path, outside: Path) -> str:
    """tokenizer.json replaced by a link to an outside copy (same bytes, same digest)."""
    outside.write_bytes((ckpt / "tokenizer.json").read_bytes())
    (ckpt / "tokenizer.json").unlink()
    (ckpt / "tokenizer.json").symlink_to(outside)
    return "tokenizer.json: is a symbolic link"


def _unlisted_file(ckpt: Path, outside: Path) -> str:
    (ckpt / "extra.bin").write_bytes(b"\0" * 16)
    return "extra.bin: not listed in SHA256SUMS"


ESCAPES = {
    "dotdot-entry": _escape_dotdot,
    "absolute-entry": _escape_absolute,
    "symlinked-file": _symlinked_file,
    "unlisted-file": _unlisted_file,
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_checksums_never_read_outside_the_checkpoint(name, reference, tmp_path, train_argv, capsys):
    """A SHA256SUMS entry that leaves the folder (``../../etc/hostname`` with its correct
    digest passed before), a file that is a link out of it, a file nobody checked: the
    checkpoint is refused naming the entry, set aside, and the run resumes from iteration 2."""
    run = tmp_path / "run"
    first = train_argv(run, "--keep-checkpoints", "9", "--stop-after", "3")
    assert train_main(first + ["--iterations", str(ITERATIONS)]) == 0
    outside = tmp_path / "hostname"
    outside.write_text("a file outside the run\n")
    expected = ESCAPES[name](run / "checkpoints" / "iter-000003", outside)
    capsys.readouterr()
    argv = train_argv(run, "--resume", "--keep-checkpoints", "9", iterations=ITERATIONS)
    assert train_main(argv) == 0
    err = capsys.readouterr().err
    assert "corrupt checkpoint" in err and expected in err, err
    assert "resuming from the newest intact checkpoint, iter-000002" in err, err
    assert _rows(run) == _rows(reference)


def test_latest_never_points_outside_the_checkpoints_folder(tmp_path):
    from mvpo_train.checkpoint import latest_checkpoint

    outside = tmp_path / "elsewhere" / "iter-000009"
    outside.mkdir(parents=True)
    (outside / SUMS).write_text("")
    root = tmp_path / "run" / "checkpoints"
    (root / "iter-000001").mkdir(parents=True)
    (root / "iter-000001" / SUMS).write_text("")
    (root / LATEST).write_text("../../elsewhere/iter-000009\n")
    assert latest_checkpoint(tmp_path / "run") == root / "iter-000001"
    (root / "iter-000005").symlink_to(outside, target_is_directory=True)  # a link: not one
    assert latest_checkpoint(tmp_path / "run") == root / "iter-000001"
    assert complete_checkpoints(tmp_path / "run") == [(1, root / "iter-000001")]


# ------------------------------------------------------------------ a full disk while saving


def test_a_full_disk_during_a_checkpoint_is_one_line_and_keeps_the_previous(
    reference, tmp_path, train_argv
):
    """Files may not grow past 20 kB (``ulimit -f``; the model file is ~115 kB): writing
    checkpoint 2 fails. One line names it and the intact previous checkpoint (it was a 34-line
    torch traceback), the temporary folder is gone, and a later ``--resume`` ends bit-exact."""
    import resource

    run = tmp_path / "run"
    assert train_main(train_argv(run, "--keep-checkpoints", "9", iterations=1)) == 0

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    code = "import sys; from mvpo_train.cli import train_main; sys.exit(train_main())"
    argv = train_argv(run, "--resume", "--keep-checkpoints", "9", iterations=ITERATIONS)
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300,
        preexec_fn=limit,
    )  # fmt: skip
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    errors = [line for line in out.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, out.stderr[-3000:]
    assert "no space left writing checkpoint" in errors[0] and "iter-000002" in errors[0]
    assert (
        "previous checkpoint iter-000001 intact; free space and rerun with --resume" in (errors[0])
    )
    names = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert names == [LATEST, "iter-000001"], names
    assert train_main(argv) == 0
    assert _rows(run) == _rows(reference)
    assert _weights(run) == _weights(reference)
