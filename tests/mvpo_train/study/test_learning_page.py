"""The learning study's page (:mod:`mvpo_train.study.learning_page`): the candidates table and
the table over a toy env's held-out splits. The page of the real studies:
tests/benchmarks/test_learning_analysis.py and test_learning_webshop.py."""

from __future__ import annotations

import json

import numpy as np

from mvpo_train.study.learning_page import candidates_markdown, summarize
from mvpo_train.study.runs import load_runs
from mvpo_train.study.study_env import StudyEnv

TOY = StudyEnv(name="toy", env_id="toy/Env-v0", title="t", flags=(), final_evals=(("held", 1),),
               arms=("a", "b"), pairs=(("a", "b"),), warm="w", base="b", out="o.md")  # fmt: skip


def test_the_candidates_table_names_a_fresh_head_and_missing_values():
    rows = [{"steps": 0, "episodes": 2, "success": 0.5},
            {"steps": 10, "episodes": 2, "success": 1.0, "score": 0.25, "seconds": 3.4}]  # fmt: skip
    lines = candidates_markdown(rows).splitlines()
    assert lines[2] == "| 0 (fresh head) | 2 | 0.500 | - | - |"
    assert lines[3] == "| 10 | 2 | 1.000 | 0.250 | 3 |"


def test_the_table_reads_the_envs_held_out_split_and_pairs(tmp_path):
    for arm, level in (("a", 0.4), ("b", 0.1)):
        for seed in (0, 1):
            run = tmp_path / f"{arm}-seed{seed}"
            run.mkdir()
            rows = [{"iteration": i + 1, "success": level, "time/total": 6.0} for i in range(6)]
            (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            (run / "eval-held.json").write_text(json.dumps({"success": level / 2}))
    runs = load_runs(tmp_path, ["a", "b"], [0, 1], 6)
    table = summarize(runs, tmp_path, 0.2, 6, TOY)
    assert np.isclose(table["arms"]["a"]["held"][0], 0.2)
    assert np.isclose(table["pairs"]["a - b"]["held"][0], 0.15)
    assert "held_score" not in table["arms"]["a"]  # no scores in this env
