"""ALFWorld's on-disk game, read and checked: the bottom layer of :mod:`mvpo_envs.alfworld`.

A game is a trial folder with ``game.tw-pddl`` (PDDL domain, problem and grammar) and
``traj_data.json`` (ALFRED metadata). This module reads both files and checks the fields the
engines and the data loader use (docs/alfworld_engine.md, "Bad game files"); its errors are one
line naming the file and the field. It imports neither an engine nor the generator: the data
loader, both engines and the generator import it (docs/architecture.md, "Layers and imports").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mvpo_envs.data_files import DataFileError, load_json

#: ALFWorld's six task types (``traj_data.json``'s ``task_type``)
TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
REQUIRED_GAME_KEYS = ("pddl_domain", "grammar", "pddl_problem")


class GameFileError(ValueError):
    """A game file is missing, unreadable or lacks what the engine needs."""


def read_json_object(path: Path, error: type[ValueError] = DataFileError) -> dict:
    """A JSON object from ``path`` (read by :func:`mvpo_envs.data_files.load_json`: UTF-8,
    bounded nesting); ``error`` naming the file, in one line, if it is not one."""
    try:
        data = load_json(path, "ALFWorld file")
    except DataFileError as err:
        raise error(str(err)) from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def read_game_file(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check a ``game.tw-pddl`` file; errors name the file and the field (one line).

    The file must be a JSON object (UTF-8, nesting bounded: :mod:`mvpo_envs.data_files`) with
    non-empty strings ``pddl_domain``, ``grammar`` and ``pddl_problem``; ``solvable``, when
    present, a boolean; ``walkthrough``, when present, a list of non-empty command strings,
    not empty in a solvable game (docs/alfworld_engine.md, "Bad game files").
    """
    path = Path(path)
    if not path.is_file():
        raise GameFileError(f"{path}: game file not found")
    data = read_json_object(path, GameFileError)
    missing = [k for k in REQUIRED_GAME_KEYS if not isinstance(data.get(k), str) or not data[k]]
    if missing:
        raise GameFileError(f"{path}: missing, empty or non-string key(s) {missing}")
    if "(:goal" not in data["pddl_problem"] or "(:init" not in data["pddl_problem"]:
        raise GameFileError(f"{path}: pddl_problem has no (:init ...) or (:goal ...) section")
    solvable = data.get("solvable")
    if solvable is not None and not isinstance(solvable, bool):
        raise GameFileError(f"{path}: 'solvable' is {type(solvable).__name__}, not a boolean")
    walkthrough = data.get("walkthrough")
    if walkthrough is not None:
        if not isinstance(walkthrough, list) or not all(
            isinstance(c, str) and c.strip() for c in walkthrough
        ):
            raise GameFileError(f"{path}: 'walkthrough' is not a list of command strings")
        if not walkthrough and solvable:
            raise GameFileError(f"{path}: 'walkthrough' is empty in a solvable game")
    return data


def check_traj(traj: dict, path: Path) -> None:
    """The fields of a ``traj_data.json`` the env reads: ``task_type`` a string and
    ``pddl_params`` (when present) an object whose targets are strings and ``object_sliced`` a
    boolean; else a :class:`DataFileError` naming the file and the field."""
    if not isinstance(traj.get("task_type"), str):
        raise DataFileError(f"{path}: 'task_type' is missing or not a string")
    params = traj.get("pddl_params", {})
    if not isinstance(params, dict):
        raise DataFileError(f"{path}: 'pddl_params' is {type(params).__name__}, not an object")
    for key in ("object_target", "parent_target", "toggle_target", "mrecep_target"):
        if not isinstance(params.get(key, ""), str):
            raise DataFileError(f"{path}: 'pddl_params.{key}' is not a string")
    if not isinstance(params.get("object_sliced", False), bool):
        raise DataFileError(f"{path}: 'pddl_params.object_sliced' is not a boolean")
