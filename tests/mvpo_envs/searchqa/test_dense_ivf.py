"""The dense retriever's IVF option and its resumable embedding shards (docs/searchqa.md,
"Large corpora"): real MiniLM and real faiss on the bundled corpus (394 passages) and
slices of it. The embeddings are cached under the repository's ignored ``.cache/``."""

from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np
import pytest

from mvpo_envs.searchqa.data import (
    Corpus,
    bundled_corpus_path,
    bundled_qa_path,
    load_corpus,
    load_qa,
)
from mvpo_envs.searchqa.retrievers import shared_retriever
from mvpo_envs.searchqa.retrievers.build_embeddings import main
from mvpo_envs.searchqa.retrievers.dense import (
    DenseRetriever,
    build_ivf,
    default_nlist,
    default_nprobe,
    embeddings_folder,
    read_index_mmap,
    train_rows,
)
from mvpo_envs.searchqa.retrievers.embeddings import (
    embed_corpus,
    iter_shards,
    load_rows,
    rows_done,
    rows_written,
    shard_path,
)

CACHE = Path(__file__).resolve().parents[3] / ".cache" / "searchqa-tests"


@pytest.fixture(scope="module")
def flat() -> DenseRetriever:
    """The exact index of the bundled corpus (embeddings cached in ``.cache/``)."""
    return DenseRetriever(load_corpus(bundled_corpus_path()), cache_dir=CACHE)


@pytest.fixture(scope="module")
def corpus(flat: DenseRetriever) -> Corpus:
    return flat.corpus


@pytest.fixture(scope="module")
def questions() -> list[str]:
    """50 of the test questions (every fourth: each kind), to keep the encoding short."""
    return [item.question for item in load_qa(bundled_qa_path("test"))][::4]


def _ids(rows) -> list[list[str]]:
    return [[h["id"] for h in hits] for hits in rows]


def _recall(exact, approx) -> float:
    k = len(exact[0])
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(exact, approx, strict=True)]))


def test_default_nprobe_scans_a_quarter_of_the_lists_at_least_64(flat, corpus) -> None:
    """A fixed nprobe loses recall as the corpus grows (benchmarks/results/searchqa_scale.md:
    recall@3 0.84 at nprobe 64 on a million passages): the default scales with nlist."""
    assert [default_nprobe(n) for n in (10, 64, 202, 256, 707, 1000, 4600)] == [
        10, 64, 64, 64, 177, 250, 1150,
    ]  # fmt: skip
    ivf = DenseRetriever(corpus, cache_dir=CACHE, model=flat.model, index="ivf")
    assert ivf.nprobe == ivf.describe()["nprobe"] == 10  # all 10 lists of the bundled corpus


def test_ivf_probing_every_list_is_the_exact_search(flat, corpus, questions) -> None:
    nlist = default_nlist(len(corpus))
    assert nlist == 10  # round(sqrt(394)), under 394 / 39
    ivf = DenseRetriever(corpus, cache_dir=CACHE, model=flat.model, index="ivf", nprobe=nlist)
    exact, approx = flat.search(questions, 5), ivf.search(questions, 5)
    assert _ids(approx) == _ids(exact)
    scores_e = [h["score"] for hits in exact for h in hits]
    scores_a = [h["score"] for hits in approx for h in hits]
    assert np.allclose(scores_a, scores_e, atol=1e-5)
    assert ivf.describe() == {**flat.describe(), "index": "ivf", "nlist": nlist, "nprobe": nlist}


def test_nprobe_trades_recall_and_is_not_part_of_the_cache_key(flat, corpus, questions) -> None:
    exact = _ids(flat.search(questions, 5))
    recalls = []
    dirs = set()
    for nprobe in (1, 3, 10):
        ivf = DenseRetriever(corpus, cache_dir=CACHE, model=flat.model, index="ivf", nprobe=nprobe)
        dirs.add(ivf.index_dir)
        recalls.append(_recall(exact, _ids(ivf.search(questions, 5))))
    assert len(dirs) == 1  # one index, searched three ways
    assert recalls[0] < recalls[1] <= recalls[2] == 1.0
    other = DenseRetriever(corpus, cache_dir=CACHE, model=flat.model, index="ivf", nlist=5)
    assert other.index_dir != ivf.index_dir and other.index_dir.name.startswith("faiss-ivf-")


def test_ivf_build_is_seeded_and_deterministic(flat, corpus) -> None:
    folder = embeddings_folder(flat)
    assert rows_done(folder, len(corpus)) == len(corpus)
    n = len(corpus)
    assert np.array_equal(train_rows(n, 100, 0), train_rows(n, 100, 0))
    assert not np.array_equal(train_rows(n, 100, 0), train_rows(n, 100, 1))
    assert np.array_equal(train_rows(n, 500, 0), np.arange(n))
    one = faiss.serialize_index(build_ivf(folder, n, 10, 200, seed=0))
    two = faiss.serialize_index(build_ivf(folder, n, 10, 200, seed=0))
    three = faiss.serialize_index(build_ivf(folder, n, 10, 200, seed=1))
    assert np.array_equal(one, two) and not np.array_equal(one, three)
    # IVF-PQ: PQ codes in the lists (4 bytes per passage), still finds a passage by its text.
    # pq_m=4, not the docs' 48: faiss trains one k-means per sub-quantizer, so the build's CPU
    # time grows with pq_m (about 1.7 CPU s each here: 79 s for 48, 7 s for 4)
    pq = DenseRetriever(corpus, cache_dir=CACHE, model=flat.model, index="ivf", pq_m=4, nprobe=10)
    assert faiss.extract_index_ivf(read_index_mmap(pq.index_dir / "index.faiss")).code_size == 4
    assert pq.search([corpus[7].contents], 1)[0][0]["id"] == corpus[7].id


def test_the_ivf_index_is_memory_mapped(tmp_path: Path) -> None:
    vectors = np.random.default_rng(0).standard_normal((40_000, 64)).astype(np.float32)
    index = faiss.index_factory(64, "IVF16,Flat", faiss.METRIC_INNER_PRODUCT)
    index.train(vectors[:2000])
    index.add(vectors)
    faiss.write_index(index, str(tmp_path / "index.faiss"))  # 10 MiB of lists
    del index

    def anon_mib() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no RssAnon")

    before = anon_mib()
    mapped = read_index_mmap(tmp_path / "index.faiss")
    faiss.extract_index_ivf(mapped).nprobe = 16
    _, found = mapped.search(vectors[:5], 1)
    assert found[:, 0].tolist() == [0, 1, 2, 3, 4]
    assert anon_mib() - before < 5  # a copy would add 10 MiB of anonymous memory


def test_bad_settings_are_one_clear_error(corpus, flat) -> None:
    cases = [
        ({"index": "hnsw"}, "index must be one of"),
        ({"index": "ivf", "nprobe": 0}, "nprobe must be an int >= 1"),
        ({"index": "ivf", "nlist": 1000}, "nlist 1000 is over the corpus size 394"),
        ({"index": "ivf", "seed": -1}, "seed must be an int >= 0"),
        ({"index": "ivf", "pq_m": 7}, "pq_m must divide the embedding size 384"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            DenseRetriever(corpus, cache_dir=CACHE, model=flat.model, **kwargs)


def test_env_kwargs_reach_the_ivf_index_and_instances_are_shared(corpus, flat) -> None:
    kwargs = {"cache_dir": str(CACHE), "model": flat.model, "index": "ivf", "nprobe": 4}
    one = shared_retriever("dense", corpus, **kwargs)
    assert one is shared_retriever("dense", corpus, **kwargs)
    assert one.describe()["nprobe"] == 4


class _Counting:
    """The real encoder, counting what it is asked to encode (and failing on call ``fail``)."""

    def __init__(self, encode, fail: int | None = None):
        self.encode, self.fail, self.calls, self.texts = encode, fail, 0, 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail:
            raise KeyboardInterrupt  # a build stopped in the middle
        self.texts += len(texts)
        return self.encode(texts)


def test_embedding_build_resumes_where_it_stopped(flat, corpus, tmp_path: Path) -> None:
    small = Corpus.from_docs(corpus.docs[:20])
    meta = flat.embedding_meta()
    whole = tmp_path / "whole"
    assert embed_corpus(small, flat.encode, whole, meta, shard_rows=8)
    reference = np.concatenate(list(iter_shards(whole)))
    assert reference.shape == (20, 384)

    folder = tmp_path / "resumed"
    first = _Counting(flat.encode)
    assert not embed_corpus(small, first, folder, meta, shard_rows=8, limit=9)
    assert (first.calls, first.texts, rows_done(folder, 20, 8)) == (2, 16, 16)
    assert not (folder / "DONE").exists()
    stopped = _Counting(flat.encode, fail=1)  # killed while encoding the last shard
    with pytest.raises(KeyboardInterrupt):
        embed_corpus(small, stopped, folder, meta, shard_rows=8)
    assert not list(folder.glob("*.tmp")) and not shard_path(folder, 2).exists()
    resumed = _Counting(flat.encode)
    assert embed_corpus(small, resumed, folder, meta, shard_rows=8)
    assert (resumed.calls, resumed.texts) == (1, 4)  # only the missing shard
    assert np.array_equal(np.concatenate(list(iter_shards(folder))), reference)
    rows = np.array([19, 0, 9])
    assert np.array_equal(load_rows(folder, rows), reference[rows])
    with pytest.raises(RuntimeError, match="delete it to rebuild"):
        embed_corpus(small, flat.encode, folder, {**meta, "passage_prefix": "x"}, shard_rows=8)
    # two processes' parts (shards 0, 2 and shard 1) make the same folder
    shared = tmp_path / "parts"
    assert not embed_corpus(small, flat.encode, shared, meta, shard_rows=8, part=(0, 2))
    assert rows_done(shared, 20, 8) == 8 and rows_written(shared, 20, 8) == 12
    # a part's own rows (its rate in the build report): the other part's shards not counted
    assert rows_written(shared, 20, 8, part=(0, 2)) == 12
    assert rows_written(shared, 20, 8, part=(1, 2)) == 0
    assert embed_corpus(small, flat.encode, shared, meta, shard_rows=8, part=(1, 2))
    assert np.array_equal(np.concatenate(list(iter_shards(shared))), reference)
    with pytest.raises(ValueError, match="part must be"):
        embed_corpus(small, flat.encode, shared, meta, shard_rows=8, part=(2, 2))


def test_command_line_build(flat, corpus, tmp_path: Path, capsys) -> None:
    path = tmp_path / "corpus.jsonl"
    with path.open("w") as f:
        for doc in corpus.docs[:30]:
            f.write(json.dumps({"id": doc.id, "contents": doc.contents}) + "\n")
    assert main(["--corpus_path", str(path), "--cache_dir", str(tmp_path), "--index", "ivf"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["rows_done"] == report["embedded_now"] == 30 and report["complete"]
    assert report["part"] == "1/1" and report["rows_written"] == 30
    small = load_corpus(path)
    ivf = DenseRetriever(small, cache_dir=tmp_path, model=flat.model, index="ivf")
    assert not ivf.built_now  # the command built and cached it
