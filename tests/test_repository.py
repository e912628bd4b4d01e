"""The repository stands on its own (docs/architecture.md, "A repository that stands alone").

No tracked file may point a reader at something a clone does not hold: a folder next to the
checkout, design notes kept elsewhere, or an issue tracker. The forbidden needles are built
from pieces so that this file does not match itself. Excluded: ``data/`` (generated data,
not prose) and ``tests/conftest.py``, whose optional real-data layer may look next to the
checkout (its tests skip cleanly when that folder is absent).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

NEEDLES = (
    "../" + "shared",
    "shared" + "/design",
    "ALGORITHMS" + ".md",
    "ENVIRONMENTS" + ".md",
    "ARCHITECTURE" + ".md",
    "issue" + " #",
)
EXCLUDED_DIRS = ("data/",)
EXCLUDED_FILES = ("tests/conftest.py",)
#: folders a working copy may hold that are not part of the repository
UNTRACKED_DIRS = {".git", ".venv", "venv", "build", "dist", "runs", "__pycache__", "node_modules"}


def repository_files(root: Path = REPO) -> list[str]:
    """Tracked files (``git ls-files``); without git, every file outside build folders."""
    if (root / ".git").exists():
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
        ).stdout
        return sorted(p for p in out.decode().split("\0") if p)
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [
            d for d in dirnames if d not in UNTRACKED_DIRS and not d.endswith(".egg-info")
        ]
        rel = Path(dirpath).relative_to(root)
        files.extend(str(rel / f) if str(rel) != "." else f for f in filenames)
    return sorted(files)


def hits(root: Path = REPO) -> list[str]:
    """``path:line: needle`` for every forbidden reference in a text file of the repository."""
    found = []
    for rel in repository_files(root):
        if rel.startswith(EXCLUDED_DIRS) or rel in EXCLUDED_FILES:
            continue
        path = root / rel
        if not path.is_file():  # deleted in the working copy
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary
        for number, line in enumerate(text.splitlines(), 1):
            found.extend(f"{rel}:{number}: {n}" for n in NEEDLES if n in line)
    return found


def test_no_reference_outside_the_repository():
    bad = hits()
    assert not bad, "references to files outside the repository or to issues:\n" + "\n".join(bad)


def test_the_scan_finds_each_needle_and_honours_the_exclusions(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "docs" / "a.md").write_text("\n".join(f"see {n} here" for n in NEEDLES) + "\n")
    (tmp_path / "docs" / "ok.md").write_text("see docs/architecture.md and docs/environments.md\n")
    (tmp_path / "data" / "x.txt").write_text(NEEDLES[0] + "\n")
    (tmp_path / "tests" / "conftest.py").write_text(NEEDLES[0] + "\n")
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe" + NEEDLES[0].encode())
    assert hits(tmp_path) == [f"docs/a.md:{i}: {n}" for i, n in enumerate(NEEDLES, 1)]


#: "the seeds" named the papers once; the word is kept for random seeds only (the
#: architecture issue's check: ``git grep -i -E "the seeds|seeds'|form=.seeds"`` outside tests)
PAPERS_AS_SEEDS = r"the seeds|seeds'|form=.seeds"


def paper_word_hits(root: Path = REPO) -> list[str]:
    """``path:line`` of every text line outside ``tests/`` and ``data/`` that says the papers'
    old name (:data:`PAPERS_AS_SEEDS`, case-insensitive)."""
    pattern = re.compile(PAPERS_AS_SEEDS, re.IGNORECASE)
    found = []
    for rel in repository_files(root):
        if rel.startswith(("tests/", "data/")) or not (root / rel).is_file():
            continue
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [
            f"{rel}:{i}" for i, line in enumerate(text.splitlines(), 1) if pattern.search(line)
        ]
    return found


def test_the_papers_are_called_by_their_names_never_the_seeds(tmp_path):
    bad = paper_word_hits()
    assert not bad, "say 'the MVPO paper' (or 'random seeds'):\n" + "\n".join(bad)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("ok: random seeds\nbad: The Seeds say\n")
    assert paper_word_hits(tmp_path) == ["docs/a.md:2"]
