"""``search_query="instruction"`` and the ``expert_actions`` hook of ``mvpo/WebShop-v0``.

docs/webshop.md, "Score mode" and "Expert plans". Bundled catalog, plus the real 1,000-product
sample where the expert does not always win *(real)*.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.webshop.env import SEARCH_TEMPLATE, WebShopEnv
from mvpo_envs.webshop.expert import expert_episode


@pytest.fixture(scope="module")
def filled():
    return WebShopEnv(split="test", search_query="instruction")


def test_default_lists_the_template_and_instruction_fills_it(filled):
    plain = WebShopEnv(split="test")
    _, info = plain.reset(seed=4)
    assert plain.search_query == "template" and info["admissible_actions"] == [SEARCH_TEMPLATE]
    _, info = filled.reset(seed=4)
    assert info["admissible_actions"] == [f"search[{info['task']}]"]
    # the same actions give the same pages, rewards and labels: only the listed search differs
    for env in (plain, filled):
        env.reset(seed=4)
    for action in ["click[search]", f"search[{info['task']}]", "click[next >]",
                   "click[back to search]", "search[shampoo]"]:  # fmt: skip
        a, b = plain.step(action), filled.step(action)
        assert a[:4] == b[:4], action
        assert a[4]["signature"] == b[4]["signature"] and a[4]["state"] == b[4]["state"]
        assert a[4]["invalid_action"] == b[4]["invalid_action"]
        if a[4]["state"]["page"] == "search":  # back on the search page: filled again
            assert b[4]["admissible_actions"] == [f"search[{info['task']}]"]
        else:
            assert a[4]["admissible_actions"] == b[4]["admissible_actions"]
    assert b[4]["state"]["query"] == "shampoo"  # any other search is still accepted


def test_the_listed_search_is_the_instruction_query(filled):
    """It is the query WebShop's random player sends: the same results page."""
    _, info = filled.reset(seed=11)
    obs, *_, after = filled.step(info["admissible_actions"][0])
    assert not after["invalid_action"] and after["state"]["page"] == "results"
    assert after["state"]["query"] == info["task"].lower()
    assert len(after["state"]["visible_asins"]) == 10


def test_strict_protocol_accepts_the_listed_search():
    env = WebShopEnv(split="test", search_query="instruction", protocol="strict")
    _, info = env.reset(seed=2)
    *_, info = env.step(info["admissible_actions"][0])
    assert not info["invalid_action"] and info["state"]["page"] == "results"


def test_bad_search_query_is_one_clear_error():
    with pytest.raises(ValueError, match=r"search_query must be one of \('template', 'instr"):
        WebShopEnv(search_query="Instruction")
    with pytest.raises(ValueError, match="search_query must be one of"):
        gym.make("mvpo/WebShop-v0", search_query="")


@pytest.mark.parametrize("goal_source", ["synthetic", "human"])
def test_expert_plans_replayed_on_a_fresh_reset_win(goal_source):
    env = gym.make("mvpo/WebShop-v0", split="test", goal_source=goal_source,
                   search_query="instruction")  # fmt: skip
    for index in (0, 7, 123, 499):
        plan = env.unwrapped.expert_actions(index)
        assert plan and plan[0].startswith("search[") and plan[-1] == "click[buy now]"
        _, info = env.reset(options={"task_index": index})
        for t, action in enumerate(plan):
            # every step is offered: a policy choosing among the admissible actions can clone it
            assert action in info["admissible_actions"], (index, t, action)
            _, reward, terminated, truncated, info = env.step(action)
            assert terminated == (t == len(plan) - 1) and not truncated
        assert info["won"] and reward == 1.0
    # template mode: the same plan (the hook follows the expert, not the listed template)
    plain = WebShopEnv(split="test", goal_source=goal_source)
    assert plain.expert_actions(7) == env.unwrapped.expert_actions(7)


def test_expert_actions_leave_the_current_episode_alone():
    """A twin env without the call: the same observations, infos and RNG afterwards."""
    a, b = (gym.make("mvpo/WebShop-v0", split="test") for _ in range(2))
    for env in (a, b):
        _, info = env.reset(seed=5)
        env.step(f"search[{info['task']}]")
    assert a.unwrapped.expert_actions(42) is not None
    assert a.unwrapped.expert_actions(5) is not None  # the very task being played
    for action in ["click[next >]", "click[< prev]", "click[back to search]"]:
        ra, rb = a.step(action), b.step(action)
        assert ra[:4] == rb[:4] and ra[4] == rb[4], action
    assert a.unwrapped.np_random.bit_generator.state == b.unwrapped.np_random.bit_generator.state
    # the TimeLimit counts only the episode's own steps
    for _ in range(11):
        *_, truncated, _ = a.step("click[next >]")
    assert truncated  # 4 + 11 = 15 steps, the first cut
    with pytest.raises(IndexError, match="not in"):
        a.unwrapped.expert_actions(len(a.unwrapped.task_ids))


def test_expert_actions_none_where_the_expert_does_not_win(realdata):
    """Real sample, synthetic goals, ``reward="original"``: WebShop's option quirk scores some
    exact purchases below 1.0 (docs/webshop.md, Reward); there the hook gives ``None``."""
    folder = realdata / "webshop"
    if not (folder / "items_processed_1000.json").exists():
        pytest.skip("no real WebShop products")
    env = WebShopEnv(data_dir=str(folder), split="test")
    probe = WebShopEnv(data_dir=str(folder), split="test")
    scores = {i: expert_episode(probe, i)[0] for i in range(60)}
    lost = [i for i, s in scores.items() if s < 1.0]
    won = [i for i, s in scores.items() if s == 1.0]
    assert lost and won, scores
    env.reset(seed=0)
    before = env.step(f"search[{env.task_text()}]")
    for i in lost:
        assert env.expert_actions(i) is None
    plan = env.expert_actions(won[0])
    assert plan is not None
    assert env.step("click[next >]")[4]["state"]["results_page"] == 2  # still its episode
    assert before[4]["state"]["results_page"] == 1
    _, info = env.reset(options={"task_index": won[0]})
    for action in plan:
        *_, info = env.step(action)
    assert info["won"]
    # reward="fixed" matches option values as strings: the same expert wins there
    fixed = WebShopEnv(data_dir=str(folder), split="test", reward="fixed")
    assert any(fixed.expert_actions(i) is not None for i in lost)


def test_random_player_in_instruction_mode_matches_the_template_mode():
    """WebShop's random player fills the template with the instruction: choosing uniformly
    among the filled list is the same play, seed for seed."""
    plain = WebShopEnv(split="test")
    filled = WebShopEnv(split="test", search_query="instruction")
    for seed in range(6):
        ra, rb = np.random.default_rng(seed), np.random.default_rng(seed)
        _, ia = plain.reset(seed=seed)
        _, ib = filled.reset(seed=seed)
        for _ in range(8):
            aa, ab = ia["admissible_actions"], ib["admissible_actions"]
            ca, cb = aa[int(ra.integers(len(aa)))], ab[int(rb.integers(len(ab)))]
            if ca == SEARCH_TEMPLATE:
                ca = f"search[{ia['task']}]"
            assert ca == cb
            oa, _, ta, _, ia = plain.step(ca)
            ob, _, tb, _, ib = filled.step(cb)
            assert oa == ob
            if ta:
                break
