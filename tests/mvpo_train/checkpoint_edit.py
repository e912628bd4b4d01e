"""Checkpoints made to look as older code wrote them, for the resume tests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def edit_state(checkpoint: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``edit`` to the checkpoint's ``state.json`` (written back with the checkpoint
    writer's layout) and put its new SHA-256 into ``SHA256SUMS``, so that the checkpoint
    still verifies."""
    state_path = checkpoint / "state.json"
    state = json.loads(state_path.read_text())
    edit(state)
    state_path.write_text(json.dumps(state, indent=1, sort_keys=True))
    digest = hashlib.sha256(state_path.read_bytes()).hexdigest()
    sums = checkpoint / "SHA256SUMS"
    lines = [
        f"{digest}  state.json" if line.endswith("  state.json") else line
        for line in sums.read_text().splitlines()
    ]
    sums.write_text("".join(f"{line}\n" for line in lines))
