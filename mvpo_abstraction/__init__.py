"""mvpo_abstraction: histories -> prefix signatures and milestones (pluggable, data-in, data-out).

Swappable without touching the optimizer (docs/architecture.md). See :mod:`mvpo_abstraction.base`.
What the signatures and milestones feed (viability regions, AMP weights, potentials) is credit
machinery and lives in :mod:`mvpo_train.credit`.
"""

from mvpo_abstraction.base import Abstraction, AbstractionTracker, depth_bin
from mvpo_abstraction.registry import (
    available_abstractions,
    available_milestones,
    get_milestone,
    make_abstraction,
    register_abstraction,
    register_milestone,
)
from mvpo_abstraction.wrapper import AbstractionWrapper

__all__ = [
    "Abstraction",
    "AbstractionTracker",
    "AbstractionWrapper",
    "available_abstractions",
    "available_milestones",
    "depth_bin",
    "get_milestone",
    "make_abstraction",
    "register_abstraction",
    "register_milestone",
]
