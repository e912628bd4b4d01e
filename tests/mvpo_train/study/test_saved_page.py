"""``mvpo_train.study.saved_page``: the table read back from the JSON only when rebuilding
without the run folder, one line when the JSON lacks what the page shows, and the hand-added
notes of a page put back where they stood."""

from __future__ import annotations

import json

import pytest

from mvpo_train.study.analyze_only import AnalyzeOnlyError
from mvpo_train.study.saved_page import keep_notes, saved_table, with_notes


def test_saved_table_only_when_rebuilding_without_the_runs(tmp_path, capsys):
    out = tmp_path / "page.md"
    out.with_suffix(".json").write_text(json.dumps({"arms": {"a": {"auc": 1}}}))
    assert saved_table(out, False, tmp_path / "absent") is None  # a measurement
    assert saved_table(out, True, tmp_path) is None  # the runs are here: read them
    assert saved_table(out, True, tmp_path / "absent") == {"arms": {"a": {"auc": 1}}}
    assert "absent not found: rebuilding" in capsys.readouterr().out
    with pytest.raises(AnalyzeOnlyError, match="has no final for a"):
        saved_table(out, True, tmp_path / "absent", needs=("auc", "final"))
    with pytest.raises(AnalyzeOnlyError, match="not found"):
        saved_table(tmp_path / "other.md", True, tmp_path / "absent")


def test_keep_notes_puts_a_note_back_after_its_paragraph():
    old = "# T\n\nCommand: x\n\n**Note.** by hand\n\n| a |\n"
    new = "# T\n\nCommand: x\n\n| b |\n"
    assert keep_notes(new, old) == "# T\n\nCommand: x\n\n**Note.** by hand\n\n| b |\n"
    # a note whose paragraph is gone goes to the top, never lost; one kept is not doubled
    assert keep_notes("# T\n\n| b |\n", "# T\n\nX\n\n**N.** n\n") == "# T\n\n**N.** n\n\n| b |\n"
    assert keep_notes(old, old) == old


def test_with_notes_only_when_rebuilding(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# T\n\n**Note.** n\n\nold\n")

    def write(table, out, png):
        out.write_text("# T\n\nnew\n")

    with_notes(write, page, keep=False)({}, page, page.with_suffix(".png"))
    assert page.read_text() == "# T\n\nnew\n"
    page.write_text("# T\n\n**Note.** n\n\nold\n")
    with_notes(write, page, keep=True)({}, page, page.with_suffix(".png"))
    assert page.read_text() == "# T\n\n**Note.** n\n\nnew\n"
