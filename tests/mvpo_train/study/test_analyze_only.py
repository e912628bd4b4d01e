"""``mvpo_train.study.analyze_only``: a page's results JSON read back, or one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from mvpo_train.study.analyze_only import AnalyzeOnlyError, saved_results


def test_the_results_json_beside_the_page_or_one_line(tmp_path: Path) -> None:
    page = tmp_path / "study.md"
    with pytest.raises(AnalyzeOnlyError, match="study.json not found"):
        saved_results(page)
    page.with_suffix(".json").write_text('{"arms": {"a": NaN}}')  # NaN as json.dumps writes it
    assert list(saved_results(page)["arms"]) == ["a"]
    page.with_suffix(".json").write_text('{"arms": ')  # torn
    with pytest.raises(AnalyzeOnlyError, match="study.json"):
        saved_results(page)
    page.with_suffix(".json").write_text("[1, 2]")
    with pytest.raises(AnalyzeOnlyError, match="no JSON object"):
        saved_results(page)
