"""What identifies a set of generated ALFWorld games: the alfworld version and the
fingerprint of the generator's source (docs/alfworld_generator.md, "Splits").

The data loader keys its cache folders by :func:`generator_fingerprint` and the generator
records :func:`alfworld_version` in every game; this module imports neither, so the loader can
find a cached split without importing the generator.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
from pathlib import Path

#: the generator's modules (relative to ``mvpo_envs/alfworld/``): a change in any of them gives
#: a new cache folder
GENERATOR_MODULES = (
    "generate.py",
    "gen_alfworld.py",
    "gen_engine.py",
    "gen_problem.py",
    "gen_room.py",
    "gen_scene.py",
    # the fast engine verifies every walkthrough (pass or redraw), so it shapes the games too
    *(f"fast/{name}" for name in ("actions.py", "engine.py", "expressions.py", "facts.py",
                                  "goal.py", "grammar.py", "names.py", "pddl.py")),
)  # fmt: skip


@functools.cache
def alfworld_version() -> str:
    """The installed alfworld wheel's version (``"unknown"`` if its metadata is missing)."""
    try:
        return importlib.metadata.version("alfworld")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - editable installs
        return "unknown"


def generator_fingerprint() -> str:
    """Short hash of the generator's source and the alfworld version: the cache key."""
    digest = hashlib.sha256(alfworld_version().encode())
    here = Path(__file__).resolve().parent
    for name in GENERATOR_MODULES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:12]
