"""ALFRED scene layouts and object-class tables for the offline ALFWorld game generator.

Everything here is read from the ``alfworld`` wheel, never copied: the scene layouts in
``alfworld/gen/layouts`` (``FloorPlan<N>-objects.json``: the object types in a scene;
``FloorPlan<N>-openable.json``: receptacle instances ``Type|x|y|z`` with the pose
``[x, z, rotation, horizon]`` an agent takes to interact with them;
``FloorPlan<N>-layout.npy``: the reachable floor points) and the class tables of
``alfworld.gen.constants`` (which receptacle holds which object, which objects can be heated,
cooled, cleaned, toggled, sliced, which receptacles open).

Names follow ALFRED's PDDL mangling (``|`` -> ``_bar_``, ``+`` -> ``_plus_``, ``-`` ->
``_minus_``, ``.`` -> ``_dot_``): ALFWorld's ``Demangler`` takes the text before the first
``_bar_`` as the display name, so an id without ``_bar_`` breaks every command.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import alfworld.gen.constants as constants
import numpy as np

#: grid step of ALFRED's navigation points, in metres
GRID = 0.25
#: receptacle types whose instances can hold a desk lamp in the generated games
LAMP_HOLDERS = ("Desk", "Dresser", "SideTable", "Shelf")
#: the toggleable object used by look_at_obj_in_light games
LAMP = "DeskLamp"
#: rtype/otype constants that alfred.pddl's actions name; the problem must declare them
DOMAIN_RTYPES = ("FridgeType", "MicrowaveType", "SinkBasinType")
DOMAIN_OTYPES = ("ButterKnifeType", "KnifeType")
#: unary object predicates of alfred.pddl set from ALFRED's class tables, in file order
CLASS_PREDICATES = (
    "pickupable",
    "isReceptacleObject",
    "cleanable",
    "heatable",
    "coolable",
    "toggleable",
    "sliceable",
)

_MANGLE = (("-", "_minus_"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_"))


def mangle(alfred_id: str) -> str:
    """ALFRED id (``Apple|+01.59|+00.97|-01.29``) -> PDDL name, as ALFRED's generator does it."""
    out = alfred_id
    for src, dst in _MANGLE:  # "-" first: the later replacements introduce no "-"
        out = out.replace(src, dst)
    return out


def layouts_dir() -> Path:
    """Folder of the ALFRED scene layouts shipped in the alfworld wheel."""
    return Path(constants.__file__).resolve().parent / "layouts"


@dataclass(frozen=True)
class Receptacle:
    """One receptacle instance of a scene, with the pose used to interact with it."""

    alfred_id: str  # e.g. "Sink|+01.10|+00.91|-01.60|SinkBasin"
    rtype: str  # e.g. "SinkBasin"
    x: float
    z: float
    rotation: int
    horizon: int

    @property
    def name(self) -> str:
        return mangle(self.alfred_id)

    @property
    def position(self) -> tuple[float, float, float]:
        """The (x, y, z) written in the id."""
        parts = self.alfred_id.split("|")[1:4]
        return float(parts[0]), float(parts[1]), float(parts[2])

    @property
    def location(self) -> str:
        """PDDL location name, ALFRED style: ``loc|gridX|gridZ|rotation/90|horizon``."""
        return location_name(self.x, self.z, self.rotation // 90, self.horizon)

    @property
    def openable(self) -> bool:
        return self.rtype in constants.OPENABLE_CLASS_SET


def location_name(x: float, z: float, heading: int, horizon: int) -> str:
    """Mangled ALFRED location id for a grid pose (heading in quarter turns)."""
    gx, gz = int(round(x / GRID)), int(round(z / GRID))
    return mangle(f"loc|{gx}|{gz}|{heading % 4}|{horizon}")


def receptacle_type(alfred_id: str) -> str:
    """Type of a receptacle id; sink and bathtub basins carry it as their last field."""
    parts = alfred_id.split("|")
    return parts[-1] if len(parts) > 4 else parts[0]


@dataclass(frozen=True)
class Scene:
    """What the generator may use from one ALFRED floor plan."""

    number: int
    object_types: tuple[str, ...]  # pickupable object types present, sorted
    has_lamp: bool
    receptacles: tuple[Receptacle, ...]  # sorted by id
    floor_points: tuple[tuple[float, float], ...]  # reachable (x, z), sorted

    @property
    def floor_plan(self) -> str:
        return f"FloorPlan{self.number}"

    @property
    def room(self) -> str:
        for room, numbers in constants.SCENE_TYPE.items():
            if self.number in numbers:
                return room
        raise ValueError(f"scene {self.number} has no room type")

    def receptacle_types(self) -> tuple[str, ...]:
        return tuple(sorted({r.rtype for r in self.receptacles}))

    def instances(self, rtype: str) -> list[Receptacle]:
        return [r for r in self.receptacles if r.rtype == rtype]


@functools.cache
def pickupable_types() -> tuple[str, ...]:
    """Object types some receptacle can hold (ALFRED's pickupables), without sliced parts."""
    held = set()
    for objs in constants.VAL_RECEPTACLE_OBJECTS.values():
        held |= {o for o in objs if not o.endswith("Sliced")}
    return tuple(sorted(held))


def can_contain(rtype: str, otype: str) -> bool:
    """ALFRED's receptacle/object compatibility (``VAL_RECEPTACLE_OBJECTS``)."""
    return otype in constants.VAL_RECEPTACLE_OBJECTS.get(rtype, ())


def object_classes(otype: str) -> tuple[str, ...]:
    """The unary PDDL predicates an object of this type carries, in CLASS_PREDICATES order."""
    table = constants.VAL_ACTION_OBJECTS
    has = {
        "pickupable": otype in pickupable_types(),
        "isReceptacleObject": otype in constants.MOVABLE_RECEPTACLES_SET,
        "cleanable": otype in table["Cleanable"],
        "heatable": otype in table["Heatable"],
        "coolable": otype in table["Coolable"],
        "toggleable": otype in table["Toggleable"],
        "sliceable": otype in table["Sliceable"],
    }
    return tuple(p for p in CLASS_PREDICATES if has[p])


def _floor_points(number: int) -> tuple[tuple[float, float], ...]:
    path = layouts_dir() / f"FloorPlan{number}-layout.npy"
    if not path.is_file():
        return ()
    points = np.load(path)
    return tuple(sorted((round(float(x), 2), round(float(z), 2)) for x, z in points))


@functools.cache
def load_scene(number: int) -> Scene:
    """Read one floor plan from the wheel's layout files."""
    folder = layouts_dir()
    objects = json.loads((folder / f"FloorPlan{number}-objects.json").read_text())
    poses = json.loads((folder / f"FloorPlan{number}-openable.json").read_text())
    receptacles = []
    for rid in sorted(poses):
        rtype = receptacle_type(rid)
        if rtype not in constants.VAL_RECEPTACLE_OBJECTS:
            continue
        x, z, rotation, horizon = poses[rid]
        receptacles.append(Receptacle(rid, rtype, float(x), float(z), int(rotation), int(horizon)))
    present = set(objects)
    return Scene(
        number=number,
        object_types=tuple(t for t in pickupable_types() if t in present),
        has_lamp=LAMP in present,
        receptacles=tuple(receptacles),
        floor_points=_floor_points(number),
    )


#: ALFRED's published dataset split of the scenes: valid_unseen and test scenes; every other
#: scene is a train scene (ALFWorld's train and valid_seen games come from those)
ALFRED_VALID_UNSEEN_SCENES = (10, 219, 308, 424)
ALFRED_TEST_SCENES = (9, 29, 215, 226, 315, 325, 404, 425)
SCENE_POOLS = ("train", "test", "alfred_seen", "alfred_unseen")


def scene_numbers(pool: str) -> tuple[int, ...]:
    """A scene pool.

    ``train`` (7-30, 207-230, ...) and ``test`` (1-6, 201-206, ...): the split of
    ``alfworld.gen.constants`` (ALFRED's generator). ``alfred_seen``: ALFRED's dataset train
    scenes (all but its valid_unseen and test scenes); ``alfred_unseen``: ALFRED's
    valid_unseen scenes (10, 219, 308, 424), as ALFWorld's ``valid_unseen`` games use.
    """
    every = tuple(constants.TRAIN_SCENE_NUMBERS) + tuple(constants.TEST_SCENE_NUMBERS)
    if pool == "train":
        numbers = constants.TRAIN_SCENE_NUMBERS
    elif pool == "test":
        numbers = constants.TEST_SCENE_NUMBERS
    elif pool == "alfred_seen":
        held = set(ALFRED_VALID_UNSEEN_SCENES) | set(ALFRED_TEST_SCENES)
        numbers = [n for n in every if n not in held]
    elif pool == "alfred_unseen":
        numbers = ALFRED_VALID_UNSEEN_SCENES
    else:
        raise ValueError(f"unknown scene pool {pool!r}; use one of {list(SCENE_POOLS)}")
    available = {
        int(p.name[9:].split("-")[0]) for p in layouts_dir().glob("FloorPlan*-openable.json")
    }
    return tuple(sorted(n for n in numbers if n in available))
