"""WebShop data: raw/processed loaders, goals, splits, the bundled catalog and its generator.

docs/environments.md, "mvpo/WebShop-v0", Data.
"""

from __future__ import annotations

import json
import random

import pytest

from mvpo_envs.webshop import generate
from mvpo_envs.webshop.data import (
    build_goals,
    bundled_dir,
    human_goals,
    load_bundled,
    load_data_dir,
    process_raw_products,
    split_goals,
    synthetic_goals,
)
from mvpo_envs.webshop.env import WebShopEnv
from mvpo_envs.webshop.expert import expert_episode

RAW = [
    {
        "asin": "B0000000A1",
        "name": "Acme Running Shoes",
        "full_description": "Light.",
        "small_description": ["RUBBER SOLE", "MESH"],
        "pricing": "$20.50 - $30.00",
        "customization_options": {
            "Size": [{"value": "8", "image": None}, {"value": "9/10", "image": "u"}],
            "Color": [{"value": "Black", "image": None}],
            "Fit": None,
        },
        "images": ["img"],
        "category": "fashion",
        "query": " Running Shoes ",
        "product_category": "Shoes › Running",
    },
    {
        "asin": "B0000000A1",
        "name": "duplicate",
        "pricing": "",
        "customization_options": "",
        "images": [],
        "query": "x",
        "small_description": "one bullet",
        "full_description": "",
    },
    {
        "asin": "nan",
        "name": "bad asin",
        "pricing": "",
        "customization_options": "",
        "images": [],
        "query": "x",
        "small_description": "",
        "full_description": "",
    },
    {
        "asin": "B0000000B2",
        "name": "Acme Mug",
        "full_description": "",
        "small_description": "one bullet",
        "pricing": "",
        "customization_options": "",
        "images": [],
        "category": "garden",
        "query": "mugs",
        "product_category": "Kitchen › Mugs",
    },
]
ATTRS = {
    "B0000000A1": {
        "attributes": ["rubber sole", "lace up"],
        "instruction": "Find me running shoes with rubber sole",
        "instruction_attributes": ["rubber sole"],
    },
}
HUMAN = {
    "B0000000B2": [
        {
            "instruction": "i want a mug.",
            "instruction_attributes": ["dishwasher safe"],
            "instruction_options": ["blue"],
        },
        {"instruction": "no attributes", "instruction_attributes": [], "instruction_options": []},
    ]
}


def test_process_raw_products_like_load_products():
    products = process_raw_products(
        RAW,
        ATTRS,
        HUMAN,
        reviews=[
            {
                "asin": "B0000000A1",
                "average_rating": 4.5,
                "reviews": [{"title": "t", "stars": 5, "review": "ok"}],
            }
        ],
    )
    assert [p["asin"] for p in products] == ["B0000000A1", "B0000000B2"]  # duplicate, 'nan' dropped
    shoe, mug = products
    assert shoe["Title"] == "Acme Running Shoes" and shoe["Description"] == "Light."
    assert shoe["pricing"] == [20.5, 30.0] and shoe["Price"] == "$20.5 to $30.0"
    assert shoe["options"] == {"size": ["8", "9 | 10"], "color": ["black"]}  # None option skipped
    assert shoe["Attributes"] == ["rubber sole", "lace up"] and shoe["query"] == "running shoes"
    assert shoe["Reviews"] == [{"title": "t", "score": 5, "body": "ok"}] and shoe["Rating"] == 4.5
    assert (
        mug["pricing"] == [100.0]
        and mug["Price"] == "$100.0"
        and mug["Attributes"] == ["DUMMY_ATTR"]
    )
    assert (
        mug["BulletPoints"] == ["one bullet"] and mug["Rating"] == "N.A." and mug["MainImage"] == ""
    )
    assert "instructions" in mug and RAW[0]["name"] == "Acme Running Shoes"  # input not mutated


def test_synthetic_goals_one_per_option_combination():
    products = process_raw_products(RAW, ATTRS)
    prices = {"B0000000A1": 25.0, "B0000000B2": 100.0}
    goals = synthetic_goals(products, prices, random.Random(0))
    assert len(goals) == 2  # sizes 8 and 9 | 10, one colour; the mug has no instruction
    g = goals[0]
    assert g["goal_options"] == {"color": "black", "size": "8"}
    cap = g["price_upper"]
    assert cap in (40.0, 50.0, 60.0)  # the larger of two of the next four multiples of 10 above 25
    assert (
        g["instruction_text"]
        == f"Find me running shoes with rubber sole with color: black, and size: 8, and price lower than {cap:.2f} dollars"
    )
    assert g["name"] == "Acme Running Shoes" and g["attributes"] == ["rubber sole"]


def test_human_goals_skip_instructions_without_attributes():
    products = process_raw_products(RAW, ATTRS, HUMAN)
    goals = human_goals(products, {"B0000000A1": 25.0, "B0000000B2": 100.0}, random.Random(0))
    assert len(goals) == 1
    assert goals[0]["goal_options"] == ["blue"]
    assert goals[0]["instruction_text"].startswith(
        "i want a mug, and price lower than "
    )  # '.' stripped


def test_price_above_990_has_no_cap():
    products = process_raw_products(RAW, ATTRS)
    goals = synthetic_goals(products, {"B0000000A1": 995.0, "B0000000B2": 1.0}, random.Random(0))
    assert goals[0]["price_upper"] == 1_000_000.0 and "price" not in goals[0]["instruction_text"]


def test_goal_shuffle_and_splits_are_deterministic():
    a = load_bundled()
    prices, goals = build_goals(a.products, "synthetic")
    assert goals == a.goals and prices == a.prices
    assert len(split_goals(goals, "test")) == 500 and split_goals(goals, "train") == goals[500:]
    with pytest.raises(ValueError, match="split"):
        split_goals(goals, "valid")


def test_bundled_catalog_shape():
    data = load_bundled()
    assert len(data.products) == 600
    assert {p["category"] for p in data.products} == {
        "beauty",
        "electronics",
        "fashion",
        "garden",
        "grocery",
    }
    assert len(data.goals) > 1500 and len(load_bundled("human").goals) > 1000
    for g in data.goals[:200]:  # the goal's product has every attribute and option it asks for
        p = data.by_asin[g["asin"]]
        assert set(g["attributes"]) <= set(p["Attributes"])
        assert all(v in p["options"][k] for k, v in g["goal_options"].items())
        assert data.prices[g["asin"]] <= g["price_upper"]
    size = sum(f.stat().st_size for f in bundled_dir().iterdir())
    assert size < 3_000_000


def test_generator_reproduces_the_committed_files(tmp_path):
    assert generate.main(["--out", str(tmp_path)]) == 0
    for name in generate.FILES.values():
        assert (tmp_path / name).read_bytes() == (bundled_dir() / name).read_bytes(), name


def test_generator_seed_changes_the_catalog():
    a, b = generate.generate(seed=1, per_type=2), generate.generate(seed=2, per_type=2)
    assert a == generate.generate(seed=1, per_type=2) and a != b
    assert len(a["products"]) == 2 * 25


# -- real WebShop files ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_dir(realdata):
    folder = realdata / "webshop"
    if not (folder / "items_processed_1000.json").exists():
        pytest.skip("no real WebShop products")
    return folder


def test_real_processed_products_load(real_dir):
    data = load_data_dir(real_dir)
    assert len(data.products) == 1000
    assert len(data.goals) == 6910  # WebShop's README: 'Loaded 6910 goals.' on the 1000 products
    assert len(data.split("test")) == 500 and len(data.split("train")) == 6410
    human = load_data_dir(real_dir, goal_source="human")
    assert len(human.goals) == 13  # the 13 products that carry human 'instructions'


def test_real_raw_layout_loads_like_processed(real_dir, tmp_path):
    """A raw ``items_shuffle`` file (rebuilt from the processed fields) gives the same products."""
    processed = json.loads((real_dir / "items_processed_1000.json").read_text())[:50]
    keys = [
        "asin",
        "name",
        "full_description",
        "small_description",
        "pricing",
        "images",
        "category",
        "query",
        "product_category",
        "customization_options",
        "average_rating",
    ]
    raw = []
    for p in processed:
        r = {k: p[k] for k in keys}
        r["pricing"] = " - ".join(f"${v}" for v in p["pricing"])
        raw.append(r)
    (tmp_path / "items_shuffle_1000.json").write_text(json.dumps(raw))
    (tmp_path / "items_ins_v2_1000.json").write_text(
        (real_dir / "items_ins_v2_1000.json").read_text()
    )
    loaded = load_data_dir(tmp_path, goal_source="synthetic").products
    for a, b in zip(loaded, processed, strict=True):
        for key in (
            "Title",
            "Description",
            "BulletPoints",
            "pricing",
            "Price",
            "options",
            "Attributes",
            "query",
        ):
            assert a[key] == b[key], (a["asin"], key)


def test_env_on_real_data(real_dir):
    env = WebShopEnv(split="test", data_dir=real_dir)
    obs, info = env.reset(seed=0)
    assert obs.startswith("WebShop [SEP] Instruction: [SEP] ")
    scores = [expert_episode(env, i)[0] for i in range(20)]
    print(f"\nexpert on 20 real test goals: mean {sum(scores) / 20:.3f}")
    assert sum(scores) / len(scores) > 0.9


def test_webshop_data_env_variable(real_dir, monkeypatch):
    monkeypatch.setenv("WEBSHOP_DATA", str(real_dir))
    env = WebShopEnv(split="test")
    assert len(env.data.products) == 1000


def test_missing_data_dir_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="items_shuffle"):
        load_data_dir(tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"num_products": -1}, "num_products must be an int >= 1"),  # raw[:-1] dropped one
        ({"num_products": 0}, "num_products must be an int >= 1"),
        ({"num_test_goals": -1}, "num_test_goals must be an int >= 0"),  # test = all but one
        ({"num_products": 10}, "give data_dir="),  # the bundled catalog silently ignored it
        ({"products_file": "x.json"}, "give data_dir="),
    ],
)
def test_counts_and_file_options_are_checked(kwargs, needle, monkeypatch):
    monkeypatch.delenv("WEBSHOP_DATA", raising=False)
    with pytest.raises(ValueError, match=needle):
        WebShopEnv(**kwargs)


@pytest.mark.parametrize("argv", [["--per-type", "0"], ["--per-type", "-1"], ["--seed", "-2"]])
def test_generator_cli_refuses_empty_or_negative_counts(tmp_path, argv, capsys):
    from mvpo_envs.webshop.generate import main

    with pytest.raises(SystemExit) as exc_info:
        main([*argv, "--out", str(tmp_path / "out")])  # wrote 0 products, exit 0
    assert exc_info.value.code == 2 and "expected an integer >=" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
