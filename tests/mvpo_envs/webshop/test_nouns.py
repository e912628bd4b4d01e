"""Nouns for the type reward: spaCy (reference) vs the POS-free fallback.

The agreement test plays what an agent buys on the real WebShop products: for 600 real
synthetic goals, the top-10 BM25 hits of the instruction plus three random products, scored
(without options) once with spaCy's nouns and once with the fallback's. It prints the share of
scores that differ and asserts it is below 5%: the type factor only changes when the shared-noun
share crosses 0.1 or 0.2, and the fallback keeps the Title-Case words spaCy tags PROPN, so a
few percent is expected (2.0% measured with en_core_web_sm 3.8); 5% leaves room for other model
versions while still catching a broken fallback (dropping all Title-Case adjectives, for
instance, measured 10.6%).
"""

from __future__ import annotations

import random

import pytest

from mvpo_envs.webshop.nouns import AutoNouns, extractor_name, heuristic_nouns, load_spacy_nouns

MAX_DISAGREEMENT = 0.05


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Organic Cotton T-Shirt for Women, Pack of 2",
            ["organic", "cotton", "t", "shirt", "women", "pack"],
        ),
        (
            "natural loofah sponge, very suitable for men's skin care",
            ["loofah", "sponge", "men", "skin", "care"],
        ),
        ("100% Pure Argan Oil 3.4 oz", ["pure", "argan", "oil", "oz"]),
        ("the and of 42", []),
        ("FIN86 Men's Shorts,Men's Summer", ["fin86", "men", "shorts", "men", "summer"]),
        # lower case: modifiers and -ing/-ed words dropped (spaCy would keep 'hiking' here)
        ("waterproof hiking boots", ["boots"]),
    ],
)
def test_fallback_hand_checked(text, expected):
    assert heuristic_nouns(text) == expected


def test_auto_nouns_can_be_forced_to_the_fallback():
    auto = AutoNouns("none")
    assert auto("Red Shampoo") == ["red", "shampoo"]
    assert extractor_name(auto) == "heuristic"


def test_fallback_disagreement_on_real_data(realdata):
    folder = realdata / "webshop"
    if not (folder / "items_processed_1000.json").exists():
        pytest.skip("no real WebShop products")
    spacy_nouns = load_spacy_nouns()
    if spacy_nouns is None:
        pytest.skip("no spaCy English model installed (optional extra 'spacy')")
    from mvpo_envs.webshop.data import load_data_dir
    from mvpo_envs.webshop.reward import get_reward
    from mvpo_envs.webshop.search import make_retriever

    data = load_data_dir(folder)
    retriever = make_retriever(data.products, cache_dir=False)
    rng = random.Random(0)
    goals = data.goals[:600]
    pairs = []
    for g in goals:
        asins = retriever.search(g["instruction_text"], 10) + [
            p["asin"] for p in rng.sample(data.products, 3)
        ]
        pairs += [(g, data.by_asin[a]) for a in asins]
    spacy_nouns.warm({p["name"] for _, p in pairs} | {g["name"] for g in goals})
    differ = sum(
        get_reward(p, g, data.prices[p["asin"]], {}, spacy_nouns).score
        != get_reward(p, g, data.prices[p["asin"]], {}, heuristic_nouns).score
        for g, p in pairs
    )
    rate = differ / len(pairs)
    print(
        f"\nfallback vs {spacy_nouns.model_name}: {differ}/{len(pairs)} scores differ ({rate:.1%})"
    )
    assert rate < MAX_DISAGREEMENT
