"""WebShop's paper abstraction, both variants (docs/estimators.md §3.1, docs/environments.md).

Runs on the bundled catalog: scripted expert episodes must fire every milestone in order
(exact variant always; the string-rule variant nearly always), random play must fire the
late milestones rarely, and the measured agreement between the variants is printed.
"""

from __future__ import annotations

import random
import re

import pytest

from mvpo_abstraction.base import AbstractionTracker
from mvpo_abstraction.registry import available_abstractions, make_abstraction
from mvpo_abstraction.webshop import (
    MILESTONES,
    WebShopStateAbstraction,
    WebShopTextAbstraction,
    focus,
    parse_instruction,
)
from mvpo_envs.webshop.env import WebShopEnv
from mvpo_envs.webshop.expert import expert_episode

SIGNATURE = re.compile(r"^(search|results|item|description|features|reviews|done)\|[^|]+\|d\d+$")


@pytest.fixture(scope="module")
def env():
    return WebShopEnv(split="test")


def _play(env, actions, index=None, seed=None):
    """Replay ``actions``; return per-step tracker outputs of both variants."""
    trackers = {
        "webshop": AbstractionTracker(make_abstraction("webshop")),
        "webshop-text": AbstractionTracker(make_abstraction("webshop-text")),
    }
    options = {"task_index": index} if index is not None else None
    _, info = env.reset(seed=seed, options=options)
    out = {name: [t.reset(info["state"])] for name, t in trackers.items()}
    for action in actions:
        _, _, terminated, _, info = env.step(action)
        for name, t in trackers.items():
            out[name].append(t.step(info["state"], action))
        if terminated:
            break
    return out


def test_registered():
    assert {"webshop", "webshop-text"} <= set(available_abstractions())
    assert isinstance(make_abstraction("webshop"), WebShopStateAbstraction)
    assert make_abstraction("webshop-text").milestone_names == list(MILESTONES)


def test_env_uses_the_exact_variant_by_default_and_swaps(env):
    assert env.abstraction.name == "webshop"
    other = WebShopEnv(split="test", abstraction="webshop-text")
    _, info = other.reset(seed=0)
    assert info["signature"] == "search|none|d0" and set(info["progress"]) == set(MILESTONES)


def test_expert_fires_every_milestone_in_order(env):
    _, actions = expert_episode(env, 0)
    out = _play(env, actions, index=0)
    fired = [m for step in out["webshop"] for m in step["milestones"]]
    assert fired == list(MILESTONES)
    assert all(SIGNATURE.match(step["signature"]) for step in out["webshop"] + out["webshop-text"])
    assert out["webshop"][-1]["signature"].startswith("done|")
    depths = [int(step["signature"].rsplit("|d", 1)[1]) for step in out["webshop"]]
    assert depths == [2 * (t // 2) for t in range(len(depths))]  # two-step depth bins


def test_exact_signature_focus(env):
    _, actions = expert_episode(env, 3)
    out = _play(env, actions, index=3)
    _, info = env.reset(options={"task_index": 3})
    goal = info["state"]["goal"]
    terms = set(goal["attributes"]) | set(goal["options"])
    item_sig = next(
        step["signature"] for step in out["webshop"] if step["signature"].startswith("item|")
    )
    shown = item_sig.split("|")[1]
    assert shown == "none" or set(shown.split("+")) <= terms


@pytest.mark.parametrize("goal_source", ["synthetic", "human"])
def test_variants_agree_on_expert_and_differ_on_random_play(goal_source):
    env = WebShopEnv(split="test", goal_source=goal_source)
    n = 100
    agree, full = 0, {"webshop": 0, "webshop-text": 0}
    for i in range(n):
        _, actions = expert_episode(env, i)
        out = _play(env, actions, index=i)
        final = {name: steps[-1]["progress"] for name, steps in out.items()}
        agree += final["webshop"] == final["webshop-text"]
        for name in full:
            full[name] += all(final[name].values())
    late = {"webshop": 0, "webshop-text": 0}
    for seed in range(n):
        rng = random.Random(seed)
        _, info = env.reset(seed=seed)
        actions = []
        for _ in range(15):  # random clicks after searching the instruction
            choices = [a for a in info["admissible_actions"] if a != "click[back to search]"]
            a = (
                f"search[{info['task']}]"
                if choices[0].startswith("search[")
                else rng.choice(choices)
            )
            actions.append(a)
            _, _, terminated, _, info = env.step(a)
            if terminated:
                break
        out = _play(env, actions, seed=seed)
        for name in late:
            late[name] += out[name][-1]["progress"]["options_selected"]
    print(
        f"\n{goal_source}: expert full-progress exact {full['webshop']}/{n}, text "
        f"{full['webshop-text']}/{n}; variants agree on {agree}/{n} expert episodes; random play "
        f"options_selected exact {late['webshop']}/{n}, text {late['webshop-text']}/{n}"
    )
    assert full["webshop"] == n
    assert full["webshop-text"] >= 0.9 * n and agree >= 0.85 * n
    assert late["webshop"] <= 0.3 * n


def test_wrong_kind_of_product_is_not_matching(env):
    _, info = env.reset(seed=5)
    assert info["state"]["goal"]["query"] != "coffee mug"
    actions = ["search[coffee mug dishwasher safe]", None]
    env.reset(seed=5)
    _, *_, info = env.step(actions[0])
    actions[1] = f"click[{info['state']['visible_asins'][0].lower()}]"
    out = _play(env, actions, seed=5)
    assert out["webshop"][-1]["progress"] == {
        "search_issued": True,
        "relevant_listed": False,
        "matching_opened": False,
        "options_selected": False,
        "purchased": False,
    }


def test_invalid_action_changes_nothing(env):
    out = _play(env, ["click[buy now]", "click[nope]", "search[x]"], seed=0)
    assert [s["milestones"] for s in out["webshop"]] == [[], [], [], ["search_issued"]]
    assert out["webshop"][2]["progress"] == out["webshop"][0]["progress"]
    pages = [s["signature"].split("|")[0] for s in out["webshop-text"]]
    assert pages == ["search", "search", "search", "results"]


def test_parse_instruction():
    text = (
        "Find me sulfate free, argan oil shampoo with size: 8 fl oz, and scent: lavender, "
        "and price lower than 30.00 dollars"
    )
    parsed = parse_instruction(text)
    assert parsed["price_cap"] == 30.0 and parsed["options"] == ["8 fl oz", "lavender"]
    assert parsed["keywords"] == ["argan", "free", "oil", "shampoo", "sulfate"]
    human = parse_instruction("i need a long clip-in hair extension which is natural looking")
    assert human["options"] == [] and human["price_cap"] is None
    assert "hair" in human["keywords"] and "need" not in human["keywords"]


def test_focus_terms():
    assert (
        focus(["black", "sulfate free", "zzz"], "Sulfate Free Shampoo [SEP] black [SEP] white")
        == "black+sulfate free"
    )
    assert focus(["a b"], "nothing here") == "none"


def test_text_variant_reads_only_strings(env):
    """The text variant's view ignores engine facts: blank them and nothing changes."""
    _, actions = expert_episode(env, 1)
    abstraction = WebShopTextAbstraction()
    tracker, blind = AbstractionTracker(abstraction), AbstractionTracker(abstraction)
    _, info = env.reset(options={"task_index": 1})

    def strip(state):
        keep = ("observation", "instruction", "text_view")
        return {k: v for k, v in state.items() if k in keep}

    assert tracker.reset(info["state"]) == blind.reset(strip(info["state"]))
    for a in actions:
        _, _, _, _, info = env.step(a)
        assert tracker.step(info["state"], a) == blind.step(strip(info["state"]), a)
