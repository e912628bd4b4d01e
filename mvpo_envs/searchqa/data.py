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

Bad files (docs/searchqa.md, "Bad files"): every row's fields and types are checked at load; a
problem is one :class:`~mvpo_envs.data_files.DataFileError` line naming the file, the line and
the field, and nothing is returned half-loaded. A question nobody can play or win (an empty
question, no golden answer, a golden answer that normalises to nothing) and a passage with no
text are refused the same way.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mvpo_envs.data_files import DataFileError, check_depth, decode_utf8, refuse_surrogates
from mvpo_envs.searchqa.metrics import normalize_answer
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


_WORD = re.compile(r"\w")
#: longest value shown in an error line
_SHOW_CHARS = 60


class RowError(Exception):
    """A bad field of a row; :func:`read_rows` adds the file and line (internal)."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")


def _describe(value: Any) -> str:
    shown = repr(value)
    shown = shown if len(shown) <= _SHOW_CHARS else shown[: _SHOW_CHARS - 3] + "..."
    return f"{type(value).__name__} {shown}"


def read_rows(path: str | os.PathLike, what: str = "data file") -> Iterator[tuple[int, Any]]:
    """``(line number, row object)`` of a ``.jsonl`` (or ``.jsonl.gz``) file; blank lines
    skipped. Invalid UTF-8, invalid JSON, a row that is not a JSON object, excessive nesting
    and a corrupt gzip stream are one :class:`DataFileError` line naming the file and line."""
    path = Path(path)
    lineno = 0
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                where = f"{path}, line {lineno}"
                line = decode_utf8(raw, where, what)
                check_depth(line, where)
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DataFileError(f"{where}: not valid JSON ({err.msg})") from None
                except ValueError:  # an integer literal of more than 4300 digits
                    raise DataFileError(f"{where}: an integer of more than 4300 digits") from None
                refuse_surrogates(row, where, line)
                if not isinstance(row, dict):
                    raise DataFileError(
                        f"{where}: expected a JSON object, got {type(row).__name__}"
                    )
                yield lineno, row
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        if isinstance(err, FileNotFoundError):
            raise
        raise DataFileError(f"{path}, line {lineno + 1}: cannot read {what} ({err})") from None


def read_jsonl(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Rows of a ``.jsonl`` (or ``.jsonl.gz``) file (:func:`read_rows` without line numbers)."""
    for _, row in read_rows(path):
        yield row


def _row_id(row: dict[str, Any], default: int) -> str:
    """``id``: a string or an integer (the row's index when absent)."""
    value = row.get("id", default)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RowError("id", f"expected a string or an integer, got {_describe(value)}")
    text = str(value)
    if not text.strip():
        raise RowError("id", "is empty")
    return text


def _row_text(row: dict[str, Any], key: str) -> str:
    value = row[key]
    if not isinstance(value, str):
        raise RowError(key, f"expected a string, got {_describe(value)}")
    return value


def passage_from_row(row: dict[str, Any], index: int) -> Doc:
    """One corpus row -> :class:`Doc` (``contents``, else ``title`` + ``text``)."""
    if "contents" in row:
        contents, key = _row_text(row, "contents"), "contents"
    elif "text" in row:
        title = _row_text(row, "title") if row.get("title") is not None else ""
        contents, key = f'"{title}"\n{_row_text(row, "text")}', "text"
    else:
        raise RowError("contents", "missing (a passage needs 'contents', or 'title' and 'text')")
    if not _WORD.search(contents):
        raise RowError(key, f"has no words: nothing to retrieve, got {_describe(row[key])}")
    return Doc(_row_id(row, index), contents)


def _answers(row: dict[str, Any]) -> list[str]:
    key = next((k for k in ("golden_answers", "answers", "answer") if k in row), None)
    if key is None:
        raise RowError("golden_answers", "missing (a question needs its golden answers)")
    value = row[key]
    answers = [value] if isinstance(value, str) else value
    if not isinstance(answers, list):
        raise RowError(key, f"expected a list of strings, got {_describe(value)}")
    if not answers:
        raise RowError(key, "is empty: no answer can win this question")
    for i, answer in enumerate(answers):
        field_name = key if isinstance(value, str) else f"{key}[{i}]"
        if not isinstance(answer, str):
            raise RowError(field_name, f"expected a string, got {_describe(answer)}")
        if not normalize_answer(answer):  # "" or "the": an empty answer would match it
            raise RowError(field_name, f"normalises to nothing: it is no answer, got {answer!r}")
    return answers


def _metadata(row: dict[str, Any]) -> dict[str, Any]:
    """``metadata``: an object whose keys the env reads have the types it expects."""
    meta = row.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise RowError("metadata", f"expected a JSON object, got {_describe(meta)}")
    for key in ("type", "bridge"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise RowError(f"metadata.{key}", f"expected a string, got {_describe(meta[key])}")
    for key, kinds, wanted in (
        ("entities", (str,), "a string"),
        ("supporting_ids", (str, int), "a string or an integer"),
    ):
        values = meta.get(key)
        if values is None:
            continue
        if not isinstance(values, list):
            raise RowError(f"metadata.{key}", f"expected a list, got {_describe(values)}")
        for i, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, kinds):
                raise RowError(f"metadata.{key}[{i}]", f"expected {wanted}, got {_describe(value)}")
    return meta


def question_from_row(row: dict[str, Any], index: int) -> QAItem:
    """One QA row -> :class:`QAItem`; a question nobody can play or win is refused."""
    if "question" not in row:
        raise RowError("question", "missing (a QA row needs 'question' and 'golden_answers')")
    question = _row_text(row, "question")
    if not question.strip():
        raise RowError("question", "is empty: nobody can play it")
    answers = _answers(row)
    metadata = _metadata(row)
    qtype = row.get("type", metadata.get("type"))
    if qtype is not None and not isinstance(qtype, str):
        raise RowError("type", f"expected a string, got {_describe(qtype)}")
    return QAItem(_row_id(row, index), question, answers, qtype, dict(metadata))


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
    # an index over nothing failed deep inside bm25s ("max() arg is empty"): refused here
    docs = _read_records(
        path, "corpus file", passage_from_row, "passage", "the corpus holds no passages"
    )
    return Corpus(docs, file_sha256(path), path)


def _read_records(
    path: Path, what: str, from_row: Callable[[dict[str, Any], int], Any], kind: str, empty: str
) -> list[Any]:
    """Every row of a JSON Lines file through ``from_row(row, index)``; a bad row, a duplicate
    ``id`` or an empty file is one :class:`DataFileError` naming the file and the line."""
    records: list[Any] = []
    lines: dict[str, int] = {}
    for lineno, row in read_rows(path, what):
        try:
            record = from_row(row, len(records))
        except RowError as err:
            raise DataFileError(f"{path}, line {lineno}: {err}") from None
        if record.id in lines:
            raise DataFileError(
                f"{path}, line {lineno}: id: duplicate {kind} id {record.id!r} (first at line "
                f"{lines[record.id]})"
            )
        lines[record.id] = lineno
        records.append(record)
    if not records:
        raise DataFileError(f"{path}: {empty}")
    return records


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
    items = _read_records(
        path, "QA file", question_from_row, "question", "the QA file holds no questions"
    )
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
