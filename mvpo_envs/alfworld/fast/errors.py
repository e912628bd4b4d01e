"""Errors of the native ALFWorld engine (docs/alfworld_engine.md, "What the fast engine supports")."""

from __future__ import annotations


class UnsupportedGameError(ValueError):
    """The game uses a construct the fast engine does not implement; the message names it.

    Use ``engine="pddl"`` (ALFWorld's own TextWorld engine) for such a game.
    """
