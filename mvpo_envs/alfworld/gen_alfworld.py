"""ALFWorld-scale tasks: a whole room, a full object population, ALFWorld's task mix.

docs/alfworld_generator.md, "The alfworld preset". A game of the ``alfworld`` preset has

* every receptacle of the scene (:func:`gen_room.load_room`);
* every pickupable object type of the scene in 1-3 copies (ALFRED's
  ``MAX_NUM_OF_OBJ_INSTANCES`` is 3; the target type has at least as many copies as the task
  needs), each in a receptacle ALFRED allows to hold it (``VAL_RECEPTACLE_OBJECTS``), drawn
  with a weight per receptacle type (big surfaces such as countertops and tables hold most, as
  THOR's random spawn leaves them); no copy of the target type starts in a receptacle of the
  goal type (the game would start solved); a room left under 30 objects gets more copies of its
  own types, up to 4 each (docs/alfworld_generator.md, "Ranges");
* only scenes whose whole room has 10-40 receptacles; a room out of these ranges is refused
  (:class:`RoomRangeError`), never written;
* the scene's lamps (desk and floor lamps), each standing in a lamp holder (desk, dresser,
  side table, shelf): alfred.pddl's ``ToggleObject`` needs the lamp in a receptacle at the
  agent's location;
* the goal drawn as ALFRED's task sampler does: a task type's room types
  (``GOALS_VALID``), an object type of the scene with the class the task needs, a goal
  receptacle type of the room that may hold it (never the tool itself), for look tasks one of
  the scene's lamp types;
* the constructed walkthrough of :func:`gen_problem.construct_plan` (verified on ALFWorld's
  engine by the generator).
"""

from __future__ import annotations

import functools
import random
from collections import Counter

import alfworld.gen.constants as constants

from mvpo_envs.alfworld.gen_problem import (
    TOOLS,
    Goal,
    Problem,
    Thing,
    _agent_start,
    _place,
    construct_plan,
    placement_goals,
    task_objects,
)
from mvpo_envs.alfworld.gen_room import Room, load_room
from mvpo_envs.alfworld.gen_scene import LAMP_HOLDERS, Receptacle, can_contain

#: ALFRED's cap on copies of one object type in a scene
MAX_COPIES = constants.MAX_NUM_OF_OBJ_INSTANCES
#: the most copies of one type a sparse room is filled up to: ALFRED's cap on copies of the
#: task's target type (``PICKUP_REPEAT_MAX``), the most ALFRED ever puts in one scene
FILL_MAX_COPIES = constants.PICKUP_REPEAT_MAX
#: every room of the preset: receptacles within this range (ALFWorld's rooms in ReAct's
#: prompts: 10-39) and at least MIN_OBJECTS objects in receptacles (the real kitchen: 43)
RECEPTACLE_RANGE = (10, 40)
MIN_OBJECTS = 30
#: relative chance that an object lands in a receptacle of this type (default 1)
PLACEMENT_WEIGHT = {
    "CounterTop": 8,
    "DiningTable": 8,
    "Desk": 5,
    "CoffeeTable": 5,
    "Bed": 4,
    "Sofa": 3,
    "Dresser": 4,
    "SideTable": 3,
    "TVStand": 3,
    "Shelf": 2,
    "Fridge": 3,
    "SinkBasin": 2,
    "BathtubBasin": 2,
    "ArmChair": 2,
    "Toilet": 2,
    "Cart": 2,
}
#: ALFWorld's games per task type (ALFWorld paper, data table): train, valid_seen, valid_unseen
ALFWORLD_TASK_COUNTS = {
    "train": {
        "pick_and_place_simple": 790,
        "look_at_obj_in_light": 308,
        "pick_clean_then_place_in_recep": 650,
        "pick_heat_then_place_in_recep": 459,
        "pick_cool_then_place_in_recep": 533,
        "pick_two_obj_and_place": 813,
    },
    "valid_seen": {
        "pick_and_place_simple": 35,
        "look_at_obj_in_light": 13,
        "pick_clean_then_place_in_recep": 27,
        "pick_heat_then_place_in_recep": 16,
        "pick_cool_then_place_in_recep": 25,
        "pick_two_obj_and_place": 24,
    },
    "valid_unseen": {
        "pick_and_place_simple": 24,
        "look_at_obj_in_light": 18,
        "pick_clean_then_place_in_recep": 31,
        "pick_heat_then_place_in_recep": 23,
        "pick_cool_then_place_in_recep": 21,
        "pick_two_obj_and_place": 17,
    },
}
ALFWORLD_SPLIT_SIZES = {s: sum(c.values()) for s, c in ALFWORLD_TASK_COUNTS.items()}
#: scene pool of each split: valid_seen games are in train's scenes, valid_unseen's are not
SPLIT_POOLS = {"train": "alfred_seen", "valid_seen": "alfred_seen", "valid_unseen": "alfred_unseen"}


def task_sequence(split: str, task_types: tuple[str, ...], size: int) -> list[str]:
    """Task type of game ``0..size-1``: smooth weighted round robin over ALFWorld's counts.

    Prefix-stable (game ``i`` has the same type whatever ``size`` is), and at ALFWorld's split
    size the counts are exactly ALFWorld's. Splits without counts use train's mix.
    """
    counts = ALFWORLD_TASK_COUNTS.get(split, ALFWORLD_TASK_COUNTS["train"])
    weights = {t: counts[t] for t in task_types}
    total = sum(weights.values())
    current = dict.fromkeys(task_types, 0)
    out = []
    for _ in range(size):
        for t in task_types:
            current[t] += weights[t]
        best = max(task_types, key=lambda t: (current[t], -task_types.index(t)))
        current[best] -= total
        out.append(best)
    return out


def _holders(room: Room) -> list[Receptacle]:
    return [r for r in room.receptacles if r.rtype in LAMP_HOLDERS]


def room_goals(room: Room, task_type: str) -> list[Goal]:
    """Every goal of this task type the whole room supports, in a fixed order."""
    scene = room.scene
    if scene.room not in constants.GOALS_VALID[task_type]:
        return []
    rtypes = room.receptacle_types()
    if task_type == "look_at_obj_in_light":
        if not room.lamps or not _holders(room):
            return []
        return [
            Goal(task_type, o, "", lamp)
            for lamp in room.lamps
            for o in task_objects(scene, task_type)
            if any(can_contain(t, o) for t in rtypes)
        ]
    return placement_goals(scene, task_type, rtypes)


@functools.cache
def scene_room_goals(number: int, task_type: str) -> tuple[Goal, ...]:
    return tuple(room_goals(load_room(number), task_type))


class RoomRangeError(ValueError):
    """A room outside the preset's ranges (receptacles, objects): never written."""


def _room_types(room: Room) -> list[str]:
    """Pickupable types of the scene that some receptacle of the room can hold."""
    return [
        o for o in room.scene.object_types if any(can_contain(r.rtype, o) for r in room.receptacles)
    ]


def room_in_range(room: Room) -> bool:
    """Whether the whole room can be a game of the preset (docs/alfworld_generator.md, "Ranges").

    Its receptacles (real layout + synthesized types) are within ``RECEPTACLE_RANGE`` and
    ``FILL_MAX_COPIES`` copies of each of its object types reach ``MIN_OBJECTS``.
    """
    lo, hi = RECEPTACLE_RANGE
    most = FILL_MAX_COPIES * len(_room_types(room)) + len(room.lamps)
    return lo <= len(room.receptacles) <= hi and most >= MIN_OBJECTS


@functools.cache
def preset_scenes(pool: tuple[int, ...]) -> tuple[int, ...]:
    """The scenes of a pool whose whole room is in range (the others are left out)."""
    return tuple(n for n in pool if room_in_range(load_room(n)))


def check_room(problem: Problem) -> None:
    """Raise :class:`RoomRangeError` (one line) unless the game's room is in range."""
    lo, hi = RECEPTACLE_RANGE
    n_recs, n_objs = len(problem.receptacles), len(problem.things)
    if not lo <= n_recs <= hi or n_objs < MIN_OBJECTS:
        raise RoomRangeError(
            f"{problem.scene.floor_plan}: {n_recs} receptacles and {n_objs} objects, outside "
            f"the alfworld preset's ranges ({lo}-{hi} receptacles, at least {MIN_OBJECTS} objects)"
        )


def _weighted(rng: random.Random, recs: list[Receptacle]) -> Receptacle:
    weights = [PLACEMENT_WEIGHT.get(r.rtype, 1) for r in recs]
    return rng.choices(recs, weights=weights, k=1)[0]


def sample_room_problem(rng: random.Random, task_type: str, pool: tuple[int, ...]) -> Problem:
    """Draw a scene and goal, populate the whole room, place the agent, construct the plan.

    Only scenes whose room is in range (:func:`preset_scenes`); a room whose ALFRED draw has
    fewer than ``MIN_OBJECTS`` objects gets more copies of its own types, up to
    ``FILL_MAX_COPIES`` each; :func:`check_room` refuses anything still out of range.
    """
    scenes = [n for n in preset_scenes(tuple(pool)) if scene_room_goals(n, task_type)]
    if not scenes:
        raise ValueError(f"no scene in the pool supports {task_type}")
    number = rng.choice(scenes)
    room = load_room(number)
    goal = rng.choice(scene_room_goals(number, task_type))
    recs = list(room.receptacles)
    used: set[str] = set()

    goal_rec = rng.choice(room.instances(goal.parent_target)) if goal.parent_target else None
    tool_rec = rng.choice(room.instances(TOOLS[task_type][0])) if task_type in TOOLS else None

    # the target type: as many copies as the task needs, up to ALFRED's cap
    n_targets = 2 if task_type == "pick_two_obj_and_place" else 1
    sources = [
        r
        for r in recs
        if can_contain(r.rtype, goal.object_target) and r.rtype != goal.parent_target
    ]
    copies = rng.randint(n_targets, max(n_targets, MAX_COPIES))
    target_copies = [
        _place(rng, goal.object_target, _weighted(rng, sources), used) for _ in range(copies)
    ]
    targets = target_copies[:n_targets]
    things: list[Thing] = list(target_copies)

    # the scene's lamps
    lamp = None
    holders = _holders(room)
    for lamp_type in room.lamps:
        if holders:
            thing = _place(rng, lamp_type, rng.choice(holders), used)
            things.append(thing)
            if lamp_type == goal.toggle_target:
                lamp = thing

    # every other pickupable type of the scene, 1-3 copies each
    for otype in room.scene.object_types:
        if otype == goal.object_target:
            continue
        spots = [r for r in recs if can_contain(r.rtype, otype)]
        if not spots:
            continue
        for _ in range(rng.randint(1, MAX_COPIES)):
            things.append(_place(rng, otype, _weighted(rng, spots), used))

    # a sparse room: one more copy of a type at a time (target copies never in a goal receptacle)
    copies_of = Counter(t.otype for t in things)
    while len(things) < MIN_OBJECTS:
        fill = [o for o in _room_types(room) if copies_of[o] < FILL_MAX_COPIES]
        if not fill:
            break  # check_room refuses it
        otype = rng.choice(fill)
        spots = (
            sources
            if otype == goal.object_target
            else [r for r in recs if can_contain(r.rtype, otype)]
        )
        things.append(_place(rng, otype, _weighted(rng, spots), used))
        copies_of[otype] += 1

    taken = {r.location for r in recs}
    agent_loc, agent_pose = _agent_start(rng, room.scene, taken)
    problem = Problem(
        scene=room.scene,
        goal=goal,
        receptacles=sorted(recs, key=lambda r: r.alfred_id),
        things=sorted(things, key=lambda t: t.alfred_id),
        agent_location=agent_loc,
        agent_pose=agent_pose,
    )
    check_room(problem)
    problem.plan = construct_plan(problem, targets, goal_rec, tool_rec, lamp)
    return problem
