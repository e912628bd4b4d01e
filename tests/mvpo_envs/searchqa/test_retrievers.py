"""Retrievers behind one interface: bm25s, dense (faiss + MiniLM), pyserini (optional), HTTP.

The HTTP client is tested against the project's own server, started in-process on a free
loopback port. The dense model is loaded once for this module; its index is cached under the
repository's ignored ``.cache/`` so that later runs skip the embedding pass.
"""

from __future__ import annotations

import json
import os
import sys
import types
import urllib.error
import urllib.request
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.searchqa.data import (
    Corpus,
    Doc,
    bundled_corpus_path,
    bundled_qa_path,
    load_corpus,
    load_qa,
)
from mvpo_envs.searchqa.evaluation import oracle_em, retrieval_recall
from mvpo_envs.searchqa.oracle import OracleAgent, golden_answer_seen, run_oracle
from mvpo_envs.searchqa.retrievers import make_retriever, shared_retriever
from mvpo_envs.searchqa.retrievers.base import Retriever, index_key
from mvpo_envs.searchqa.retrievers.bm25 import BM25Retriever
from mvpo_envs.searchqa.retrievers.dense import DenseRetriever, default_model_path
from mvpo_envs.searchqa.retrievers.http import HttpRetriever
from mvpo_envs.searchqa.server import RetrievalServer

REPO = Path(__file__).resolve().parents[3]
DENSE_CACHE = REPO / ".cache" / "searchqa-tests"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus(bundled_corpus_path())


@pytest.fixture(scope="module")
def test_items():
    return load_qa(bundled_qa_path("test"))


@pytest.fixture(scope="module")
def bm25(corpus: Corpus, tmp_path_factory) -> BM25Retriever:
    return BM25Retriever(corpus, cache_dir=tmp_path_factory.mktemp("bm25"))


@pytest.fixture(scope="module")
def dense(corpus: Corpus) -> DenseRetriever:
    return DenseRetriever(corpus, cache_dir=DENSE_CACHE)


def _check_hits(rows, n_queries: int, topk: int) -> None:
    assert len(rows) == n_queries
    for hits in rows:
        assert len(hits) <= topk
        assert all(set(h) == {"id", "contents", "score"} for h in hits)
        scores = [h["score"] for h in hits]
        assert scores == sorted(scores, reverse=True)


def test_bm25_search(bm25: BM25Retriever, corpus: Corpus) -> None:
    rows = bm25.search(["Gilholm population", "Motra River lake", "Gilholm"], topk=3)
    _check_hits(rows, 3, 3)
    assert rows[0][0]["contents"].startswith('"Gilholm"')
    assert bm25.search(["zzzz qqqq"], 3) == [[]]  # like Lucene: no matching term, no hit
    assert len(bm25.search(["the river"], 1000)[0]) <= len(corpus)
    assert bm25.search([], 3) == []
    with pytest.raises(TypeError):
        bm25.search("a string", 3)
    with pytest.raises(ValueError):
        bm25.search(["x"], 0)


def test_bm25_index_cache(corpus: Corpus, tmp_path: Path) -> None:
    first = BM25Retriever(corpus, cache_dir=tmp_path)
    again = BM25Retriever(corpus, cache_dir=tmp_path)
    assert first.built_now and not again.built_now and first.index_dir == again.index_dir
    other = BM25Retriever(corpus, cache_dir=tmp_path, k1=1.2)
    assert other.index_dir != first.index_dir  # params are part of the key
    small = Corpus.from_docs(corpus.docs[:10])
    assert BM25Retriever(small, cache_dir=tmp_path).index_dir != first.index_dir  # so is the corpus
    assert (
        index_key("h", "bm25s", k1=1)
        == index_key("h", "bm25s", k1=1)
        != index_key("h2", "bm25s", k1=1)
    )


def test_dense_search_and_cache(dense: DenseRetriever, corpus: Corpus, tmp_path: Path) -> None:
    rows = dense.search(["Gilholm population", "who founded a textile company"], topk=4)
    _check_hits(rows, 2, 4)
    assert all(len(hits) == 4 for hits in rows)
    assert -1.0 <= rows[0][0]["score"] <= 1.0 + 1e-5  # cosine of normalised vectors
    assert dense.model_path == default_model_path()
    again = DenseRetriever(corpus, cache_dir=DENSE_CACHE, model=dense.model)
    assert not again.built_now and again.index_dir == dense.index_dir  # same corpus + model: reused
    # a small corpus: build in a fresh folder, then reuse
    small = Corpus.from_docs(corpus.docs[:8])
    built = DenseRetriever(small, cache_dir=tmp_path, model=dense.model)
    reused = DenseRetriever(small, cache_dir=tmp_path, model=dense.model)
    assert built.built_now and not reused.built_now
    assert reused.search([small[3].contents], 1)[0][0]["id"] == small[3].id
    with pytest.raises(FileNotFoundError):
        DenseRetriever(small, model_path=tmp_path / "no-model", cache_dir=tmp_path)


def test_pyserini_is_optional_with_a_clear_error(corpus: Corpus, monkeypatch) -> None:
    from mvpo_envs.searchqa.retrievers import pyserini as backend

    monkeypatch.setattr(backend, "_PROBED", {backend.PROBE_MODULE: "probe failed (test)"})
    monkeypatch.setitem(sys.modules, "pyserini.search.lucene", None)
    with pytest.raises(ImportError, match="probe failed.*make pyserini"):
        make_retriever("pyserini", corpus)


def test_pyserini_probe_survives_a_child_that_exits(tmp_path: Path, monkeypatch) -> None:
    """A module whose import exits the interpreter (as a JVM that cannot start does) becomes an
    ImportError here, and this process goes on."""
    from mvpo_envs.searchqa.retrievers import pyserini as backend

    (tmp_path / "jvm_exits_on_import.py").write_text(
        "import sys, os\n"
        "sys.stderr.write('Error occurred during initialization of boot layer\\n')\n"
        "sys.stderr.flush()\n"
        "os._exit(1)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(backend, "_PROBED", {})
    with pytest.raises(ImportError, match=r"exit 1: Error occurred during initialization"):
        backend.probe_import("jvm_exits_on_import", timeout=120)
    with pytest.raises(ImportError, match="exit 1"):  # remembered, not probed again
        backend.probe_import("jvm_exits_on_import", timeout=120)
    backend.probe_import("json", timeout=120)  # a module that imports fine passes
    assert backend._PROBED == {
        "jvm_exits_on_import": backend._PROBED["jvm_exits_on_import"],
        "json": "",
    }


def test_pyserini_plumbing_with_a_stand_in_searcher(
    corpus: Corpus, monkeypatch, tmp_path: Path
) -> None:
    """Our wrapper around LuceneSearcher (the real one needs Java), with a fake module."""

    class Hit:
        def __init__(self, docid: str, score: float):
            self.docid, self.score = docid, score

    class Raw:
        def __init__(self, contents: str):
            self._raw = json.dumps({"id": "x", "contents": contents})

        def raw(self) -> str:
            return self._raw

    class FakeSearcher:
        def __init__(self, index_dir: str):
            self.index_dir = index_dir

        def set_bm25(self, k1: float, b: float) -> None:
            self.bm25 = (k1, b)

        def search(self, query: str, k: int):
            return [Hit("0", 3.0), Hit("1", 2.0), Hit("2", 1.0)][:k]

        def doc(self, docid: str):
            return Raw(corpus.get(docid).contents)

    lucene = types.ModuleType("pyserini.search.lucene")
    lucene.LuceneSearcher = FakeSearcher
    monkeypatch.setitem(sys.modules, "pyserini", types.ModuleType("pyserini"))
    monkeypatch.setitem(sys.modules, "pyserini.search", types.ModuleType("pyserini.search"))
    monkeypatch.setitem(sys.modules, "pyserini.search.lucene", lucene)
    retriever = make_retriever("pyserini", None, index_dir=str(tmp_path))
    rows = retriever.search(["anything"], 2)
    assert [h["id"] for h in rows[0]] == ["0", "1"] and rows[0][0]["contents"] == corpus.get(
        "0"
    ).contents
    assert retriever._searcher.bm25 == (0.9, 0.4)


def test_http_client_against_our_server(bm25: BM25Retriever) -> None:
    queries = ["Gilholm population", "zzzz qqqq", "Motra River"]
    with RetrievalServer(bm25, port=0) as server:
        assert server.host == "127.0.0.1" and server.port > 0
        client = HttpRetriever(server.url)
        assert client.search(queries, 3) == bm25.search(queries, 3)
        # the raw wire format is Search-R1's
        body = json.dumps({"queries": ["Gilholm"], "topk": 2, "return_scores": True}).encode()
        request = urllib.request.Request(
            server.url, data=body, headers={"Content-Type": "application/json"}
        )
        reply = json.loads(urllib.request.urlopen(request, timeout=10).read())
        item = reply["result"][0][0]
        assert set(item) == {"document", "score"} and set(item["document"]) == {"id", "contents"}
        body = json.dumps(
            {"queries": ["Gilholm"], "topk": None}
        ).encode()  # default topk, no scores
        request = urllib.request.Request(
            server.url, data=body, headers={"Content-Type": "application/json"}
        )
        reply = json.loads(urllib.request.urlopen(request, timeout=10).read())
        assert len(reply["result"][0]) == 3 and set(reply["result"][0][0]) == {"id", "contents"}
        for bad in (b"not json", b'{"queries": "x"}', b'{"queries": ["x"], "topk": -1}'):
            request = urllib.request.Request(
                server.url, data=bad, headers={"Content-Type": "application/json"}
            )
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(request, timeout=10)
            assert err.value.code == 400
        health = json.loads(
            urllib.request.urlopen(server.url.replace("/retrieve", "/health"), timeout=10).read()
        )
        assert health["status"] == "ok" and health["backend"] == "bm25"
        # an env whose retriever is the HTTP client plays like one on bm25 directly
        env = gym.make(
            "mvpo/SearchQA-v0", split="test", retriever="http", retriever_kwargs={"url": server.url}
        )
        _, info = env.reset(seed=5)
        obs, *_ = env.step(f"<search>{info['task']}</search>")
        local = gym.make("mvpo/SearchQA-v0", split="test", retriever=bm25)
        _, info_local = local.reset(seed=5)
        assert info_local["task"] == info["task"]
        assert local.step(f"<search>{info['task']}</search>")[0] == obs
    with pytest.raises(ConnectionError, match="could not reach"):
        HttpRetriever(server.url, timeout=1, retries=0).search(["x"], 1)


def test_http_client_reads_search_r1_document_shapes(monkeypatch) -> None:
    client = HttpRetriever("http://127.0.0.1:9/retrieve")
    reply = {
        "result": [
            [
                {"document": {"title": "T", "text": "body", "contents": '"T"\nbody'}, "score": 1.5},
                {"document": {"id": "4", "title": "U", "text": "more"}, "score": 0.5},
            ],
            [{"id": "9", "contents": '"V"\nv'}],
        ]
    }
    monkeypatch.setattr(client, "_post", lambda payload: reply)
    rows = client.search(["a", "b"], 3)
    assert rows[0][0] == {"id": "", "contents": '"T"\nbody', "score": 1.5}
    assert rows[0][1]["contents"] == '"U"\nmore' and rows[1][0]["id"] == "9"


def test_shared_retriever_is_one_instance(corpus: Corpus, tmp_path: Path) -> None:
    a = shared_retriever("bm25", corpus, cache_dir=str(tmp_path))
    assert shared_retriever("bm25", corpus, cache_dir=str(tmp_path)) is a
    assert isinstance(a, Retriever)
    with pytest.raises(ValueError, match="unknown retriever"):
        make_retriever("elastic", corpus)


def test_small_in_memory_corpus_ranks_the_obvious_doc(tmp_path: Path) -> None:
    docs = [
        Doc(str(i), f'"Doc {w}"\nThis passage is about {w}.')
        for i, w in enumerate(["apples", "rivers", "towns"])
    ]
    retriever = BM25Retriever(Corpus.from_docs(docs), cache_dir=tmp_path)
    assert retriever.search(["rivers"], 1)[0][0]["id"] == "1"


# -- the acceptance numbers: recall@3 and oracle EM per local retriever ----------------
@pytest.mark.parametrize("backend", ["bm25", "dense"])
def test_recall_at_3(backend: str, request, test_items) -> None:
    retriever = request.getfixturevalue(backend)
    recall = retrieval_recall(retriever, test_items, k=3)
    assert recall["support_recall@3"] >= 0.95, recall
    assert recall["bridge_recall@3"] >= 0.95, recall
    assert recall["answer_recall@3"] >= 0.6, recall


@pytest.mark.parametrize("backend", ["bm25", "dense"])
def test_oracle_reaches_high_em_on_every_eval_question(backend: str, request) -> None:
    retriever = request.getfixturevalue(backend)
    env = gym.make("mvpo/SearchQA-v0", split="test", retriever=retriever)
    result = oracle_em(env)
    assert result["episodes"] == 200
    assert result["em"] >= 0.95, result
    assert set(result["by_type"]) == {"single", "bridge", "comparison"}


def _flashrag_questions(path: Path, items) -> Path:
    """A FlashRAG question file: id, question, golden_answers only (no type, no metadata)."""
    with open(path, "w", encoding="utf-8") as fh:
        for item in items:
            row = {"id": item.id, "question": item.question, "golden_answers": item.golden_answers}
            fh.write(json.dumps(row) + "\n")
    return path


def test_golden_oracle_works_on_any_flashrag_question_file(bm25, test_items, tmp_path) -> None:
    qa = _flashrag_questions(tmp_path / "test.jsonl", test_items[:40])
    env = gym.make(
        "mvpo/SearchQA-v0",
        split="test",
        qa_path=qa,
        corpus_path=bundled_corpus_path(),
        retriever=bm25,
    )
    results = [run_oracle(env, i) for i in range(40)]
    assert {r["kind"] for r in results} == {"golden"}
    for r in results:
        shown = [t["observation"] for t in r["info"]["state"]["transcript"]]
        seen = golden_answer_seen(shown, r["info"]["golden_answers"])
        # it answers a golden answer exactly when one was shown to it, "unknown" otherwise
        assert r["em"] == (1.0 if seen is not None else 0.0)
        assert r["info"]["answer"] == (seen if seen is not None else "unknown")
    assert np.mean([r["em"] for r in results]) >= 0.9
    with pytest.raises(ValueError, match="golden_answers"):
        OracleAgent().reset("a question?", {}, [])


def test_golden_oracle_on_real_flashrag_files(realdata: Path, tmp_path: Path) -> None:
    folder = realdata / "searchqa"
    env = gym.make(
        "mvpo/SearchQA-v0",
        qa_path=folder / "nq_test_17.jsonl",
        corpus_path=folder / "wiki18_sample_1000.jsonl",
        retriever_kwargs={"cache_dir": str(tmp_path)},
    )
    results = [run_oracle(env, i) for i in range(len(env.unwrapped.items))]
    assert {r["kind"] for r in results} == {"golden"} and len(results) == 17
    assert all(r["steps"] <= 3 for r in results)


def test_http_env_serves_a_long_agent_query_like_the_local_retriever(bm25: BM25Retriever) -> None:
    """A search as long as the action space allows answers over HTTP as it does locally."""
    from mvpo_envs.base import TextEnv
    from mvpo_envs.searchqa.server import MAX_QUERY_CHARS

    assert MAX_QUERY_CHARS >= TextEnv.max_text_length
    query = ("Gilholm population " * 1000)[: TextEnv.max_text_length - len("<search></search>")]
    action = f"<search>{query}</search>"
    with RetrievalServer(bm25, port=0) as server:
        remote = gym.make(
            "mvpo/SearchQA-v0", retriever="http", retriever_kwargs={"url": server.url}
        )
        local = gym.make("mvpo/SearchQA-v0", retriever=bm25)
        remote.reset(seed=1)
        local.reset(seed=1)
        obs = remote.step(action)[0]
        assert "Doc 1" in obs and obs == local.step(action)[0]


def test_pyserini_jvm_set_up(tmp_path: Path, monkeypatch) -> None:
    """The JVM start for Pyserini (docs/searchqa.md, Pyserini): which Java, which options."""
    from mvpo_envs.searchqa.retrievers import jvm

    monkeypatch.setenv(jvm.JAVA_HOME_ENV, str(tmp_path))  # no JVM there: one clear error
    with pytest.raises(ImportError, match="holds no JVM"):
        jvm.java_home()
    (tmp_path / "lib" / "server").mkdir(parents=True)
    (tmp_path / "lib" / "server" / "libjvm.so").write_bytes(b"")
    assert jvm.java_home() == tmp_path
    # Pyserini's --add-modules option only for a runtime that has the module
    monkeypatch.setattr(jvm, "java_modules", lambda home: frozenset({"java.base"}))
    assert jvm.jvm_options(tmp_path) == []
    monkeypatch.setattr(jvm, "java_modules", lambda home: frozenset({jvm.VECTOR_MODULE}))
    assert jvm.jvm_options(tmp_path) == ["--add-modules=jdk.incubator.vector"]
    # the OpenAI placeholder is set for Pyserini's import only
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with jvm._openai_placeholder():
        assert os.environ["OPENAI_API_KEY"] == jvm.OPENAI_PLACEHOLDER
    assert "OPENAI_API_KEY" not in os.environ
    assert jvm.index_command(["--threads", "1"])[1:4] == [
        "-m",
        "mvpo_envs.searchqa.retrievers.jvm",
        "index",
    ]
