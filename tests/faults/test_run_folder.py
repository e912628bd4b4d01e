"""Run-folder faults (docs/training.md, "Reliability"): one writer per run folder (a second
``mvpo-train`` is refused naming the holder; the lock dies with its holder; killing the
``--nproc`` launcher stops its ranks), metrics that a kill or a full disk during ``--resume``
cannot shorten, lost metrics rows named instead of "done", torn last lines, run-folder names
the file system refuses."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mvpo_train.checkpoint import complete_checkpoints
from mvpo_train.cli import plot_main, train_main
from mvpo_train.metrics import MetricsLogger, read_metrics, strip_timing
from mvpo_train.run_lock import LOCK_NAME, hold_run_lock

CODE = "import sys; from mvpo_train.cli import train_main; sys.exit(train_main())"


def _rows(run: Path) -> list[dict]:
    return [strip_timing(r) for r in read_metrics(run)]


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _file_size_limit(limit: int):
    """``ulimit -f``: files may not grow past ``limit`` bytes; writes past it fail with EFBIG
    (SIGXFSZ ignored, as a shell with ``ulimit -f`` and a trapped signal does)."""

    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return pre


def _run(argv: list[str], limit: int | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", CODE, *argv],
        capture_output=True, text=True, timeout=300,
        preexec_fn=_file_size_limit(limit) if limit else None,
    )  # fmt: skip


def _error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr[-3000:]
    return [line for line in stderr.splitlines() if "error" in line.lower()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _wait_for_rows(proc: subprocess.Popen, metrics: Path, rows: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while _lines(metrics) < rows:
        assert proc.poll() is None, "the trainer ended early"
        assert time.monotonic() < deadline, "the trainer made no progress"
        time.sleep(0.02)


# ------------------------------------------------------------------ metrics on resume


def test_a_full_disk_during_resume_leaves_the_metrics_whole(reference, tmp_path, train_argv):
    """``ulimit -f 2`` during ``--resume``: shortening metrics.jsonl to the checkpoint's rows
    fails; the file is byte for byte as it was (it was rewritten in place and cut to 2 KiB),
    one line says so; a later ``--resume`` ends like an uninterrupted run."""
    run = tmp_path / "run"
    first = train_argv(run, "--save-every", "2", "--stop-after", "3", iterations=4)
    assert train_main(first) == 0
    before = (run / "metrics.jsonl").read_bytes()
    assert before.count(b"\n") == 3 and len(before) > 2048
    limited = _run(train_argv(run, "--resume", "--save-every", "2", iterations=4), limit=2048)
    assert limited.returncode != 0
    errors = _error_lines(limited.stderr)
    assert len(errors) == 1 and "no space left writing" in errors[0], limited.stderr[-2000:]
    assert "metrics.jsonl" in errors[0] and "rerun with --resume" in errors[0]
    assert (run / "metrics.jsonl").read_bytes() == before
    assert not [p.name for p in run.iterdir() if ".tmp-" in p.name]
    assert train_main(train_argv(run, "--resume", "--save-every", "2", iterations=4)) == 0
    assert _rows(run) == _rows(reference)


@pytest.mark.parametrize("iterations", [4, 3])
def test_lost_metrics_rows_are_one_line_never_done(iterations, tmp_path, train_argv, capsys):
    """metrics.jsonl holds fewer rows than the checkpoint counts (lost before this fix by a
    failed rewrite): ``--resume`` names the lost rows and changes nothing; it never reports the
    run as done (``iterations`` equal to the checkpoint's) or continues with a gap."""
    run = tmp_path / "run"
    assert train_main(train_argv(run, iterations=3)) == 0
    metrics = run / "metrics.jsonl"
    short = b"".join(metrics.read_bytes().splitlines(keepends=True)[:1])
    metrics.write_bytes(short)
    capsys.readouterr()
    assert train_main(train_argv(run, "--resume", iterations=iterations)) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1, err
    assert "holds 1 whole rows but checkpoint iter-000003 counts 3; rows 2-3 are lost" in err[0]
    assert "done" not in captured.out and "nothing to do" not in captured.err
    assert metrics.read_bytes() == short
    assert not (run / LOCK_NAME).exists()


def test_a_torn_last_line_is_skipped_with_a_warning_and_dropped_by_resume(
    reference, tmp_path, train_argv, capsys
):
    """A killed writer's half line at the end: mvpo-plot warns in one line and plots the
    whole rows; ``--resume`` drops it (rows continue on a line of their own). A broken line
    in the middle is one error line naming it."""
    run = tmp_path / "run"
    assert train_main(train_argv(run, "--stop-after", "2", iterations=4)) == 0
    metrics = run / "metrics.jsonl"
    with open(metrics, "a") as fh:
        fh.write('{"iteration": 3, "succ')
    capsys.readouterr()
    assert plot_main([str(run), "--keys", "success", "--out", str(tmp_path / "c.png")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"mvpo-plot: warning: {metrics}: line 3 is incomplete (the writer was "
                   "killed while writing it); skipped"]  # fmt: skip
    assert train_main(train_argv(run, "--resume", iterations=4)) == 0
    assert _rows(run) == _rows(reference)
    # a broken line that is not the last: an error naming it
    lines = metrics.read_text().splitlines(keepends=True)
    metrics.write_text(lines[0] + '{"iteration": 2, "succ\n' + "".join(lines[2:]))
    capsys.readouterr()
    assert plot_main([str(run), "--out", str(tmp_path / "d.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "metrics.jsonl: line 2 is not a JSON object" in err[0], err


def test_a_failed_row_write_leaves_no_half_row(tmp_path):
    """A row that cannot be written whole (file-size limit) is cut off again: the file keeps
    its whole rows and ends with a newline."""
    logger = MetricsLogger(tmp_path, tensorboard=False)
    logger.log({"iteration": 1, "x": 0.5}, 1)
    size = (tmp_path / "metrics.jsonl").stat().st_size
    code = (
        "import sys; from mvpo_train.metrics import MetricsLogger\n"
        "log = MetricsLogger(sys.argv[1], tensorboard=False)\n"
        "try:\n    log.log({'iteration': 2, 'pad': 'x' * 4000}, 2)\n"
        "except Exception as err:\n    print(type(err).__name__, err)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
        timeout=120, preexec_fn=_file_size_limit(size + 100),
    )  # fmt: skip
    assert out.stdout.startswith("StorageFullError no space left writing"), out
    assert (tmp_path / "metrics.jsonl").stat().st_size == size
    assert [r["iteration"] for r in read_metrics(tmp_path)] == [1]


# ------------------------------------------------------------------ one writer per run folder


def test_a_second_writer_is_refused_naming_the_holder(tmp_path, train_argv, capsys):
    """While one ``mvpo-train`` writes a run, a second one (fresh, ``--resume`` or
    ``--overwrite``) exits 2 with one line naming the holder's pid, writing nothing; after a
    SIGKILL of the holder the lock is gone and ``--resume`` continues the run."""
    run = tmp_path / "run"
    log = tmp_path / "holder.log"
    holder = subprocess.Popen(
        [sys.executable, "-c", CODE, *train_argv(run, iterations=400)],
        stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait_for_rows(holder, run / "metrics.jsonl", 2)  # so checkpoint 1 is complete
        for extra in ([], ["--resume"], ["--overwrite"]):
            capsys.readouterr()
            assert train_main(train_argv(run, *extra, iterations=400)) == 2, extra
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1, err
            assert f"is in use by another mvpo-train (pid {holder.pid} holds" in err[0], err
        assert not (tmp_path / "run.old-1").exists()  # --overwrite moved nothing
        assert holder.poll() is None
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    done = [it for it, _ in complete_checkpoints(run)][-1]
    assert train_main(train_argv(run, "--resume", "--stop-after", "1", iterations=400)) == 0
    assert [r["iteration"] for r in read_metrics(run)] == list(range(1, done + 2))
    assert not (run / LOCK_NAME).exists()  # released and removed at the end


def test_the_lock_is_released_and_leaves_nothing(tmp_path):
    fresh = tmp_path / "a" / "b"
    with hold_run_lock(fresh) as lock:
        assert lock.held and (fresh / LOCK_NAME).read_text() == f"{os.getpid()}\n"
    assert not (tmp_path / "a").exists()  # made for the lock, empty: removed again
    assert hold_run_lock(tmp_path / "none", create=False).held is False
    assert not (tmp_path / "none").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_sigkill_of_the_nproc_launcher_stops_torchrun_and_every_rank(tmp_path, train_argv, capsys):
    """``mvpo-train --nproc 2`` holds the lock (a second launcher is refused before torchrun
    starts); SIGKILL of the launcher stops torchrun and both ranks within seconds, nothing
    writes metrics after that, and ``--resume`` continues the run."""
    run = tmp_path / "run"
    argv = train_argv(run, iterations=400)
    launcher = subprocess.Popen(
        [sys.executable, "-c", CODE, "--nproc", "2", *argv],
        stdout=(tmp_path / "launcher.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait_for_rows(launcher, run / "metrics.jsonl", 2)  # so checkpoint 1 is complete
        capsys.readouterr()
        assert train_main(["--nproc", "2", *argv, "--resume"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"(pid {launcher.pid} holds" in err[0], err
        torchrun = _children(launcher.pid)
        ranks = [pid for t in torchrun for pid in _children(t)]
        assert len(torchrun) == 1 and len(ranks) == 2, (torchrun, ranks)
    finally:
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in torchrun + ranks) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [p for p in torchrun + ranks if _alive(p)]
    for pid in alive:  # do not leave them behind when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not alive, "torchrun or a rank outlived the launcher"
    lines = _lines(run / "metrics.jsonl")
    time.sleep(1.0)
    assert _lines(run / "metrics.jsonl") == lines  # nobody writes any more
    done = [it for it, _ in complete_checkpoints(run)][-1]
    assert train_main(train_argv(run, "--resume", "--stop-after", "1", iterations=400)) == 0
    assert [r["iteration"] for r in read_metrics(run)] == list(range(1, done + 2))


# ------------------------------------------------------------------ names the file system refuses


def test_a_run_dir_name_too_long_is_one_line(tmp_path, train_argv, capsys):
    """A 300-byte folder name (``File name too long`` as a traceback before); a 250-byte one
    trains, but ``--overwrite`` would need ``<name>.old-1``: refused before anything moves."""
    long_run = tmp_path / ("r" * 300)
    assert train_main(train_argv(long_run, iterations=1)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has 300 bytes; this file system allows 255" in err[0], err
    assert plot_main([str(long_run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "File name too long" in err[0], err
    run = tmp_path / ("r" * 250)
    assert train_main(train_argv(run, iterations=1)) == 0
    capsys.readouterr()
    assert train_main(train_argv(run, "--overwrite", iterations=1)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "less 7 for the .old-N name of --overwrite" in err[0], err
    assert [r["iteration"] for r in read_metrics(run)] == [1]


def test_a_full_disk_for_any_run_file_is_one_line(tmp_path, train_argv):
    """Files may not grow past 3 kB: config.yaml fits, the first batch record (~5.6 kB) does
    not. One line (it was numpy's traceback), exit code 2."""
    out = _run(train_argv(tmp_path / "run", "--record-every", "1", iterations=2), limit=3000)
    assert out.returncode == 2, out.stderr[-3000:]
    errors = _error_lines(out.stderr)
    assert len(errors) == 1 and "no space left writing" in errors[0], out.stderr[-3000:]
    assert "no checkpoint yet; free space and rerun with --overwrite" in errors[0], errors
