"""FlashRAG / Search-R1 data formats: corpus jsonl and QA jsonl; the bundled set's paths.

docs/environments.md, "mvpo/SearchQA-v0", Data:

* corpus jsonl, one passage a line: ``{"id": "0", "contents": "\\"Title\\"\\ntext"}`` (wiki-18 as
  FlashRAG and Search-R1 ship it); lines with ``title`` + ``text`` instead of ``contents`` are
  accepted and turned into that form;
* QA jsonl, one question a line: ``{"id", "question", "golden_answers": [...]}``, plus optional
  ``type`` and ``metadata`` (the bundled set stores ``bridge``, ``entities``, ``relations`` and
  ``supporting_ids`` there).

The bundled generated set lives in ``data/searchqa/`` (``$MVPO_DATA`` overrides ``data/``):
``corpus.jsonl``, ``train.jsonl``, ``test.jsonl`` (see :mod:`mvpo_envs.searchqa.generate`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mvpo_envs.searchqa.protocol import split_contents

BUNDLED_SPLITS = {"train": "train.jsonl", "test": "test.jsonl", "eval": "test.jsonl"}


def project_data_dir() -> Path:
    """The project's ``data/`` folder (``$MVPO_DATA`` overrides it)."""
    env = os.environ.get("MVPO_DATA")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[2] / "data"


def bundled_dir() -> Path:
    return project_data_dir() / "searchqa"


def bundled_corpus_path() -> Path:
    return bundled_dir() / "corpus.jsonl"


def bundled_qa_path(split: str) -> Path:
    if split not in BUNDLED_SPLITS:
        raise ValueError(
            f"the bundled SearchQA set has splits {sorted(BUNDLED_SPLITS)}, not {split!r}"
        )
    return bundled_dir() / BUNDLED_SPLITS[split]


@dataclass(frozen=True)
class Doc:
    """One passage. ``contents`` is ``"Title"\\ntext``; ``title`` drops the quotes."""

    id: str
    contents: str

    @property
    def title(self) -> str:
        return split_contents(self.contents)[0].strip().strip('"')

    @property
    def text(self) -> str:
        return split_contents(self.contents)[1]


@dataclass
class Corpus:
    """Passages in file order, with an id index and a content hash (the index-cache key)."""

    docs: list[Doc]
    content_hash: str
    path: Path | None = None
    _by_id: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {d.id: i for i, d in enumerate(self.docs)}
        if len(self._by_id) != len(self.docs):
            raise ValueError(f"corpus {self.path or ''}: duplicate passage ids")

    def __len__(self) -> int:
        return len(self.docs)

    def __getitem__(self, index: int) -> Doc:
        return self.docs[index]

    def get(self, doc_id: str) -> Doc | None:
        index = self._by_id.get(doc_id)
        return None if index is None else self.docs[index]

    @classmethod
    def from_docs(cls, docs: Iterable[Doc]) -> Corpus:
        """An in-memory corpus; its hash is that of its canonical jsonl serialisation."""
        docs = list(docs)
        digest = hashlib.sha256()
        for d in docs:
            digest.update(json.dumps({"id": d.id, "contents": d.contents}).encode() + b"\n")
        return cls(docs, digest.hexdigest())


@dataclass(frozen=True)
class QAItem:
    """One question. ``type`` and ``metadata`` are optional (real datasets rarely have them)."""

    id: str
    question: str
    golden_answers: list[str]
    type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": self.id,
            "question": self.question,
            "golden_answers": self.golden_answers,
        }
        if self.type is not None:
            row["type"] = self.type
        if self.metadata:
            row["metadata"] = self.metadata
        return row


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def read_jsonl(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Rows of a ``.jsonl`` (or ``.jsonl.gz``) file; blank lines skipped; clear errors."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({err})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object")
            yield row


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict[str, Any]]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def load_corpus(path: str | os.PathLike) -> Corpus:
    """Load a FlashRAG/Search-R1 corpus jsonl; ids are strings (line number when absent)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    docs = []
    for i, row in enumerate(read_jsonl(path)):
        if "contents" in row:
            contents = str(row["contents"])
        elif "text" in row:
            contents = f'"{row.get("title", "")}"\n{row["text"]}'
        else:
            raise ValueError(f"{path}: passage {i} has neither 'contents' nor 'text'")
        docs.append(Doc(str(row.get("id", i)), contents))
    if not docs:  # an index over nothing failed deep inside bm25s ("max() arg is empty")
        raise ValueError(f"{path}: the corpus holds no passages")
    return Corpus(docs, file_sha256(path), path)


_CORPORA: dict[tuple[str, int, int], Corpus] = {}


def load_corpus_shared(path: str | os.PathLike) -> Corpus:
    """:func:`load_corpus` once per process and file version (path, size, mtime).

    Every env of a synchronous vector env asks for the same corpus; this parses and hashes it
    once.
    """
    resolved = Path(path).expanduser().resolve()
    stat = resolved.stat()
    key = (str(resolved), stat.st_size, stat.st_mtime_ns)
    if key not in _CORPORA:
        _CORPORA[key] = load_corpus(resolved)
    return _CORPORA[key]


def load_qa(path: str | os.PathLike) -> list[QAItem]:
    """Load a FlashRAG QA jsonl, sorted by id (task order must not depend on file order)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"QA file not found: {path}")
    items = []
    for i, row in enumerate(read_jsonl(path)):
        answers = row.get("golden_answers", row.get("answers", row.get("answer")))
        if answers is None or "question" not in row:
            raise ValueError(f"{path}: item {i} needs 'question' and 'golden_answers'")
        answers = [answers] if isinstance(answers, str) else [str(a) for a in answers]
        metadata = row.get("metadata") or {}
        qtype = row.get("type", metadata.get("type") if isinstance(metadata, dict) else None)
        items.append(
            QAItem(str(row.get("id", i)), str(row["question"]), answers, qtype, dict(metadata))
        )
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate question ids")
    return sorted(items, key=lambda item: item.id)


def resolve_qa_path(qa_path: str | os.PathLike | None, split: str) -> Path:
    """``qa_path`` itself, ``qa_path/<split>.jsonl`` when it is a folder, else the bundled split."""
    if qa_path is None:
        return bundled_qa_path(split)
    path = Path(qa_path).expanduser()
    if path.is_dir():
        for name in (f"{split}.jsonl", f"{split}.jsonl.gz"):
            if (path / name).is_file():
                return path / name
        raise FileNotFoundError(f"no {split}.jsonl in {path}")
    return path


def subset(items: Sequence[QAItem], max_items: int | None) -> list[QAItem]:
    return list(items) if max_items is None else list(items)[:max_items]
