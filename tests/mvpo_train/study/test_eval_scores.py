"""``eval_with_scores``: ``mvpo-eval`` plus every kept episode's env return, read through
``eval_main``'s ``on_batch`` hook; nothing of the package is swapped, even for the call."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mvpo_train import evaluation
from mvpo_train.study.eval_scores import eval_with_scores

ROOT = Path(__file__).resolve().parents[3]


def test_scores_are_the_kept_episodes_returns(micro, tmp_path, capsys):
    out = tmp_path / "e.json"
    argv = ["--model", str(micro), "--split", "train", "--tasks", "13,1,2", "--episodes", "2",
            "--max-steps", "2", "--threads", "1", "--no-progress", "--out", str(out)]  # fmt: skip
    assert eval_with_scores(argv, label="the test's return") == 0
    result = json.loads(out.read_text())
    assert result["episodes"] == 6 and len(result["scores"]) == 6  # the padding dropped
    assert np.isclose(result["score"], np.mean(result["scores"]))
    assert (
        capsys.readouterr()
        .out.splitlines()[-1]
        .endswith("(the test's return, mean over 6 episodes)")
    )


def test_a_failed_evaluation_returns_its_status_and_leaves_the_package_alone(tmp_path):
    before = dict(vars(evaluation))
    argv = ["--config", str(tmp_path / "missing.json"), "--out", str(tmp_path / "e.json")]
    assert eval_with_scores(argv) == 2
    assert vars(evaluation) == before
    with pytest.raises(SystemExit, match="--out is required"):
        eval_with_scores(["--split", "train"])


def test_no_code_assigns_a_name_of_the_evaluation_module():
    """The score capture used to swap ``evaluation.RolloutCollector`` for a subclass."""
    assign = re.compile(r"\bevaluation\.\w+\s*=[^=]")
    found = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for folder in ("mvpo_train", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in path.read_text().splitlines()
        if assign.search(line)
    ]
    assert found == []
