"""``mvpo/WebShop-v0``: protocol, observations, info contract, expert and random play.

docs/environments.md, "Common contract" and "mvpo/WebShop-v0". Runs on the bundled catalog.
"""

from __future__ import annotations

import re
import statistics

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import mvpo_envs  # noqa: F401
from mvpo_envs.base import INFO_KEYS
from mvpo_envs.webshop.env import SEARCH_TEMPLATE, WebShopEnv
from mvpo_envs.webshop.expert import expert_episode, random_episode

#: the common keys and the one WebShop adds
WEBSHOP_KEYS = {*INFO_KEYS, "task_score"}


@pytest.fixture(scope="module")
def env():
    return WebShopEnv(split="test")


def _to_results(env, seed=0):
    obs, info = env.reset(seed=seed)
    return env.step(f"search[{info['task']}]")


def test_gym_make_defaults_offline():
    env = gym.make("mvpo/WebShop-v0")
    obs, info = env.reset(seed=0)
    assert WEBSHOP_KEYS <= set(info)
    assert env.spec.max_episode_steps == 15
    assert env.unwrapped.split == "train" and len(env.unwrapped.task_ids) > 1000
    env.close()


def test_check_env(env):
    check_env(env)


def test_search_page(env):
    obs, info = env.reset(seed=1)
    goal = info["task"]
    assert obs == f"WebShop [SEP] Instruction: [SEP] {goal} [SEP] Search"
    assert info["admissible_actions"] == [SEARCH_TEMPLATE]
    assert env.get_available_actions() == {"has_search_bar": True, "clickables": ["search"]}
    assert info["state"]["page"] == "search" and info["task_score"] == 0.0
    assert info["milestones"] == [] and info["signature"] == "search|none|d0"


def test_results_pages(env):
    obs, reward, terminated, truncated, info = _to_results(env)
    goal = info["task"]
    head = f"Instruction: [SEP] {goal} [SEP] Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] "
    assert obs.startswith(head)
    asins = info["state"]["visible_asins"]
    assert len(asins) == 10
    assert info["admissible_actions"] == ["click[back to search]", "click[next >]"] + [
        f"click[{a.lower()}]" for a in asins
    ]
    product = env.engine.products[asins[0]]
    assert f" [SEP] {asins[0]} [SEP] {product['Title']} [SEP] {product['Price']} [SEP] " in obs
    obs2, *_, info2 = env.step("click[next >]")
    assert "[SEP] Page 2 (Total results: 50) [SEP] < Prev [SEP] Next > [SEP]" in obs2
    assert info2["admissible_actions"][:3] == [
        "click[back to search]",
        "click[< prev]",
        "click[next >]",
    ]
    assert not set(info2["state"]["visible_asins"]) & set(asins)
    obs3, *_ = env.step("click[< prev]")
    assert obs3 == obs
    for _ in range(5):  # past the 50 results: WebShop still offers Next > and shows no product
        obs4, *_, info4 = env.step("click[next >]")
    assert obs4.endswith("Page 6 (Total results: 50) [SEP] < Prev [SEP] Next >")
    assert info4["state"]["visible_asins"] == []


def test_item_page_options_and_sub_pages(env):
    for seed in range(50):  # a goal whose product has two options
        _, info = env.reset(seed=seed)
        if len(info["state"]["goal"]["options"]) == 2:
            break
    _, info = env.reset(seed=seed)
    asin = info["state"]["goal"]["asin"]
    _, *_, info = env.step(f"search[{env.engine.products[asin]['Title']}]")
    assert asin in info["state"]["visible_asins"]
    results_obs = info["anchor"]
    obs, *_, info = env.step(f"click[{asin.lower()}]")
    p = env.engine.products[asin]
    parts = ["Back to Search", "< Prev"]
    for name, values in p["options"].items():
        parts += [name, *values]
    parts += [
        p["Title"],
        f"Price: {p['Price']}",
        "Rating: N.A.",
        "Description",
        "Features",
        "Reviews",
        "Buy Now",
    ]
    assert obs == f"Instruction: [SEP] {info['task']} [SEP] " + " [SEP] ".join(parts)
    buttons = [
        "click[back to search]",
        "click[< prev]",
        "click[description]",
        "click[features]",
        "click[reviews]",
        "click[buy now]",
    ]
    assert info["admissible_actions"][:6] == buttons
    (name, values), *_ = p["options"].items()
    _, *_, info = env.step(f"click[{values[0]}]")
    _, *_, info = env.step(f"click[{values[1]}]")  # a second value of the same option replaces it
    assert info["state"]["selected_options"][name] == values[1]
    obs, *_, info = env.step("click[description]")
    assert (
        obs
        == f"Instruction: [SEP] {info['task']} [SEP] Back to Search [SEP] < Prev [SEP] {p['Description']}"
    )
    assert info["admissible_actions"] == ["click[back to search]", "click[< prev]"]
    obs, *_ = env.step("click[features]")  # not clickable on a sub-page: no-op
    assert "Features" not in obs.split(" [SEP] ")[4:]
    env.step("click[< prev]")
    obs, *_ = env.step("click[features]")
    assert obs.endswith(" [SEP] ".join(b.strip() for b in p["BulletPoints"]))
    env.step("click[< prev]")
    _, *_, info = env.step("click[< prev]")  # item -> the results page it came from
    assert info["anchor"] == results_obs and info["state"]["selected_options"] == {}
    obs, *_, info = env.step("click[back to search]")
    assert obs.startswith("WebShop [SEP] Instruction:") and info["admissible_actions"] == [
        SEARCH_TEMPLATE
    ]


def test_reviews_page(env):
    product = next(p for p in env.engine.products.values() if p["Reviews"])
    _, info = env.reset(seed=0)
    env.step(f"search[{product['Title']}]")
    obs, *_, info = env.step(f"click[{product['asin'].lower()}]")
    assert f"Rating: {product['Rating']}" in obs
    obs, *_ = env.step("click[reviews]")
    r = product["Reviews"][0]
    assert f' [SEP] "{r["title"]}" [SEP] {r["score"]} [SEP] {r["body"]}' in obs


@pytest.mark.parametrize(
    "action",
    [
        "click[foo]",
        "hello",
        "click[search]",
        "click[buy now]",
        "search[]",
        "",
        "Search[shoes]",  # WebShop's action name is case-sensitive
        " search[shoes]",  # ... and not stripped
        "CLICK[next >]",
        "click[ next > ]",  # the argument is lower-cased, not stripped
        "search[shoes",
    ],
)
def test_invalid_actions_are_no_ops(env, action):
    obs, _, _, _, info = _to_results(env, seed=2)
    if action == "click[search]":
        obs, info = env.reset(seed=2)
    obs2, reward, terminated, truncated, info2 = env.step(action)
    assert obs2 == obs and reward == 0.0 and not terminated and not truncated
    assert info2["invalid_action"] is True and info2["state"]["page"] == info["state"]["page"]
    assert info2["admissible_actions"] == info["admissible_actions"]


def test_non_string_action_raises(env):
    env.reset(seed=0)
    with pytest.raises(TypeError, match="text action"):
        env.step(3)


def test_original_lower_cases_the_argument_only(env):
    _, info = env.reset(seed=0)
    _, *_, info = env.step(f"search[{info['task'].upper()}]")
    assert info["invalid_action"] is False and info["state"]["query"] == info["task"].lower()
    _, *_, info = env.step("click[Next >]")
    assert info["invalid_action"] is False and info["state"]["results_page"] == 2


def test_strict_protocol_is_case_and_space_insensitive():
    env = WebShopEnv(split="test", protocol="strict")
    _, info = env.reset(seed=0)
    _, *_, info = env.step(f"  Search[{info['task']}]  ")
    assert info["invalid_action"] is False
    _, *_, info = env.step("CLICK[ Next > ]")
    assert info["invalid_action"] is False and info["state"]["results_page"] == 2


def test_buy_ends_the_episode_with_the_score(env):
    score, actions = expert_episode(env, 0)
    assert score == 1.0
    obs, info = env.reset(options={"task_index": 0})
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
    assert terminated and reward == 1.0 and info["won"] and info["task_score"] == 1.0
    assert info["reward_info"]["r_type"] == 1.0 and info["admissible_actions"] == []
    assert obs.startswith("Thank you for shopping with us! [SEP]") and obs.endswith(
        "[SEP] 1.0 [SEP] Reward Details [SEP] None"
    )
    assert info["state"]["purchased"] and info["milestones"] == ["purchased"]
    obs2, reward2, terminated2, _, info2 = env.step("click[buy now]")  # after the end: no-op
    assert reward2 == 0.0 and not terminated2 and info2["invalid_action"]


def test_wrong_product_purchase_is_not_won(env):
    _, info = env.reset(seed=5)
    _, *_, info = env.step("search[coffee mug dishwasher safe]")
    assert info["state"]["goal"]["query"] != "coffee mug"
    asin = info["state"]["visible_asins"][0]
    env.step(f"click[{asin.lower()}]")
    _, reward, terminated, _, info = env.step("click[buy now]")
    assert terminated and reward == info["task_score"] < 1.0 and not info["won"]
    assert info["reward_info"]["query_match"] is False


def test_time_limit_truncates_at_15():
    env = gym.make("mvpo/WebShop-v0", split="test")
    env.reset(seed=0)
    for _i in range(15):
        *_, terminated, truncated, _ = env.step("click[nothing]")
    assert truncated and not terminated


def test_same_seed_same_goal(env):
    _, a = env.reset(seed=123)
    other = WebShopEnv(split="test")
    _, b = other.reset(seed=123)
    assert a["task"] == b["task"] and a["task_id"] == b["task_id"]
    assert re.fullmatch(r"synthetic-test-\d{5}-B0[0-9A-Z]{8}", a["task_id"])


@pytest.mark.parametrize("goal_source", ["synthetic", "human"])
def test_expert_solves_every_bundled_test_goal(goal_source):
    env = WebShopEnv(split="test", goal_source=goal_source)
    scores = [expert_episode(env, i)[0] for i in range(len(env.task_ids))]
    assert len(scores) == 500
    assert all(s == 1.0 for s in scores), [i for i, s in enumerate(scores) if s != 1.0][:10]


def test_random_play_scores_low(env):
    scores = [random_episode(env, seed) for seed in range(200)]
    mean = statistics.mean(scores)
    print(f"\nrandom play: mean score {mean:.3f}, {sum(s == 1.0 for s in scores)}/200 won")
    assert mean < 0.4


def test_grouped_vector_env():
    from mvpo_envs.vector import GroupedVectorEnv, unbatch_infos

    venv = GroupedVectorEnv("mvpo/WebShop-v0", num_groups=2, group_size=2, split="test")
    obs, infos = venv.reset_groups([3, 7])
    per_env = unbatch_infos(infos, 4)
    assert (
        per_env[0]["task_id"]
        == per_env[1]["task_id"]
        != per_env[2]["task_id"]
        == per_env[3]["task_id"]
    )
    obs, rewards, terminated, truncated, infos = venv.step(
        [f"search[{i['task']}]" for i in per_env]
    )
    assert all(o.startswith("Instruction:") for o in obs)
    venv.close()
