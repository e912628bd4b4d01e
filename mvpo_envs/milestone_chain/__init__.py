"""``mvpo/MilestoneChain-v0``: the control task with a known answer (docs/control_task.md).

``layout`` draws the seeded layouts (one per task), ``world`` holds the rules and texts,
``oracle`` the shortest plans and optimal actions, ``env`` the Gymnasium env.

Importing this package loads nothing heavy (the env module is imported on first use);
its declaration is :mod:`.spec`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["SPLITS", "MilestoneChainEnv"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("mvpo_envs.milestone_chain.env"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
