"""``get_reward`` against an independent re-implementation of WebShop's rule (docs/fidelity.md).

The fixture below is written from the rule of WebShop's ``web_agent_site/engine/goal.py``
(``get_reward`` as released): goal options of a synthetic goal reach the option matcher as
``goal_options.items()``, i.e. ``(name, value)`` tuples; ``normalize_color`` then tests tuple
membership and thefuzz compares ``str(tuple)``. It shares no code with
:mod:`mvpo_envs.webshop.reward`: its fuzzy ratio is a plain LCS (Indel) ratio on thefuzz's
string processing, checked against thefuzz itself when that package is installed.

Sweeps: exact purchases of every bundled goal (always), >= 1,000 seeded mixed pairs (always),
and exact purchases of all goals of WebShop's real 1,000-product sample (``REALDATA``).
"""

from __future__ import annotations

import random
import re
from functools import cache
from typing import Any

import pytest

from mvpo_envs.webshop.data import load_bundled, load_data_dir
from mvpo_envs.webshop.nouns import heuristic_nouns
from mvpo_envs.webshop.reward import get_reward

# -- the reference rule (test fixture) -----------------------------------------------------------
REF_COLORS = (
    "alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze "
    "brown burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate christmas "
    "coffee cognac copper coral cranberry cream crystal dark denim eggplant elephant espresso "
    "fuchsia gold granite grape graphite grass gray green grey heather indigo ivory ivy khaki "
    "lavender lemon leopard light lilac lime magenta maroon mauve merlot midnight mint mocha "
    "multicolor mushroom mustard natural navy nude olive orange peach pewter pink plum purple "
    "rainbow red rose royal rust sand sapphire seashell silver skull slate steel stone stonewash "
    "sunflower tan taupe teal tiger turquoise violet walnut wheat white wine yellow"
).split()
_NON_ALNUM = re.compile(r"[\W_]", re.UNICODE)


def ref_process(x: Any) -> str:
    """thefuzz's ``full_process(force_ascii=True)``: str(), drop chars 128-255, keep alnum."""
    s = "".join(c for c in str(x) if not 128 <= ord(c) <= 255)
    return _NON_ALNUM.sub(" ", s).lower().strip()


@cache
def ref_ratio(a: str, b: str) -> float:
    """Indel similarity in percent: ``200 * LCS / (len(a) + len(b))`` (0 if one is empty)."""
    if not a or not b:
        return 0.0
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
        prev = cur
    return 200.0 * prev[-1] / (len(a) + len(b))


@cache
def _ref_token_set(a: str, b: str) -> int:
    if not a or not b:
        return 0
    t1, t2 = set(a.split()), set(b.split())
    sect = " ".join(sorted(t1 & t2))
    c1 = (sect + " " + " ".join(sorted(t1 - t2))).strip()
    c2 = (sect + " " + " ".join(sorted(t2 - t1))).strip()
    return int(round(max(ref_ratio(sect, c1), ref_ratio(sect, c2), ref_ratio(c1, c2))))


def ref_token_set_ratio(a: Any, b: Any) -> int:
    return _ref_token_set(ref_process(a), ref_process(b))


def ref_normalize_color(x: Any) -> Any:
    for color in REF_COLORS:
        if color in x:
            return color
    return x


def ref_get_reward(product, goal, price, options, nouns) -> float:
    """WebShop's ``get_reward`` rule (released ``goal.py``), options passed as WebShop does."""
    query_match = product["query"] == goal["query"]
    p_cat = [x.strip() for x in product["product_category"].split("›")]
    g_cat = [x.strip() for x in goal["product_category"].split("›")]
    category_match = len(set(p_cat) & set(g_cat)) >= 2
    p_nouns, g_nouns = nouns(product["name"]), nouns(goal["name"])
    title_score = 0.2 if not g_nouns else len(set(p_nouns) & set(g_nouns)) / len(g_nouns)
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    r_price = price <= goal["price_upper"]
    n_attr = 0
    for g in goal["attributes"]:
        if any(ref_token_set_ratio(p, g) > 85 for p in product["Attributes"]):
            n_attr += 1
        elif (
            g in product["Title"].lower()
            or g in " ".join(product["BulletPoints"]).lower()
            or g in product["Description"].lower()
        ):
            n_attr += 1
    raw = goal["goal_options"]
    goal_opts = [ref_normalize_color(o) for o in (raw.items() if isinstance(raw, dict) else raw)]
    bought = [ref_normalize_color(o) for o in options.values()]
    n_opt = sum(any(ref_token_set_ratio(p, g) > 85 for p in bought) for g in goal_opts)
    total = (n_attr + n_opt + r_price) / (len(goal["attributes"]) + len(raw) + 1)
    return total * r_type


# -- sweeps --------------------------------------------------------------------------------------
def _exact_differences(data, rule: str = "original") -> tuple[list[str], int]:
    """(goals where ours and the reference differ, exact purchases scoring below 1.0)."""
    diffs, below_one = [], 0
    for g in data.goals:
        p = data.by_asin[g["asin"]]
        opts = dict(g["goal_options"]) if isinstance(g["goal_options"], dict) else {}
        ours = get_reward(p, g, data.prices[g["asin"]], opts, heuristic_nouns, rule).score
        ref = ref_get_reward(p, g, data.prices[g["asin"]], opts, heuristic_nouns)
        below_one += ref < 1.0
        if abs(ours - ref) > 1e-6:
            diffs.append(f"{g['asin']} {g['goal_options']}: ours {ours} reference {ref}")
    return diffs, below_one


def _mixed_pairs(data, n: int, seed: int):
    """Seeded (product, goal, price, options): the goal's product, one of its query, or any."""
    rng = random.Random(seed)
    by_query: dict[str, list] = {}
    for p in data.products:
        by_query.setdefault(p["query"], []).append(p)
    for _ in range(n):
        g = rng.choice(data.goals)
        kind = rng.random()
        if kind < 0.4:
            p = data.by_asin[g["asin"]]
        elif kind < 0.7:
            p = rng.choice(by_query.get(g["query"]) or data.products)
        else:
            p = rng.choice(data.products)
        opts = {k: rng.choice(v) for k, v in (p.get("options") or {}).items() if v}
        yield p, g, data.prices[p["asin"]], opts


@pytest.fixture(scope="module")
def bundled():
    return {src: load_bundled(src) for src in ("synthetic", "human")}


def test_reference_ratio_agrees_with_thefuzz():
    fuzz = pytest.importorskip("thefuzz.fuzz")
    rng = random.Random(0)
    words = ["black", "navy blue", "Pack of 2", "pack of 4", "x-large", "8 fl oz", "é", "ß", "_"]
    pairs = [(("color", "navy blue"), "blue"), (("size", "x-large"), "large"), ("", "a")]
    pairs += [(" ".join(rng.sample(words, 2)), " ".join(rng.sample(words, 3))) for _ in range(300)]
    for a, b in pairs:
        assert ref_token_set_ratio(a, b) == fuzz.token_set_ratio(a, b), (a, b)


def test_tuple_quirk_by_hand():
    # the purchased 'acne face wash' normalises to 'ash' (w-ASH); the goal tuple is not
    # normalised and its str() has no token 'ash': the original scores the exact purchase 2/3
    product = {
        "query": "face wash",
        "product_category": "Beauty › Skin Care",
        "name": "Acne Face Wash",
        "Title": "Acne Face Wash",
        "Attributes": ["oil free"],
        "BulletPoints": [],
        "Description": "",
    }
    goal = {
        "query": "face wash",
        "product_category": "Beauty › Skin Care",
        "name": "Acne Face Wash",
        "attributes": ["oil free"],
        "goal_options": {"scent": "acne face wash"},
        "price_upper": 20.0,
    }
    opts = {"scent": "acne face wash"}
    original = get_reward(product, goal, 10.0, opts, heuristic_nouns)
    fixed = get_reward(product, goal, 10.0, opts, heuristic_nouns, rule="fixed")
    assert (
        original.score
        == pytest.approx(2 / 3)
        == ref_get_reward(product, goal, 10.0, opts, heuristic_nouns)
    )
    assert fixed.score == 1.0 and original.num_option_matches == 0
    with pytest.raises(ValueError, match="reward rule"):
        get_reward(product, goal, 10.0, opts, heuristic_nouns, rule="lenient")


@pytest.mark.parametrize("source", ["synthetic", "human"])
def test_exact_purchases_of_every_bundled_goal(bundled, source):
    diffs, _ = _exact_differences(bundled[source])
    assert len(bundled[source].goals) > 1000
    assert diffs == [], diffs[:5]


def test_mixed_pairs_match_the_reference(bundled):
    diffs, below, checked, fixed_differs = [], 0, 0, 0
    for source, count in (("synthetic", 800), ("human", 400)):
        for p, g, price, opts in _mixed_pairs(bundled[source], count, seed=11):
            ours = get_reward(p, g, price, opts, heuristic_nouns).score
            ref = ref_get_reward(p, g, price, opts, heuristic_nouns)
            fixed = get_reward(p, g, price, opts, heuristic_nouns, rule="fixed").score
            below += ref < 1.0
            checked += 1
            fixed_differs += abs(fixed - ref) > 1e-6
            if abs(ours - ref) > 1e-6:
                diffs.append((g["asin"], p["asin"], opts, ours, ref))
    assert checked >= 1000 and below > 100  # the sweep covers imperfect purchases too
    assert fixed_differs > 10  # the sweep tells the original rule from the fixed one
    assert diffs == [], diffs[:5]


def test_fixed_rule_differs_only_on_dict_options(bundled):
    data = bundled["human"]
    for p, g, price, opts in _mixed_pairs(data, 200, seed=3):
        a = get_reward(p, g, price, opts, heuristic_nouns).score
        b = get_reward(p, g, price, opts, heuristic_nouns, rule="fixed").score
        assert a == b  # list options (human goals) are matched as strings by both rules


def test_exact_purchases_of_all_real_sample_goals(realdata):
    folder = realdata / "webshop"
    if not (folder / "items_processed_1000.json").exists():
        pytest.skip("items_processed_1000.json not in the real sample")
    data = load_data_dir(folder, "synthetic")
    diffs, below_one = _exact_differences(data)
    print(f"\nreal sample: {len(data.goals)} goals, {below_one} exact purchases below 1.0")
    assert len(data.goals) == 6910
    assert diffs == [], diffs[:5]
    assert below_one > 0  # the quirk shows on real goals
