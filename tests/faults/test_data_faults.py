"""Malformed WebShop and SearchQA data files: one ``DataFileError`` line naming the file, the
record and the field; tasks nobody can play or win refused; nothing half-loaded
(docs/webshop.md and docs/searchqa.md, "Bad files")."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mvpo_envs.data_files import DataFileError
from mvpo_envs.searchqa import data as sq_data
from mvpo_envs.searchqa.data import load_corpus, load_qa
from mvpo_envs.webshop import env as ws_env
from mvpo_envs.webshop.data import load_data_dir


def _one_line_error(call: Callable[[], Any], path: Path, *fragments: str) -> str:
    with pytest.raises(DataFileError) as info:
        call()
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "\n" not in message, message
    assert str(path) in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


# -- WebShop ---------------------------------------------------------------------------------------
def _raw_product(asin: str, name: str, price: str, options: Any) -> dict[str, Any]:
    return {
        "asin": asin,
        "name": name,
        "full_description": f"{name}, the best.",
        "small_description": ["WATERPROOF: yes"],
        "pricing": price,
        "customization_options": options,
        "images": ["img"],
        "category": "fashion",
        "query": "boots",
        "product_category": "Shoes › Boots",
    }


SIZES = {"Size": [{"value": "8", "image": None}, {"value": "9", "image": None}]}
WEBSHOP = {
    "items_shuffle_t.json": [
        _raw_product("B000000001", "Acme Rain Boots", "$20.00 - $30.00", SIZES),
        _raw_product("B000000002", "Acme Snow Boots", "$45.50", ""),
    ],
    "items_ins_v2_t.json": {
        "B000000001": {
            "attributes": ["waterproof", "rubber sole"],
            "instruction": "i need waterproof rain boots",
            "instruction_attributes": ["waterproof"],
        },
        "B000000002": {
            "attributes": ["warm"],
            "instruction": "i want warm snow boots",
            "instruction_attributes": ["warm"],
        },
    },
    "items_human_ins_t.json": {
        "B000000002": [
            {
                "instruction": "find me warm snow boots.",
                "instruction_attributes": ["warm"],
                "instruction_options": [],
            }
        ]
    },
    "reviews_t.json": [
        {"asin": "B000000001", "reviews": [{"title": "ok", "stars": 4, "review": "dry feet"}]}
    ],
}
PRODUCTS, ATTRS, HUMAN, REVIEWS = WEBSHOP


def _processed() -> list[dict[str, Any]]:
    return [
        {
            "asin": f"B00000000{i}",
            "name": f"Acme Boots {i}",
            "Title": f"Acme Boots {i}",
            "Description": "warm",
            "BulletPoints": ["warm"],
            "pricing": [20.0],
            "Price": "$20.0",
            "options": {"size": ["8", "9"]},
            "Attributes": ["warm"],
            "query": "boots",
            "category": "fashion",
            "product_category": "Shoes › Boots",
        }
        for i in (1, 2)
    ]


def _set(path: list[Any], value: Any) -> Callable[[Any], None]:
    def edit(obj: Any) -> None:
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value

    return edit


def _delete(path: list[Any]) -> Callable[[Any], None]:
    def edit(obj: Any) -> None:
        for key in path[:-1]:
            obj = obj[key]
        del obj[path[-1]]

    return edit


def _on_bytes(edit: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    """Mark an edit of the file's bytes (the others edit its parsed JSON in place or return
    a replacement)."""
    edit.on_bytes = True  # type: ignore[attr-defined]
    return edit


def _apply(obj: Any, edit: Callable[[Any], Any]) -> bytes:
    """The bytes of ``obj`` (JSON) after ``edit``."""
    if getattr(edit, "on_bytes", False):
        return edit(json.dumps(obj).encode())
    obj = copy.deepcopy(obj)
    result = edit(obj)
    return json.dumps(obj if result is None else result).encode()


A1, A2 = "B000000001", "B000000002"
# (case id, file, edit of its JSON or raw bytes, goal source, fragments of the one line)
WEBSHOP_CASES = [
    ("product-no-name", PRODUCTS, _delete([0, "name"]), "synthetic",
     [f"product 0 (asin '{A1}')", "name: missing"]),
    ("product-asin-number", PRODUCTS, _set([1, "asin"], 12), "synthetic",
     ["product 1", "asin: expected a string, got int 12"]),
    ("product-asin-empty", PRODUCTS, _set([1, "asin"], ""), "synthetic",
     ["product 1", "asin: is empty"]),
    ("product-pricing-garbage", PRODUCTS, _set([0, "pricing"], "call us"), "synthetic",
     ["product 0", "pricing: expected a price such as '$12.99'", "'call us'"]),
    ("product-pricing-no-number", PRODUCTS, _set([0, "pricing"], "$ - $"), "synthetic",
     ["pricing: expected a price"]),
    ("product-pricing-number", PRODUCTS, _set([0, "pricing"], 12.5), "synthetic",
     ["pricing: expected a price string", "float 12.5"]),
    ("product-pricing-list-of-text", PRODUCTS, _set([0, "pricing"], ["$5"]), "synthetic",
     ["pricing[0]: expected a price >= 0"]),
    ("product-options-not-list", PRODUCTS, _set([0, "customization_options", "Size"], "8"),
     "synthetic", ["customization_options.Size: expected a list of options"]),
    ("product-option-no-value", PRODUCTS,
     _set([0, "customization_options", "Size", 1], {"image": None}), "synthetic",
     ["customization_options.Size[1]: expected {'value': ...}"]),
    ("product-option-blank", PRODUCTS,
     _set([0, "customization_options", "Size", 0, "value"], " "), "synthetic",
     ["customization_options.Size[0].value: is empty"]),
    ("product-options-number", PRODUCTS, _set([1, "customization_options"], 3), "synthetic",
     ["customization_options: expected a JSON object or ''"]),
    ("product-bullets-dict", PRODUCTS, _set([1, "small_description"], {"a": 1}), "synthetic",
     ["small_description: expected a list of strings"]),
    ("product-description-list", PRODUCTS, _set([1, "full_description"], ["x"]), "synthetic",
     ["full_description: expected a string"]),
    ("product-images-number", PRODUCTS, _set([1, "images"], 7), "synthetic",
     ["images: expected a list of strings"]),
    ("product-record-not-object", PRODUCTS, _set([1], "B000000002"), "synthetic",
     ["product 1: record: expected a JSON object"]),
    ("products-not-list", PRODUCTS, lambda raw: {"products": raw}, "synthetic",
     ["expected a JSON list of products, got dict"]),
    ("products-empty", PRODUCTS, lambda raw: [], "synthetic", ["holds no products"]),
    ("products-truncated", PRODUCTS, _on_bytes(lambda text: text[: len(text) // 2]), "synthetic",
     ["invalid JSON at line 1"]),
    ("products-not-utf8", PRODUCTS, _on_bytes(lambda text: text[:40] + b"\xff" + text[40:]), "synthetic",
     ["not valid UTF-8 (byte 40"]),
    ("products-too-deep", PRODUCTS, _on_bytes(lambda text: b"[" * 5000 + b"]" * 5000), "synthetic",
     ["nested deeper than"]),
    ("attributes-not-object", ATTRS, lambda attrs: list(attrs), "synthetic",
     ["expected a JSON object asin -> attributes, got list"]),
    ("attributes-record-list", ATTRS, _set([A1], ["waterproof"]), "synthetic",
     [f"asin '{A1}'", "record: expected a JSON object"]),
    ("attributes-wrong-type", ATTRS, _set([A1, "attributes"], "waterproof"), "synthetic",
     [f"asin '{A1}'", "attributes: expected a list of strings"]),
    ("attributes-goal-attributes-number", ATTRS, _set([A1, "instruction_attributes"], 5),
     "synthetic", ["instruction_attributes: expected a list of strings, got int 5"]),
    ("attributes-goal-attribute-blank", ATTRS, _set([A1, "instruction_attributes", 0], ""),
     "synthetic", ["instruction_attributes[0]: is empty: no product can match it"]),
    ("attributes-instruction-blank", ATTRS, _set([A2, "instruction"], "  "), "synthetic",
     [f"asin '{A2}'", "instruction: is empty: a goal with no instruction cannot be played"]),
    ("attributes-instruction-number", ATTRS, _set([A2, "instruction"], 3), "synthetic",
     ["instruction: expected a string"]),
    ("attributes-truncated", ATTRS, _on_bytes(lambda text: text[:-3]), "synthetic", ["invalid JSON"]),
    ("attributes-not-utf8", ATTRS, _on_bytes(lambda text: b"\xc3" + text), "synthetic", ["UTF-8"]),
    ("human-not-object", HUMAN, lambda human: [human], "human",
     ["expected a JSON object asin -> list of instructions"]),
    ("human-not-list", HUMAN, _set([A2], {"instruction": "x"}), "human",
     [f"asin '{A2}'", "instructions: expected a list of instructions"]),
    ("human-no-instruction", HUMAN, _delete([A2, 0, "instruction"]), "human",
     ["instructions[0].instruction: missing"]),
    ("human-instruction-blank", HUMAN, _set([A2, 0, "instruction"], "."), "synthetic",
     ["instructions[0].instruction: is empty"]),  # refused even for synthetic goals
    ("human-options-text", HUMAN, _set([A2, 0, "instruction_options"], "blue"), "human",
     ["instructions[0].instruction_options: expected a list of strings"]),
    ("human-attribute-number", HUMAN, _set([A2, 0, "instruction_attributes", 0], 1), "human",
     ["instructions[0].instruction_attributes[0]: expected a string, got int 1"]),
    ("reviews-not-list", REVIEWS, lambda rows: {"rows": rows}, "synthetic",
     ["expected a JSON list of reviews"]),
    ("reviews-no-asin", REVIEWS, _delete([0, "asin"]), "synthetic",
     ["record 0: asin: missing"]),
    ("reviews-reviews-text", REVIEWS, _set([0, "reviews"], "great"), "synthetic",
     [f"record 0 (asin '{A1}')", "reviews: expected a list of reviews"]),
    ("reviews-review-number", REVIEWS, _set([0, "reviews", 0], 5), "synthetic",
     ["reviews[0]: expected a JSON object"]),
    ("reviews-null", REVIEWS, _on_bytes(lambda text: b"null"), "synthetic", ["got NoneType"]),
    ("no-synthetic-goals", ATTRS, lambda attrs: {a: {"attributes": []} for a in attrs},
     "synthetic", ["no synthetic goals to play", "'instruction' with 'instruction_attributes'"]),
]  # fmt: skip


def _write_webshop(folder: Path, files: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, obj in files.items():
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        (folder / name).write_bytes(data)


def test_the_webshop_fixture_loads(tmp_path):
    _write_webshop(tmp_path, WEBSHOP)
    data = load_data_dir(tmp_path)
    assert len(data.products) == 2 and len(data.goals) == 3  # 2 sizes + 1 product
    assert len(load_data_dir(tmp_path, "human").goals) == 1


@pytest.mark.parametrize(
    ("name", "edit", "goal_source", "fragments"),
    [pytest.param(*case[1:], id=case[0]) for case in WEBSHOP_CASES],
)
def test_a_malformed_webshop_file_is_one_line_naming_file_record_and_field(
    tmp_path, name, edit, goal_source, fragments
):
    files = {**WEBSHOP, name: _apply(WEBSHOP[name], edit)}
    _write_webshop(tmp_path, files)
    _one_line_error(lambda: load_data_dir(tmp_path, goal_source), tmp_path / name, *fragments)


PROCESSED_CASES = [
    ("duplicate-asin", _set([1, "asin"], "B000000001"), ["product 1", "duplicate of product 0"]),
    ("no-title", _delete([1, "Title"]), ["product 1", "Title: missing"]),
    ("option-value-number", _set([0, "options", "size", 1], 9), ["options.size[1]: expected"]),
    ("option-value-blank", _set([0, "options", "size", 0], ""), ["options.size[0]: is empty"]),
    ("options-list", _set([0, "options"], ["8"]), ["options: expected a JSON object"]),
    ("price-nan", _set([0, "pricing"], [float("nan")]), ["pricing[0]: expected a price >= 0"]),
    ("price-negative", _set([0, "pricing"], [-3]), ["pricing[0]: expected a price >= 0"]),
    ("attributes-text", _set([0, "Attributes"], "warm"), ["Attributes: expected a list"]),
    ("reviews-text", _set([0, "Reviews"], "good"), ["Reviews: expected a list of reviews"]),
    ("instructions-number", _set([0, "instructions"], 1), ["instructions: expected a list"]),
    ("instruction-text-blank", _set([0, "instruction_text"], ""), ["instruction_text: is empty"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "fragments"), [pytest.param(*case[1:], id=case[0]) for case in PROCESSED_CASES]
)
def test_a_malformed_processed_products_file_is_one_line(tmp_path, edit, fragments):
    products = _processed()
    edit(products)
    attrs = {p["asin"]: {"instruction": "i need boots", "instruction_attributes": ["warm"]}
             for p in _processed()}  # fmt: skip
    _write_webshop(tmp_path, {"items_processed_t.json": products, "items_ins_v2_t.json": attrs})
    _one_line_error(lambda: load_data_dir(tmp_path), tmp_path / "items_processed_t.json",
                    *fragments)  # fmt: skip


def test_a_bad_webshop_folder_is_not_cached_half_loaded(tmp_path):
    files = copy.deepcopy(WEBSHOP)
    del files[PRODUCTS][1]["name"]
    _write_webshop(tmp_path, files)
    before = dict(ws_env._DATA_CACHE)
    with pytest.raises(DataFileError, match="name: missing"):
        ws_env.WebShopEnv(data_dir=tmp_path, split="all")
    assert ws_env._DATA_CACHE == before  # nothing kept: fixing the file is enough
    _write_webshop(tmp_path, WEBSHOP)
    env = ws_env.WebShopEnv(data_dir=tmp_path, split="all")
    assert len(env.data.products) == 2


# -- SearchQA --------------------------------------------------------------------------------------
CORPUS = [
    {"id": "0", "contents": '"Varford"\nVarford is a town on the Osmira River.'},
    {"id": "1", "contents": '"Osmira River"\nThe Osmira River flows into Lake Orvane.'},
]
QA = [
    {"id": "q0", "question": "Which river flows through Varford?",
     "golden_answers": ["Osmira River", "Osmira"], "type": "single",
     "metadata": {"bridge": None, "entities": ["Varford"], "supporting_ids": ["0"]}},
    {"id": "q1", "question": "Where does the Osmira River flow?",
     "golden_answers": ["Lake Orvane"]},
]  # fmt: skip

# (case id, edit of row 1 or of the file's bytes, fragments of the one line)
CORPUS_CASES = [
    ("contents-empty", _set([1, "contents"], ""), ["line 2: contents: has no words"]),
    ("contents-punctuation", _set([1, "contents"], '""\n...'), ["contents: has no words"]),
    ("contents-number", _set([1, "contents"], 5), ["line 2: contents: expected a string"]),
    ("no-contents", _delete([1, "contents"]), ["line 2: contents: missing"]),
    ("text-list", _set([1], {"id": "1", "title": "T", "text": ["x"]}),
     ["line 2: text: expected a string"]),
    ("title-number", _set([1], {"id": "1", "title": 3, "text": "x y"}),
     ["line 2: title: expected a string"]),
    ("id-bool", _set([1, "id"], True), ["line 2: id: expected a string or an integer"]),
    ("id-list", _set([1, "id"], ["1"]), ["line 2: id: expected a string or an integer"]),
    ("id-duplicate", _set([1, "id"], "0"), ["line 2: id: duplicate passage id '0' (first at line 1)"]),
    ("row-list", _set([1], ["1", "text"]), ["line 2: expected a JSON object, got list"]),
    ("truncated", _on_bytes(lambda text: text[:-20]), ["line 2: not valid JSON"]),
    ("not-utf8", _on_bytes(lambda text: text.replace(b"Lake", b"L\xe9ke")), ["line 2", "not valid UTF-8"]),
    ("too-deep", _on_bytes(lambda text: text + b"[" * 500 + b"]" * 500 + b"\n"), ["line 3", "nested deeper"]),
    ("gzip-truncated", _on_bytes(lambda text: gzip.compress(text)[:-12]), ["cannot read corpus file"]),
    ("blank", _on_bytes(lambda text: b"\n\n"), ["the corpus holds no passages"]),
]  # fmt: skip
QA_CASES = [
    ("answers-number", _set([1, "golden_answers"], 5), ["line 2: golden_answers: expected a list of strings, got int 5"]),
    ("answers-empty", _set([1, "golden_answers"], []), ["line 2: golden_answers: is empty: no answer can win"]),
    ("answer-empty", _set([1, "golden_answers"], ["Orvane", ""]), ["golden_answers[1]: normalises to nothing"]),
    ("answer-article", _set([1, "golden_answers"], "The"), ["golden_answers: normalises to nothing"]),
    ("answer-number", _set([1, "golden_answers"], [1969]), ["golden_answers[0]: expected a string, got int"]),
    ("no-answers", _delete([1, "golden_answers"]), ["line 2: golden_answers: missing"]),
    ("question-empty", _set([1, "question"], ""), ["line 2: question: is empty: nobody can play it"]),
    ("question-blank", _set([1, "question"], " \n "), ["question: is empty"]),
    ("question-number", _set([1, "question"], 7), ["question: expected a string"]),
    ("no-question", _delete([1, "question"]), ["line 2: question: missing"]),
    ("metadata-text", _set([0, "metadata"], "abc"), ["line 1: metadata: expected a JSON object, got str 'abc'"]),
    ("metadata-entities-text", _set([0, "metadata", "entities"], "Varford"), ["metadata.entities: expected a list"]),
    ("metadata-bridge-list", _set([0, "metadata", "bridge"], ["x"]), ["metadata.bridge: expected a string"]),
    ("metadata-ids-dict", _set([0, "metadata", "supporting_ids", 0], {}), ["metadata.supporting_ids[0]"]),
    ("type-number", _set([0, "type"], 1), ["line 1: type: expected a string"]),
    ("id-float", _set([1, "id"], 1.5), ["line 2: id: expected a string or an integer"]),
    ("id-duplicate", _set([1, "id"], "q0"), ["line 2: id: duplicate question id 'q0'"]),
    ("not-utf8", _on_bytes(lambda text: text.replace(b"Orvane", b"Orv\xffne")), ["line 2", "not valid UTF-8"]),
    ("truncated", _on_bytes(lambda text: text[:-5]), ["line 2: not valid JSON"]),
    ("blank", _on_bytes(lambda text: b"\n"), ["holds no questions"]),
]  # fmt: skip


def _write_jsonl(path: Path, rows: list[Any], edit: Callable[[Any], Any] | None = None) -> None:
    """``rows`` as JSON Lines after ``edit`` (of the rows, or ``_on_bytes`` of the file)."""
    rows = copy.deepcopy(rows)
    if edit is not None and not getattr(edit, "on_bytes", False):
        edit(rows)
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    if edit is not None and getattr(edit, "on_bytes", False):
        data = edit(data)
    path.write_bytes(data)


def test_the_searchqa_fixture_loads(tmp_path):
    for name, rows in (("c.jsonl", CORPUS), ("q.jsonl", QA)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(load_corpus(tmp_path / "c.jsonl")) == 2
    items = load_qa(tmp_path / "q.jsonl")
    assert [i.golden_answers for i in items] == [["Osmira River", "Osmira"], ["Lake Orvane"]]


@pytest.mark.parametrize(
    ("edit", "fragments"), [pytest.param(*case[1:], id=case[0]) for case in CORPUS_CASES]
)
def test_a_malformed_corpus_is_one_line_naming_file_line_and_field(tmp_path, edit, fragments):
    gzipped = any("cannot read" in f for f in fragments)
    path = tmp_path / ("corpus.jsonl.gz" if gzipped else "corpus.jsonl")
    _write_jsonl(path, CORPUS, edit)
    _one_line_error(lambda: load_corpus(path), path, *fragments)


@pytest.mark.parametrize(
    ("edit", "fragments"), [pytest.param(*case[1:], id=case[0]) for case in QA_CASES]
)
def test_a_malformed_or_unwinnable_question_is_one_line(tmp_path, edit, fragments):
    path = tmp_path / "test.jsonl"
    _write_jsonl(path, QA, edit)
    _one_line_error(lambda: load_qa(path), path, *fragments)


def test_a_bad_searchqa_file_is_refused_by_the_env_and_not_cached(tmp_path):
    from mvpo_envs.searchqa.env import SearchQAEnv

    corpus, qa = tmp_path / "c.jsonl", tmp_path / "test.jsonl"
    _write_jsonl(corpus, CORPUS, _set([1, "contents"], ""))
    _write_jsonl(qa, QA, _set([1, "golden_answers"], []))
    kwargs = {"corpus_path": corpus, "qa_path": tmp_path, "split": "test", "max_obs_tokens": None}
    _one_line_error(lambda: SearchQAEnv(**kwargs), qa, "golden_answers: is empty")
    _write_jsonl(qa, QA)
    before = dict(sq_data._CORPORA)
    _one_line_error(lambda: SearchQAEnv(**kwargs), corpus, "contents: has no words")
    assert sq_data._CORPORA == before


def test_a_corpus_without_an_indexable_word_names_the_corpus(tmp_path):
    from mvpo_envs.searchqa.env import SearchQAEnv

    corpus, qa = tmp_path / "c.jsonl", tmp_path / "test.jsonl"
    _write_jsonl(corpus, [{"id": str(i), "contents": "a, the: I"} for i in range(2)])
    _write_jsonl(qa, QA)
    with pytest.raises(ValueError, match="no passage has a word BM25 can index") as info:
        SearchQAEnv(corpus_path=corpus, qa_path=tmp_path, split="test", max_obs_tokens=None,
                    retriever_kwargs={"cache_dir": tmp_path / "cache"})  # fmt: skip
    assert str(corpus) in str(info.value)  # was bm25s' "max() arg is an empty sequence"


def test_the_fast_nesting_bound_agrees_with_the_byte_scan():
    """``check_depth`` bounds the depth with C-speed passes first (a 4.6 MB file took 0.2 s of
    Python byte scanning); it must refuse exactly what the scan refuses."""
    import random

    from mvpo_envs.data_files import check_depth

    def scan_ok(raw: bytes, limit: int) -> bool:
        depth = 0
        for byte in raw:
            if byte in b"[{":
                depth += 1
                if depth > limit:
                    return False
            elif byte in b"]}":
                depth = max(0, depth - 1)
        return True

    rng = random.Random(0)
    for _ in range(3000):
        raw = bytes(rng.choice(b"[]{}a\n") for _ in range(rng.randint(0, 40)))
        limit = rng.randint(0, 6)
        try:
            check_depth(raw, "x", limit)
            ok = True
        except DataFileError:
            ok = False
        assert ok == scan_ok(raw, limit), (raw, limit)
