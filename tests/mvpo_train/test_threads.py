"""Torch's thread count from the CPUs free now, and OpenMP's passive wait (mvpo_train.threads)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from mvpo_train.threads import auto_threads, free_cpus

CHECK = (
    "import os, sys\n"
    "from mvpo_train.threads import passive_openmp\n"
    "first = passive_openmp()\n"
    "import torch\n"
    "print(first, passive_openmp(), os.environ['OMP_WAIT_POLICY'])\n"
)


def _policy(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if env_value is not None:
        env["OMP_WAIT_POLICY"] = env_value
    proc = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    return proc.stdout.strip()


def test_passive_wait_is_set_before_torch_and_a_users_choice_wins():
    assert _policy(None) == "True False PASSIVE"  # set before torch; after it, too late
    assert _policy("ACTIVE") == "False False ACTIVE"


def test_the_free_cpus_drop_when_another_process_spins():
    """A process spinning on one CPU takes about one CPU off the free count (the sample is
    of the machine's real /proc/stat; the test only needs the drop to show at all)."""
    cpus = len(os.sched_getaffinity(0))
    assert 1 <= auto_threads() <= cpus
    quiet = free_cpus(0.5)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        busy = free_cpus(0.5)
    finally:
        hog.kill()
        hog.wait()
    assert 0.0 <= busy <= cpus and 0.0 <= quiet <= cpus
    assert busy < quiet or busy <= cpus - 0.5, (quiet, busy)


def test_this_process_own_work_is_not_counted_as_busy(monkeypatch):
    """The arithmetic on a scripted /proc/stat (beside the real sample above): of 2 CPUs busy
    during the sample, the 1 CPU-second this process used itself is not counted, so 1 is free;
    with 4 machine CPUs and 2 usable, others' load counts in proportion."""
    import mvpo_train.threads as T

    def script(samples, own_seconds, usable, machine):
        it = iter(samples)
        times = iter([(0.0, 0.0), (own_seconds, 0.0)])
        monkeypatch.setattr(T, "_busy_jiffies", lambda: next(it))
        monkeypatch.setattr(T.os, "times", lambda: next(times))
        monkeypatch.setattr(T, "_usable_cpus", lambda: usable)
        monkeypatch.setattr(T.os, "cpu_count", lambda: machine)
        monkeypatch.setattr(T.time, "sleep", lambda s: None)
        return T.free_cpus(1.0)

    # 1 s sample, 2 CPUs = 200 jiffies; all busy; this process used 1 CPU-second of it
    assert script([(0, 0), (200, 200)], 1.0, 2, 2) == 1.0
    assert script([(0, 0), (200, 200)], 0.0, 2, 2) == 0.0  # someone else's: none free
    assert script([(0, 0), (0, 200)], 0.0, 2, 2) == 2.0  # idle
    assert script([(0, 0), (200, 400)], 0.0, 2, 4) == 1.0  # 2 of 4 busy -> 1 of our 2
