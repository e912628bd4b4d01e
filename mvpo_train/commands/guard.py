"""How every console command runs: :func:`guard` turns a user error into ONE stderr line
``<prog>: error: <field or file>: <what is allowed>`` and exit code 2 (``--debug``: the
traceback instead), a crashed env worker into exit code 1 with the hint to resume, and Ctrl-C
into exit code 130 with the exact command that continues the run (:func:`resume_command`, set
by :func:`on_interrupt` once a command knows its run folder).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from mvpo_train.config import ConfigError

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_USER_ERROR",
    "guard",
    "is_worker_crash",
    "on_interrupt",
    "resume_command",
]

#: exit code of every user error (argparse's own code for usage errors)
EXIT_USER_ERROR = 2


def _is_user_error(err: BaseException) -> bool:
    if isinstance(err, ConfigError):
        return True
    if isinstance(err, ImportError) and "pip install" in str(err):  # an optional extra
        return True
    checkpoint = sys.modules.get("mvpo_train.checkpoint")  # imported only by commands using it
    return checkpoint is not None and isinstance(err, checkpoint.CheckpointError)


#: exit code after Ctrl-C (128 + SIGINT, what a shell reports)
EXIT_INTERRUPTED = 130

#: the command that continues an interrupted run, set by a command once it knows its run folder
_resume_hint: Callable[[], str] | None = None


def resume_command(prog: str, argv: list[str], run_dir: str | Path) -> str:
    """The exact command that continues a run of ``prog argv`` in ``run_dir`` after it was
    stopped: the same flags plus ``--resume`` when the folder holds a checkpoint; plus
    ``--overwrite`` when it holds a run without one (nothing to resume); as typed otherwise."""
    import shlex

    from mvpo_train.checkpoint import latest_checkpoint

    run = Path(run_dir)
    rest = [a for a in argv if a not in ("--resume", "--overwrite", "--no-resume")]
    if latest_checkpoint(run) is not None:
        rest.append("--resume")
    elif (run / "config.yaml").is_file():
        rest.append("--overwrite")
    return shlex.join([prog, *rest])


def on_interrupt(prog: str, argv: list[str], run_dir: str | Path) -> None:
    """After Ctrl-C, :func:`guard` names :func:`resume_command` for this run folder."""
    global _resume_hint
    _resume_hint = lambda: resume_command(prog, argv, run_dir)  # noqa: E731


def _close_progress_bars() -> None:
    """Close the open tqdm bars (an interrupted run leaves them open; closed later, at exit,
    they would be drawn after the last line)."""
    std = sys.modules.get("tqdm.std")
    for bar in list(getattr(getattr(std, "tqdm", None), "_instances", ()) or ()):
        try:
            bar.close()
        except Exception:  # a bar that cannot draw: nothing to tidy
            pass


def guard(prog: str, main: Callable[[list[str]], int], argv: list[str] | None) -> int:
    """Run ``main``; a user error becomes one stderr line and exit code 2 (``--debug``:
    re-raised with its traceback); Ctrl-C one line with the command that resumes, exit 130.

    OpenMP's waiting threads are made to sleep rather than spin before torch is imported
    (:func:`mvpo_train.threads.passive_openmp`)."""
    from mvpo_train.threads import passive_openmp

    global _resume_hint
    passive_openmp()
    _resume_hint = None
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return main(argv)
    except KeyboardInterrupt:
        if "--debug" in argv:
            raise
        hint = ""
        if _resume_hint is not None:
            try:
                hint = f"; continue with: {_resume_hint()}"
            except Exception:  # the hint is a courtesy; never a traceback after Ctrl-C
                hint = ""
        _close_progress_bars()  # drawn now, so that the hint is the last line
        print(f"{prog}: interrupted{hint}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except Exception as err:
        if "--debug" in argv:
            raise
        message = " ".join(str(err).split("\n")).strip() or type(err).__name__
        if is_worker_crash(err):  # a fault, not a user error: checkpoints are atomic
            print(
                f"{prog}: error: {message}; the newest checkpoint is intact: rerun with --resume",
                file=sys.stderr,
                flush=True,
            )
            return 1
        if isinstance(err, ConnectionError):  # e.g. SearchQA's retrieval server is down
            print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
            return 1
        if not _is_user_error(err):
            raise
        print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
        return EXIT_USER_ERROR


def is_worker_crash(err: BaseException) -> bool:
    vector = sys.modules.get("mvpo_envs.vector")
    return vector is not None and isinstance(err, vector.WorkerCrashedError)
