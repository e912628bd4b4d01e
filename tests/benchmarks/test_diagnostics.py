"""``benchmarks/diagnostics.py``: the tables are computed right from the runs on disk.

Two tiny synthetic run sets (metrics.jsonl + config.yaml written here) with known values: the
early zero-advantage mean and spread, the phase shares, the Phi sign check, the partial-run
notes and the "not run yet" section; then the WebShop env of the script on the real engine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mvpo_train.study import run_sets
from mvpo_train.study.run_set_page import alignment_lines

from .helpers import study_module

learning_env = study_module("learning_env")


@pytest.fixture(scope="module")
def diag():
    yield study_module("diagnostics")
    sys.modules.pop("diagnostics", None)


def _write_run(path: Path, rows: list[dict], planned: int, torn: bool = False) -> None:
    path.mkdir(parents=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if torn:
        text += '{"iteration": 99, "succ'  # a line being written
    (path / "metrics.jsonl").write_text(text)
    (path / "config.yaml").write_text(f"iterations: {planned}\nestimator: x\nlr: 0.001\n")


def _elsewhere(tmp_path: Path) -> list[str]:
    """The flags that keep a test off the machine's own runs: the headline studies' folders
    empty, no history carried over from the committed json."""
    none = str(tmp_path / "none")
    return ["--alfworld-full-base", none, "--webshop-study-base", none, "--previous-json", ""]


def _row(it: int, zero_adv: float, **extra) -> dict:
    base = {
        "iteration": it,
        "success": 0.1 * it,
        "adv/zero_adv_ratio": zero_adv,
        "adv/zero_credit_ratio": min(1.0, zero_adv + 0.1),
        "time/rollout": 6.0,
        "time/logp_ref": 0.5,
        "time/advantage": 0.5,
        "time/update": 2.0,
        "time/total": 10.0,
    }
    return {**base, **extra}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    base = tmp_path / "study"
    _write_run(base / "grpo-seed0", [_row(1, 1.0), _row(2, 0.8), _row(3, 0.6)], planned=3)
    # seed 1 asked for 5 iterations and stopped after 3, with a torn 4th line
    _write_run(base / "grpo-seed1", [_row(i, 0.5) for i in (1, 2, 3)], planned=5, torn=True)
    mvpo = [
        _row(1, 0.4, **{"adv/phi_success_mean": 1.0, "adv/phi_failure_mean": 0.0,
                        "adv/kappa": 1.0, "adv/amp_weights/seen": 0.2, "adv/singleton_ratio": 0.25}),
        _row(2, 0.3, **{"adv/phi_success_mean": None, "adv/phi_failure_mean": 0.1,
                        "adv/kappa": 0.8, "adv/amp_weights/seen": 0.3}),
        _row(3, 0.2, **{"adv/phi_success_mean": 0.2, "adv/phi_failure_mean": 0.5,
                        "adv/kappa": 0.6, "adv/amp_weights/seen": 0.4, "adv/singleton_ratio": 0.5,
                        "time/eval": 3.0}),
    ]  # fmt: skip
    _write_run(base / "mvpo-seed0", mvpo, planned=3)
    return base


def test_tables_are_computed_from_the_runs(diag, runs: Path) -> None:
    rs = run_sets.load_runset("alfworld", runs, ("grpo", "gigpo", "mvpo"), (0, 1))
    s = run_sets.summarize(rs, early=2)
    za = s["arms"]["grpo"]["adv/zero_adv_ratio"]
    assert za["per_seed"] == {0: pytest.approx(0.9), 1: pytest.approx(0.5)}
    assert za["mean"] == pytest.approx(0.7)
    assert (za["min"], za["max"]) == (pytest.approx(0.5), pytest.approx(0.9))
    assert s["arms"]["grpo"]["zero_adv_first_iteration"] == pytest.approx(0.75)
    # zero-credit = min(1, zero-adv + 0.1): seed 0 (1.0 + 0.9) / 2, seed 1 0.6
    assert s["arms"]["grpo"]["adv/zero_credit_ratio"]["mean"] == pytest.approx(0.775)
    # phases: 6 + 0.5 + 0.5 + 2 of 10 s; 1 s is "other"; no eval timed
    ph = s["arms"]["grpo"]["phases"]
    assert ph["rollout"] == (pytest.approx(6.0), pytest.approx(0.6))
    assert ph["update"] == (pytest.approx(2.0), pytest.approx(0.2))
    assert ph["other"] == (pytest.approx(1.0), pytest.approx(0.1))
    assert "eval" not in ph
    # mvpo evaluated once (3 s, outside time/total): 1 s per iteration of 11 s
    ph = s["arms"]["mvpo"]["phases"]
    assert ph["eval"] == (pytest.approx(1.0), pytest.approx(1 / 11))
    assert ph["rollout"] == (pytest.approx(6.0), pytest.approx(6 / 11))
    assert ph["total"][0] == pytest.approx(11.0)
    # Phi: iteration 2 lacks a successful trajectory; iteration 3 flips
    phi = s["arms"]["mvpo"]["phi"]
    assert phi["iterations_with_both"] == 2
    assert phi["flips"] == [(0, 3)]
    assert phi["gap_mean"] == pytest.approx((1.0 - 0.3) / 2)
    assert s["arms"]["mvpo"]["adv/kappa"] == {"first": 1.0, "last": pytest.approx(0.6)}
    assert s["arms"]["mvpo"]["amp_weights"]["seen"]["last"] == pytest.approx(0.4)
    # step-group grouping ratio = 1 - singleton ratio
    assert s["arms"]["mvpo"][run_sets.STEP_GROUPING] == {"first": 0.75, "last": 0.5}
    assert run_sets.STEP_GROUPING not in s["arms"]["grpo"]
    assert "grpo" in s["arms"] and "gigpo" not in s["arms"]
    # partial: grpo seed 1 has 3 of 5 iterations; gigpo has no run; mvpo seed 1 missing
    notes = "\n".join(s["partial"])
    assert "seed 1: 3/5" in notes and "`gigpo`: seeds not found [0, 1]" in notes
    assert "`mvpo`: seeds not found [1]" in notes


def test_a_run_in_progress_counts_where_it_has_iterations(diag, tmp_path: Path) -> None:
    """Early window: a run shorter than k is left out; curves: mean over seeds that have
    the iteration (the longer run alone past the shorter one's end)."""
    base = tmp_path / "study"
    _write_run(base / "mvpo-seed0", [_row(i, z) for i, z in ((1, 0.2), (2, 0.4), (3, 0.6))], 3)
    _write_run(base / "mvpo-seed1", [_row(1, 0.8)], planned=3)  # still running
    rs = run_sets.load_runset("alfworld", base, ("mvpo",), (0, 1))
    s = run_sets.summarize(rs, early=2)
    a = s["arms"]["mvpo"]
    assert s["early"] == 2 and a["early_seeds"] == [0] and a["seeds"] == [0, 1]
    assert a["adv/zero_adv_ratio"]["per_seed"] == {0: pytest.approx(0.3)}
    assert a["zero_adv_first_iteration"] == pytest.approx(0.5)  # both runs have iteration 1
    c = run_sets.curve(rs.rows("mvpo"), "adv/zero_adv_ratio")
    assert c["mean"].tolist() == pytest.approx([0.5, 0.4, 0.6])
    assert (c["lo"][0], c["hi"][0]) == (pytest.approx(0.2), pytest.approx(0.8))
    assert run_sets.summarize(rs, early=9)["early"] == 3  # at most the longest run


def test_analyze_only_writes_md_json_and_figure(diag, runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "res" / "diag.md"
    rc = diag.main(
        ["--analyze-only", "--alfworld-base", str(runs), "--alfworld-seeds", "0", "1",
         "--webshop-base", str(tmp_path / "none"), "--early", "2", "--out", str(out),
         *_elsewhere(tmp_path)]
    )  # fmt: skip
    assert rc == 0
    md = out.read_text()
    assert "| grpo | 2 of 2 | 3..3 | 0.750 | 0.700 (0.500..0.900; 0.900, 0.500)" in md
    assert "| 0.100 | 0.150 (0.150..0.150; 0.150, 0.150) |" in md  # success: it. 1, first 2
    assert "6.00 (60.0%)" in md
    assert "**flips** in 1 of 2 iterations" in md
    assert "**Partial run set**" in md
    # the planned iterations differ (3 vs 5): said, with the runs of each value
    assert "`iterations` differs between runs: 3 in grpo-seed0, mvpo-seed0; 5 in grpo-seed1" in md
    assert "Settings shared by the runs (their `config.yaml`): `lr` 0.001." in md
    assert md.count("**Not run yet**") == 4  # both WebShop sets and both headline studies
    assert (out.parent / "diag_alfworld.png").stat().st_size > 10_000
    assert not (out.parent / "diag_webshop.png").exists()
    data = json.loads(out.with_suffix(".json").read_text())
    assert data[0]["arms"]["mvpo"]["phi"]["flips"] == [[0, 3]]


def test_the_sweeps_quick_runs_are_a_marked_preview(diag, runs: Path, tmp_path: Path) -> None:
    """Study incomplete: the ``--quick`` runs are shown too, marked as a preview; study
    complete (or no preview asked): no preview."""
    out = tmp_path / "res" / "diag.md"
    rest = ["--webshop-base", str(tmp_path / "none"), "--out", str(out), *_elsewhere(tmp_path)]
    # not started
    args = ["--analyze-only", "--alfworld-base", str(tmp_path / "study-not-started"), *rest]
    assert diag.main([*args, "--alfworld-preview", str(runs)]) == 0
    md = out.read_text()
    assert "## alfworld-quick" in md and "**Preview only**" in md
    assert "made by `python benchmarks/learning.py --quick`" in md
    assert "| grpo | 1 of 1 | 3..3 | 1.000 |" in md  # seed 0 only
    assert "### Zero-advantage and zero-credit ratio, first 3 iterations" in md  # 5 > 3 done
    assert md.count("**Not run yet**") == 5  # the study, both WebShop sets, both headline sets
    assert (out.parent / "diag_alfworld-quick.png").is_file()
    # the study incomplete (gigpo and mvpo-learned have no run): the preview stays
    study = ["--analyze-only", "--alfworld-base", str(runs), "--alfworld-seeds", "0", *rest]
    assert diag.main([*study, "--alfworld-preview", str(runs)]) == 0
    assert "**Partial run set**" in out.read_text() and "## alfworld-quick" in out.read_text()
    # the study complete: every arm's seed 0 has its planned iterations: no preview
    done = tmp_path / "done"
    for arm in diag.ALFWORLD_ARMS:
        _write_run(done / f"{arm}-seed0", [_row(1, 0.5), _row(2, 0.5)], planned=2)
    complete = ["--analyze-only", "--alfworld-base", str(done), "--alfworld-seeds", "0", *rest]
    assert diag.main([*complete, "--alfworld-preview", str(runs)]) == 0
    md = out.read_text()
    assert "Complete: every asked seed has its planned iterations." in md
    assert "## alfworld-quick" not in md and "**Preview only**" not in md
    assert not (out.parent / "diag_alfworld-quick.png").exists()  # no figure of a dropped set
    assert diag.main([*args, "--alfworld-preview", ""]) == 0
    md = out.read_text()
    assert "**Preview only**" not in md and md.count("**Not run yet**") == 5


# ---------------------------------------------------------------- the studies in the MVPO paper's regime


def _mvpo_row(it: int, rho: float | None, rows: int) -> dict:
    return _row(it, 0.3, **{"adv/kappa": 1.0 - 0.01 * it, "adv/phi_success_mean": 1.0,
                            "adv/phi_failure_mean": 0.2, "adv/phi_split_spearman_failed": rho,
                            "adv/phi_split_rows": rows})  # fmt: skip


@pytest.fixture
def studies(tmp_path: Path) -> tuple[Path, Path]:
    """A partial ALFWorld full-split study (60 iterations planned) and a partial WebShop study."""
    full = tmp_path / "full"
    _write_run(full / "grpo-seed0", [_row(i, 0.6) for i in (1, 2, 3)], planned=60)
    _write_run(full / "mvpo-seed0", [_mvpo_row(1, 0.4, 100), _mvpo_row(2, None, 2),
                                     _mvpo_row(3, -0.2, 120)], planned=60)  # fmt: skip
    _write_run(full / "mvpo-seed1", [_mvpo_row(1, 0.2, 80), _mvpo_row(2, 0.3, 90)], planned=60)
    (full / "mvpo-seed1" / "config.yaml").write_text("lr: 0.001\n")  # no `iterations`: the plan's
    web = tmp_path / "web"
    _write_run(web / "gigpo-seed0", [_row(i, 0.7) for i in (1, 2)], planned=60)
    _write_run(web / "mvpo-seed0", [_mvpo_row(i, 0.1, 50) for i in (1, 2)], planned=60)
    return full, web


def _study_args(tmp_path: Path, full: Path, web: Path, *extra: str) -> list[str]:
    none = str(tmp_path / "none")
    return ["--analyze-only", "--alfworld-full-base", str(full), "--webshop-study-base", str(web),
            "--alfworld-base", none, "--webshop-base", none, "--previous-json", "",
            "--alfworld-preview", "", "--early", "2", "--out", str(tmp_path / "res" / "d.md"),
            *extra]  # fmt: skip


def test_the_studies_are_the_headline_and_marked_partial(diag, studies, tmp_path: Path) -> None:
    full, web = studies
    assert diag.main(_study_args(tmp_path, full, web)) == 0
    md = (tmp_path / "res" / "d.md").read_text()
    # headline first, the history sets after them
    assert md.index("## alfworld-full") < md.index("## webshop-study") < md.index("## alfworld\n")
    assert "**Headline**: the studies in the MVPO paper's regime, `alfworld-full` (partial), " in md
    # partial against the study's plan: 3 arms x 5 seeds x 60 iterations
    assert "`grpo`: seeds not found [1, 2, 3, 4]; iterations done/planned seed 0: 3/60" in md
    assert "`gigpo`: seeds not found [0, 1, 2, 3, 4]" in md
    assert "seed 0: 3/60, seed 1: 2/60" in md  # seed 1's config lacks `iterations`: the plan's 60
    assert "x seeds 0-4 x 60 iterations; done 8 of 900 run-iterations." in md
    assert "`mvpo-no-kappa-decay`: seeds not found [0, 1, 2, 3, 4]" in md  # WebShop's 4 arms
    assert "done 4 of 1200 run-iterations." in md
    # the MVPO paper's early zero-advantage numbers: a column on WebShop, a sentence on ALFWorld
    web_md = md[md.index("## webshop-study") : md.index("## alfworld\n")]
    assert "the MVPO paper's, WebShop, early |" in web_md
    assert "| gigpo | 1 of 1 | 2..2 | 0.700 | 0.700 (0.700..0.700; 0.700) |" in web_md
    assert web_md.rstrip().count("| ~0.65 |") == 1 and "| mvpo |" in web_md
    full_md = md[: md.index("## webshop-study")]
    assert "the MVPO paper's, WebShop, early" not in full_md
    assert "reports the early zero-advantage ratio on WebShop only (GRPO >0.90, GiGPO ~0.65)" in md
    assert (tmp_path / "res" / "d_alfworld-full.png").stat().st_size > 10_000
    assert (tmp_path / "res" / "d_webshop-study.png").is_file()


def test_phi_split_is_tabled_over_training(diag, studies, tmp_path: Path) -> None:
    full, web = studies
    rs = run_sets.load_runset("alfworld-full", full, diag.ALFWORLD_FULL_ARMS, range(5), 60)
    p = run_sets.summarize(rs, early=2)["arms"]["mvpo"]["phi_split"]
    # iteration 1: seeds 0.4, 0.2; iteration 3: seed 0 alone (-0.2); seed 0's 2nd is NaN
    assert (p["first"], p["last"]) == (pytest.approx(0.3), pytest.approx(-0.2))
    assert (p["values"], p["iterations"]) == (4, 5)
    assert p["mean"] == pytest.approx((0.4 - 0.2 + 0.2 + 0.3) / 4)
    assert (p["min"], p["max"], p["positive_share"]) == (-0.2, 0.4, 0.75)
    assert p["per_seed_mean"] == {0: pytest.approx(0.1), 1: pytest.approx(0.25)}
    assert p["rows_mean"] == pytest.approx((100 + 2 + 120 + 80 + 90) / 5)
    assert "phi_split" not in run_sets.summarize(rs, early=2)["arms"]["grpo"]
    assert diag.main(_study_args(tmp_path, full, web)) == 0
    md = (tmp_path / "res" / "d.md").read_text()
    assert "### Non-circular check of the potential: `adv/phi_split_spearman_failed`" in md
    assert "| mvpo | +0.300 -> -0.200 | +0.175 (-0.200..+0.400) | 75% | 4 of 5 " in md
    assert "| +0.100, +0.250 | 78 (2..120) |" in md


def _alignment(path: Path, run: Path | str, **variants: list) -> Path:
    doc = {"run": str(run), "variants": {
        name: {"iterations": [1, 2, 3][: len(auc)], "auc": auc, "repaired_rows": [10, 20, 30][: len(auc)]}
        for name, auc in variants.items()}, "unverified_trajectories": 1, "trajectories": 384,
        "command": f"python benchmarks/alignment.py --run-dir {run} --relabel --json {path}"}  # fmt: skip
    path.write_text(json.dumps(doc))
    return path


def test_alignment_json_is_tabled_per_set(diag, studies, tmp_path: Path) -> None:
    full, web = studies
    md_path = tmp_path / "res" / "d.md"
    # no file: "not measured yet", never a number; WebShop has no oracle
    assert diag.main(_study_args(tmp_path, full, web)) == 0
    md = md_path.read_text()
    assert ("**Not measured yet**: no `--alignment-json` file for this set's MVPO runs "
            "(`mvpo-seed0`, `mvpo-seed1`)") in md  # fmt: skip
    assert "the exact progress oracle exists for ALFWorld only" in md
    assert "AUC, mean over iterations" not in md
    # one file for seed 0 (two variants, one NaN iteration); seed 1 still not measured
    f = _alignment(tmp_path / "a0.json", full / "mvpo-seed0", trained=[0.6, None, 0.8],
                   **{"mvpo:form=v1": [0.4, 0.5]})  # fmt: skip
    assert diag.main(_study_args(tmp_path, full, web, "--alignment-json", str(f))) == 0
    md = md_path.read_text()
    al = md[md.index("### Step-level alignment") : md.index("## webshop-study")]
    assert "| `mvpo-seed0` | `trained` | 2 of 3 | 0.700 | 0.600..0.800 | 20 | 1 of 384 |" in al
    assert "| `mvpo-seed0` | `mvpo:form=v1` | 2 of 2 | 0.450 | 0.400..0.500 | 15 |" in al
    assert f"--run-dir {full / 'mvpo-seed0'} --relabel --json {f}`" in al
    assert "Not measured yet: `mvpo-seed1`." in al
    data = json.loads(md_path.with_suffix(".json").read_text())
    assert data[0]["env"] == "alfworld-full" and data[0]["alignment"][0]["name"] == "mvpo-seed0"
    # a file made on the live study's folder matches the set drawn from its compact copies
    live = _alignment(tmp_path / "a1.json", "runs/full/learning/mvpo-seed1", trained=[0.55])
    assert diag.main(_study_args(tmp_path, full, web, "--alignment-json", str(live))) == 0
    assert "| `mvpo-seed1` | `trained` | 1 of 1 | 0.550 |" in md_path.read_text()


def test_bad_alignment_input_is_one_line(diag, studies, tmp_path: Path, capsys) -> None:
    full, web = studies
    bad = tmp_path / "bad.json"
    bad.write_text('{"run": "x"}')
    assert diag.main(_study_args(tmp_path, full, web, "--alignment-json", str(bad))) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.json" in err and "'variants'" in err
    assert (
        diag.main(_study_args(tmp_path, full, web, "--alignment-json", str(tmp_path / "no"))) == 2
    )
    assert "no such file" in capsys.readouterr().err
    other = _alignment(tmp_path / "o.json", tmp_path / "elsewhere" / "mvpo-seed0", trained=[0.5])
    assert diag.main(_study_args(tmp_path, full, web, "--alignment-json", str(other))) == 2
    assert "no run set shown holds the run" in capsys.readouterr().err


def test_history_sets_are_carried_over_when_their_runs_are_gone(diag, runs, tmp_path: Path) -> None:
    """A history set drawn once, then its runs gone: the next drawing carries it over from the
    previous json, figure included, marked; a headline set is never carried."""
    none = str(tmp_path / "none")
    first = tmp_path / "first" / "d.md"
    assert diag.main(["--analyze-only", "--alfworld-base", str(runs), "--alfworld-seeds", "0", "1",
                      "--webshop-base", none, "--alfworld-full-base", none,
                      "--webshop-study-base", none, "--previous-json", "", "--early", "2",
                      "--out", str(first)]) == 0  # fmt: skip
    table = "| grpo | 2 of 2 | 3..3 | 0.750 | 0.700 (0.500..0.900; 0.900, 0.500)"
    assert table in first.read_text()
    again = tmp_path / "again" / "d.md"
    assert diag.main(["--analyze-only", "--alfworld-base", none, "--webshop-base", none,
                      "--alfworld-full-base", none, "--webshop-study-base", none,
                      "--previous-json", str(first.with_suffix(".json")), "--early", "2",
                      "--out", str(again)]) == 0  # fmt: skip
    md = again.read_text()
    assert table in md and "**Carried over**" in md and "**MVPO form.**" in md
    assert "**flips** in 1 of 2 iterations" in md
    assert (again.parent / "d_alfworld.png").read_bytes() == (
        first.parent / "d_alfworld.png"
    ).read_bytes()
    assert md.count("**Not run yet**") == 4  # the WebShop history sets were never found
    # carried again from the carried json: still the same numbers
    third = tmp_path / "third" / "d.md"
    assert diag.main(["--analyze-only", "--alfworld-base", none, "--webshop-base", none,
                      "--alfworld-full-base", none, "--webshop-study-base", none,
                      "--previous-json", str(again.with_suffix(".json")), "--out", str(third)]) == 0  # fmt: skip
    assert table in third.read_text() and third.read_text().count("**Carried over**") == 1


def test_the_committed_compact_copies_redraw_the_full_study(diag, tmp_path: Path) -> None:
    """``benchmarks/results/learning_full_runs``: found, checked against its own files, and
    partial exactly where a run has fewer than 60 iterations or a seed is missing."""
    copies = diag.ALFWORLD_FULL_COPIES
    rs = run_sets.load_runset("alfworld-full", copies, diag.ALFWORLD_FULL_ARMS, range(5), 60)
    assert rs.found()
    on_disk = {d.name: sum(1 for x in (d / "metrics.jsonl").open() if x.strip())
               for d in copies.iterdir() if (d / "metrics.jsonl").is_file()}  # fmt: skip
    loaded = {f"{a}-seed{s}": len(r.rows) for a, by in rs.runs.items() for s, r in by.items()}
    assert loaded == on_disk and all(
        r.planned == 60 for by in rs.runs.values() for r in by.values()
    )
    s = run_sets.summarize(rs, early=5)
    complete = len(on_disk) == 15 and all(n >= 60 for n in on_disk.values())
    assert bool(s["partial"]) == (not complete)
    for name, n in on_disk.items():
        arm, seed = name.rsplit("-seed", 1)
        note = next(x for x in s["partial"] if x.startswith(f"`{arm}`")) if n < 60 else ""
        assert n >= 60 or f"seed {seed}: {n}/60" in note
    assert "phi_split" in s["arms"]["mvpo"]  # the paper form logs its non-circular statistic
    out = tmp_path / "d.md"
    none = str(tmp_path / "none")
    assert diag.main(["--analyze-only", "--alfworld-full-base", str(copies),
                      "--webshop-study-base", none, "--alfworld-base", none, "--webshop-base", none,
                      "--previous-json", "", "--out", str(out)]) == 0  # fmt: skip
    md = out.read_text()
    assert md.index("## alfworld-full") < md.index("## alfworld\n")
    assert "Runs: `benchmarks/results/learning_full_runs/<arm>-seed<k>/`" in md
    assert "Read from the committed compact copies" in md
    assert ("**Partial run set**" in md) == (not complete)


def test_the_study_sets_follow_the_studys_plan(diag) -> None:
    """The arms and iterations the sets are marked partial against are the study harness's."""
    assert diag.WEBSHOP_STUDY_ARMS == learning_env.WEBSHOP.arms
    assert diag.STUDY_ITERATIONS == learning_env.WEBSHOP.iterations
    assert set(diag.ALFWORLD_FULL_ARMS) <= set(learning_env.ALFWORLD.arms)


def test_alignment_table_says_what_is_not_measured():
    s = {"alignment": [], "alignment_missing": ["mvpo-seed1"]}
    lines = alignment_lines(s, "ALFWorld")
    assert "(`mvpo-seed1`)" in lines[2] and run_sets.ALIGNMENT_CMD in lines[2]
    no_oracle = alignment_lines({"alignment": [], "oracle": False}, "ALFWorld")
    assert "exists for ALFWorld only" in no_oracle[2]
    al = {"name": "mvpo-seed0", "file": "a.json", "command": "", "trajectories": 8,
          "unverified_trajectories": 0, "variants": {"v": {"measured": 2, "iterations": 3,
          "mean": 0.6, "min": 0.5, "max": 0.7, "repaired_mean": 12.4}}}  # fmt: skip
    lines = alignment_lines({"alignment": [al], "alignment_missing": []}, "ALFWorld")
    assert "| `mvpo-seed0` | `v` | 2 of 3 | 0.600 | 0.500..0.700 | 12 | 0 of 8 |" in lines
    assert "* `mvpo-seed0` (`a.json`): `(no command in the file)`" in lines
