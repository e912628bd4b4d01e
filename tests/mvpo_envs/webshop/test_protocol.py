"""WebShop's action protocol by default, the stricter form as an opt-in (docs/fidelity.md)."""

from __future__ import annotations

import pytest

from mvpo_envs.webshop.env import WebShopEnv, parse_action_original
from mvpo_envs.webshop.expert import expert_episode


@pytest.fixture(scope="module")
def env():
    return WebShopEnv(split="test")


@pytest.fixture(scope="module")
def strict():
    return WebShopEnv(split="test", protocol="strict")


def _open_goal_item(env, seed=0):
    _, info = env.reset(seed=seed)
    asin = info["state"]["goal"]["asin"]
    _, *_, info = env.step(f"search[{info['task']}]")
    if asin not in info["state"]["visible_asins"]:
        pytest.skip("goal product not on the first results page")
    return env.step(f"click[{asin.lower()}]")


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("click[Buy Now]", ("click", "buy now")),
        ("Search[x]", ("Search", "x")),
        ("search[]", ("search[]", None)),
        ("search[a] trailing", ("search", "a")),  # re.match: no end anchor
        ("search[a\nb]", ("search[a\nb]", None)),  # '.' stops at a newline
    ],
)
def test_parse_action_original(action, expected):
    assert parse_action_original(action) == expected


def test_search_works_on_an_item_page(env, strict):
    *_, info = _open_goal_item(env)
    assert info["state"]["page"] == "item"
    _, *_, info = env.step("search[red shoes]")
    assert info["invalid_action"] is False and info["state"]["page"] == "results"
    assert info["state"]["query"] == "red shoes"
    *_, info = _open_goal_item(strict)
    _, *_, info = strict.step("search[red shoes]")
    assert info["invalid_action"] is True and info["state"]["page"] == "item"


def test_search_after_buying(env, strict):
    score, actions = expert_episode(env, 3)
    for e in (env, strict):
        e.reset(options={"task_index": 3})
        for a in actions:
            _, reward, terminated, _, info = e.step(a)
        assert terminated and reward == score
    _, reward, terminated, _, info = env.step("search[anything]")
    assert not info["invalid_action"] and info["state"]["page"] == "results"
    assert reward == 0.0 and not terminated
    _, reward, terminated, _, info = strict.step("search[anything]")
    assert info["invalid_action"] and info["state"]["page"] == "done"


def test_special_queries(env):
    products = list(env.engine.products.values())
    p = products[7]
    env.reset(seed=0)
    _, *_, info = env.step(f"search[<q> {p['query']}]")
    expected = [x["asin"] for x in products if x["query"] == p["query"]]
    assert info["state"]["total_results"] == len(expected) > 0
    assert info["state"]["visible_asins"] == expected[:10]
    _, *_, info = env.step(f"search[<c> {p['category']} ignored words]")
    expected = [x["asin"] for x in products if x["category"] == p["category"]]
    assert info["state"]["total_results"] == len(expected) > 50  # not capped at 50
    attribute = p["Attributes"][0]
    _, *_, info = env.step(f"search[<a> {attribute}]")
    expected = [x["asin"] for x in products if attribute in x["Attributes"]]
    assert info["state"]["visible_asins"] == expected[:10]
    obs, *_, info = env.step("search[<c>]")  # WebShop raises IndexError here; we show nothing
    assert info["state"]["total_results"] == 0 and "Total results: 0" in obs


def test_random_query_is_seeded(env):
    env.reset(seed=4)
    _, *_, a = env.step("search[<r>]")
    _, *_, b = env.step("search[<r>]")
    env.reset(seed=4)
    _, *_, c = env.step("search[<r>]")
    assert a["state"]["total_results"] == 50
    assert a["state"]["visible_asins"] == c["state"]["visible_asins"]
    assert a["state"]["visible_asins"] != b["state"]["visible_asins"]


def test_strict_protocol_has_no_special_queries(strict):
    strict.reset(seed=0)
    _, *_, info = strict.step("search[<r>]")
    # a plain keyword search for the text "<r>", not 50 random products
    assert info["state"]["visible_asins"] == strict.engine.top_n("<r>")[:10]
    assert info["state"]["total_results"] == len(strict.engine.top_n("<r>"))


def test_bad_keywords_name_the_choices():
    with pytest.raises(ValueError, match="protocol must be one of"):
        WebShopEnv(split="test", protocol="loose")
    with pytest.raises(ValueError, match="reward must be one of"):
        WebShopEnv(split="test", reward="lenient")


def test_empty_split_says_why_and_what_to_pass():
    with pytest.raises(ValueError, match="no tasks to play") as exc_info:
        WebShopEnv(split="train", goal_source="human", num_test_goals=10**6)
    message = str(exc_info.value)
    assert "split='train'" in message and "'test'" in message and "'all'" in message
    assert "num_test_goals=1000000" in message and "human" in message


def test_real_sample_human_goals_default_split(realdata):
    folder = realdata / "webshop"
    data_dir = {"data_dir": folder, "goal_source": "human"}
    env = WebShopEnv(split="test", **data_dir)
    if len(env.data.goals) > 500:
        pytest.skip("the real sample has more human goals than the test split")
    with pytest.raises(ValueError, match="no tasks to play.*pass split='test'"):
        WebShopEnv(**data_dir)
    assert len(WebShopEnv(split="all", **data_dir).task_ids) == len(env.data.goals)
