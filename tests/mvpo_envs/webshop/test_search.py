"""Search backends (docs/environments.md, "mvpo/WebShop-v0", Search)."""

from __future__ import annotations

import sys

import pytest

from mvpo_envs.webshop.search import (
    PYSERINI_HELP,
    BM25sRetriever,
    PyseriniRetriever,
    make_retriever,
    product_document,
    s_stem,
    tokenize,
)

IDS = ["a", "b", "c", "d"]
DOCS = ["red running shoes", "blue running shoe with laces", "coffee mug", "red coffee mug"]


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("shoes", "shoe"),
        ("batteries", "battery"),
        ("glass", "glass"),
        ("bus", "bus"),
        ("toes", "toe"),
        ("boxes", "boxe"),
        ("is", "is"),
    ],
)
def test_s_stemmer(word, stem):
    assert s_stem(word) == stem


def test_tokenize_drops_lucene_stop_words():
    assert tokenize("The Shoes for a RUN, with 2 laces!") == ["shoe", "run", "2", "lace"]


def test_product_document_is_webshops():
    p = {
        "Title": "Mug",
        "Description": "Big.",
        "BulletPoints": ["Safe", "ignored"],
        "options": {"color": ["red", "blue"], "size": ["s"]},
    }
    assert product_document(p) == "mug big. safe color: red, blue, and size: s"


def test_bm25s_ranks_and_breaks_ties_by_document_order():
    r = BM25sRetriever(IDS, DOCS, cache_dir=False)
    assert r.search("running shoes")[:2] == ["a", "b"]  # both match; 'a' is shorter
    assert r.search("coffee mug") == ["c", "d"]  # a tie on 'coffee mug' except length: c shorter
    assert r.search("red") == ["a", "d"]  # equal scores: document order
    assert r.search("zebra") == [] and r.search("the") == []
    assert len(r.search("red running coffee", k=2)) == 2


def test_bm25s_index_is_cached_by_content(tmp_path):
    first = BM25sRetriever(IDS, DOCS, cache_dir=tmp_path)
    assert not first.loaded_from_cache and first.cache_path.is_dir()
    second = BM25sRetriever(IDS, DOCS, cache_dir=tmp_path)
    assert second.loaded_from_cache and second.search("red mug") == first.search("red mug")
    third = BM25sRetriever(IDS, DOCS[:3] + ["green mug"], cache_dir=tmp_path)
    assert not third.loaded_from_cache and third.key != first.key


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MVPO_CACHE_DIR", str(tmp_path))
    r = BM25sRetriever(IDS, DOCS)
    assert r.cache_path.parent == tmp_path / "webshop"


def test_unknown_backend():
    with pytest.raises(ValueError, match="bm25s"):
        make_retriever([{"asin": "a", "Title": "x"}], backend="lucene")


def test_pyserini_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyserini", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "pyserini.search", None)
    monkeypatch.setitem(sys.modules, "pyserini.search.lucene", None)
    with pytest.raises(ImportError) as err:
        PyseriniRetriever(IDS, DOCS)
    message = str(err.value)
    assert "mvpo[pyserini]" in message and "Java 21" in message and "not tested" in message
    assert PYSERINI_HELP in message


def test_env_with_pyserini_backend_fails_clearly(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyserini.search.lucene", None)
    from mvpo_envs.webshop.env import WebShopEnv

    with pytest.raises(ImportError, match="pyserini"):
        WebShopEnv(split="test", search_backend="pyserini")


def test_bundled_search_finds_goal_products():
    from mvpo_envs.webshop.data import load_bundled

    data = load_bundled()
    r = make_retriever(data.products, cache_dir=False)
    found = sum(g["asin"] in r.search(g["instruction_text"]) for g in data.goals[:200])
    assert found >= 190  # the instruction's top 50 nearly always holds the goal's product
