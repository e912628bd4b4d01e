"""The tuning grid (``benchmarks/tuning_grid.py``): every point runs learning.py without any
held-out evaluation, and the choice per arm is the largest training area over the whole grid."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _grid():
    return importlib.import_module("mvpo_train.study.tuning_grid")


def _args(tg, tmp_path: Path, monkeypatch) -> list[list[str]]:
    """Run main() with the sweep's subprocess replaced by a recorder; the commands it ran."""
    calls: list[list[str]] = []
    monkeypatch.setattr(tg.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    tg.main(["--base", str(tmp_path), "--arms", "grpo", "mvpo", "--seeds", "0", "1",
             "--lr", "1e-3", "3e-4", "--kl-coef", "0", "--out", str(tmp_path / "grid.md"),
             "--train-flags", "--history-length 2"])  # fmt: skip
    return calls


def _write_point(tmp_path: Path, name: str, grpo: float | None, mvpo: float, seeds=(0, 1)):
    arms = {"mvpo": {"auc": [mvpo, 0, 0], "final": [mvpo, 0, 0], "seeds": list(seeds)}}
    if grpo is not None:
        arms["grpo"] = {"auc": [grpo, 0, 0], "final": [grpo, 0, 0], "seeds": list(seeds)}
    (tmp_path / name).mkdir(parents=True)
    (tmp_path / name / "learning.json").write_text(json.dumps({"arms": arms}))


def test_points_run_learning_without_heldout_evaluation(tmp_path, monkeypatch):
    tg = _grid()
    calls = _args(tg, tmp_path, monkeypatch)
    assert len(calls) == 2  # 2 lr x 1 epochs x 1 kl
    for cmd in calls:
        assert "--no-eval" in cmd and cmd[cmd.index("--eval-every") + 1] == "0"
        assert "valid_unseen" not in " ".join(cmd)
        tail = cmd[cmd.index("--") :]
        assert tail[:2] == ["--", "--ppo-epochs"] and "--kl-coef" in tail
        assert tail[-2:] == ["--history-length", "2"] and tail.count("--") == 1
    # the first point makes or checks the warm start; the later ones use it as it is
    assert ["--warm-checked" in c for c in calls] == [False, True]
    # one embedding cache for the whole grid (the same games: observations embedded once)
    assert {c[c.index("--embedding-cache") + 1] for c in calls} == {
        str(tmp_path / "embeddings.npz")
    }
    assert {Path(c[c.index("--base") + 1]).name for c in calls} == {
        "lr0.001-ep2-kl0",
        "lr0.0003-ep2-kl0",
    }


def test_choice_per_arm_is_the_largest_area_and_needs_the_whole_grid(tmp_path, monkeypatch):
    tg = _grid()
    _write_point(tmp_path, "lr0.001-ep2-kl0", grpo=0.10, mvpo=0.30)
    _write_point(tmp_path, "lr0.0003-ep2-kl0", grpo=0.20, mvpo=0.25)
    _args(tg, tmp_path, monkeypatch)
    table = json.loads((tmp_path / "grid.json").read_text())
    assert table["choice"] == {"grpo": "lr0.0003-ep2-kl0", "mvpo": "lr0.001-ep2-kl0"}
    md = (tmp_path / "grid.md").read_text()
    assert "0.300 / 0.300 **(chosen)**" in md and "Partial" not in md


def test_an_unfinished_point_leaves_no_choice(tmp_path, monkeypatch):
    tg = _grid()
    _write_point(tmp_path, "lr0.001-ep2-kl0", grpo=0.10, mvpo=0.30)
    _write_point(tmp_path, "lr0.0003-ep2-kl0", grpo=None, mvpo=0.25, seeds=(0,))  # grpo missing
    _args(tg, tmp_path, monkeypatch)
    table = json.loads((tmp_path / "grid.json").read_text())
    assert "grpo" not in table["choice"] and "mvpo" not in table["choice"]  # mvpo: 1 of 2 seeds
    assert "Partial" in (tmp_path / "grid.md").read_text()
