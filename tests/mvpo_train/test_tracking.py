"""Experiment trackers (``report_to``, docs/training.md "Tracking"): what TensorBoard, W&B
(offline) and Trackio (local) hold after a real run and its resume, read back with each one's
own reader; ``none``; a missing package; no network."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from mvpo_train.cli import train_main
from mvpo_train.config import TrainConfig, load_config
from mvpo_train.tracking import BACKENDS, normalize_report_to

# Runs in a fresh process: Trackio reads TRACKIO_DIR at import, W&B keeps one run per process.
# Every socket connect or name lookup that is not local is written to MVPO_NET_LOG and refused.
GUARDED_TRAIN = r"""
import ipaddress, os, socket, sys

def _local(host):
    if host in ("localhost", "", None) or (isinstance(host, str) and host.startswith("/")):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

def _refuse(what):
    with open(os.environ["MVPO_NET_LOG"], "a") as fh:
        fh.write(repr(what) + "\n")
    raise OSError(f"network refused in this test: {what!r}")

_connect, _connect_ex, _getaddrinfo = (
    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo)

def connect(self, addr):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(addr[0]):
        _refuse(addr)
    return _connect(self, addr)

def connect_ex(self, addr):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(addr[0]):
        _refuse(addr)
    return _connect_ex(self, addr)

def getaddrinfo(host, *args, **kwargs):
    if not _local(host.decode() if isinstance(host, bytes) else host):
        _refuse(("dns", host))
    return _getaddrinfo(host, *args, **kwargs)

socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = (
    connect, connect_ex, getaddrinfo)
from mvpo_train.cli import train_main
sys.exit(train_main(sys.argv[1:]))
"""


def _argv(micro: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        "--model", str(micro), "--run-dir", str(run_dir), "--device", "cpu", "--threads", "1",
        "--no-progress", "--num-groups", "2", "--group-size", "2", "--max-steps", "3",
        "--env-kwargs", '{"preset": "mini"}', "--ppo-epochs", "1", "--record-every", "0",
        *extra,
    ]  # fmt: skip


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "TRACKIO_"))}
    env.update(
        MVPO_NET_LOG=str(tmp / "net.log"),
        HF_HUB_OFFLINE="1",
        WANDB_CONFIG_DIR=str(tmp / "wandb-config"),  # nothing written to the home folder
        WANDB_CACHE_DIR=str(tmp / "wandb-cache"),
        WANDB_DATA_DIR=str(tmp / "wandb-data"),
    )
    return env


def _train_guarded(micro: Path, run_dir: Path, tmp: Path, *extra: str) -> None:
    argv = [sys.executable, "-c", GUARDED_TRAIN, *_argv(micro, run_dir, *extra)]
    done = subprocess.run(argv, env=_env(tmp), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def _rows(run_dir: Path) -> dict[int, dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["iteration"]: r for r in rows}


@pytest.fixture(scope="module")
def tracked(micro, tmp_path_factory):
    """A run to all three trackers, killed after iteration 3 with its newest checkpoint at 2
    (``--stop-after 3 --save-every 2``), then resumed to iteration 4."""
    tmp = tmp_path_factory.mktemp("tracked")
    run = tmp / "run"
    flags = ("--report-to", "tensorboard,wandb,trackio", "--iterations", "4", "--save-every", "2")
    _train_guarded(micro, run, tmp, *flags, "--stop-after", "3")
    killed = _rows(run)
    _train_guarded(micro, run, tmp, *flags, "--resume")
    return run, tmp, killed


KEYS = ("success", "return_mean", "env_steps")  # no time/ field: a resume recomputes the rest


def test_no_network_and_jsonl_always_written(tracked):
    run, tmp, killed = tracked
    assert not (tmp / "net.log").exists(), (tmp / "net.log").read_text()
    assert sorted(killed) == [1, 2, 3] and sorted(_rows(run)) == [1, 2, 3, 4]
    for key in KEYS:  # the resumed process recomputed row 3 as the killed one wrote it
        assert killed[3][key] == _rows(run)[3][key]


def test_tensorboard_holds_each_step_once(tracked):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run, _, _ = tracked
    acc = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0})
    acc.Reload()  # reads every events file; the resume's purge_step hides the killed step 3
    rows = _rows(run)
    for key in KEYS:
        events = acc.Scalars(key)
        assert [e.step for e in events] == [1, 2, 3, 4]
        assert [e.value for e in events] == pytest.approx([rows[i][key] for i in (1, 2, 3, 4)])


def _wandb_records(path: Path):
    """The records of a W&B ``.wandb`` file: a 7-byte header (``:W&B``, magic, version), then
    LevelDB log blocks of 32 KiB holding ``wandb_internal.Record`` protobufs."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, chunk, block = 7, b"", 32768
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _crc, size, kind = struct.unpack("<IHB", data[pos : pos + 7])
        pos += 7
        if size == 0 and kind == 0:
            break
        chunk += data[pos : pos + size]
        pos += size
        if kind in (1, 4):  # FULL or LAST: the record is whole
            record = pb.Record()
            record.ParseFromString(chunk)
            yield record
            chunk = b""


def test_wandb_offline_run_continues_without_duplicates(tracked):
    run, _, _ = tracked
    state = json.loads((run / "wandb" / "mvpo-wandb.json").read_text())
    files = sorted((run / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(files) == 2 and all(f.name == f"run-{state['id']}.wandb" for f in files)
    steps, configs = [], []
    for f in files:
        for record in _wandb_records(f):
            kind = record.WhichOneof("record_type")
            if kind == "history":
                item = {i.key or "/".join(i.nested_key): json.loads(i.value_json)
                        for i in record.history.item}  # fmt: skip
                steps.append(item["_step"])
                for key in KEYS:
                    assert item[key] == pytest.approx(_rows(run)[item["_step"]][key])
            elif kind == "run":
                assert record.run.display_name == "run" and record.run.project == "mvpo"
                configs.append({i.key: i.value_json for i in record.run.config.update})
    assert steps == [1, 2, 3, 4] and state["step"] == 4  # step 3 sent once, by the killed run
    assert all(json.loads(c["estimator"]) == "mvpo" for c in configs) and len(configs) == 2


def test_trackio_local_database_holds_each_step_once(tracked):
    run, _, _ = tracked
    db = run / "trackio" / "mvpo.db"  # TRACKIO_DIR unset: the run folder keeps the database
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        got = conn.execute("SELECT run_name, step, metrics FROM metrics ORDER BY id").fetchall()
        (config,) = conn.execute("SELECT config FROM configs").fetchone()
    assert [(name, step) for name, step, _ in got] == [("run", s) for s in (1, 2, 3, 4)]
    for _, step, metrics in got:
        values = json.loads(metrics)
        for key in KEYS:
            assert values[key] == pytest.approx(_rows(run)[step][key])
    assert json.loads(config)["estimator"] == "mvpo"


# ------------------------------------------------------------------ in this process


@pytest.fixture
def no_network(monkeypatch):
    """Refuse (and fail on) any socket connect that is not loopback or a Unix socket."""
    tried: list = []
    real = socket.socket.connect

    def connect(self, addr):
        if self.family in (socket.AF_INET, socket.AF_INET6) and addr[0] not in ("127.0.0.1", "::1"):
            tried.append(addr)
            raise OSError(f"network refused: {addr}")
        return real(self, addr)

    monkeypatch.setattr(socket.socket, "connect", connect)
    yield tried
    assert not tried


def test_none_writes_only_metrics_jsonl(micro, tmp_path, no_network):
    run = tmp_path / "run"
    assert train_main(_argv(micro, run, "--report-to", "none", "--iterations", "1")) == 0
    assert sorted(_rows(run)) == [1]
    assert not {"tensorboard", "wandb", "trackio"} & {p.name for p in run.iterdir()}


def test_default_skips_a_missing_tensorboard_silently(micro, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as if not installed
    run = tmp_path / "run"
    assert train_main(_argv(micro, run, "--iterations", "1")) == 0
    assert not (run / "tensorboard").exists() and sorted(_rows(run)) == [1]
    assert "tensorboard" not in capsys.readouterr().err


@pytest.mark.parametrize("name", ["tensorboard", "wandb", "trackio"])
def test_a_named_tracker_that_is_missing_is_one_line(name, micro, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, BACKENDS[name][0], None)
    run = tmp_path / "run"
    assert train_main(_argv(micro, run, "--report-to", name, "--iterations", "1")) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"report_to: {name} is not installed" in err
    assert f"mvpo[{BACKENDS[name][1]}]" in err
    assert not (run / "metrics.jsonl").exists()  # refused before anything ran


@pytest.mark.parametrize(
    "value, message",
    [
        ("mlflow", "unknown tracker 'mlflow'"),
        ("none,wandb", "none and all stand alone"),
        ("wandb,wandb", "names a tracker twice"),
    ],
)
def test_bad_report_to_is_one_line(value, message, capsys):
    assert train_main(["--report-to", value, "--print-config"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err and err.startswith("mvpo-train: error:")


def test_report_to_forms_and_the_deprecated_tensorboard_flag(tmp_path):
    assert TrainConfig(report_to="wandb, trackio").report_to == ["wandb", "trackio"]
    assert TrainConfig(report_to=["none"]).report_to == []
    assert TrainConfig().report_to is None  # the default: TensorBoard when installed
    installed = [n for n in BACKENDS if normalize_report_to([n]) and _importable(n)]
    assert normalize_report_to("all") == installed
    with pytest.raises(Exception, match="tensorboard is false but report_to"):
        TrainConfig(tensorboard=False, report_to="tensorboard")
    old = tmp_path / "config.yaml"  # a run folder's config from before report_to existed
    old.write_text("tensorboard: false\nlr: 0.01\n")
    cfg = TrainConfig(**load_config(old))
    assert cfg.report_to is None and not cfg.tensorboard
    yaml_str = tmp_path / "new.yaml"
    yaml_str.write_text("report_to: wandb\n")
    assert TrainConfig(**load_config(yaml_str)).report_to == ["wandb"]


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(BACKENDS[name][0]) is not None
