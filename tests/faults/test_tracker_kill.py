"""Trackers after a kill at an iteration boundary (docs/training.md, "Tracking"): the trainer
and its tracker processes are SIGKILLed the moment a checkpoint is committed, the run is
resumed, and Trackio's local database and W&B's offline run hold every step exactly once."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("trackio")
pytest.importorskip("wandb")

REPO = Path(__file__).resolve().parents[2]
TRAIN = "import sys; from mvpo_train.cli import train_main; sys.exit(train_main(sys.argv[1:]))"


def _wandb_records():
    spec = importlib.util.spec_from_file_location(
        "tracking_test_helpers", REPO / "tests" / "mvpo_train" / "test_tracking.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._wandb_records


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "TRACKIO_"))}
    env.update(
        HF_HUB_OFFLINE="1",
        OMP_NUM_THREADS="1",
        WANDB_CONFIG_DIR=str(tmp / "wandb-config"),
        WANDB_CACHE_DIR=str(tmp / "wandb-cache"),
        WANDB_DATA_DIR=str(tmp / "wandb-data"),
    )
    return env


def test_no_step_is_lost_after_a_kill_right_after_a_checkpoint(train_argv, tmp_path) -> None:
    run = tmp_path / "run"
    argv = train_argv(run, "--report-to", "trackio,wandb", "--save-every", "2", iterations=4)
    cmd = [sys.executable, "-c", TRAIN, *argv]
    proc = subprocess.Popen(
        cmd, env=_env(tmp_path), cwd=REPO, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    sums = run / "checkpoints" / "iter-000002" / "SHA256SUMS"
    deadline = time.monotonic() + 300
    try:
        while not sums.is_file() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert sums.is_file(), proc.stderr.read()[-3000:] if proc.stderr else ""
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the trainer and W&B's service, at the boundary
        proc.wait(timeout=60)
        if proc.stderr:
            proc.stderr.close()
    done = subprocess.run(
        [*cmd, "--resume"], env=_env(tmp_path), cwd=REPO, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Uploading logs" not in done.stdout + done.stderr
    with sqlite3.connect(f"file:{run / 'trackio' / 'mvpo.db'}?mode=ro", uri=True) as conn:
        steps = [s for (s,) in conn.execute("SELECT step FROM metrics ORDER BY step")]
    assert steps == [1, 2, 3, 4]
    records = _wandb_records()
    sent = []
    for f in sorted((run / "wandb").glob("offline-run-*/run-*.wandb")):
        for record in records(f):
            if record.WhichOneof("record_type") == "history":
                item = {i.key or "/".join(i.nested_key): json.loads(i.value_json)
                        for i in record.history.item}  # fmt: skip
                sent.append(item["_step"])
    assert sorted(sent) == [1, 2, 3, 4]
