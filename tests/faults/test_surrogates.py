"""A lone surrogate (``"\\ud800"``: valid JSON in a valid UTF-8 file, but not text) never gets
past a loader: one ``DataFileError`` line naming the file, the record and the field, for
WebShop, SearchQA and ALFWorld data (docs/environments.md, "Bad data never loads half"); a
paired escape (an emoji written ``"\\ud83d\\ude00"``) is text and loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the ids)
from mvpo_envs.alfworld.data import bundled_split_dir, collect_games
from mvpo_envs.alfworld.engine import GameFileError
from mvpo_envs.alfworld.fast import FastEngine
from mvpo_envs.data_files import DataFileError, iter_jsonl, load_json
from mvpo_envs.searchqa.data import load_corpus, load_qa
from mvpo_envs.webshop import env as ws_env

LONE = "\\ud800"  # as written in the JSON file: six ASCII characters
PAIR = "\\ud83d\\ude00"


def _one_line(err: pytest.ExceptionInfo, *fragments: str) -> None:
    message = str(err.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message


def test_the_shared_json_readers_refuse_a_lone_surrogate_and_keep_pairs(tmp_path: Path) -> None:
    path = tmp_path / "items.json"
    path.write_text('[{"name": "ok"}, {"name": "bad ' + LONE + ' title"}]')
    with pytest.raises(DataFileError) as err:
        load_json(path)
    _one_line(err, str(path), "record 1, field name", "lone surrogate U+D800")
    path.write_text('{"a": {"b": ["x", "' + LONE.replace("d800", "dc00") + '"]}}')
    with pytest.raises(DataFileError) as err:
        load_json(path)
    _one_line(err, "field a.b[1]", "U+DC00")
    path.write_text('[{"name": "smile ' + PAIR + '"}]')
    assert load_json(path) == [{"name": "smile \U0001f600"}]
    lines = tmp_path / "rows.jsonl"
    lines.write_text('{"q": "fine"}\n{"q": "bad ' + LONE + '"}\n')
    with pytest.raises(DataFileError) as err:
        list(iter_jsonl(lines))
    _one_line(err, f"{lines}, line 2", "field q")


def _webshop(folder: Path, name: str) -> None:
    product = {
        "asin": "B000000001", "name": "Acme Rain Boots", "full_description": "Dry.",
        "small_description": ["WATERPROOF: yes"], "pricing": "$20.00",
        "customization_options": "", "images": ["img"], "category": "fashion",
        "query": "boots", "product_category": "Shoes",
    }  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    products = json.dumps([product]).replace("Acme Rain Boots", name)
    (folder / "items_shuffle_t.json").write_text(products)
    attrs = {
        "B000000001": {
            "attributes": ["waterproof"],
            "instruction": "i need waterproof rain boots",
            "instruction_attributes": ["waterproof"],
        }
    }
    (folder / "items_ins_v2_t.json").write_text(json.dumps(attrs))


def test_webshop_make_names_the_file_instead_of_a_unicode_encode_error(tmp_path: Path) -> None:
    _webshop(tmp_path, "Acme " + LONE + " Boots")
    with pytest.raises(DataFileError) as err:
        gym.make("mvpo/WebShop-v0", data_dir=str(tmp_path), split="all")
    _one_line(err, str(tmp_path / "items_shuffle_t.json"), "record 0, field name", "surrogate")
    _webshop(tmp_path, "Acme " + PAIR + " Boots")
    env = ws_env.WebShopEnv(data_dir=tmp_path, split="all")
    assert "\U0001f600" in env.data.products[0]["Title"]


def test_searchqa_loaders_refuse_a_lone_surrogate(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        '{"id": "0", "contents": "\\"Varford\\"\\nVarford is a town."}\n'
        '{"id": "1", "contents": "\\"Osmira\\"\\nThe ' + LONE + ' river."}\n'
    )
    with pytest.raises(DataFileError) as err:
        load_corpus(corpus)
    _one_line(err, f"{corpus}, line 2", "field contents", "surrogate")
    qa = tmp_path / "test.jsonl"
    qa.write_text('{"id": "q0", "question": "Where?", "golden_answers": ["Os' + LONE + '"]}\n')
    with pytest.raises(DataFileError) as err:
        load_qa(qa)
    _one_line(err, f"{qa}, line 1", "field golden_answers[0]")


def test_alfworld_game_files_refuse_a_lone_surrogate(tmp_path: Path) -> None:
    src = collect_games(bundled_split_dir("train", "mini"))[0].game_file.parent
    dst = tmp_path / "data" / "json_2.1.1" / "valid_seen" / src.parent.name / src.name
    shutil.copytree(src, dst)
    game = dst / "game.tw-pddl"
    data = json.loads(game.read_text())
    text = json.dumps(data).replace('"walkthrough": ["', '"walkthrough": ["' + LONE, 1)
    assert LONE in text
    game.write_text(text)
    with pytest.raises(GameFileError) as err:
        FastEngine().load(game)
    _one_line(err, str(game), "field walkthrough[0]", "surrogate")
