"""Committed per-run results of a sweep whose runs write one compact ``result.json`` each (the
oracle-gain studies, docs/alignment.md): a sweep that takes several sessions, on machines that
do not keep their run folders, continues from what is committed, and ``--analyze-only``
rebuilds its tables anywhere.

Layout of an archive folder (plain files, about 1 kB a run)::

    <archive>/settings.json            the study's settings and fingerprint
    <archive>/<arm>/seed<k>.json       one finished run's compact result
    <archive>/carried.json             optional: arms whose run folders were not kept

``carried.json`` holds per-arm summaries (per-seed metrics and the curve band) of runs made
before the archive existed, with the fingerprint of their settings; they are used as they are
(an arm with per-run files here is never taken from it).

Nothing is trusted: every file is read only when it is a regular file (``lstat``; a symbolic
link is refused) inside the archive and under :data:`MAX_BYTES`, and a result must be a JSON
object whose ``success`` list has the study's number of iterations of finite numbers in
[0, 1]; anything else is one :class:`ResultArchiveError` line naming the file.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from mvpo_train.atomic_write import write_text_atomic

__all__ = [
    "MAX_BYTES",
    "ResultArchiveError",
    "check_result",
    "load_carried",
    "load_result",
    "result_path",
    "save_result",
]

#: the largest file an archive may hold (a result is about 1 kB; carried.json tens of kB)
MAX_BYTES = 4 * 1024 * 1024


class ResultArchiveError(RuntimeError):
    """A damaged or unexpected archive file (one line)."""


def result_path(archive: Path, arm: str, seed: int) -> Path:
    """Where the result of ``arm`` at ``seed`` lives in ``archive``."""
    if not arm or "/" in arm or arm.startswith("."):
        raise ResultArchiveError(f"result archive: bad arm name {arm!r}")
    return Path(archive) / arm / f"seed{int(seed)}.json"


def _read_json(path: Path, archive: Path) -> Any:
    try:
        rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(archive))
    except ValueError:
        raise ResultArchiveError(f"result archive: {path} is outside {archive}") from None
    # every component below the archive must be a real folder or file, never a link
    cur = Path(archive)
    for part in rel.parts:
        cur = cur / part
        st = os.lstat(cur)
        if stat.S_ISLNK(st.st_mode):
            raise ResultArchiveError(f"result archive: {cur} is a symbolic link; refused")
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ResultArchiveError(f"result archive: {path} is not a regular file")
    if st.st_size > MAX_BYTES:
        raise ResultArchiveError(f"result archive: {path} is {st.st_size} bytes (> {MAX_BYTES})")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        raw = f.read(MAX_BYTES + 1)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ResultArchiveError(f"result archive: {path} is not valid JSON ({e})") from None


def check_result(res: Any, iterations: int, where: Path) -> dict[str, Any]:
    """``res`` when it is a run's compact result of ``iterations`` iterations (a run folder's
    ``result.json`` is checked the same way); :class:`ResultArchiveError` naming ``where``."""
    if not isinstance(res, dict):
        raise ResultArchiveError(f"result archive: {where} does not hold a JSON object")
    succ = res.get("success")
    if not isinstance(succ, list) or len(succ) != iterations:
        n = len(succ) if isinstance(succ, list) else "no"
        raise ResultArchiveError(
            f"result archive: {where} has {n} success values, the study has {iterations} iterations"
        )
    for v in succ:
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= v <= 1.0:
            raise ResultArchiveError(f"result archive: {where}: success value {v!r} not in [0, 1]")
    for key in ("heldout", "auc", "zero_credit", "kappa", "repaired_ratio", "entropy", "minutes"):
        v = res.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise ResultArchiveError(f"result archive: {where}: {key} is {v!r}, not a number")
        if isinstance(v, float) and math.isinf(v):
            raise ResultArchiveError(f"result archive: {where}: {key} is infinite")
    return res


def load_result(archive: Path, arm: str, seed: int, iterations: int) -> dict[str, Any] | None:
    """The archived result of ``arm`` at ``seed`` (None when there is none), verified."""
    path = result_path(archive, arm, seed)
    if not os.path.lexists(path):
        return None
    return check_result(_read_json(path, archive), iterations, path)


def save_result(archive: Path, arm: str, seed: int, res: dict[str, Any], iterations: int) -> Path:
    """Write ``res`` (checked first) as the archived result of ``arm`` at ``seed``, atomically."""
    path = result_path(archive, arm, seed)
    check_result(res, iterations, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(res, sort_keys=True) + "\n")
    return path


def load_carried(archive: Path, fingerprint: str) -> dict[str, Any]:
    """The carried arms of ``archive`` (``{}`` without ``carried.json``), refused in one line
    when they were made with other settings than ``fingerprint``."""
    path = Path(archive) / "carried.json"
    if not os.path.lexists(path):
        return {}
    data = _read_json(path, archive)
    if not isinstance(data, dict) or not isinstance(data.get("arms"), dict):
        raise ResultArchiveError(f"result archive: {path} has no 'arms' object")
    if data.get("fingerprint") != fingerprint:
        raise ResultArchiveError(
            f"result archive: {path} was made with settings {data.get('fingerprint')}, this "
            f"study's are {fingerprint}"
        )
    for name, arm in data["arms"].items():
        if not isinstance(arm, dict) or not isinstance(arm.get("per_seed"), dict):
            raise ResultArchiveError(f"result archive: {path}: arm {name!r} has no per_seed")
    return data["arms"]
