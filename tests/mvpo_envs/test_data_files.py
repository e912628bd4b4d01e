"""mvpo_envs.data_files: untrusted JSON/YAML fails in one line naming the file."""

from __future__ import annotations

import pytest

from mvpo_envs.data_files import (
    MAX_DEPTH,
    DataFileError,
    iter_jsonl,
    load_json,
    loads_json,
    loads_yaml,
    read_text,
)


def test_deep_json_is_refused_before_the_parser_recurses(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(DataFileError, match=rf"deep.json: nested deeper than {MAX_DEPTH}"):
        load_json(path)


def test_json_at_the_depth_limit_loads():
    value = loads_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x.json")
    for _ in range(MAX_DEPTH - 1):
        value = value[0]
    assert value == []


def test_invalid_json_names_file_line_and_column(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "a": 1,\n  "b": }\n')
    with pytest.raises(DataFileError, match=r"bad.json: invalid JSON at line 3, column 8"):
        load_json(path)


def test_non_utf8_names_the_byte(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"a":\n "caf\xe9"}')
    with pytest.raises(DataFileError, match=r"latin.json: .*not valid UTF-8 \(byte 11, line 2\)"):
        read_text(path)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(DataFileError, match="not found"):
        load_json(tmp_path / "nope.json")
    with pytest.raises(DataFileError, match="is a folder"):
        load_json(tmp_path)


def test_jsonl_names_the_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2\n')
    rows = iter_jsonl(path)
    assert next(rows) == (1, {"a": 1})
    with pytest.raises(DataFileError, match=r"rows.jsonl, line 3: invalid JSON"):
        next(rows)


def test_yaml_duplicate_key_is_refused():
    with pytest.raises(
        DataFileError, match=r"c.yaml: duplicate key 'lr' at line 3 \(first at line 1\)"
    ):
        loads_yaml("lr: 1\nseed: 2\nlr: 3\n", "c.yaml")
    # the same key in two different mappings is fine
    assert loads_yaml("a: {x: 1}\nb: {x: 2}\n", "c.yaml") == {"a": {"x": 1}, "b": {"x": 2}}


def test_yaml_refuses_python_tags_and_deep_nesting():
    with pytest.raises(DataFileError, match="c.yaml: YAML syntax error"):
        loads_yaml("a: !!python/object/apply:os.system ['true']\n", "c.yaml")
    with pytest.raises(DataFileError, match="nested deeper"):
        loads_yaml("a: " + "[" * 5000 + "]" * 5000, "c.yaml")
    deep_block = "".join(" " * (2 * i) + f"k{i}:\n" for i in range(300)) + " " * 600 + "v: 1\n"
    with pytest.raises(DataFileError, match="nested deeper"):
        loads_yaml(deep_block, "c.yaml")


def test_brackets_inside_json_strings_are_not_nesting(tmp_path):
    text = '{"queries": ["' + "[" * 500 + '", "a \\" [[[ b", "' + "{" * 300 + '"]}'
    assert len(loads_json(text, "q.json")["queries"]) == 3
    path = tmp_path / "rows.jsonl"
    path.write_text('{"q": "' + "[" * 200 + '"}\n')
    assert next(iter_jsonl(path))[1] == {"q": "[" * 200}
    with pytest.raises(DataFileError, match="nested deeper"):
        loads_json('["' + "[" * 500 + '", ' + "[" * 150 + "]" * 150 + "]", "q.json")


def test_escaped_quotes_do_not_end_a_string():
    # '\"' stays inside the string, '\\' ends with the string: both counted right
    text = '["a \\" ' + "[" * 150 + ' b", "c\\\\", ' + "[" * 120 + "]" * 120 + "]"
    with pytest.raises(DataFileError, match="nested deeper"):
        loads_json(text, "q.json")
    assert loads_json('["a \\" ' + "[" * 150 + ' b", "c\\\\"]', "q.json")[1] == "c\\"


def test_huge_integer_literals_are_one_line(tmp_path):
    with pytest.raises(DataFileError, match="x.json: an integer of more than 4300 digits"):
        loads_json('{"a": ' + "9" * 5000 + "}", "x.json")
    path = tmp_path / "rows.jsonl"
    path.write_text("[" + "1" * 5000 + "]\n")
    with pytest.raises(DataFileError, match="line 1: an integer of more than 4300 digits"):
        next(iter_jsonl(path))
