"""The learning-curve table (:mod:`mvpo_train.study.curves`) on two arms of two seeds."""

from __future__ import annotations

import json
from pathlib import Path

from mvpo_train.stats import bootstrap_ci
from mvpo_train.study.curves import heldout_keys, plot, summarize

N = 8


def _rows(success: list[float]) -> list[dict]:
    return [
        {"iteration": i + 1, "success": s, "adv/zero_adv_ratio": 0.5, "time/total": 60.0}
        | ({"eval/success": s} if (i + 1) % 4 == 0 else {})
        for i, s in enumerate(success)
    ]


def _eval(run: Path, split: str, success: float, score: float) -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / f"eval-{split}.json").write_text(json.dumps({"success": success, "score": score}))


def test_arms_pairs_and_held_out_values_from_runs_on_disk(tmp_path):
    fast = [0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9]
    never = [0.0] * N
    runs = {"a": {0: _rows(fast), 1: _rows(fast[::-1])}, "b": {0: _rows(never), 1: _rows(never)}}
    for arm, seed, ok in (("a", 0, 0.5), ("a", 1, 0.25), ("b", 0, 0.0), ("b", 1, 0.125)):
        _eval(tmp_path / f"{arm}-seed{seed}", "test", ok, ok / 2)
    _eval(tmp_path / "warm-start", "test", 0.0625, 0.5)
    assert heldout_keys(["test"], scores=True) == ["test", "test_score"]
    table = summarize(runs, tmp_path, 0.2, N, [("a", "b")], ["test"], True, (0.5,))
    assert table["warm_start"] == {"test": 0.0625, "test_score": 0.5}
    a, b = table["arms"]["a"], table["arms"]["b"]
    assert a["per_seed"]["0"]["reach"] == 5 and b["reached"] == 0  # 5-it. average of fast
    assert a["test"] == bootstrap_ci([0.5, 0.25]) and a["test_score"] == bootstrap_ci([0.25, 0.125])
    assert a["inline_eval_iterations"] == [4, 8] and a["minutes"][0] == N
    pair = table["pairs"]["a - b"]
    assert pair["seeds"] == [0, 1]
    assert pair["test"] == bootstrap_ci([0.5, 0.125])
    # a run that never reaches the threshold counts N + 1 in the difference
    assert pair["reach"] == bootstrap_ci([5 - (N + 1), a["per_seed"]["1"]["reach"] - (N + 1)])
    assert set(pair["inline_eval"]) == {"4", "8"} and set(pair["reach_at"]) == {"0.5"}
    png = tmp_path / "curves.png"
    plot(table, png, 0.2, "test")
    assert png.read_bytes()[:4] == b"\x89PNG"
