"""Compact catalogs and fast top-k search (docs/webshop.md, "Large catalogs").

The compact store must be the in-memory catalog read from disk: same products, prices, goals,
task ids, search results, pages and rewards, on the bundled catalog and the real sample.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from mvpo_envs.data_files import DataFileError
from mvpo_envs.webshop.data import bundled_dir, load_data_dir
from mvpo_envs.webshop.env import WebShopEnv
from mvpo_envs.webshop.expert import run_expert
from mvpo_envs.webshop.search import BM25sRetriever, tokenize, top_k
from mvpo_envs.webshop.store import CompactData, build, open_or_build


def _lexsort_top(scores: np.ndarray, k: int) -> list[int]:
    """The ranking as it was: full lexsort, ties by position, positive scores only."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    return [int(i) for i in order[:k] if scores[i] > 0]


@pytest.mark.parametrize("seed", range(6))
def test_top_k_equals_full_sort_with_ties_and_zeros(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    scores = rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, 3.25], size=n).astype(np.float32)
    mask = rng.random(n) < 0.3  # some distinct scores among the ties
    scores[mask] = (rng.random(int(mask.sum())) * 3).astype(np.float32)
    for k in (1, 10, 50, n + 5):
        assert top_k(scores, k) == _lexsort_top(scores, k)
    assert top_k(np.zeros(7, dtype=np.float32), 50) == []


@pytest.mark.parametrize("seed", range(3))
def test_top_k_with_a_sampled_floor_equals_full_sort(seed):
    rng = np.random.default_rng(seed)
    n = 300_000  # large enough that the floor comes from a strided sample
    scores = np.round(rng.gamma(1.0, 1.0, size=n), 1).astype(np.float32)  # many ties
    scores[rng.random(n) < 0.5] = 0
    if seed == 2:  # the best scores all outside the sample's positions
        scores[:] = 0
        scores[1 : 60 * 3] = 1.0
    for k in (1, 50, 51):
        assert top_k(scores, k) == _lexsort_top(scores, k)


def _pair(tmp_path, data_dir, split="test", goal_source="synthetic"):
    kw = {"split": split, "data_dir": data_dir, "goal_source": goal_source}
    memory = WebShopEnv(**kw, catalog="memory", cache_dir=tmp_path / "mem")
    compact = WebShopEnv(**kw, catalog="compact", cache_dir=tmp_path / "compact")
    assert isinstance(compact.data, CompactData) and not isinstance(memory.data, CompactData)
    return memory, compact


def _queries(env, n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    goals = [env.data.goals[i] for i in range(len(env.data.goals))]
    words = sorted({w for g in goals for w in g["instruction_text"].split()})
    out = [g["instruction_text"] for g in rng.sample(goals, min(n // 2, len(goals)))]
    out += [" ".join(rng.sample(words, rng.randint(1, 4))) for _ in range(n - len(out))]
    return out


def _same_catalog_and_play(memory, compact, episodes: int) -> None:
    assert list(memory.data.products) == list(compact.data.products)
    assert list(memory.data.goals) == list(compact.data.goals)
    assert list(memory.task_ids) == list(compact.task_ids)
    assert all(memory.data.prices[a] == compact.data.prices[a] for a in memory.data.prices)
    assert compact.task_ids.index(memory.task_ids[-1]) == len(memory.task_ids) - 1
    # top-50 lists: the compact catalog's memory-mapped index vs the in-memory one, and both
    # vs the ranking as it was (bm25s' own get_scores, full lexsort)
    bm25 = memory.engine.retriever._bm25
    for q in _queries(memory, 300):
        tokens = tokenize(q)
        before = (
            [memory.engine.retriever.ids[i] for i in _lexsort_top(bm25.get_scores(tokens), 50)]
            if tokens
            else []
        )
        assert compact.engine.top_n(q) == memory.engine.top_n(q) == before, q
    # pages, infos and rewards along expert runs and seeded random walks
    rng = random.Random(1)
    for i in range(min(episodes, len(memory.task_ids))):
        assert run_expert(memory, i) == run_expert(compact, i)
        om, im = memory.reset(options={"task_index": i})
        oc, ic = compact.reset(options={"task_index": i})
        assert (om, im) == (oc, ic)
        for _ in range(8):
            action = rng.choice(im["admissible_actions"])
            if action == "search[<query>]":
                action = f"search[{memory.goals[i]['instruction_text']}]"
            rm, rc = memory.step(action), compact.step(action)
            assert rm == rc, action
            im = rm[4]
            if rm[2] or rm[3]:
                break


def test_compact_catalog_is_the_in_memory_one_on_the_bundled_data(tmp_path):
    memory, compact = _pair(tmp_path, bundled_dir())
    _same_catalog_and_play(memory, compact, episodes=20)
    assert memory.engine.special_results("<r>", random.Random(3)) == (
        compact.engine.special_results("<r>", random.Random(3))
    )
    for q in ("<c> beauty", "<q> shampoo", "<a> sulfate free"):
        assert memory.engine.special_results(q, random.Random(0)) == (
            compact.engine.special_results(q, random.Random(0))
        )


def test_compact_catalog_is_the_in_memory_one_on_the_real_sample(tmp_path, realdata):
    folder = realdata / "webshop"
    if not (folder / "items_processed_1000.json").exists():
        pytest.skip("items_processed_1000.json not in the real sample")
    memory, compact = _pair(tmp_path, folder, split="all")
    _same_catalog_and_play(memory, compact, episodes=10)


def test_scores_equal_bm25s_own(tmp_path):
    env = WebShopEnv(split="test", data_dir=bundled_dir(), catalog="compact", cache_dir=tmp_path)
    retriever = env.engine.retriever
    assert isinstance(retriever, BM25sRetriever)
    for q in _queries(env, 40):
        ours = retriever.scores(q)
        theirs = retriever._bm25.get_scores(tokenize(q)) if tokenize(q) else np.zeros_like(ours)
        assert np.array_equal(ours, theirs), q


def test_store_build_is_deterministic_and_shared(tmp_path):
    data = load_data_dir(bundled_dir())
    build(tmp_path / "a", data, show_progress=False)
    build(tmp_path / "b", data, show_progress=False)
    for f in sorted((tmp_path / "a").rglob("*")):
        if f.is_file():
            assert f.read_bytes() == (tmp_path / "b" / f.relative_to(tmp_path / "a")).read_bytes()
    # two envs of one process share the catalog and the search engine
    kw = {"split": "test", "data_dir": bundled_dir(), "catalog": "compact", "cache_dir": tmp_path}
    one, two = WebShopEnv(**kw), WebShopEnv(**kw)
    assert one.data is two.data and one.engine is two.engine


def test_unfinished_or_damaged_store_is_rebuilt(tmp_path):
    data = load_data_dir(bundled_dir())
    folder = tmp_path / "catalog"
    build(folder, data, show_progress=False)
    (folder / "meta.json").write_text(json.dumps({"version": -1}))
    reopened = open_or_build(folder, lambda: load_data_dir(bundled_dir()), show_progress=False)
    assert len(reopened.products) == len(data.products)
    assert reopened.products[5] == data.products[5]


def test_catalog_option_errors(tmp_path):
    with pytest.raises(ValueError, match="catalog must be one of"):
        WebShopEnv(data_dir=bundled_dir(), catalog="disk", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="needs a disk cache"):
        WebShopEnv(data_dir=bundled_dir(), catalog="compact", cache_dir=False)
    with pytest.raises(ValueError, match="needs data_dir"):
        WebShopEnv(catalog="compact")
    # auto: a small products file stays in memory
    env = WebShopEnv(split="test", data_dir=bundled_dir(), cache_dir=tmp_path)
    assert not isinstance(env.data, CompactData)


def test_bad_files_are_refused_before_any_store_is_written(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "items_shuffle_x.json").write_text('[{"asin": 3}]')
    with pytest.raises(DataFileError, match="items_shuffle_x.json"):
        WebShopEnv(data_dir=folder, catalog="compact", cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("**/meta.json"))
