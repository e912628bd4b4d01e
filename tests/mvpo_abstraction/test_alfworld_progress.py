"""``alfworld-progress``: the opt-in ALFWorld signature that carries what is held and the
milestones done (mvpo_abstraction/alfworld.py), on real episodes of the bundled ``mini`` games;
the default signatures stay as they were."""

from __future__ import annotations

import hashlib
import random

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_abstraction.alfworld import AlfworldProgressAbstraction
from mvpo_abstraction.registry import available_abstractions, make_abstraction

ENV_ID = "mvpo/ALFWorld-v0"


def _parts(signature: str) -> dict[str, str]:
    location, held, in_view, done, depth = signature.split("|")
    assert held.startswith("h:") and in_view.startswith("v:") and done.startswith("m")
    return {"location": location, "h": held[2:], "v": in_view[2:], "m": done[1:], "d": depth}


def _state(**over):
    goal = {
        "object": "apple", "mrecep": "", "toggle": "", "sliced": False,
        "task_type": "pick_clean_then_place_in_recep", "receptacle": "fridge",
    }  # fmt: skip
    state = {
        "location": "countertop 1", "visible_objects": ["knife 1", "apple 2", "mug 1"],
        "holding": [], "object_states": {}, "lamp_on": False,
        "target_in_goal_receptacle": [], "goal": goal, "won": False,
    }  # fmt: skip
    return {**state, **over}


def test_registered_and_off_by_default():
    assert "alfworld-progress" in available_abstractions()
    assert isinstance(make_abstraction("alfworld-progress"), AlfworldProgressAbstraction)
    env = gym.make(ENV_ID, preset="mini", split="train")
    assert env.unwrapped.abstraction.name == "alfworld"


def test_signature_by_hand():
    abs_ = AlfworldProgressAbstraction()
    # apple in view, nothing held: target_seen holds -> m1; the knife is not relevant here
    assert abs_.signature(_state(), 7) == "countertop 1|h:none|v:apple|m1|d6"
    # an irrelevant object in hand
    held = _state(holding=["mug 1"], visible_objects=["knife 1"])
    assert abs_.signature(held, 0) == "countertop 1|h:other|v:none|m0|d0"
    # the target held and clean, not at the goal receptacle: operation_done -> m3
    clean = _state(holding=["apple 2"], visible_objects=[], object_states={"apple 2": ["clean"]})
    assert abs_.signature(clean, 3) == "countertop 1|h:apple|v:none|m3|d3"
    # the same at the fridge: at_goal_with_target -> m4; won -> m5
    assert "|m4|" in abs_.signature({**clean, "location": "fridge 1"}, 3)
    assert "|m5|" in abs_.signature({**clean, "location": "fridge 1", "won": True}, 3)
    # cleaned and put down out of view: operation_done still holds
    dropped = _state(visible_objects=[], object_states={"apple 2": ["clean"]})
    assert abs_.signature(dropped, 9) == "countertop 1|h:none|v:none|m3|d9"


def test_default_signatures_unchanged_on_real_walkthroughs():
    """The default env's signatures on eight mini walkthroughs, digest fixed before the
    option existed."""
    env = gym.make(ENV_ID, preset="mini", split="train")
    sigs = []
    for ti in range(0, 48, 6):
        _, info = env.reset(options={"task_index": ti})
        sigs.append(info["signature"])
        for action in env.unwrapped.expert_actions(ti):
            *_, info = env.step(action)
            sigs.append(info["signature"])
    digest = hashlib.sha256("\n".join(sigs).encode()).hexdigest()
    assert len(sigs) == 56
    assert digest == "39e08f6dd21d2024ed5d41b5af1d2b34e831b1169d2da1dbaae7a2433a69a0c9"


def test_milestones_done_equals_the_fired_count_on_every_mini_walkthrough():
    env = gym.make(ENV_ID, preset="mini", split="train", abstraction="alfworld-progress")
    steps = 0
    for ti in range(len(env.unwrapped.task_ids)):
        _, info = env.reset(options={"task_index": ti})
        assert _parts(info["signature"])["m"] == "0"
        for action in env.unwrapped.expert_actions(ti):
            *_, info = env.step(action)
            assert int(_parts(info["signature"])["m"]) == sum(info["progress"].values())
            steps += 1
        assert info["won"] and _parts(info["signature"])["m"] == "5"
    assert steps > 200


@pytest.mark.parametrize("seed", [0, 1])
def test_random_episodes_change_only_the_signature(seed):
    """Seeded random play on real mini games: the same observations and rewards as the
    default env; location and depth as the paper's signature; what is held as the state says;
    never more milestones than have fired, and fewer once a progress state is left behind."""
    default = gym.make(ENV_ID, preset="mini", split="train")
    progress = gym.make(ENV_ID, preset="mini", split="train", abstraction="alfworld-progress")
    rng = random.Random(seed)
    behind = 0
    for ti in rng.sample(range(48), 6):
        obs_a, info_a = default.reset(options={"task_index": ti})
        obs_b, info_b = progress.reset(options={"task_index": ti})
        for _ in range(30):
            assert obs_a == obs_b
            paper, ours = info_a["signature"].split("|"), _parts(info_b["signature"])
            assert (ours["location"], ours["d"]) == (paper[0], paper[2])
            held = info_b["state"]["holding"]
            assert (ours["h"] == "none") == (not held)
            fired = sum(info_b["progress"].values())
            assert int(ours["m"]) <= fired
            behind += int(ours["m"]) < fired
            action = rng.choice(info_a["admissible_actions"])
            obs_a, r_a, term_a, _, info_a = default.step(action)
            obs_b, r_b, term_b, _, info_b = progress.step(action)
            assert (r_a, term_a) == (r_b, term_b)
            if term_a:
                break
    assert behind > 0  # a target seen and left behind is no longer counted
