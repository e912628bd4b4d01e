"""Large corpora: distractor passages, the compact corpus store, memory-mapped indexes.

docs/searchqa.md, "Large corpora". The compact store must give exactly the in-memory corpus
(same passages, ids, hash, rankings and episodes), refuse bad files the same way, and map
its files read-only so every env shares them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from mvpo_envs import cache_files
from mvpo_envs.data_files import DataFileError
from mvpo_envs.searchqa.data import bundled_corpus_path, load_corpus, load_qa
from mvpo_envs.searchqa.distractors import distractor_passages
from mvpo_envs.searchqa.generate import main as generate_main
from mvpo_envs.searchqa.generate import write_bundle
from mvpo_envs.searchqa.metrics import normalize_answer
from mvpo_envs.searchqa.retrievers.bm25 import BM25Retriever
from mvpo_envs.searchqa.store import (
    CompactCorpus,
    load_corpus_compact,
    open_corpus,
    open_or_build,
)


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> Path:
    """The bundled world plus 3,000 distractors, written by the generator."""
    folder = tmp_path_factory.mktemp("large")
    write_bundle(folder, seed=0, distractors=3000)
    return folder


def test_distractors_are_deterministic_and_never_name_the_world(large: Path) -> None:
    bundled = load_corpus(bundled_corpus_path())
    world = {normalize_answer(d.title) for d in bundled.docs}
    a = list(distractor_passages(0, 500, 394, [d.title for d in bundled.docs]))
    b = list(distractor_passages(0, 500, 394, [d.title for d in bundled.docs]))
    c = list(distractor_passages(1, 500, 394, [d.title for d in bundled.docs]))
    assert a == b and a != c
    assert [d.id for d in a] == [str(i) for i in range(394, 894)]
    for doc in a:
        text = normalize_answer(doc.contents)
        assert not any(name in text for name in world), doc.contents
    # the generator: the world's passages and the questions are those of the bundled set
    corpus = load_corpus(large / "corpus.jsonl")
    assert len(corpus) == 394 + 3000
    assert corpus.docs[:394] == bundled.docs
    assert (large / "train.jsonl").read_bytes() == (
        bundled_corpus_path().parent / "train.jsonl"
    ).read_bytes()
    meta = json.loads((large / "meta.json").read_text())
    assert meta["passages"] == 3394 and meta["distractors"] == 3000
    # a reserved name is never used, even when it is a distractor's own kind of name
    taken = [d.title for d in a[:50]]
    for doc in distractor_passages(0, 300, 0, taken):
        assert doc.title not in taken


def test_generator_cli_distractors(tmp_path: Path, capsys) -> None:
    assert generate_main(["--out", str(tmp_path), "--distractors", "20"]) == 0
    assert json.loads(capsys.readouterr().out.strip())["passages"] == 414
    with pytest.raises(SystemExit):
        generate_main(["--out", str(tmp_path), "--distractors", "-1"])
    assert "--distractors" in capsys.readouterr().err


def test_compact_corpus_is_the_in_memory_corpus(large: Path, tmp_path: Path, monkeypatch) -> None:
    memory = load_corpus(large / "corpus.jsonl")
    compact = open_or_build(large / "corpus.jsonl", tmp_path, show_progress=False)
    assert isinstance(compact, CompactCorpus)
    assert len(compact) == len(memory) and compact.content_hash == memory.content_hash
    assert list(compact.docs) == memory.docs
    assert compact[-1] == memory[-1] and compact.docs[5:8] == memory.docs[5:8]
    for i in random.Random(0).sample(range(len(memory)), 100):
        assert compact.get(memory[i].id) == memory[i]
    assert compact.get("no such id") is None and compact.get(12) is None
    with pytest.raises(IndexError):
        compact[len(memory)]
    # opened again: the same folder, nothing rebuilt; a small folder is read into memory (no
    # SIGBUS when a file is truncated under the process), a large one mapped read-only
    again = open_or_build(large / "corpus.jsonl", tmp_path, show_progress=False)
    assert again.folder == compact.folder
    assert not isinstance(again._blob, np.memmap)
    monkeypatch.setattr(cache_files, "VERIFY_BYTES", 1000)
    mapped = CompactCorpus(again.folder)
    assert isinstance(mapped._blob, np.memmap) and not mapped._off.flags.writeable
    assert list(mapped.docs) == memory.docs
    # one instance per process and cache folder
    assert load_corpus_compact(large / "corpus.jsonl", tmp_path) is load_corpus_compact(
        large / "corpus.jsonl", tmp_path
    )


def test_compact_store_refuses_bad_files_like_the_loader(tmp_path: Path) -> None:
    dup = tmp_path / "dup.jsonl"
    dup.write_text(
        '{"id": "a", "contents": "\\"A\\"\\nalpha"}\n{"id": "b", "contents": "beta"}\n'
        '{"id": "a", "contents": "gamma"}\n'
    )
    with pytest.raises(DataFileError, match=r"dup.jsonl, line 3: id: duplicate passage id 'a' "):
        open_or_build(dup, tmp_path / "cache", show_progress=False)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "contents": "ok words"}\n{"id": "b", "contents": 3}\n')
    with pytest.raises(DataFileError, match=r"bad.jsonl, line 2: contents: expected a string"):
        open_or_build(bad, tmp_path / "cache", show_progress=False)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataFileError, match="holds no passages"):
        open_or_build(empty, tmp_path / "cache", show_progress=False)
    assert not any((tmp_path / "cache").glob("corpus-*"))  # nothing half-built is left


def test_a_damaged_store_is_rebuilt(large: Path, tmp_path: Path) -> None:
    compact = open_or_build(large / "corpus.jsonl", tmp_path, show_progress=False)
    (compact.folder / "ids.npy").write_bytes(b"garbage")
    rebuilt = open_or_build(large / "corpus.jsonl", tmp_path, show_progress=False)
    assert rebuilt.get("100") == load_corpus(large / "corpus.jsonl").get("100")


def test_open_corpus_choices(large: Path, tmp_path: Path) -> None:
    path = large / "corpus.jsonl"
    assert type(open_corpus(path, "memory")).__name__ == "Corpus"
    assert isinstance(open_corpus(path, "compact", tmp_path), CompactCorpus)
    assert type(open_corpus(path, "auto", tmp_path)).__name__ == "Corpus"  # under 64 MiB
    with pytest.raises(ValueError, match="corpus_store must be one of"):
        open_corpus(path, "disk")


def test_bm25_on_the_compact_corpus_ranks_the_same_from_a_mapped_index(
    large: Path, tmp_path: Path, monkeypatch
) -> None:
    memory = load_corpus(large / "corpus.jsonl")
    compact = open_or_build(large / "corpus.jsonl", tmp_path, show_progress=False)
    a = BM25Retriever(memory, cache_dir=tmp_path / "a")
    b = BM25Retriever(compact, cache_dir=tmp_path / "b")
    queries = [q.question for q in load_qa(large / "test.jsonl")[:40]]
    assert a.search(queries, 5) == b.search(queries, 5)
    # the index folder keeps the count, not a million ids; small: in memory, large: mapped
    assert json.loads((b.index_dir / "docs.json").read_text()) == {"num_docs": len(compact)}
    assert not (b.index_dir / "doc_ids.json").exists()
    assert not isinstance(b._model.scores["data"], np.memmap)
    monkeypatch.setattr(cache_files, "VERIFY_BYTES", 1000)
    mapped = BM25Retriever(compact, cache_dir=tmp_path / "b")
    assert isinstance(mapped._model.scores["data"], np.memmap)
    assert mapped.search(queries, 5) == a.search(queries, 5)
    monkeypatch.undo()
    again = BM25Retriever(compact, cache_dir=tmp_path / "b")
    assert not again.built_now and again.search(queries, 5) == a.search(queries, 5)


def test_env_on_a_compact_corpus_plays_the_same_episodes(large: Path, tmp_path: Path) -> None:
    from mvpo_envs.searchqa.env import SearchQAEnv

    kwargs = {
        "split": "test",
        "corpus_path": str(large / "corpus.jsonl"),
        "qa_path": str(large),
        "retriever_kwargs": {"cache_dir": str(tmp_path)},
    }
    memory = SearchQAEnv(**kwargs, corpus_store="memory")
    compact = SearchQAEnv(**kwargs, corpus_store="compact")
    assert isinstance(compact.retriever.corpus, CompactCorpus)
    for seed in range(3):
        assert memory.reset(seed=seed)[0] == compact.reset(seed=seed)[0]
        action = f"<search>{memory.items[seed].question}</search>"
        assert memory.step(action)[0] == compact.step(action)[0]
    with pytest.raises(ValueError, match="corpus_store"):
        SearchQAEnv(**kwargs, corpus_store="disk")
