"""Compact per-run results of a long sweep, committed as it goes (docs/learning_study.md,
"Budget"): a study that takes several sessions continues on a new machine from them. The
command is ``benchmarks/study_archive.py``; every refusal is an :class:`ArchiveError` (one line).

A run folder of ``benchmarks/learning.py`` holds checkpoints (megabytes each) and batch
records besides its compact results; ``export`` copies only the compact ones of every run
folder below ``--base`` into ``--to`` (a folder committed with the results):
``metrics.jsonl`` (one line an iteration: what the analysis reads), ``config.yaml`` and the
held-out evaluations ``eval-*.json``, plus the warm start's own evaluations
(``warm-start/``). ``import`` copies them back into an empty or missing run folder, so that
learning.py skips every finished run and evaluation; an unfinished run (fewer iterations
than the study's, no checkpoint) starts over there, as learning.py does with any run folder
without a checkpoint.

    python benchmarks/study_archive.py export --base runs/full/learning \\
        --to benchmarks/results/learning_full_runs
    python benchmarks/study_archive.py import --from benchmarks/results/learning_full_runs \\
        --base runs/full/learning

Nothing is overwritten on import: a run folder that already has a ``metrics.jsonl`` (or any
other file: import fills only missing or empty folders) is kept as it is (it is at least as far as the archive, or it is another study: the line says so).

A run that takes longer than a session would never finish that way. ``export --checkpoints
SPLIT ...`` therefore also copies, for every run whose final evaluations (``eval-SPLIT.json``
of each SPLIT named) are not all there yet, its newest intact checkpoint (verified against its
``SHA256SUMS`` first; about 16 MB for the encoder policy: head weights and Adam's moments) into
``<run>/checkpoints/``, and drops the archived checkpoint of a run once it has them all, so
the archive holds at most one checkpoint per unfinished run. ``import`` restores it with the
rest and verifies it again; learning.py then resumes the run from it (``mvpo-train
--resume``: bit for bit on the same machine type; on another CPU a continuation of the same
seed whose float rounding may differ, docs/learning_study.md, "Budget"). Only the latest checkpoint's
metrics rows count: rows after it are rewritten by the resumed run.

    python benchmarks/study_archive.py export --base runs/full/learning \\
        --to benchmarks/results/learning_full_runs --checkpoints valid_unseen valid_seen \\
        --warm runs/full/encoder-warm

``export --records DIR`` also copies the batch records (``records/iter-K.npz``, about 65 kB
an iteration of 16 x 8 on ALFWorld; docs/inspect.md) of the iterations up to each run's
newest intact checkpoint, the ones a resumed run never rewrites, with the run's
``config.yaml``, into ``DIR/<run>/``: a machine-local folder, never the archive and never
below ``benchmarks/results`` (batch records are binary; the repository holds no binary batch
records), so that the step-level alignment (``benchmarks/alignment.py --run-dir DIR/<run>
--relabel``) can be measured after the study, on that machine or wherever DIR is copied; the
study command regenerates them anywhere else. A kept record is never replaced: one that
differs from the run's file of the same name (another run in the same folder) stops the
export in one line.

**What an archive keeps** (all of it plain files): per run ``metrics.jsonl``,
``config.yaml``, ``eval-*.json`` and, for an unfinished run with ``--checkpoints``, one
checkpoint folder (``checkpoints/iter-K/`` + ``LATEST``); ``warm-start/`` evaluations; with
``--warm``, ``warm-head/`` (three files). Nothing else: no batch records, no embeddings,
no logs. Export and import write every copy as a data file (mode 0o644 less the umask,
never the source's mode), so an archive committed from one machine is never executable.

**Import copies plain files only**: every file it reads in the archive, and every path it
writes, is checked with ``lstat``; a symbolic link (a file, a run folder, or a link met on
the destination side), a folder where a file is expected (a folder named ``eval-x.json``), a
FIFO or device, or a file over :data:`MAX_FILE_BYTES` (64 MiB; a sparse 3 GB file is refused
by its size, not copied) is one line and nothing of that run is imported. Files are read
with ``O_NOFOLLOW``, and each run is assembled in a fresh hidden folder beside its
destination and renamed into place, so a destination is either missing, or complete.

``--warm DIR`` carries the study's warm start too (the head's ``model.safetensors``,
``config.json`` and ``warm_start.json``, about 5 MB on the full ALFWorld split, in
``<archive>/warm-head/``): cloning it took about 40 CPU-minutes on the full ALFWorld split, and it is
deterministic, so a new machine need not redo it. ``import --warm DIR`` restores it where DIR
holds no warm start yet; the study's own check (``ensure_warm``: the saved settings, and the
digest of the expert plans it was cloned on unless ``--warm-checked``) then decides whether
it is used, as for one made on the machine.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "CHECKPOINTS",
    "MAX_FILE_BYTES",
    "ArchiveError",
    "check_records_dir",
    "compact_files",
    "copy_compact",
    "export",
    "export_warm",
    "finished",
    "import_",
    "import_warm",
]

#: the largest file import copies (the biggest archived file, a checkpoint's weights and Adam
#: moments, is about 16 MB)
MAX_FILE_BYTES = 64 << 20
COMPACT = ("metrics.jsonl", "config.yaml")
RECORDS = "records"
EVALS = "eval-*.json"
CHECKPOINTS = "checkpoints"
WARM_HEAD = "warm-head"
WARM_FILES = ("model.safetensors", "config.json", "warm_start.json")


def compact_files(run: Path) -> list[Path]:
    """The compact results of one run folder (those that exist)."""
    files = [run / name for name in COMPACT if (run / name).is_file()]
    return files + sorted(run.glob(EVALS))


def _runs(base: Path) -> list[Path]:
    """Run folders below ``base`` (a link to a folder is not one)."""
    return sorted(
        p for p in base.iterdir() if not p.is_symlink() and p.is_dir() and compact_files(p)
    )


class ArchiveError(ValueError):
    """What export or import refuses, in one line: a missing folder, an archived path that
    is a link, a special file or too large, a bad checkpoint, a batch record that differs."""


def _plain_file(path: Path) -> int:
    """The size of ``path``, a regular file (not a link, folder, FIFO or device) of at most
    :data:`MAX_FILE_BYTES`; else :class:`ArchiveError` naming it."""
    try:
        st = os.lstat(path)
    except OSError as err:
        raise ArchiveError(f"{path}: cannot read ({err.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise ArchiveError(f"{path} is a symbolic link; the archive holds plain files only")
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a special file"
        raise ArchiveError(f"{path} is {kind}, not a plain file")
    if st.st_size > MAX_FILE_BYTES:
        raise ArchiveError(f"{path} is {st.st_size} bytes, over the {MAX_FILE_BYTES} byte bound")
    return st.st_size


def _copy_plain(src: Path, dest: Path) -> None:
    """Copy the plain file ``src`` (:func:`_plain_file`) to the new path ``dest``: read with
    ``O_NOFOLLOW`` and at most the bound, written with ``O_EXCL`` (never through a link) and
    mode 0o644 (less the umask), whatever the source's mode."""
    _plain_file(src)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(src, flags)
    except OSError as err:
        raise ArchiveError(f"{src}: cannot read ({err.strerror})") from None
    with os.fdopen(fd, "rb") as fin:
        if not stat.S_ISREG(os.fstat(fin.fileno()).st_mode):
            raise ArchiveError(f"{src} is not a plain file")
        data = fin.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ArchiveError(f"{src} grew over the {MAX_FILE_BYTES} byte bound while read")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    dfd = os.open(dest, flags, 0o644)  # data, never executable (os.open's default is 0o777)
    with os.fdopen(dfd, "wb") as fout:
        fout.write(data)


def _copy_tree_plain(src: Path, dest: Path) -> None:
    """Copy the folder ``src`` (plain files and folders only, no link) into the new ``dest``."""
    dest.mkdir()
    for entry in sorted(src.iterdir()):
        if not entry.is_symlink() and entry.is_dir():
            _copy_tree_plain(entry, dest / entry.name)
        else:
            _copy_plain(entry, dest / entry.name)


def _load_checkpoint_module():
    from mvpo_train import checkpoint  # torch: imported only when checkpoints are handled

    return checkpoint


def finished(run: Path, final_splits: Sequence[str]) -> bool:
    """Every final evaluation ``eval-SPLIT.json`` of the run is there."""
    return all((run / f"eval-{split}.json").is_file() for split in final_splits)


def _export_checkpoint(
    run: Path, dest: Path, final_splits: Sequence[str], latest: Path | None
) -> str | None:
    """Archive ``latest``, the newest intact checkpoint of an unfinished run (replacing an
    older one), drop it for a finished one; the archived folder's name, or None."""
    ck = _load_checkpoint_module()
    archived = dest / CHECKPOINTS
    if finished(run, final_splits):
        shutil.rmtree(archived, ignore_errors=True)
        return None
    if latest is None:
        return None
    target = archived / latest.name
    if (
        not (target / ck.SUMS).is_file()
        or target.joinpath(ck.SUMS).read_bytes() != (latest / ck.SUMS).read_bytes()
    ):
        tmp = dest / f".{CHECKPOINTS}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(latest, tmp / latest.name, copy_function=shutil.copyfile)
        (tmp / ck.LATEST).write_text(latest.name + "\n")
        shutil.rmtree(archived, ignore_errors=True)
        os.replace(tmp, archived)
    return latest.name


def check_records_dir(records_to: Path, archive: Path) -> None:
    """Batch records go to a machine-local folder: never into ``archive`` nor below a
    ``benchmarks/results`` folder (one line, exit 1)."""
    where = records_to.resolve()
    parts = where.parts
    inside_results = any(
        a == "benchmarks" and b == "results" for a, b in zip(parts, parts[1:], strict=False)
    )
    if inside_results or where == archive.resolve() or archive.resolve() in where.parents:
        raise ArchiveError(
            f"--records {records_to}: batch records are binary and stay out of "
            "the archive and benchmarks/results; give a machine-local folder"
        )


def _export_records(run: Path, dest: Path, latest: Path | None) -> int:
    """Copy the run's batch records up to ``latest``, its newest intact checkpoint, into
    ``dest/records/`` and its ``config.yaml`` into ``dest`` (module docstring); the number
    newly copied. Never replaces a kept record."""
    from mvpo_train.records import find_records

    if latest is None:
        return 0
    dest.mkdir(parents=True, exist_ok=True)
    if (run / "config.yaml").is_file():
        shutil.copyfile(run / "config.yaml", dest / "config.yaml")
    settled = int(latest.name.removeprefix("iter-"))
    out, n = dest / RECORDS, 0
    for iteration, path in find_records(run).items():
        if iteration > settled or path.is_symlink() or not path.is_file():
            continue
        target = out / path.name
        if target.exists():
            if target.read_bytes() != path.read_bytes():
                raise ArchiveError(
                    f"{target} differs from {path}: the archive holds another "
                    "run of that name; nothing replaced"
                )
            continue
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / f".{path.name}.tmp"
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
        n += 1
    return n


def copy_compact(runs: Iterable[Path], to: Path) -> int:
    """Copy the compact results (:func:`compact_files`) of each run folder of ``runs`` into
    ``to/<run>/``; the count."""
    n = 0
    for run in runs:
        dest = to / run.name
        dest.mkdir(parents=True, exist_ok=True)
        for f in compact_files(run):
            shutil.copyfile(f, dest / f.name)
        n += 1
    return n


def export(
    base: Path,
    to: Path,
    checkpoints: Sequence[str] | None = None,
    records: Path | None = None,
) -> int:
    """Copy the compact results of every run below ``base`` into ``to/<run>/``; the count.
    With ``checkpoints`` (the final evaluation splits), also the newest checkpoint of every
    run whose final evaluations are not all there; with ``records`` (a machine-local folder,
    :func:`check_records_dir`), the batch records up to each run's newest intact checkpoint
    into ``records/<run>/`` (module docstring)."""
    if not base.is_dir():
        raise ArchiveError(f"no run folder {base}")
    if records is not None:
        check_records_dir(records, to)
    n = 0
    for run in _runs(base):
        dest = to / run.name
        copy_compact([run], to)
        needs = records is not None or (checkpoints is not None and not finished(run, checkpoints))
        latest = _load_checkpoint_module().find_intact_checkpoint(run)[0] if needs else None
        if checkpoints is not None:
            _export_checkpoint(run, dest, checkpoints, latest)
        if records is not None:
            _export_records(run, records / run.name, latest)
        n += 1
    return n


def import_(src: Path, base: Path) -> tuple[int, list[str]]:
    """Copy archived runs into ``base`` where the run has no metrics yet; (copied, kept).
    An archived checkpoint comes too, verified (a bad one is one line; nothing is copied).
    Plain files only, each within :data:`MAX_FILE_BYTES`, assembled in a fresh folder and
    renamed into place (module docstring); a link or special file is one line."""
    if not src.is_dir() or src.is_symlink():
        raise ArchiveError(f"no archive {src} (a folder, not a link)")
    for linked in sorted(p for p in src.iterdir() if p.is_symlink()):
        raise ArchiveError(f"{linked} is a symbolic link; nothing of it imported")
    copied, kept = 0, []
    for run in _runs(src):
        dest = base / run.name
        if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
            raise ArchiveError(
                f"{dest} is a link or a file, not a run folder; nothing of {run.name} imported"
            )
        if os.path.lexists(dest / "metrics.jsonl") or (dest.is_dir() and any(dest.iterdir())):
            kept.append(run.name)
            continue
        archived, latest = run / CHECKPOINTS, None
        if archived.is_dir():
            ck = _load_checkpoint_module()
            latest = ck.latest_checkpoint(run)
            try:
                if latest is None:
                    raise ck.CheckpointError(f"{archived}: no complete checkpoint")
                ck.verify_checkpoint(latest)
            except ck.CheckpointError as err:
                raise ArchiveError(f"{err}; nothing of {run.name} imported") from None
        base.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{run.name}.import-", dir=base))
        try:
            for f in compact_files(run):
                _copy_plain(f, tmp / f.name)
            if latest is not None:  # only the verified folder and its pointer
                (tmp / CHECKPOINTS).mkdir()
                _copy_tree_plain(latest, tmp / CHECKPOINTS / latest.name)
                (tmp / CHECKPOINTS / ck.LATEST).write_text(latest.name + "\n")
            if dest.is_dir():
                dest.rmdir()  # empty (checked above)
            os.rename(tmp, dest)
        except ArchiveError as err:
            raise ArchiveError(f"{err}; nothing of {run.name} imported") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        copied += 1
    return copied, kept


def export_warm(warm: Path, to: Path) -> None:
    """Copy the warm start's files into ``to/warm-head/`` (module docstring)."""
    missing = [f for f in WARM_FILES if not (warm / f).is_file()]
    if missing:
        raise ArchiveError(f"{warm} holds no complete warm start (no {missing[0]})")
    dest = to / WARM_HEAD
    dest.mkdir(parents=True, exist_ok=True)
    for f in WARM_FILES:
        shutil.copyfile(warm / f, dest / f)


def import_warm(src: Path, warm: Path) -> bool:
    """Restore an archived warm start into ``warm`` unless it holds one; whether it did."""
    head = src / WARM_HEAD
    if (warm / "warm_start.json").is_file() or not head.is_dir():
        return False
    missing = [f for f in WARM_FILES if not (head / f).is_file() or (head / f).is_symlink()]
    if missing or head.is_symlink():
        raise ArchiveError(
            f"{head} is incomplete (no plain file {(missing or ['?'])[0]}); nothing restored"
        )
    warm.mkdir(parents=True, exist_ok=True)
    try:
        for f in WARM_FILES:
            _plain_file(head / f)
        for f in WARM_FILES:
            if os.path.lexists(warm / f):
                raise ArchiveError(f"{warm / f} exists already; nothing replaced")
            _copy_plain(head / f, warm / f)
    except ArchiveError as err:
        raise ArchiveError(f"{err}; warm start not restored") from None
    return True
