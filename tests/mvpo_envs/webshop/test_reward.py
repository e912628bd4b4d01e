"""WebShop's reward (docs/environments.md, "mvpo/WebShop-v0", Reward) with hand-checked numbers.

The noun extractor is fixed to the POS-free fallback so that every number here holds with or
without spaCy; ``webshop/test_nouns.py`` compares the two.
"""

from __future__ import annotations

import json

import pytest

from mvpo_envs.webshop.nouns import heuristic_nouns
from mvpo_envs.webshop.reward import (
    attribute_matches,
    get_reward,
    normalize_color,
    noun_type_reward,
    option_matches,
    reward_without_options,
    token_set_ratio,
)


def _product(**kw):
    base = {
        "asin": "B000000001",
        "name": "Avalon Sulfate Free Shampoo Bottle",
        "Title": "Avalon Sulfate Free Shampoo Bottle",
        "query": "shampoo",
        "product_category": "Beauty › Hair Care › Shampoos",
        "Attributes": ["sulfate free"],
        "BulletPoints": ["GENTLE: for dry hair"],
        "Description": "Made with argan oil.",
    }
    return {**base, **kw}


def _goal(**kw):
    base = {
        "asin": "B000000001",
        "name": "Avalon Sulfate Free Shampoo Bottle",
        "query": "shampoo",
        "product_category": "Beauty › Hair Care › Shampoos",
        "attributes": ["sulfate free", "argan oil"],
        "goal_options": {"size": "8 fl oz", "scent": "lavender"},
        "price_upper": 30.0,
    }
    return {**base, **kw}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("black", "jet black", 100),  # a token subset scores 100
        ("pack of 2", "pack of 4", 89),  # "of pack 2" vs "of pack 4": 1 - 2/18 = 88.9 -> 89
        ("12 oz", "16 oz", 80),
        ("Sulfate-Free", "sulfate free", 100),  # punctuation and case are processed away
        ("", "anything", 0),
    ],
)
def test_token_set_ratio_matches_thefuzz(a, b, expected):
    assert token_set_ratio(a, b) == expected


def test_normalize_color_takes_the_first_listed_colour():
    assert normalize_color("navy blue") == "blue"  # 'blue' precedes 'navy' in WebShop's list
    assert normalize_color("acne face & body wash") == "ash"  # w-ASH: the reference's quirk
    assert normalize_color("8 fl oz") == "8 fl oz"


def test_full_match_scores_one():
    r = get_reward(
        _product(), _goal(), 25.0, {"size": "8 fl oz", "scent": "lavender"}, heuristic_nouns
    )
    assert r.score == 1.0 and r.r_type == 1.0 and r.r_price is True


def test_partial_match_hand_checked():
    # attributes: 'sulfate free' (fuzzy on Attributes) + 'argan oil' (substring of Description) = 2
    # options: size matches, scent 'coconut' vs 'lavender' does not = 1; price 25 <= 30 = 1
    # (2 + 1 + 1) / (2 + 2 + 1) = 0.8, r_type 1.0
    r = get_reward(
        _product(), _goal(), 25.0, {"size": "8 fl oz", "scent": "coconut"}, heuristic_nouns
    )
    assert r.num_attr_matches == 2 and r.num_option_matches == 1
    assert r.score == pytest.approx(0.8)


def test_price_over_the_cap():
    r = get_reward(
        _product(), _goal(), 31.0, {"size": "8 fl oz", "scent": "lavender"}, heuristic_nouns
    )
    assert r.r_price is False and r.score == pytest.approx(4 / 5)


def test_substring_checks_title_bullets_description():
    p = _product(Attributes=["DUMMY_ATTR"], Description="", BulletPoints=["for DRY HAIR"])
    assert attribute_matches(p, ["dry hair", "argan oil", "sulfate free"]) == 2  # bullets, title


def test_option_matching_is_per_goal_option():
    assert option_matches(["large", "black"], ["x-large", "jet black"]) == 2  # subsets score 100
    assert option_matches(["navy blue"], ["blue"]) == 1  # both normalise to 'blue'
    assert option_matches([], ["red"]) == 0


NAMES = "Red Shampoo Bottle Set Kit Travel Pack Case Box Brush"  # 10 heuristic nouns


@pytest.mark.parametrize(
    ("purchased_name", "same_query", "r_type"),
    [
        ("Shampoo Bottle Set", False, 1.0),  # title_score 0.3 > 0.2
        ("Shampoo Bottle", False, 0.5),  # 0.2: not > 0.2, no query/category match
        ("Shampoo Bottle", True, 1.0),  # same, but the query matches
        ("Shampoo", True, 1.0),  # 0.1: not < 0.1
        ("Chair", True, 0.0),  # no shared noun
    ],
)
def test_type_reward_levels(purchased_name, same_query, r_type):
    goal = _goal(name=NAMES, product_category="A › B")
    product = _product(
        name=purchased_name, query="shampoo" if same_query else "chairs", product_category="X › Y"
    )
    assert noun_type_reward(product, goal, heuristic_nouns)["r_type"] == r_type


def test_type_reward_point_one_and_no_goal_nouns():
    goal = _goal(name=NAMES + " Comb", product_category="A › B")  # 11 nouns
    assert noun_type_reward(_product(name="Comb"), goal, heuristic_nouns)["r_type"] == 0.1  # 1/11
    goal = _goal(name="For The 2", query="other", product_category="A › B")  # no noun: 0.2
    info = noun_type_reward(_product(name="Anything"), goal, heuristic_nouns)
    assert info["title_score"] == 0.2 and info["r_type"] == 0.5


def test_title_score_counts_duplicate_goal_nouns():
    # the reference divides by the goal-noun *list* (duplicates kept) and intersects sets
    goal = _goal(name="Shampoo Shampoo Bottle Kit")
    info = noun_type_reward(_product(name="Shampoo Bottle Kit"), goal, heuristic_nouns)
    assert info["title_score"] == pytest.approx(3 / 4)


def test_reward_without_options():
    # (2 attributes + price) / (2 + 1) * 1.0
    assert reward_without_options(_product(), _goal(), 25.0, heuristic_nouns) == 1.0
    assert reward_without_options(_product(), _goal(), 40.0, heuristic_nouns) == pytest.approx(
        2 / 3
    )


# -- real WebShop products ($MVPO_REALDATA/webshop) --------------------------------------------------
def _real(realdata):
    folder = realdata / "webshop"
    if not (folder / "items_processed_1000.json").exists():
        pytest.skip("no real WebShop products")
    products = {
        p["asin"]: p for p in json.loads((folder / "items_processed_1000.json").read_text())
    }
    ins = json.loads((folder / "items_ins_v2_1000.json").read_text())
    return products, ins


def test_real_products_hand_checked(realdata):
    products, ins = _real(realdata)
    target = products["B07DJJXGB5"]  # acne body spray, query 'scrubs & body treatments'
    goal = {
        "asin": "B07DJJXGB5",
        "name": target["Title"],
        "query": target["query"],
        "product_category": target["product_category"],
        "attributes": ins["B07DJJXGB5"]["instruction_attributes"],
        "goal_options": {"scent": "acne body spray"},
        "price_upper": 50.0,
    }
    assert goal["attributes"] == ["tea tree", "natural ingredients"]
    cases = [
        # (asin, price, options, score): hand-checked below
        ("B07DJJXGB5", 19.97, {"scent": "acne body spray"}, 1.0),
        # no option chosen: (2 + 0 + 1) / 4
        ("B07DJJXGB5", 19.97, {}, 0.75),
        # 'acne face & body wash' normalises to the colour 'ash': no option match
        ("B07DJJXGB5", 19.97, {"scent": "acne face & body wash"}, 0.75),
        # Grown Alchemist body scrub, same query: only 'body' of 28 goal nouns -> r_type 0.1,
        # no attribute, price 48 <= 50: (0 + 0 + 1) / 4 * 0.1
        ("B00OYBADQ2", 48.0, {}, 0.025),
        # Riffi massage belt: body, men, women = 3/28 = 0.107 -> r_type 0.5: 1/4 * 0.5
        ("B083WSK6F2", 23.45, {}, 0.125),
        # a mattress: no shared noun -> 0
        ("B089KGBJGW", 289.0, {}, 0.0),
    ]
    for asin, price, options, expected in cases:
        r = get_reward(products[asin], goal, price, options, heuristic_nouns)
        assert r.score == pytest.approx(expected), (asin, r)
    # title_score of the target itself: 20 distinct nouns / 28 listed (duplicates counted)
    r = get_reward(target, goal, 19.97, {}, heuristic_nouns)
    assert r.title_score == pytest.approx(20 / 28) and r.r_type == 1.0
