"""``benchmarks/potential_learning.py``: the new potential options' learning study on the
oracle-gain study's settings, reusing that study's GRPO, GiGPO, MVPO and MVPO-shuffled runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvpo_train.study.estimator_cost import cost_lines
from mvpo_train.study.gain_results import LEARNING_METRICS
from mvpo_train.study.gain_sweep import seed_embedding_cache

from .helpers import study_module

pl = study_module("potential_learning")
og = study_module("oracle_gain")

ITER = 6


def test_new_arms_are_the_options_and_their_combination() -> None:
    arms = {a.name: a for a in pl.new_arms()}
    assert set(arms) == {
        "mvpo-pooled",
        "mvpo-split",
        "mvpo-pooled-td-split",
        "mvpo-pooled-td-split-shuffled",
    }
    assert all(a.estimator == "mvpo" and a.difficulty == 1 for a in arms.values())
    assert arms["mvpo-pooled"].kwargs == {"region_stats": "pooled"}
    assert arms["mvpo-split"].kwargs == {"potential_split": "milestones"}
    assert arms["mvpo-pooled-td-split"].kwargs == {
        "region_stats": "pooled",
        "potential_estimate": "td",
        "potential_split": "milestones",
    }
    shuffled = arms["mvpo-pooled-td-split-shuffled"].kwargs
    assert shuffled == {**arms["mvpo-pooled-td-split"].kwargs, "repair_source": "shuffled"}
    # the new options are MVPOConfig fields (a typo would only fail inside a run)
    from mvpo_train.credit.mvpo import MVPOConfig

    for a in arms.values():
        MVPOConfig(**a.kwargs)
    # the reused arms are the oracle-gain study's, with its keywords; none is run here
    reused = {a.name: a for a in pl.reused_arms()}
    assert set(reused) == set(pl.REUSED) == {"grpo", "gigpo", "mvpo", "mvpo-shuffled"}
    assert reused == {a.name: a for a in og.arms() if a.name in pl.REUSED}
    assert not set(reused) & set(arms)
    plan = pl.plan_runs(pl.parse_args(["--seeds", "0", "1"]))
    assert [s for _, s in plan] == [0] * 4 + [1] * 4  # seed by seed: a partial sweep is paired
    assert {a.name for a, _ in plan} == set(arms)


def test_settings_are_the_oracle_gain_studys(tmp_path: Path) -> None:
    mine = og.settings(pl.parse_args([]))
    assert mine == og.settings(og.parse_args([]))
    assert mine["show_progress"] and mine["show_route"] and mine["iterations"] == 40
    # a reuse base recorded by the oracle-gain study's settings passes; it is not written
    og.check_settings(tmp_path, og.settings(og.parse_args([])))
    before = (tmp_path / "settings.json").read_text()
    pl.check_reuse(tmp_path, mine)
    assert (tmp_path / "settings.json").read_text() == before
    # a changed setting is refused in one line naming it
    with pytest.raises(SystemExit) as err:
        pl.check_reuse(tmp_path, og.settings(pl.parse_args(["--lr", "0.001"])))
    msg = str(err.value)
    assert "\n" not in msg and "potential_learning" in msg and "'lr'" in msg
    # a folder without a settings record holds nothing to reuse and stays empty
    empty = tmp_path / "none"
    pl.check_reuse(empty, mine)
    assert not empty.exists()


def _fake_run(base: Path, arm: str, seed: int, success: list[float], auc: float | None) -> None:
    """A finished run as the oracle-gain study leaves it: result.json and metrics.jsonl."""
    path = base / arm / f"seed{seed}"
    path.mkdir(parents=True)
    rows = [
        {"iteration": i, "success": s, "time/advantage": 0.01 * (seed + 1)}
        for i, s in enumerate(success)
    ]
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = {"success": success, "heldout": success[-1], "auc": auc, "zero_credit": 0.9,
           "kappa": 0.5, "repaired_ratio": 0.5, "entropy": 1.0, "minutes": 1.0}  # fmt: skip
    (path / "result.json").write_text(json.dumps(res) + "\n")


def test_analysis_reuses_the_other_base_and_pairs_by_seed(tmp_path: Path) -> None:
    reuse, base = tmp_path / "og", tmp_path / "pl"
    args = pl.parse_args(
        ["--iterations", str(ITER), "--seeds", "0", "1", "2", "--base", str(base),
         "--reuse-base", str(reuse), "--out", str(tmp_path / "out" / "potential_learning.md"),
         "--reuse-archive", str(tmp_path / "og_runs"), "--analyze-only"]
    )  # fmt: skip
    og.check_settings(reuse, og.settings(args))
    for seed in (0, 1, 2):
        _fake_run(reuse, "gigpo", seed, [0.1 * seed] * ITER, None)
        _fake_run(reuse, "mvpo", seed, [0.2] * ITER, 0.55)
    for seed in (0, 1):  # the new arm has two of the three seeds
        _fake_run(base, "mvpo-pooled", seed, [0.3 + 0.1 * seed] * ITER, 0.6 + 0.1 * seed)
    # a run of a new arm under the reuse base and one of a reused arm under the new base are
    # not read (each arm comes from its own folder)
    _fake_run(reuse, "mvpo-split", 0, [1.0] * ITER, 0.9)
    _fake_run(base, "grpo", 0, [1.0] * ITER, None)
    listing = sorted(p.relative_to(reuse) for p in reuse.rglob("*"))
    out = pl.analyze(args)
    assert sorted(p.relative_to(reuse) for p in reuse.rglob("*")) == listing  # read only

    assert set(out["arms"]) == {"gigpo", "mvpo", "mvpo-pooled"}
    assert out["arms"]["gigpo"]["reused"] and not out["arms"]["mvpo-pooled"]["reused"]
    assert out["arms"]["mvpo-pooled"]["seeds"] == [0, 1]
    assert out["arms"]["mvpo-pooled"]["area"]["mean"] == pytest.approx(0.35)
    assert out["arms"]["mvpo-pooled"]["auc"]["mean"] == pytest.approx(0.65)
    assert out["arms"]["mvpo-pooled"]["advantage_s"] == pytest.approx(0.015)
    assert out["arms"]["gigpo"]["auc"]["mean"] is None
    # paired on the seeds both arms have: (0.3 - 0.0, 0.4 - 0.1) against GiGPO
    p = out["pairs"]["mvpo-pooled - gigpo"]
    assert p["seeds"] == [0, 1] and p["area"]["mean"] == pytest.approx(0.3)
    assert p["area"]["t95"][0] == pytest.approx(0.3)  # no spread: the interval is the point
    q = out["pairs"]["mvpo-pooled - mvpo"]
    assert q["seeds"] == [0, 1] and q["area"]["mean"] == pytest.approx(0.15)
    assert out["pairs"]["mvpo - gigpo"]["seeds"] == [0, 1, 2]
    assert "gigpo - mvpo" not in out["pairs"]  # the paper's form is the reference of MVPO's arms
    assert out["progress"] == {"runs_done": 8, "runs_planned": 24, "partial": True}

    md = (tmp_path / "out" / "potential_learning.md").read_text()
    assert "**Partial: 8 of 24 runs exist.**" in md
    assert "`mvpo-pooled` seeds [0, 1]" in md and "| mvpo-pooled - gigpo | 2 |" in md
    assert "exactly the oracle-gain study's" in md
    saved = json.loads((tmp_path / "out" / "potential_learning.json").read_text())
    assert saved["settings"]["fingerprint"] == og.fingerprint(og.settings(args))
    assert (tmp_path / "out" / "potential_learning.png").is_file()


def test_embedding_cache_starts_as_the_reused_runs_one(tmp_path: Path) -> None:
    reuse, base = tmp_path / "og", tmp_path / "pl"
    reuse.mkdir()
    seed_embedding_cache(reuse, base)  # nothing to copy: nothing written
    assert not (base / "embeddings.npz").exists()
    (reuse / "embeddings.npz").write_bytes(b"vectors of the reused runs")
    seed_embedding_cache(reuse, base)
    assert (base / "embeddings.npz").read_bytes() == b"vectors of the reused runs"
    (base / "embeddings.npz").write_bytes(b"grown by the new runs")
    seed_embedding_cache(reuse, base)  # never overwrites the study's own cache
    assert (base / "embeddings.npz").read_bytes() == b"grown by the new runs"
    assert (reuse / "embeddings.npz").read_bytes() == b"vectors of the reused runs"


def test_a_tiny_real_run_of_the_combination(tmp_path: Path) -> None:
    """One iteration of the combination in ``mvpo-train`` (2 layouts x 2 rollouts, 4 layouts per
    split): the run finishes, its result is written and the analysis reads it."""
    base, out = tmp_path / "pl", tmp_path / "out" / "potential_learning.md"
    argv = ["--iterations", "1", "--num-groups", "2", "--group-size", "2", "--num-tasks", "4",
            "--eval-episodes", "1", "--seeds", "0", "--arm", "mvpo-pooled-td-split",
            "--base", str(base), "--reuse-base", str(tmp_path / "none"), "--out", str(out),
            "--reuse-archive", str(tmp_path / "none_runs")]  # fmt: skip
    pl.main(argv)
    run = base / "mvpo-pooled-td-split" / "seed0"
    assert (run / "result.json").is_file(), (
        base / "mvpo-pooled-td-split" / "seed0.log"
    ).read_text()
    config = (run / "config.yaml").read_text()
    assert "pooled" in config and "td" in config and "milestones" in config
    table = json.loads(out.with_suffix(".json").read_text())
    arm = table["arms"]["mvpo-pooled-td-split"]
    assert arm["seeds"] == [0] and arm["advantage_s"] > 0
    assert 0.0 <= arm["area"]["mean"] <= 1.0
    assert table["progress"]["runs_done"] == 1
    before = {p.name: p.stat().st_mtime_ns for p in run.iterdir()}
    pl.main(argv)  # a finished run is skipped, not rerun
    assert {p.name: p.stat().st_mtime_ns for p in run.iterdir()} == before


def test_cost_measures_every_new_arm_against_the_paper_form(tmp_path: Path) -> None:
    args = pl.parse_args(["--cost", "2", "--num-groups", "2", "--group-size", "2",
                          "--base", str(tmp_path), "--out", str(tmp_path / "pl.md")])  # fmt: skip
    out = pl.cost(args)
    assert set(out["arms"]) == {"mvpo"} | {a.name for a in pl.new_arms()}
    assert all(len(r["ms"]) == 2 and r["mean"] > 0 for r in out["arms"].values())
    assert json.loads((tmp_path / "pl_runs" / "cost.json").read_text())["batches"] == 2
    lines = cost_lines(tmp_path / "pl_runs" / "cost.json")
    assert "## Estimator cost" in lines and any(ln.startswith("| mvpo | ") for ln in lines)
    assert cost_lines(tmp_path / "none" / "cost.json") == []


def test_carried_arms_fill_in_for_runs_not_kept(tmp_path: Path) -> None:
    """An arm with no run anywhere comes from the archive's carried.json as it is, and pairs
    with run-built arms on its per-seed values; an arm with runs is never taken from it."""
    args = pl.parse_args(
        ["--iterations", str(ITER), "--seeds", "0", "1", "--base", str(tmp_path / "pl"),
         "--reuse-base", str(tmp_path / "og"), "--reuse-archive", str(tmp_path / "og_runs"),
         "--out", str(tmp_path / "out" / "potential_learning.md"), "--analyze-only"]
    )  # fmt: skip
    for seed in (0, 1):
        _fake_run(tmp_path / "pl", "mvpo-pooled", seed, [0.5] * ITER, 0.6)
    per_seed = {m: [0.1, 0.2] for m in LEARNING_METRICS}
    entry = {"estimator": "gigpo", "kwargs": {}, "reused": True, "source": "x", "seeds": [0, 1],
             **{m: {"mean": 0.15, "t95": None, "boot95": None, "n": 2} for m in LEARNING_METRICS},
             "per_seed": per_seed, "advantage_s": None, "minutes_per_run": 1.0,
             "curve": {"mean": [0.0] * ITER, "lo": [0.0] * ITER, "hi": [0.0] * ITER}}  # fmt: skip
    archive = tmp_path / "out" / "potential_learning_runs"
    archive.mkdir(parents=True)
    carried = {"gigpo": entry, "mvpo-pooled": {**entry, "estimator": "mvpo"}}
    fp = og.fingerprint(og.settings(args))
    (archive / "carried.json").write_text(json.dumps({"fingerprint": fp, "arms": carried}))
    out = pl.analyze(args)
    assert out["arms"]["gigpo"]["carried"] and "carried" not in out["arms"]["mvpo-pooled"]
    assert out["arms"]["mvpo-pooled"]["area"]["mean"] == pytest.approx(0.5)
    assert out["pairs"]["mvpo-pooled - gigpo"]["area"]["mean"] == pytest.approx(0.35)
    assert out["progress"]["runs_done"] == 4
    assert "| gigpo (reused) (c) |" in (tmp_path / "out" / "potential_learning.md").read_text()


def test_the_matched_alfworld_study_runs_the_same_combination() -> None:
    """learning.py's ``mvpo-potential`` arm (the matched ALFWorld study) is this study's
    combination; its shuffled arm adds only the shuffled repair."""
    le = study_module("learning_env")
    pot = le.ARMS["mvpo-potential"]
    assert pot[:3] == ["--estimator", "mvpo", "--estimator-kwargs"]
    assert json.loads(pot[3]) == dict(pl.COMBINATION)
    shuffled = json.loads(le.ARMS["mvpo-potential-shuffled"][3])
    assert shuffled == {**pl.COMBINATION, "repair_source": "shuffled"}
