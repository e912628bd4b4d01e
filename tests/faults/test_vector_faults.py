"""Async env workers killed or stopped mid-call: a named error in bounded time, no hang, no orphan.

docs/environments.md, "Vector envs". The envs are the real ``mvpo/SearchQA-v0``; where a step
must still be in flight when the signal lands, a wrapper makes it slow (the healthy workers'
steps take far longer than the error may). The time bounds below are hang guards, generous on
a loaded machine, not speed goals.
"""

from __future__ import annotations

import os
import signal
import time

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.async_worker import TextAsyncVectorEnv
from mvpo_envs.vector import GroupedVectorEnv, WorkerCrashedError

SLOW = 60.0  # seconds a healthy worker's slow step takes: far beyond every bound below
BOUND = 20.0  # hang guard: errors and close() must come well within this


pytestmark = pytest.mark.usefixtures("forget_shared_retrievers")


class SlowStep(gym.Wrapper):
    """The real env, with each step taking ``delay`` seconds first."""

    def __init__(self, env: gym.Env, delay: float):
        super().__init__(env)
        self.delay = delay

    def step(self, action):
        time.sleep(self.delay)
        return self.env.step(action)


def _slow_venv(n: int = 3, **kwargs) -> TextAsyncVectorEnv:
    venv = TextAsyncVectorEnv(
        [lambda: SlowStep(gym.make("mvpo/SearchQA-v0"), SLOW) for _ in range(n)],
        shared_memory=False,
        **kwargs,
    )
    venv.reset(seed=[0] * n)
    return venv


def _gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


def _close_and_check(venv, pids: list[int]) -> None:
    start = time.monotonic()
    venv.close()
    assert time.monotonic() - start < BOUND, "close() hung"
    assert all(_gone(pid) for pid in pids), "a worker process was left behind"


def _step_in_flight(venv: TextAsyncVectorEnv) -> None:
    venv.step_async(tuple("<search> paris </search>" for _ in range(venv.num_envs)))
    time.sleep(0.5)  # every worker is now inside its slow step


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_worker_killed_during_step_is_named_at_once(sig):
    venv = _slow_venv()
    pids = [p.pid for p in venv.processes]
    _step_in_flight(venv)
    os.kill(pids[1], sig)
    start = time.monotonic()
    with pytest.raises(
        WorkerCrashedError,
        match=rf"worker 1 \(pid {pids[1]} was killed by {sig.name}\) during step",
    ) as err:
        venv.step_wait()
    assert time.monotonic() - start < BOUND and err.value.workers == [1]
    _close_and_check(venv, pids)


def test_worker_stopped_during_step_is_named_after_the_grace():
    venv = _slow_venv(stopped_grace=1.0)
    pids = [p.pid for p in venv.processes]
    _step_in_flight(venv)
    os.kill(pids[2], signal.SIGSTOP)
    start = time.monotonic()
    with pytest.raises(
        WorkerCrashedError, match=rf"worker 2 \(pid {pids[2]} is stopped by a signal\)"
    ):
        venv.step_wait()
    assert 1.0 <= time.monotonic() - start < BOUND
    _close_and_check(venv, pids)  # a stopped process is killed too


def test_close_with_a_step_pending_on_healthy_workers_returns():
    venv = _slow_venv(close_timeout=1.0)
    pids = [p.pid for p in venv.processes]
    _step_in_flight(venv)
    _close_and_check(venv, pids)


def test_call_timeout_names_the_late_workers():
    venv = _slow_venv(n=2, call_timeout=1.0)
    pids = [p.pid for p in venv.processes]
    _step_in_flight(venv)
    with pytest.raises(WorkerCrashedError, match=r"worker 0 \(.*gave no answer.*worker 1 \("):
        venv.step_wait()
    _close_and_check(venv, pids)


def test_grouped_env_worker_killed_between_calls_then_reset():
    """The real grouped env: a worker killed while idle; the next call names it."""
    venv = GroupedVectorEnv("mvpo/SearchQA-v0", 2, 2, vectorization_mode="async")
    pids = [p.pid for p in venv.env.processes]
    venv.reset_groups([0, 1])
    os.kill(pids[3], signal.SIGKILL)
    venv.env.processes[3].join(timeout=BOUND)
    with pytest.raises(
        WorkerCrashedError, match=r"worker 3 \(pid \d+ was killed by SIGKILL\) during reset"
    ):
        venv.reset_groups([2, 3])
    _close_and_check(venv, pids)


def test_an_env_error_in_a_worker_is_raised_as_itself():
    """A bad action is the env's own error (the worker reports it), not a crash."""
    venv = GroupedVectorEnv("mvpo/SearchQA-v0", 1, 2, vectorization_mode="async")
    pids = [p.pid for p in venv.env.processes]
    venv.reset_groups([0])
    with pytest.raises(TypeError, match="expects a text action"):
        venv.step([1, 2])
    _close_and_check(venv, pids)


def test_no_worker_outlives_a_garbage_collected_env():
    venv = _slow_venv(n=2)
    pids = [p.pid for p in venv.processes]
    _step_in_flight(venv)
    venv.__del__()  # what garbage collection runs: close(terminate=True)
    deadline = time.monotonic() + BOUND
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in pids)


EXIT_SCRIPT = """
import os, signal, sys, time
import gymnasium as gym
import mvpo_envs
from mvpo_envs.async_worker import TextAsyncVectorEnv
venv = TextAsyncVectorEnv([lambda: gym.make("mvpo/SearchQA-v0") for _ in range(2)],
                          shared_memory=False)
venv.reset(seed=[0, 1])
pids = [p.pid for p in venv.processes]
os.kill(pids[0], signal.SIGSTOP)
print(" ".join(map(str, pids)), flush=True)
sys.exit(0)  # no close(): the exit must still end both workers
"""


def test_interpreter_exit_with_a_stopped_worker_neither_hangs_nor_leaves_it():
    """multiprocessing's exit hook alone would SIGTERM the stopped worker and wait forever."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + BOUND
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in pids)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def test_trainer_with_a_killed_env_worker_then_resume_matches_sync(tmp_path, train_argv, reference):
    """``mvpo-train --vectorization async``: an env worker SIGKILLed mid-run stops the trainer
    with the worker named and no process left; ``--resume`` then ends with the same metrics
    and weights as an uninterrupted sync run."""
    import subprocess
    import sys

    from mvpo_train.checkpoint import complete_checkpoints
    from mvpo_train.cli import train_main
    from mvpo_train.metrics import read_metrics, strip_timing

    iterations = 4  # the shared sync ``reference`` run's (conftest.py)
    run, log = tmp_path / "run", tmp_path / "train.log"
    code = "import sys; from mvpo_train.cli import train_main; sys.exit(train_main())"
    argv = train_argv(run, "--vectorization", "async", iterations=iterations)
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=out, stderr=out)
    deadline = time.monotonic() + 120
    while not complete_checkpoints(run) or not _children(proc.pid):
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "no checkpoint within 120 s"
        time.sleep(0.01)
    workers = _children(proc.pid)
    os.kill(workers[0], signal.SIGKILL)
    assert proc.wait(timeout=120) == 1
    text = log.read_text()
    assert f"pid {workers[0]} was killed by SIGKILL" in text and "Traceback" not in text
    assert text.strip().splitlines()[-1].endswith("rerun with --resume")
    deadline = time.monotonic() + BOUND
    while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in workers), "a worker outlived the trainer"
    resume = train_argv(run, "--vectorization", "async", "--resume", iterations=iterations)
    assert train_main(resume) == 0
    rows = [strip_timing(r) for r in read_metrics(run)]
    assert rows == [strip_timing(r) for r in read_metrics(reference)]
    name = f"iter-{iterations:06d}"
    weights = (run / "checkpoints" / name / "model.safetensors").read_bytes()
    assert weights == (reference / "checkpoints" / name / "model.safetensors").read_bytes()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_after_an_env_error_the_vector_env_still_works_like_sync(mode):
    """Gymnasium shut down the worker that raised: the next call failed with
    ``'NoneType' object has no attribute 'send'``. Async now behaves as sync does."""
    venv = GroupedVectorEnv("mvpo/SearchQA-v0", 1, 2, vectorization_mode=mode)
    pids = [p.pid for p in venv.env.processes] if mode == "async" else []
    with pytest.raises(gym.error.ResetNeeded):
        venv.step(["<search> a </search>"] * 2)  # step before reset
    obs, _ = venv.reset_groups([0])
    with pytest.raises(TypeError, match="expects a text action"):
        venv.step(["<search> a </search>", 2])
    venv.reset_groups([0])
    obs, rewards, *_ = venv.step(["<search> Zandyne Mills </search>"] * 2)
    assert obs[0] == obs[1] and "<information>" in obs[0]
    if mode == "async":
        assert all(p.is_alive() for p in venv.env.processes)
        _close_and_check(venv, pids)
    else:
        venv.close()
