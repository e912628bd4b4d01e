"""Whole ALFRED rooms for the ``alfworld`` preset: every receptacle the scene has.

docs/alfworld_generator.md, "The alfworld preset". ``FloorPlan<N>-openable.json`` poses only
part of a scene's receptacles (FloorPlan14: 9 of the 20 in ALFWorld's game of that scene; no
coffee machine, stove burner, toaster, towel holders...). ``FloorPlan<N>-objects.json`` lists
every object *type* of the scene, so a room here is

* every posed receptacle instance of the scene (real id and pose), plus
* for each receptacle type the scene has (``objects.json``) but ``openable.json`` does not pose,
  synthesized instances: 4 stove burners (every kitchen of ALFWorld's published ReAct prompts
  has 4), otherwise one. Each stands next to an anchor receptacle of the scene (appliances on a
  countertop, bathroom fixtures by the sink or toilet, else any posed receptacle), on a
  reachable floor point within a metre of the anchor's pose, with an ALFRED-style id.

The synthesis is seeded by the scene number alone, so a scene is the same room in every game,
as in ALFWorld. Lamps: the scene's ``DeskLamp`` and/or ``FloorLamp`` (32 scenes have a floor
lamp, 27 a desk lamp).
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from dataclasses import dataclass

import alfworld.gen.constants as constants

from mvpo_envs.alfworld.gen_scene import (
    Receptacle,
    Scene,
    layouts_dir,
    load_scene,
)

#: receptacle types that are objects one can carry (never a room's furniture)
MOVABLE = frozenset(constants.MOVABLE_RECEPTACLES_SET)
#: instances synthesized for a type the layout lists but does not pose
SYNTH_COUNT = {"StoveBurner": 4}
#: where a synthesized receptacle stands: next to an instance of the first anchor type present
ANCHORS = {
    "CoffeeMachine": ("CounterTop", "DiningTable"),
    "StoveBurner": ("CounterTop", "DiningTable"),
    "Toaster": ("CounterTop", "DiningTable"),
    "HandTowelHolder": ("SinkBasin", "CounterTop"),
    "TowelHolder": ("BathtubBasin", "SinkBasin", "Toilet"),
    "ToiletPaperHanger": ("Toilet", "SinkBasin"),
}
#: camera horizon of the interaction pose of a synthesized receptacle (ALFRED uses 0..60)
HORIZON = {
    "StoveBurner": 45,
    "CoffeeMachine": 45,
    "Toaster": 45,
    "GarbageCan": 60,
    "LaundryHamper": 60,
    "Ottoman": 60,
    "Safe": 60,
    "Cart": 30,
    "HandTowelHolder": 0,
    "TowelHolder": 0,
    "ToiletPaperHanger": 30,
}
#: height (m) written into a synthesized id
HEIGHT = {
    "StoveBurner": 0.91,
    "CoffeeMachine": 0.9,
    "Toaster": 0.9,
    "HandTowelHolder": 1.6,
    "TowelHolder": 1.1,
    "ToiletPaperHanger": 0.7,
}
LAMPS = ("DeskLamp", "FloorLamp")


@dataclass(frozen=True)
class Room:
    """A scene with all its receptacles (posed + synthesized) and its lamp types."""

    scene: Scene
    receptacles: tuple[Receptacle, ...]  # sorted by id
    synthesized: tuple[str, ...]  # ids of the synthesized receptacles
    lamps: tuple[str, ...]  # lamp types of the scene, from LAMPS

    def receptacle_types(self) -> tuple[str, ...]:
        return tuple(sorted({r.rtype for r in self.receptacles}))

    def instances(self, rtype: str) -> list[Receptacle]:
        return [r for r in self.receptacles if r.rtype == rtype]


def _room_rng(number: int) -> random.Random:
    digest = hashlib.sha256(f"mvpo-alfworld-room:{number}".encode()).hexdigest()
    return random.Random(int(digest[:13], 16))


@functools.cache
def scene_type_names(number: int) -> tuple[str, ...]:
    """Every object type ``FloorPlan<N>-objects.json`` lists, sorted."""
    path = layouts_dir() / f"FloorPlan{number}-objects.json"
    return tuple(sorted(json.loads(path.read_text())))


def _near(
    rng: random.Random, scene: Scene, anchor: Receptacle, radius: float = 1.0
) -> tuple[float, float]:
    """A reachable floor point within ``radius`` of the anchor's pose (or the pose itself)."""
    pts = [
        p
        for p in scene.floor_points
        if abs(p[0] - anchor.x) <= radius + 1e-6 and abs(p[1] - anchor.z) <= radius + 1e-6
    ]
    return rng.choice(pts) if pts else (anchor.x, anchor.z)


def _synth_id(rng: random.Random, rtype: str, anchor: Receptacle, used: set[str]) -> str:
    x0, _, z0 = anchor.position
    y = HEIGHT.get(rtype, 0.0)
    while True:
        x = round(x0 + rng.uniform(-0.6, 0.6), 2) + 0.0
        z = round(z0 + rng.uniform(-0.6, 0.6), 2) + 0.0
        rid = f"{rtype}|{x:+06.2f}|{y:+06.2f}|{z:+06.2f}"
        if rid not in used:
            used.add(rid)
            return rid


@functools.cache
def load_room(number: int) -> Room:
    """The whole room of a floor plan (deterministic: seeded by the scene number)."""
    scene = load_scene(number)
    names = set(scene_type_names(number))
    posed = {r.rtype for r in scene.receptacles}
    missing = sorted(
        t
        for t in names
        if t in constants.VAL_RECEPTACLE_OBJECTS and t not in MOVABLE and t not in posed
    )
    rng = _room_rng(number)
    used = {r.alfred_id for r in scene.receptacles}
    extra: list[Receptacle] = []
    for rtype in missing:
        anchors: list[Receptacle] = []
        for atype in ANCHORS.get(rtype, ()):
            anchors = scene.instances(atype)
            if anchors:
                break
        anchors = anchors or list(scene.receptacles)
        if not anchors:
            continue
        for _ in range(SYNTH_COUNT.get(rtype, 1)):
            anchor = rng.choice(anchors)
            x, z = _near(rng, scene, anchor)
            heading = anchor.rotation if rng.random() < 0.5 else rng.randrange(4) * 90
            rid = _synth_id(rng, rtype, anchor, used)
            extra.append(Receptacle(rid, rtype, x, z, heading, HORIZON.get(rtype, 30)))
    recs = tuple(sorted(scene.receptacles + tuple(extra), key=lambda r: r.alfred_id))
    return Room(
        scene=scene,
        receptacles=recs,
        synthesized=tuple(sorted(r.alfred_id for r in extra)),
        lamps=tuple(t for t in LAMPS if t in names),
    )
