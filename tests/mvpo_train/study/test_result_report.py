"""The page of a compact-result study (:mod:`mvpo_train.study.result_report`): the env and the
command it names, its tables, and the oracle table only where the runs logged ``align/*``."""

from __future__ import annotations

import argparse

from mvpo_train.study.arms import parse_arms
from mvpo_train.study.result_report import write_markdown
from mvpo_train.study.result_summary import summarize


def _result(seed: int, success: list[float], align: list | None = None) -> dict:
    curves = {"success": success, "zero_credit_ratio": [0.5] * len(success)}
    if align is not None:
        curves["align/auc"] = align
    return {"spec": {}, "seed": seed, "minutes": 1.0, "eval": {"success": 0.5}, "curves": curves}


def _page(tmp_path, results: dict) -> str:
    arms = parse_arms(list(results))
    args = argparse.Namespace(iterations=6, threshold=0.2, jobs=1, difficulty=2, num_milestones=4,
                              max_steps=9, num_groups=2, group_size=3, lr=0.01, ppo_epochs=2,
                              seeds=[0, 1], extra=[], eval_episodes=1, note=None,
                              analyze_only=False)  # fmt: skip
    table = summarize(results, 0.2, 6, [("mvpo", "grpo")])
    out = tmp_path / "page.md"
    write_markdown(table, args, arms, out, tmp_path / "page.png", "toy/Env-v0", "python x.py ")
    return out.read_text()


def test_the_page_names_the_env_and_the_command_and_pairs_the_arms(tmp_path):
    results = {
        "grpo": {s: _result(s, [0.1] * 6) for s in (0, 1)},
        "mvpo": {s: _result(s, [0.3] * 6) for s in (0, 1)},
    }
    text = _page(tmp_path, results)
    assert text.startswith("# Control-task study: GRPO vs GiGPO vs MVPO on toy/Env-v0\n")
    assert "Command: `python x.py` (table" in text and "`toy/Env-v0` difficulty 2" in text
    assert "| mvpo - grpo | 2 | 0.200 [0.200, 0.200] |" in text
    assert "align/auc" not in text


def test_the_oracle_table_appears_when_a_run_logged_it(tmp_path):
    results = {
        "grpo": {0: _result(0, [0.1] * 6)},
        "mvpo": {0: _result(0, [0.3] * 6, align=[0.5, None, 0.7, 0.7, 0.7, 0.7])},
    }
    text = _page(tmp_path, results)
    assert "| arm | align/auc |" in text and "| mvpo | 0.660 |" in text and "| grpo | - |" in text
