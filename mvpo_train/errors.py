"""The user-error type every command reports in one line (docs/training.md, "Reliability").

A module of its own, importing nothing, so that any module of ``mvpo_train`` can raise it
without importing the config (:mod:`mvpo_train.config` re-exports it).
"""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A user error in the configuration or in a file a command was given: the message is one
    line naming the field or file and what is allowed (the CLIs print it and exit with 2)."""
