"""A page kept with its figures (:mod:`mvpo_train.study.figures_page`): a measuring run writes
the JSON beside the page, ``--analyze-only`` rebuilds the same page from it alone, and a JSON
that parses but lacks what the page prints stops with one line, leaving no page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mvpo_train.study.figures_page import figures_main, write_figures_page


def report(figures: dict[str, Any]) -> str:
    return f"# rows: {figures['rows']}\nlargest: {max(figures['rows'])}\n"


def test_a_run_keeps_the_figures_the_page_is_rebuilt_from(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    write_figures_page("p", page, report, {"rows": [1, 2, 4]})
    text = page.read_text()
    assert text == "# rows: [1, 2, 4]\nlargest: 4\n"
    assert json.loads(page.with_suffix(".json").read_text()) == {"rows": [1, 2, 4]}
    page.unlink()
    write_figures_page("p", page, report)
    assert page.read_text() == text


@pytest.mark.parametrize(
    ("saved", "error"),
    [({"cols": [1]}, "KeyError: 'rows'"), ({"rows": 3}, "TypeError"), ({"rows": []}, "ValueError")],
)
def test_a_json_without_the_pages_figures_is_one_line(
    tmp_path: Path, saved: dict[str, Any], error: str
) -> None:
    page = tmp_path / "p.md"
    page.with_suffix(".json").write_text(json.dumps(saved))
    with pytest.raises(SystemExit) as err:
        write_figures_page("prog", page, report)
    message = str(err.value)
    assert message.startswith(f"prog: {page.with_suffix('.json')} lacks what the page needs: ")
    assert error in message and "\n" not in message
    assert not page.exists()


def test_a_damaged_json_is_one_line(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.with_suffix(".json").write_text('{"rows": [')
    with pytest.raises(SystemExit) as err:
        write_figures_page("prog", page, report)
    assert str(err.value).startswith("prog: ") and "\n" not in str(err.value)
    assert not page.exists()


def test_figures_main_measures_or_rebuilds(tmp_path: Path) -> None:
    calls: list[int] = []

    def measure() -> dict[str, Any]:
        calls.append(1)
        return {"rows": [3, 5]}

    out = tmp_path / "page.md"
    doc = "A benchmark.\n\nMore."
    assert figures_main("b", ["--out", str(out)], doc, tmp_path / "x.md", report, measure) == 0
    assert calls == [1] and out.read_text() == "# rows: [3, 5]\nlargest: 5\n"
    out.unlink()
    argv = ["--out", str(out), "--analyze-only"]
    assert figures_main("b", argv, doc, tmp_path / "x.md", report, measure) == 0
    assert calls == [1] and out.read_text() == "# rows: [3, 5]\nlargest: 5\n"
