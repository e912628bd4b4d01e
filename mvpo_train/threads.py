"""Torch's CPU threads: how many (chosen from the CPUs free now) and how they wait.

Two causes made a run on a shared machine look hung (benchmarks/results/threads.md):

* **too many threads**: with ``t`` intra-op threads every parallel region waits for its slowest
  thread; when another process holds a core, the thread that shares it runs at half speed and
  the others wait for it. :func:`auto_threads` counts the CPUs that are free *now* (this
  process's CPUs, ``os.sched_getaffinity``, minus what other processes used during a short
  ``/proc/stat`` sample; the 1-minute load average where ``/proc/stat`` is missing), at least 1.
* **spinning waits**: OpenMP threads spin for a while at the end of each parallel region
  before they sleep, taking the CPU the busy core's owner needs. :func:`passive_openmp` sets
  ``OMP_WAIT_POLICY=PASSIVE`` (they sleep at once) unless the user set it. OpenMP reads it
  when its runtime loads, i.e. when torch is first imported: the console entry points call it
  before importing torch; later calls do nothing for the process that already imported it.

``threads=0`` (the default of :class:`~mvpo_train.config.TrainConfig` and of ``--threads``)
means :func:`auto_threads`; a positive count is used as it is.
"""

from __future__ import annotations

import math
import os
import sys
import time

__all__ = [
    "WAIT_POLICY_ENV",
    "auto_threads",
    "free_cpus",
    "passive_openmp",
    "resolve_threads",
    "saved_threads",
    "set_torch_threads",
]

#: OpenMP's wait policy variable (``PASSIVE``: a waiting thread sleeps instead of spinning)
WAIT_POLICY_ENV = "OMP_WAIT_POLICY"


def passive_openmp() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets it. Returns whether it
    takes effect in this process: False when torch was imported before (its OpenMP runtime
    has read the variable already) or the user chose another policy."""
    if WAIT_POLICY_ENV in os.environ:
        return os.environ[WAIT_POLICY_ENV].upper() == "PASSIVE" and "torch" not in sys.modules
    os.environ[WAIT_POLICY_ENV] = "PASSIVE"
    return "torch" not in sys.modules


def _usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _busy_jiffies() -> tuple[float, float] | None:
    """(busy, total) jiffies of all CPUs from ``/proc/stat``; None where it is missing."""
    try:
        with open("/proc/stat") as fh:
            fields = [float(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 4:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    total = sum(fields[:8])  # guest time is counted in user already
    return total - idle, total


def free_cpus(sample_seconds: float = 0.25) -> float:
    """CPUs free now: this process's CPUs minus the CPU time *other* processes used during a
    ``sample_seconds`` sample of ``/proc/stat`` (this process's own time is not counted as
    busy); where ``/proc/stat`` is missing, minus the 1-minute load average. Between 0 and the
    number of usable CPUs."""
    cpus = _usable_cpus()
    machine = os.cpu_count() or cpus
    first = _busy_jiffies()
    if first is None:
        try:
            busy_cpus = os.getloadavg()[0]
        except OSError:  # pragma: no cover (no load average either)
            return float(cpus)
        return max(0.0, min(float(cpus), cpus - busy_cpus))
    own0 = sum(os.times()[:2])
    time.sleep(sample_seconds)
    second = _busy_jiffies()
    own = sum(os.times()[:2]) - own0
    if second is None or second[1] <= first[1]:
        return float(cpus)
    busy_fraction = (second[0] - first[0]) / (second[1] - first[1])  # of all the machine's CPUs
    others = max(0.0, busy_fraction * machine - own / sample_seconds)
    # the machine's busy CPUs may lie outside our affinity; count them against ours only in
    # proportion to the share of the machine we may use
    others *= cpus / machine
    return max(0.0, min(float(cpus), cpus - others))


def auto_threads(per_process: int = 1, sample_seconds: float = 0.25) -> int:
    """Threads for one of ``per_process`` processes on this machine: the free CPUs
    (:func:`free_cpus`) rounded to the nearest integer and shared out, at least 1."""
    free = free_cpus(sample_seconds)
    return max(1, math.floor(free + 0.5) // max(1, per_process))


def saved_threads(run_dir: str | os.PathLike[str]) -> int:
    """The thread count saved in ``run_dir/config.yaml`` (0 when there is none): a resumed
    run keeps it, since another count may change float sums and so break bit-exact resume."""
    import yaml

    path = os.path.join(os.fspath(run_dir), "config.yaml")
    try:
        with open(path) as fh:
            saved = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError):
        return 0
    value = saved.get("threads") if isinstance(saved, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def resolve_threads(
    requested: int, per_process: int = 1, resume_from: str | os.PathLike[str] | None = None
) -> int:
    """``requested`` when positive; else the count saved in ``resume_from`` (a run folder
    being resumed), else :func:`auto_threads`."""
    if requested > 0:
        return requested
    if resume_from is not None and (saved := saved_threads(resume_from)):
        return saved
    return auto_threads(per_process)


def set_torch_threads(
    requested: int, per_process: int = 1, resume_from: str | os.PathLike[str] | None = None
) -> int:
    """``torch.set_num_threads`` with :func:`resolve_threads`; returns the count."""
    import torch

    n = resolve_threads(requested, per_process, resume_from)
    torch.set_num_threads(n)
    return n
