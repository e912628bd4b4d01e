"""A native ALFWorld engine, step for step identical to ALFWorld's own (docs/alfworld_engine.md).

``gym.make("mvpo/ALFWorld-v0", engine="fast")`` plays the game files with
:class:`~mvpo_envs.alfworld.fast.engine.FastEngine`; nothing here imports TextWorld or the
GPL planner.
"""

from mvpo_envs.alfworld.fast.engine import FastEngine
from mvpo_envs.alfworld.fast.errors import UnsupportedGameError
from mvpo_envs.alfworld.game_file import GameFileError

__all__ = ["FastEngine", "GameFileError", "UnsupportedGameError"]
