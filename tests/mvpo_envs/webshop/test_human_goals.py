"""WebShop's ``human_goals.json`` with its ``items_human_ins`` pairing (docs/webshop.md, "Data"):
a small sample in the original formats, written here; the goals follow the file's order (its
index is the original's goal index), the splits take the file's first goals as ``test``, and a
file that does not pair with the instructions is one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the ids)
from mvpo_envs.data_files import DataFileError
from mvpo_envs.webshop.data import human_goal_key, load_data_dir


def _product(asin: str, name: str, query: str) -> dict:
    return {
        "asin": asin, "name": name, "full_description": f"A {name}.",
        "small_description": [name.upper()], "pricing": "$12.00", "customization_options": "",
        "images": ["img"], "category": "garden", "query": query,
        "product_category": f"Home › {query}",
    }  # fmt: skip


PRODUCTS = [
    _product("B000000001", "Blue Ceramic Mug", "mugs"),
    _product("B000000002", "Oak Cutting Board", "cutting boards"),
    _product("B000000003", "Wool Throw Blanket", "blankets"),
]
#: items_human_ins: asin -> instructions as people wrote them (case, quotes, final dot)
HUMAN = {
    "B000000001": [
        {"instruction": "I'd like a blue mug that is \"dishwasher safe\".",
         "instruction_attributes": ["dishwasher safe"], "instruction_options": []},
        {"instruction": "find me a ceramic mug.", "instruction_attributes": ["ceramic"],
         "instruction_options": []},
    ],
    "B000000002": [
        {"instruction": "i need an oak cutting board", "instruction_attributes": ["oak"],
         "instruction_options": []},
    ],
    "B000000003": [
        {"instruction": "Looking for a wool throw blanket.", "instruction_attributes": ["wool"],
         "instruction_options": []},
        {"instruction": "no attributes here", "instruction_attributes": [],
         "instruction_options": []},
    ],
}  # fmt: skip
#: human_goals.json: the processed texts in the original's goal order (a chosen order here)
ORDER = [
    "looking for a wool throw blanket",
    "i need an oak cutting board",
    "id like a blue mug that is dishwasher safe",
    "find me a ceramic mug",
    "an instruction of a product not loaded",
]


def _folder(tmp_path: Path, order: object = ORDER) -> Path:
    folder = tmp_path / "webshop"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "items_shuffle_1000.json").write_text(json.dumps(PRODUCTS))
    (folder / "items_ins_v2_1000.json").write_text(json.dumps({}))
    (folder / "items_human_ins.json").write_text(json.dumps(HUMAN))
    if order is not None:
        (folder / "human_goals.json").write_text(json.dumps(order, indent=4))
    return folder


def test_goal_key_is_the_baselines_process_goal():
    text = 'I\'d like a "blue" mug, and price lower than 30.00 dollars'
    assert human_goal_key(text) == "id like a blue mug"
    assert human_goal_key("  Find me a mug ") == "find me a mug"


def test_human_goals_follow_the_file_order(tmp_path):
    data = load_data_dir(_folder(tmp_path), goal_source="human")
    keys = [human_goal_key(g["instruction_text"]) for g in data.goals]
    assert keys == ORDER[:4]  # the file's order; the entry without a product is skipped
    assert [g["goal_index"] for g in data.goals] == [0, 1, 2, 3]
    assert [g["asin"] for g in data.goals] == [
        "B000000003", "B000000002", "B000000001", "B000000001"
    ]  # fmt: skip
    # each goal keeps its attributes and its price clause
    assert data.goals[0]["attributes"] == ["wool"]
    assert "price lower than" in data.goals[0]["instruction_text"]
    assert data.files["human_goals"].endswith("human_goals.json")
    # the test split is the file's first goals
    assert [g["goal_index"] for g in data.split("test", num_test=2)] == [0, 1]
    assert [g["goal_index"] for g in data.split("train", num_test=2)] == [2, 3]


def test_without_the_file_the_goals_are_the_same_in_the_shuffled_order(tmp_path):
    with_file = load_data_dir(_folder(tmp_path), goal_source="human").goals
    without = load_data_dir(_folder(tmp_path / "b", order=None), goal_source="human").goals
    assert all("goal_index" not in g for g in without)
    strip = [{k: v for k, v in g.items() if k != "goal_index"} for g in with_file]
    assert sorted(map(str, strip)) == sorted(map(str, without))  # the same goals, reordered


@pytest.mark.parametrize("catalog", ["memory", "compact"])
def test_the_env_plays_the_files_first_goal_on_the_test_split(tmp_path, catalog):
    folder = _folder(tmp_path)
    env = gym.make(
        "mvpo/WebShop-v0", data_dir=str(folder), goal_source="human", split="test",
        num_test_goals=2, catalog=catalog, cache_dir=str(tmp_path / "cache"),
    )  # fmt: skip
    try:
        assert len(env.unwrapped.task_ids) == 2
        _, info = env.reset(seed=0)
        assert human_goal_key(info["task"]).startswith("looking for a wool throw blanket")
        _, info = env.reset(seed=1)
        assert "oak cutting board" in info["task"].lower()
    finally:
        env.close()


def test_synthetic_goals_ignore_the_order_but_check_the_file(tmp_path):
    folder = _folder(tmp_path, order=[3])
    (folder / "items_ins_v2_1000.json").write_text(
        json.dumps(
            {"B000000001": {"attributes": ["ceramic"], "instruction": "a ceramic mug",
                            "instruction_attributes": ["ceramic"]}}
        )
    )  # fmt: skip
    with pytest.raises(DataFileError, match=r"human_goals.json, entry 0: expected a non-blank"):
        load_data_dir(folder, goal_source="synthetic")


@pytest.mark.parametrize(
    ("order", "needle"),
    [
        ({"a": 1}, "expected a JSON list of human instructions, got dict"),
        ([], "got an empty list"),
        (["ok", ""], "entry 1: expected a non-blank instruction string"),
        (ORDER[1:], "holds no instruction 'looking for a wool throw blanket'"),
    ],
)
def test_a_bad_or_unpaired_file_is_one_line(tmp_path, order, needle):
    folder = _folder(tmp_path, order=order)
    with pytest.raises(DataFileError, match=needle) as err:
        load_data_dir(folder, goal_source="human")
    assert "\n" not in str(err.value) and "human_goals.json" in str(err.value)
