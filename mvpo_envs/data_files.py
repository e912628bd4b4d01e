"""Reading untrusted data files: JSON, JSON Lines and YAML that fail in one line naming the file.

Data is untrusted input (docs/environments.md, "Bad data never loads half"): a loader never
runs code from it, and every problem with it is a :class:`DataFileError` whose message names
the file and, where known, the line, record and field. The helpers here are the one place that turns the standard
parsers' failures into such a line:

* invalid UTF-8 names the byte offset;
* a syntax error names the line and column;
* nesting deeper than :data:`MAX_DEPTH` levels (a 5,000-deep ``[[[...]]]`` would otherwise
  raise ``RecursionError`` from the parser) is refused before parsing;
* a YAML mapping with a duplicate key is refused (PyYAML keeps the last value silently);
* YAML is read with the safe loader only (no Python object tags);
* a string holding a lone surrogate (``"\\ud800"``: valid JSON in a valid UTF-8 file, but not
  text: it cannot be encoded, tokenised or sent) is refused, naming the record and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: deepest nesting of lists/mappings accepted in a data or config file; no real file of the
#: three benchmarks nests deeper than 8
MAX_DEPTH = 100
_AS_PARENS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
#: a JSON string literal (escapes included), for ignoring the brackets inside strings
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


#: a JSON escape of a UTF-16 surrogate: only text holding one can parse to a lone surrogate
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class DataFileError(ValueError):
    """A data file is missing, unreadable or malformed; the message names the file (and the
    line, record or field where known) in one line."""


def read_text(path: str | Path, what: str = "data file") -> str:
    """The file's text as UTF-8; a missing file or invalid UTF-8 is a :class:`DataFileError`."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataFileError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise DataFileError(f"{path}: {what} is a folder, expected a file") from None
    except OSError as err:
        raise DataFileError(f"{path}: cannot read {what} ({err.strerror or err})") from None
    return decode_utf8(raw, path, what)


def decode_utf8(raw: bytes, source: str | Path, what: str = "data file") -> str:
    """``raw`` decoded as UTF-8 (a BOM is dropped); invalid bytes name their offset."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataFileError(
            f"{source}: {what} is not valid UTF-8 (byte {err.start}, line {line})"
        ) from None


def check_depth(
    text: str | bytes,
    source: str | Path,
    max_depth: int = MAX_DEPTH,
    json_strings: bool = True,
) -> None:
    """Refuse text whose brackets nest deeper than ``max_depth``.

    With ``json_strings`` (JSON text), brackets inside double-quoted strings do not count, so
    the bound is exact for JSON; without it (YAML, whose quoting rules differ) every bracket
    counts, a conservative bound that is never too lax. Only text with more than
    ``max_depth`` opening brackets is looked at further, so ordinary files cost two counts.
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return
    if _bracket_bound(raw, max_depth) <= max_depth:
        return
    if json_strings:  # brackets in strings ("[[[" in a query) are text, not nesting
        raw = _JSON_STRING.sub(b'""', raw)
    if _bracket_bound(raw, max_depth) <= max_depth:
        return
    depth = 0
    line = 1
    for byte in raw:
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                raise DataFileError(
                    f"{source}: nested deeper than {max_depth} levels (line {line}); "
                    "refusing to parse it"
                )
        elif byte in (0x5D, 0x7D):  # ] }
            depth = max(0, depth - 1)
        elif byte == 0x0A:
            line += 1


def _bracket_bound(raw: bytes, max_depth: int) -> int:
    """An upper bound of the bracket depth of ``raw``, computed in C: keep only the brackets as
    ``(`` and ``)``, drop innermost pairs pass by pass; depth <= passes + openers left (the
    passes stop once the bound exceeds ``max_depth``). Only text that may be too deep gets the
    exact byte scan."""
    brackets, passes = raw.translate(_AS_PARENS, _NOT_BRACKETS), 0
    while passes <= max_depth and (inner := brackets.replace(b"()", b"")) != brackets:
        brackets, passes = inner, passes + 1
    return passes + brackets.count(b"(")


def _yaml_depth(text: str, source: str | Path, max_depth: int) -> None:
    """YAML also nests by indentation and by ``- - -``; bound the indentation too."""
    check_depth(text, source, max_depth, json_strings=False)
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip(" -")
        if len(line) - len(stripped) > 2 * max_depth:
            raise DataFileError(
                f"{source}: nested deeper than {max_depth} levels (line {number}); "
                "refusing to parse it"
            )


def loads_json(text: str | bytes, source: str | Path, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON text from ``source`` (named in errors)."""
    if isinstance(text, bytes):
        text = decode_utf8(text, source)
    check_depth(text, source, max_depth)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFileError(
            f"{source}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}"
        ) from None
    except ValueError:  # Python refuses an integer literal of more than 4300 digits
        raise DataFileError(f"{source}: an integer of more than 4300 digits") from None
    except RecursionError:  # pragma: no cover - check_depth bounds the nesting first
        raise DataFileError(f"{source}: nested too deeply; refusing to parse it") from None
    refuse_surrogates(value, source, text)
    return value


def refuse_surrogates(value: Any, source: str | Path, text: str | None = None) -> None:
    """Refuse a parsed value holding a lone surrogate in any string (key or value): one
    :class:`DataFileError` line naming ``source``, the record (list index) and the field.

    ``text``: the JSON text it was parsed from; where it holds no ``\\uD800``-``\\uDFFF``
    escape (nearly always) nothing is walked.
    """
    if text is not None and not _SURROGATE_ESCAPE.search(text):
        return
    found = _find_surrogate(value, ())
    if found is None:
        return
    path, char = found
    record = f"record {path[0]}, " if path and isinstance(path[0], int) else ""
    inner = path[1:] if record else path
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in inner).lstrip(".")
    field = f"field {where}" if where else "the value"
    raise DataFileError(
        f"{source}: {record}{field} holds a lone surrogate U+{ord(char):04X}, which is not text"
    )


def _find_surrogate(value: Any, path: tuple) -> tuple[tuple, str] | None:
    if isinstance(value, str):
        match = _LONE_SURROGATE.search(value)
        return (path, match.group()) if match else None
    if isinstance(value, dict):
        for key, item in value.items():
            if (found := _find_surrogate(key, (*path, key))) is not None:
                return found
            if (found := _find_surrogate(item, (*path, key))) is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if (found := _find_surrogate(item, (*path, i))) is not None:
                return found
    return None


def load_json(path: str | Path, what: str = "data file", max_depth: int = MAX_DEPTH) -> Any:
    """Parse a JSON file; every failure is one :class:`DataFileError` line naming the file."""
    return loads_json(read_text(path, what), path, max_depth)


def iter_jsonl(
    path: str | Path, what: str = "data file", max_depth: int = MAX_DEPTH
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of a JSON Lines file; a bad line is a
    :class:`DataFileError` naming the file and the line."""
    path = Path(path)
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise DataFileError(f"{path}: {what} not found") from None
    except OSError as err:
        raise DataFileError(f"{path}: cannot read {what} ({err.strerror or err})") from None
    with handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            where = f"{path}, line {number}"
            text = decode_utf8(raw, where, what)
            check_depth(text, where, max_depth)
            try:
                value = json.loads(text)
            except json.JSONDecodeError as err:
                raise DataFileError(f"{where}: invalid JSON ({err.msg})") from None
            except ValueError:  # an integer literal of more than 4300 digits
                raise DataFileError(f"{where}: an integer of more than 4300 digits") from None
            refuse_surrogates(value, where, text)
            yield number, value


def loads_yaml(text: str, source: str | Path, max_depth: int = MAX_DEPTH) -> Any:
    """Parse YAML with the safe loader; duplicate mapping keys, excessive nesting and syntax
    errors are one :class:`DataFileError` line naming ``source`` and the line."""
    import yaml

    _yaml_depth(text, source, max_depth)
    try:
        return yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as err:
        raise DataFileError(f"{source}: {err}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise DataFileError(f"{source}: YAML syntax error{where}: {problem}") from None
    except RecursionError:  # pragma: no cover - _yaml_depth bounds the nesting first
        raise DataFileError(f"{source}: nested too deeply; refusing to parse it") from None


class _DuplicateKey(Exception):
    pass


_LOADER: type | None = None


def _unique_key_loader() -> type:
    """A ``yaml.SafeLoader`` subclass that refuses a key given twice in one mapping."""
    global _LOADER
    if _LOADER is None:
        import yaml

        class UniqueKeyLoader(yaml.SafeLoader):
            def construct_mapping(self, node, deep=False):  # type: ignore[override]
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    key = self.construct_object(key_node, deep=True)
                    try:
                        hash(key)
                    except TypeError:
                        continue  # SafeLoader's own error follows
                    line = key_node.start_mark.line + 1
                    if key in seen:
                        raise _DuplicateKey(
                            f"duplicate key {key!r} at line {line} (first at line {seen[key]})"
                        )
                    seen[key] = line
                return super().construct_mapping(node, deep=deep)

        _LOADER = UniqueKeyLoader
    return _LOADER
