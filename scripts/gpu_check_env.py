"""A tiny text env with the mvpo info contract, for GPU checks on machines without ALFWorld.

``mvpo-check/KeyRoom-v0``: fetch the key from one of three rooms and open the door with it.
It follows docs/environments.md's common contract (through :class:`mvpo_envs.base.TextEnv`) and
needs only gymnasium and numpy, so ``scripts/gpu_check.py`` can run the trainer on a GPU
machine where ALFWorld's engine is not installed.
"""

from __future__ import annotations

import gymnasium as gym

from mvpo_abstraction.base import Abstraction, depth_bin
from mvpo_envs.base import TextEnv, Transition

ENV_ID = "mvpo-check/KeyRoom-v0"
ROOMS = ("room 1", "room 2", "room 3")
#: (room with the key, room with the door) per task
TASKS = [(k, d) for k in ROOMS for d in ROOMS if k != d]


def _abstraction() -> Abstraction:
    return Abstraction.from_functions(
        lambda s, t: f"{s['location']}|{'key' if s['holding'] else 'none'}|{depth_bin(t)}",
        {
            "key_seen": lambda prev, s, a: s["seen"],
            "key_in_hand": lambda prev, s, a: s["holding"],
            "goal_reached": lambda prev, s, a: s["won"],
        },
        name="keyroom",
    )


class KeyRoomEnv(TextEnv):
    """See the module docstring."""

    def __init__(self, split: str = "train", render_mode: str | None = None, abstraction=None):
        ids = [f"key-{k}-door-{d}".replace(" ", "") for k, d in TASKS]
        super().__init__(ids, abstraction or _abstraction(), render_mode)
        self._s: dict = {}

    def task_text(self) -> str:
        return "bring the key to the door and open it."

    def _actions(self) -> list[str]:
        s = self._s
        acts = [f"go to {r}" for r in ROOMS if r != s["location"]] + ["look"]
        if s["location"] == s["key"] and not s["holding"]:
            acts.append("take key")
        if s["location"] == s["door"] and s["holding"]:
            acts.append("open door with key")
        return sorted(acts)

    def _view(self) -> str:
        s = self._s
        things = []
        if s["location"] == s["key"] and not s["holding"]:
            things.append("a key")
        if s["location"] == s["door"]:
            things.append("a locked door")
        return f"You are in {s['location']}. You see {' and '.join(things) or 'nothing'}."

    def _tr(self, obs: str, reward: float = 0.0) -> Transition:
        return Transition(
            obs, self._actions(), dict(self._s), reward, self._s["won"], self._s["won"]
        )

    def _start(self, task_index: int) -> Transition:
        key, door = TASKS[task_index]
        self._s = {"location": "hall", "key": key, "door": door, "holding": False, "seen": False,
                   "won": False}  # fmt: skip
        intro = "You are in the hall. Rooms: room 1, room 2, room 3. Your task is to: "
        return self._tr(intro + self.task_text())

    def _act(self, command: str) -> Transition:
        s = self._s
        if command.startswith("go to "):
            s["location"] = command[len("go to ") :]
            s["seen"] = s["seen"] or s["location"] == s["key"]
            return self._tr(self._view())
        if command == "take key":
            s["holding"] = True
            return self._tr("You pick up the key.")
        if command == "open door with key":
            s["won"] = True
            return self._tr("You open the door. You win!", 1.0)
        return self._tr(self._view())


def register() -> str:
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=KeyRoomEnv, max_episode_steps=8)
    return ENV_ID
