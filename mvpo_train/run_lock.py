"""One writer per run folder: an OS lock held for the run's life (docs/training.md,
"Reliability", "One writer per run folder").

:func:`hold_run_lock` takes ``fcntl.flock`` on ``<run_dir>/.mvpo-train.lock`` (non-blocking)
and writes the holder's pid into it. The kernel drops the lock when the holder dies, however
it dies (SIGKILL included), so a stale lock file never blocks a later run; a live holder makes
a second ``mvpo-train`` (fresh, ``--resume`` or ``--overwrite``) fail with
:class:`RunLockedError`, one line naming the holder's pid, before it writes anything.

With ``--nproc N`` the launcher (``mvpo-train`` itself) holds the lock and tells its ranks so
(:data:`OWNER_ENV`); rank 0 accepts a lock held by that launcher when the launcher is its
ancestor, and takes the lock itself otherwise (ranks started by ``torchrun`` directly).
:func:`die_with_parent` makes a child process get SIGKILL when its parent dies (Linux
``prctl(PR_SET_PDEATHSIG)``), so killing the launcher stops ``torchrun`` and every rank.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mvpo_train.config import ConfigError

__all__ = [
    "LOCK_NAME",
    "OWNER_ENV",
    "RunLock",
    "RunLockedError",
    "ancestors",
    "die_with_parent",
    "hold_run_lock",
    "holding",
    "prepare_die_with_parent",
]

#: the lock file inside a run folder (not a run artifact: a folder holding only it is empty)
LOCK_NAME = ".mvpo-train.lock"
#: set by the ``--nproc`` launcher for its ranks: the pid that holds the run folder's lock
OWNER_ENV = "MVPO_RUN_LOCK_OWNER"

_PR_SET_PDEATHSIG = 1


class RunLockedError(ConfigError):
    """Another live process holds the run folder's lock (the message names its pid)."""


def ancestors(pid: int | None = None) -> list[int]:
    """The parent, grandparent, ... of ``pid`` (default: this process), read from ``/proc``;
    only the parent where ``/proc`` is missing."""
    pid = os.getpid() if pid is None else pid
    out: list[int] = []
    if not Path("/proc/self/stat").exists():
        return [os.getppid()] if pid == os.getpid() else []
    while pid > 1 and len(out) < 64:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])  # field 4: ppid (comm may hold ')')
        if pid <= 0:
            break
        out.append(pid)
    return out


class RunLock:
    """A held run-folder lock (:func:`hold_run_lock`); :meth:`release` is idempotent."""

    def __init__(self, path: Path | None, fd: int | None, created: list[Path]):
        self.path, self._fd, self._created = path, fd, created

    @property
    def held(self) -> bool:
        """Whether this process holds the lock itself (not a launcher on its behalf)."""
        return self._fd is not None

    def release(self) -> None:
        """Unlock, remove the lock file if it is still ours, and remove the folders that
        :func:`hold_run_lock` created if they stayed empty (a refused run leaves nothing)."""
        if self._fd is not None and self.path is not None:
            with contextlib.suppress(OSError):
                if os.path.samestat(os.fstat(self._fd), os.stat(self.path)):
                    os.unlink(self.path)  # before unlocking: no one else can hold this inode
            os.close(self._fd)
            self._fd = None
        for folder in reversed(self._created):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
        self._created = []

    def move_to(self, run_dir: str | Path) -> None:
        """Hold the lock of ``run_dir`` instead (``--overwrite`` renamed the locked folder
        away): the new lock is taken before the old one is released."""
        new = hold_run_lock(run_dir)
        self.release()
        self.path, self._fd, self._created = new.path, new._fd, new._created

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
        text = lines[0].strip() if lines else ""
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "another process"


def hold_run_lock(run_dir: str | Path, *, create: bool = True) -> RunLock:
    """Take the lock of ``run_dir`` for this process (see the module docstring).

    ``create``: make ``run_dir`` when missing (removed again by :meth:`RunLock.release` if
    nothing else was written into it); without it a missing folder gives a lock that holds
    nothing (the caller refuses the run anyway), and so does a ``run_dir`` that is not a
    folder. Raises :class:`RunLockedError` when a live
    process holds the lock, :class:`ConfigError` when the folder cannot be made.
    """
    run_dir = Path(run_dir)
    created: list[Path] = []
    try:
        if not run_dir.is_dir():
            if not create or os.path.lexists(run_dir):  # the caller refuses the run
                return RunLock(None, None, [])
            missing = [p for p in (run_dir, *run_dir.parents) if not p.exists()]
            run_dir.mkdir(parents=True, exist_ok=True)
            created = sorted(missing, key=lambda p: len(p.parts))
    except OSError as err:
        raise ConfigError(f"run_dir: cannot create {run_dir}: {err.strerror or err}") from None
    path = run_dir / LOCK_NAME
    owner = os.environ.get(OWNER_ENV, "")
    for _ in range(20):  # retried only when the file was replaced under us
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            RunLock(None, None, created).release()
            raise ConfigError(f"run_dir: cannot create {path}: {err.strerror or err}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = _holder(path)
            if owner.isdigit() and holder == f"pid {owner}" and int(owner) in ancestors():
                _append_writer(path)  # the next holder waits until this process is gone
                return RunLock(path, None, [])  # our launcher holds it for this run
            RunLock(None, None, created).release()
            raise RunLockedError(
                f"run_dir: {run_dir} is in use by another mvpo-train ({holder} holds "
                f"{LOCK_NAME}); wait for it to finish or stop it, then rerun"
            ) from None
        try:  # the file we locked must still be the one at ``path`` (a releaser unlinks it)
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        try:
            _wait_for_writers(path, run_dir)
        except RunLockedError:
            os.close(fd)
            RunLock(None, None, created).release()
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return RunLock(path, fd, created)
    raise RunLockedError(f"run_dir: {run_dir}: {LOCK_NAME} keeps being replaced; rerun")


def _start_ticks(pid: int) -> str | None:
    """The start time of a live (not zombie) process ``pid`` in clock ticks since boot (Linux
    ``/proc``), which tells it apart from a later process that got the same pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _append_writer(path: Path) -> None:
    """Record this process (pid and start time) in the lock file of the launcher that holds
    it: the process that writes the run, which may outlive its launcher by a moment."""
    ticks = _start_ticks(os.getpid())
    if ticks is None:
        return
    with contextlib.suppress(OSError), open(path, "a") as fh:
        fh.write(f"{os.getpid()} {ticks}\n")


def _wait_for_writers(path: Path, run_dir: Path, timeout_s: float = 10.0) -> None:
    """Wait (up to ``timeout_s``) until the writers a previous launcher recorded in ``path``
    are gone; the lock was released by the launcher's death, theirs follows a moment later."""
    import time

    try:
        lines = path.read_text(errors="replace").splitlines()[1:]
    except OSError:
        return
    deadline = time.monotonic() + timeout_s
    for line in lines:
        pid, _, ticks = line.partition(" ")
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        while _start_ticks(int(pid)) == ticks:
            if time.monotonic() > deadline:
                raise RunLockedError(
                    f"run_dir: {run_dir} is still written by pid {pid} of a previous "
                    "mvpo-train whose launcher is gone; stop it, then rerun"
                )
            time.sleep(0.02)


@contextlib.contextmanager
def holding(run_dir: str | Path, *, create: bool = True) -> Iterator[RunLock]:
    """``with holding(run_dir): ...``: :func:`hold_run_lock`, released at the end."""
    lock = hold_run_lock(run_dir, create=create)
    try:
        yield lock
    finally:
        lock.release()


@functools.cache
def _prctl() -> Any:
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # no prctl in this libc
        return None


def die_with_parent(*, parent: int | None = None, grandparent: int | None = None) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; elsewhere a no-op).

    ``parent`` / ``grandparent``: the pids this process expects above it; if one no longer
    matches (the parent died before the request took effect and this process was reparented)
    the process exits at once. Safe in a ``preexec_fn`` once :func:`prepare_die_with_parent`
    ran in the parent.
    """
    prctl = _prctl() if sys.platform.startswith("linux") else None
    if prctl is None:
        return
    prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(128 + int(signal.SIGKILL))
    if grandparent is not None:
        chain = ancestors()
        if len(chain) < 2 or chain[1] != grandparent:
            os._exit(128 + int(signal.SIGKILL))


def prepare_die_with_parent() -> None:
    """Load libc's ``prctl`` now (before a fork), so :func:`die_with_parent` in a
    ``preexec_fn`` loads nothing."""
    if sys.platform.startswith("linux"):
        _prctl()
