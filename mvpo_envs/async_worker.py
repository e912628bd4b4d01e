"""Async vector env that keeps group identity and never hangs on a dead or stopped worker.

docs/environments.md, "Vector envs". Two things Gymnasium's ``AsyncVectorEnv`` (1.4) does
that a credit-assignment library cannot live with, and what this module does instead:

* **Autoreset state survives a reset.** Gymnasium's worker clears its "reset on the next
  step" flag at ``reset`` only when shared memory is on. Without shared memory (free text
  does not fit a shared buffer), an env whose episode ended on the last step of a batch
  swallows the first action after :meth:`~mvpo_envs.vector.GroupedVectorEnv.reset_groups` and
  resets itself *unseeded*: a different task under the old prompt. :func:`text_env_worker`
  owns the protocol and clears the flag at every ``reset``, so async == sync on the same seeds.
* **Dead or stopped workers.** Gymnasium waits on a pipe forever: a worker killed by a signal
  surfaces as a bare ``EOFError`` (or not at all), a stopped one (``SIGSTOP``) hangs the
  parent, and ``close()`` then waits on the pending call forever. :class:`TextAsyncVectorEnv`
  waits on every pipe in short slices, checks each worker's health between slices and raises
  :class:`WorkerCrashedError` naming the worker (index, pid, what happened) within
  ``stopped_grace`` seconds (stopped; read from ``/proc``, so Linux only: elsewhere
  ``call_timeout`` is the bound) or at once (dead); ``call_timeout`` optionally bounds a
  healthy but slow call too. ``close()`` returns within ``close_timeout`` seconds in every
  case: healthy workers get the ``close`` command, the rest are killed, every process is
  joined (no orphans).
* **An env's own error keeps the worker.** Gymnasium shuts down a worker whose env raised (a
  non-string action, ``step`` before ``reset``), leaving the vector env unusable; here the
  error is raised in the parent as itself (the lowest worker's, as a sync env raises the
  first env's) and every worker stays ready for the next call, as in a sync env.

The worker speaks Gymnasium's pipe protocol (``reset``, ``reset-noop``, ``step``, ``close``,
``_call``, ``_setattr``, ``_check_spaces``), so the parent is Gymnasium's own class with two
methods replaced.
"""

from __future__ import annotations

import atexit
import contextlib
import pickle
import signal
import sys
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

import gymnasium as gym
from gymnasium.spaces.utils import is_space_dtype_shape_equiv
from gymnasium.vector import AsyncVectorEnv, AutoresetMode
from gymnasium.vector.async_vector_env import AsyncState
from gymnasium.vector.utils import write_to_shared_memory

__all__ = ["TextAsyncVectorEnv", "WorkerCrashedError", "text_env_worker"]

#: how often a waiting parent checks its workers' health (seconds)
POLL_INTERVAL = 0.05

#: every open TextAsyncVectorEnv of this process, closed at interpreter exit (see _close_all)
_OPEN: weakref.WeakSet[TextAsyncVectorEnv] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Close every vector env left open at exit, before ``multiprocessing``'s own exit hook
    (registered earlier, so run later), which would wait forever on a stopped worker."""
    for venv in list(_OPEN):
        venv.close(terminate=True)


class WorkerCrashedError(RuntimeError):
    """An async worker died, stopped, or did not answer in time; names each one.

    ``problems`` holds ``(worker index, description)`` pairs, e.g. ``(1, "pid 4242 was killed
    by SIGKILL")``. The vector env is unusable afterwards: ``close()`` it (that returns within
    seconds and leaves no process behind) and make a new one.
    """

    def __init__(self, problems: Sequence[tuple[int, str]], during: str):
        self.problems = list(problems)
        self.workers = [index for index, _ in self.problems]
        desc = "; ".join(f"worker {index} ({what})" for index, what in self.problems)
        super().__init__(
            f"async vector env: {desc or 'a worker'} during {during}; close() this vector env "
            "(it kills every worker) and make a new one"
        )


def _exit_description(exitcode: int) -> str:
    if exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


def _process_state(pid: int | None) -> str:
    """The one-letter state of a Linux process (``"T"`` stopped, ``"Z"`` zombie); ``""`` unknown."""
    if pid is None:
        return ""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            # "pid (comm) S ...": comm may hold spaces and parentheses; the state follows the last ")"
            return f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


class TextAsyncVectorEnv(AsyncVectorEnv):
    """Gymnasium's ``AsyncVectorEnv`` with :func:`text_env_worker`, health-checked waits and a
    ``close()`` that always returns; see the module docstring.

    Arguments beyond ``AsyncVectorEnv``'s: ``call_timeout`` (seconds a reset/step/call may take
    before :class:`WorkerCrashedError`; ``None``, the default, waits as long as every worker is
    alive and running, like Gymnasium), ``stopped_grace`` (seconds a worker may stay stopped by
    a signal while a call is pending, default 2) and ``close_timeout`` (seconds ``close()``
    waits for healthy workers to exit before killing them, default 5).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        call_timeout: float | None = None,
        stopped_grace: float = 2.0,
        close_timeout: float = 5.0,
        **kwargs: Any,
    ):
        if kwargs.get("worker") not in (None, text_env_worker):
            raise ValueError("TextAsyncVectorEnv runs its own worker (text_env_worker)")
        for name, value in (("stopped_grace", stopped_grace), ("close_timeout", close_timeout)):
            if not value > 0:
                raise ValueError(f"{name} must be > 0 seconds, got {value!r}")
        if call_timeout is not None and not call_timeout > 0:
            raise ValueError(f"call_timeout must be > 0 seconds or None, got {call_timeout!r}")
        self.call_timeout = call_timeout
        self.stopped_grace = float(stopped_grace)
        self.close_timeout = float(close_timeout)
        kwargs["worker"] = text_env_worker
        super().__init__(env_fns, **kwargs)
        _OPEN.add(self)

    # -- health ----------------------------------------------------------------------------------
    def worker_problems(
        self, stopped_since: dict[int, float] | None = None
    ) -> list[tuple[int, str]]:
        """Workers that are dead, or stopped for longer than ``stopped_grace`` seconds.

        ``stopped_since`` (index -> first time seen stopped) carries the grace period across
        calls; without it a stopped worker counts at once.
        """
        now = time.monotonic()
        problems = []
        for index, process in enumerate(self.processes):
            if process.exitcode is not None:
                problems.append((index, f"pid {process.pid} {_exit_description(process.exitcode)}"))
                continue
            state = _process_state(process.pid)
            if state in ("T", "t"):
                since = now if stopped_since is None else stopped_since.setdefault(index, now)
                if stopped_since is None or now - since >= self.stopped_grace:
                    problems.append((index, f"pid {process.pid} is stopped by a signal"))
            elif stopped_since is not None:
                stopped_since.pop(index, None)
        return problems

    def _poll_pipe_envs(self, timeout: float | None = None) -> bool:
        """Wait until every worker has answered, checking their health while waiting.

        Returns ``False`` only when Gymnasium's own ``timeout`` runs out (Gymnasium then raises
        its ``TimeoutError``); raises :class:`WorkerCrashedError` for a dead or stopped worker
        or when ``call_timeout`` runs out.
        """
        self._assert_is_running()
        during = self._state.value if self._state != AsyncState.DEFAULT else "a call"
        start = time.monotonic()
        pending = {
            pipe: index
            for index, pipe in enumerate(self.parent_pipes)
            if pipe is not None and not pipe.closed
        }
        if len(pending) < len(self.parent_pipes):
            return False
        stopped_since: dict[int, float] = {}
        while pending:
            ready = wait(list(pending), timeout=POLL_INTERVAL)
            for pipe in ready:
                # ready: an answer, or end-of-file from a dead worker (``recv`` then raises
                # EOFError, which the ``*_wait`` methods turn into WorkerCrashedError)
                index = pending.pop(pipe)  # type: ignore[call-overload]
                code = self.processes[index].exitcode
                if code not in (None, 0):  # 0: exited after reporting an env error
                    raise WorkerCrashedError(
                        [(index, f"pid {self.processes[index].pid} {_exit_description(code)}")],
                        during,
                    )
            if not pending:
                break
            waiting = set(pending.values())
            if not ready:  # a slice without an answer: check health (cheap, but not free)
                # a dead worker anywhere (its pipe may have looked "ready" at end-of-file before
                # the kernel reaped it), or a stopped one that still owes an answer
                problems = [
                    (index, what)
                    for index, what in self.worker_problems(stopped_since)
                    if index in waiting or self.processes[index].exitcode not in (None, 0)
                ]
                if problems:
                    raise WorkerCrashedError(problems, during)
            elapsed = time.monotonic() - start
            if self.call_timeout is not None and elapsed >= self.call_timeout:
                late = sorted(waiting)
                raise WorkerCrashedError(
                    [
                        (i, f"pid {self.processes[i].pid} gave no answer in {elapsed:.1f} s")
                        for i in late
                    ],
                    during,
                )
            if timeout is not None and elapsed >= timeout:
                return False
        return True

    def _raise_if_errors(self, successes: Any) -> None:
        """Raise a worker's error as itself, keeping every worker (as a sync env would).

        Gymnasium shuts down a worker whose env raised, so one bad action left the vector env
        broken (``'NoneType' object has no attribute 'send'`` on the next call); here the
        worker reported the error and waits for the next command.
        """
        successes = list(successes)
        if all(successes):
            return
        errors = [self.error_queue.get() for _ in range(len(successes) - sum(successes))]
        self._state = AsyncState.DEFAULT
        raise min(errors, key=lambda e: e[0])[2]

    # -- waits that name a dead worker -----------------------------------------------------------
    def reset_async(self, *args: Any, **kwargs: Any) -> None:
        with self._naming_dead_workers("reset"):
            super().reset_async(*args, **kwargs)

    def reset_wait(self, *args: Any, **kwargs: Any):
        with self._naming_dead_workers("reset"):
            return super().reset_wait(*args, **kwargs)

    def step_async(self, actions: Any) -> None:
        with self._naming_dead_workers("step"):
            super().step_async(actions)

    def step_wait(self, *args: Any, **kwargs: Any):
        with self._naming_dead_workers("step"):
            return super().step_wait(*args, **kwargs)

    def call_async(self, name: str, *args: Any, **kwargs: Any) -> None:
        with self._naming_dead_workers("call"):
            super().call_async(name, *args, **kwargs)

    def call_wait(self, *args: Any, **kwargs: Any):
        with self._naming_dead_workers("call"):
            return super().call_wait(*args, **kwargs)

    @contextlib.contextmanager
    def _naming_dead_workers(self, during: str) -> Iterator[None]:
        """Turn a broken pipe (a worker that died) into :class:`WorkerCrashedError`."""
        try:
            yield
        except (EOFError, OSError) as err:
            deadline = time.monotonic() + 2.0  # the kernel may take a moment to reap the worker
            problems = self.worker_problems()
            while not problems and time.monotonic() < deadline:
                time.sleep(POLL_INTERVAL)
                problems = self.worker_problems()
            if not problems:
                raise
            raise WorkerCrashedError(problems, during) from err

    # -- close -----------------------------------------------------------------------------------
    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        """Stop every worker within ``close_timeout`` seconds (``timeout`` if smaller).

        Healthy idle workers get Gymnasium's ``close`` command (their env's ``close()`` runs);
        workers that are dead, stopped, busy with a pending call or slow to exit are killed.
        Every process is joined, every pipe closed.
        """
        _OPEN.discard(self)
        budget = self.close_timeout if timeout is None else min(self.close_timeout, timeout)
        deadline = time.monotonic() + budget
        pending_call = self._state != AsyncState.DEFAULT
        self._state = AsyncState.DEFAULT
        unhealthy = {index for index, _ in self.worker_problems()}
        graceful = not (terminate or pending_call)
        asked: list[Connection] = []
        for index, pipe in enumerate(self.parent_pipes):
            if pipe is None or pipe.closed:
                continue
            if graceful and index not in unhealthy:
                try:
                    pipe.send(("close", None))
                    asked.append(pipe)
                except OSError:
                    pass
        for pipe in asked:
            left = deadline - time.monotonic()
            try:
                if left > 0 and pipe.poll(left):
                    pipe.recv()
            except (OSError, EOFError):
                pass
        if asked:  # give the workers that were asked to close the rest of the budget to exit
            for process in self.processes:
                process.join(timeout=max(0.0, deadline - time.monotonic()))
        for process in self.processes:
            if process.exitcode is None:
                process.kill()  # SIGKILL: also ends a stopped process
        for process in self.processes:
            process.join(timeout=5.0)
        for pipe in self.parent_pipes:
            if pipe is not None:
                pipe.close()


def text_env_worker(
    index: int,
    env_fn: Callable[[], gym.Env],
    pipe: Connection,
    parent_pipe: Connection,
    shared_memory: Any,
    error_queue: Any,
    autoreset_mode: AutoresetMode,
    semaphore: Any = None,
) -> None:
    """The worker process of :class:`TextAsyncVectorEnv` (Gymnasium's pipe protocol).

    Differs from Gymnasium 1.4's ``_async_worker`` in one rule: every ``reset`` clears the
    pending ``NEXT_STEP`` autoreset, with or without shared memory.
    """
    env = env_fn()
    parent_pipe.close()
    observation: Any = None
    reset_next = False  # NEXT_STEP: the previous step ended the episode
    try:
        while True:
            command, data = pipe.recv()
            permit = semaphore is not None and command in ("reset", "step")
            if permit:
                semaphore.acquire()
            try:
                if command == "close":
                    pipe.send((None, True))
                    break
                if command == "reset":
                    observation, info = env.reset(**data)
                    reset_next = False
                    result: Any = (_publish(env, index, observation, shared_memory), info)
                elif command == "reset-noop":
                    result = (None if shared_memory else observation, {})
                elif command == "step":
                    observation, step = _step(env, data, autoreset_mode, reset_next)
                    reward, terminated, truncated, info = step
                    if autoreset_mode == AutoresetMode.NEXT_STEP:
                        reset_next = bool(terminated or truncated)
                    obs_out = _publish(env, index, observation, shared_memory)
                    result = (obs_out, reward, terminated, truncated, info)
                elif command == "_call":
                    name, args, kwargs = data
                    if name in ("reset", "step", "close", "_setattr", "_check_spaces"):
                        raise ValueError(f"use `{name}` directly, not through `call`")
                    attr = env.get_wrapper_attr(name)
                    result = attr(*args, **kwargs) if callable(attr) else attr
                elif command == "_setattr":
                    env.set_wrapper_attr(*data)
                    result = None
                elif command == "_check_spaces":
                    obs_mode, single_obs_space, single_action_space = data
                    same_obs = (
                        single_obs_space == env.observation_space
                        if obs_mode == "same"
                        else bool(
                            is_space_dtype_shape_equiv(single_obs_space, env.observation_space)
                        )
                    )
                    result = (same_obs, single_action_space == env.action_space)
                else:
                    raise RuntimeError(f"unknown command {command!r} sent to worker {index}")
            except Exception:  # the env's own error (a bad action, ...): report it, stay alive
                error_type, error_value, _ = sys.exc_info()
                try:
                    pickle.dumps(error_value)
                except Exception:  # an unpicklable error would never reach the parent
                    error_type = RuntimeError
                    error_value = RuntimeError(f"{type(error_value).__name__}: {error_value}")
                error_queue.put((index, error_type, error_value, traceback.format_exc()))
                pipe.send((None, False))
                continue
            finally:
                if permit:
                    semaphore.release()
            pipe.send((result, True))
    except (KeyboardInterrupt, Exception):
        error_type, error_value, _ = sys.exc_info()
        error_queue.put((index, error_type, error_value, traceback.format_exc()))
        try:
            pipe.send((None, False))
        except OSError:
            pass
    finally:
        env.close()


def _step(env: gym.Env, action: Any, mode: AutoresetMode, reset_next: bool):
    """One ``step`` command under the autoreset ``mode`` -> ``(obs, (r, term, trunc, info))``."""
    if mode == AutoresetMode.NEXT_STEP and reset_next:
        observation, info = env.reset()
        return observation, (0.0, False, False, info)
    observation, reward, terminated, truncated, info = env.step(action)
    if mode == AutoresetMode.SAME_STEP and (terminated or truncated):
        final_obs, final_info = observation, info
        observation, reset_info = env.reset()
        info = {"final_info": final_info, "final_obs": final_obs, **reset_info}
    return observation, (reward, terminated, truncated, info)


def _publish(env: gym.Env, index: int, observation: Any, shared_memory: Any) -> Any:
    """Write the observation to shared memory (then send ``None``) or return it to be sent."""
    if shared_memory:
        write_to_shared_memory(env.observation_space, index, observation, shared_memory)
        return None
    return observation
