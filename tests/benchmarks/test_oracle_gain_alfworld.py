"""``benchmarks/oracle_gain_alfworld.py`` (docs/alignment.md, "The oracle-gain study"): every arm
runs the ALFWorld study's setting with one learning rate and KL, and the analysis pairs the
arms with GiGPO by seed."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import yaml

from mvpo_train.cli import train_main
from mvpo_train.stats import t_interval
from mvpo_train.study.runs import eval_file, run_dir

from .helpers import load_benchmark


@pytest.fixture(scope="module")
def og():
    return load_benchmark("oracle_gain_alfworld")


def test_every_arm_runs_the_study_setting_and_differs_only_in_its_estimator(og, tmp_path, capsys):
    args = og.parse_args(["--base", str(tmp_path)])
    configs = {}
    for arm in og.ARMS:
        argv = og.train_argv(run_dir(tmp_path, arm, 0), arm, 0, args, args.iterations)
        assert train_main([*argv, "--print-config"]) == 0
        configs[arm] = yaml.safe_load(capsys.readouterr().out)
    for arm, cfg in configs.items():
        assert (cfg["policy"], cfg["model"], cfg["history_length"]) == (
            "encoder", "alfworld-encoder-warm", 2)  # fmt: skip
        assert cfg["env_kwargs"] == {"num_games": "full", "progress_oracle": True}
        assert (cfg["num_groups"], cfg["group_size"], cfg["max_steps"]) == (16, 8, 50)
        assert (cfg["lr"], cfg["kl_coef"], cfg["ppo_epochs"], cfg["iterations"]) == (
            3e-4, 0.05, 2, 20)  # fmt: skip
        assert cfg["eval_split"] == "valid_unseen" and cfg["tasks"] == []
        assert cfg["embedding_batching"] == "rows1"  # as the study's first runs
        assert (cfg["estimator"], cfg["estimator_kwargs"]) == (og.ARMS[arm][0], og.ARMS[arm][1])
    drop = ("estimator", "estimator_kwargs", "run_dir")
    same = [{k: v for k, v in c.items() if k not in drop} for c in configs.values()]
    assert all(c == same[0] for c in same)


def _fake_run(path, success: list[float], heldout: float, auc: float | None) -> None:
    """A finished run folder as the trainer and ``mvpo-eval`` leave it (metrics and result)."""
    path.mkdir(parents=True)
    rows = [{"iteration": i + 1, "success": s} for i, s in enumerate(success)]
    for i, r in enumerate(rows):
        r["adv/zero_credit_ratio"] = 0.5 + 0.01 * i
        if auc is not None:
            r.update({"align/auc": auc, "adv/repaired_ratio": 0.4 + 0.01 * i, "adv/kappa": 0.9})
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    eval_file(path, "valid_unseen").write_text(json.dumps({"success": heldout}))


def test_analysis_pairs_with_gigpo_by_seed_and_refuses_a_changed_setting(og, tmp_path):
    base, out = tmp_path / "runs", tmp_path / "res" / "oracle_gain_alfworld.md"
    out.parent.mkdir()
    flags = ["--base", str(base), "--out", str(out), "--iterations", "4", "--seeds", "0", "1", "2",
             "--archive", str(tmp_path / "archive")]  # fmt: skip
    rng = np.random.default_rng(0)
    truth: dict[str, dict[int, float]] = {}
    arms = (("gigpo", 0.0), ("oracle-r0", 0.01), ("oracle-r1", 0.2), ("oracle-r1-credit", 0.1),
            ("positive", 0.15))  # fmt: skip
    assert {a for a, _ in arms} == set(og.ARMS)  # every arm has finished runs: none starts
    for arm, lift in arms:
        for seed in (0, 1, 2):
            succ = list(rng.uniform(0.1, 0.2, size=4) + lift)
            truth.setdefault(arm, {})[seed] = float(np.mean(succ))
            auc = None if arm == "gigpo" else 0.5 + lift * 2.5
            _fake_run(run_dir(base, arm, seed), succ, 0.1 + lift + 0.01 * seed, auc)
    og.main([*flags, "--analyze-only"])
    res = json.loads(out.with_suffix(".json").read_text())
    assert res["progress"] == {"runs_done": 15, "runs_planned": 15}
    assert set(res["pairs"]) == {f"{a} - gigpo" for a, _ in arms[1:]} | {"oracle-r1 - oracle-r0"}
    diff = [truth["oracle-r1"][s] - truth["oracle-r0"][s] for s in (0, 1, 2)]
    assert res["pairs"]["oracle-r1 - oracle-r0"]["area"]["mean"] == pytest.approx(np.mean(diff))
    assert res["arms"]["oracle-r1-credit"]["kwargs"]["oracle_scale"] == "credit"
    r1 = res["arms"]["oracle-r1"]
    assert r1["area"]["mean"] == pytest.approx(np.mean(list(truth["oracle-r1"].values())), abs=1e-6)
    assert r1["auc"] == pytest.approx(1.0) and res["arms"]["gigpo"]["auc"] is None
    diff = [truth["oracle-r1"][s] - truth["gigpo"][s] for s in (0, 1, 2)]
    pair = res["pairs"]["oracle-r1 - gigpo"]
    assert pair["area"]["t95"] == pytest.approx(list(t_interval(diff)[1:]), abs=1e-6)
    assert pair["heldout"]["mean"] == pytest.approx(0.2) and pair["seeds"] == [0, 1, 2]
    mech = res["arms"]["oracle-r1"]["mechanism"]  # 4 iterations: the means of 0.50..0.53 etc.
    assert mech["adv/zero_credit_ratio"] == pytest.approx(0.515)
    assert mech["adv/repaired_ratio"] == pytest.approx(0.415) and mech["adv/kappa"] == 0.9
    assert res["arms"]["gigpo"]["mechanism"]["adv/kappa"] is None  # GiGPO logs no kappa
    md = out.read_text()
    assert (
        "| oracle-r1 | 0.515 | 0.415 | - | 0.900 |" in md and "| gigpo | 0.515 | - | - | - |" in md
    )
    assert "| oracle-r1 - gigpo | 3 |" in md and "Not measured for this study yet" in md
    assert "the study, 15 runs: " in md  # the estimate from the committed measurements
    # a sweep over the finished runs starts nothing and records the settings; another lr: refused
    og.main(flags)
    with pytest.raises(SystemExit, match=r"oracle_gain_alfworld: .*changed: \['lr'\]"):
        og.main([*flags, "--lr", "0.001"])
    # the estimate --size writes is kept by a later analysis, and the page states it
    res["sizing"] = {
        "command": "python benchmarks/oracle_gain_alfworld.py --size", "setup_cpu_s": 60.0,
        "iteration_cpu_s": [90.0, 80.0], "eval_cpu_s": 100.0, "eval_episodes": 16,
        "heldout_games": 134, "runs": 9, "iterations": 20, "final_episodes": 4,
        "run_cpu_s": 60.0 + 20 * 85.0, "eval_run_cpu_s": 100.0 / 16 * 134 * 4,
        "study_cpu_h": 9 * (1760.0 + 3350.0) / 3600.0,
    }  # fmt: skip
    out.with_suffix(".json").write_text(json.dumps(res))
    og.main([*flags, "--analyze-only"])
    assert json.loads(out.with_suffix(".json").read_text())["sizing"] == res["sizing"]
    md = out.read_text()
    assert "one run = setup + 20 x 85 s + 134 games x 4 episode(s) x 6.2 s" in md
    assert "the study, 9 runs: 12.8 CPU h" in md


def test_finished_runs_are_archived_and_restored_where_run_folders_are_gone(og, tmp_path):
    """Only finished runs (every iteration and the held-out evaluation) go to the archive, with
    their compact files only; a later call on a machine without the run folders imports them
    and writes the same tables."""
    base, out, arch = tmp_path / "runs", tmp_path / "res" / "oga.md", tmp_path / "archive"
    out.parent.mkdir()
    flags = ["--base", str(base), "--out", str(out), "--iterations", "3", "--seeds", "0", "1",
             "--archive", str(arch)]  # fmt: skip
    for arm in og.ARMS:
        _fake_run(run_dir(base, arm, 0), [0.1, 0.2, 0.3], 0.2, 0.7)
    _fake_run(run_dir(base, "gigpo", 1), [0.1, 0.2], 0.2, None)  # unfinished: 2 of 3 iterations
    (run_dir(base, "gigpo", 0) / "records").mkdir()  # not a compact file: never archived
    og.main([*flags, "--analyze-only"])
    first = out.with_suffix(".json").read_text()
    assert sorted(p.name for p in arch.iterdir()) == sorted(
        ["settings.json", *(f"{a}-seed0" for a in og.ARMS)]
    )
    assert sorted(p.name for p in (arch / "gigpo-seed0").iterdir()) == [
        "eval-valid_unseen.json", "metrics.jsonl"]  # fmt: skip
    shutil.rmtree(base)
    og.main([*flags, "--analyze-only"])
    assert out.with_suffix(".json").read_text() == first
    assert (run_dir(base, "oracle-r1", 0) / "metrics.jsonl").is_file()
    # an archive made with other settings is refused in one line
    with pytest.raises(SystemExit, match="changed"):
        og.main([*flags, "--analyze-only", "--lr", "0.001"])


def test_magnitude_reads_the_finished_runs_records_and_later_analyses_keep_it(og, tmp_path):
    from mvpo_train.credit import get_estimator
    from mvpo_train.records import write_batch_record
    from mvpo_train.study.repair_magnitude import repair_magnitude
    from mvpo_train.study.synthetic import synthetic_batch

    base, out = tmp_path / "runs", tmp_path / "res" / "oracle_gain_alfworld.md"
    out.parent.mkdir()
    flags = ["--base", str(base), "--out", str(out), "--iterations", "2", "--seeds", "0",
             "--archive", str(tmp_path / "archive"), "--jobs", "2"]  # fmt: skip
    for arm in og.ARMS:
        path = run_dir(base, arm, 0)
        _fake_run(path, [0.1, 0.2], 0.1, None if arm == "gigpo" else 0.5)
        estimator = get_estimator("gigpo" if arm == "gigpo" else "mvpo")
        for it in (1, 2):
            batch = synthetic_batch(3, seed=it)
            adv, diag = estimator(batch)
            write_batch_record(
                path, it, batch, estimator=estimator, advantages=adv, diagnostics=diag
            )
    og.main([*flags, "--magnitude"])
    res = json.loads(out.with_suffix(".json").read_text())
    assert set(res["magnitude"]) == set(og.ARMS) - {"gigpo"}  # GiGPO has no repair
    want = repair_magnitude(run_dir(base, "oracle-r1", 0))
    assert res["magnitude"]["oracle-r1"]["0"] == pytest.approx(want)
    assert "## The repair's magnitude" in out.read_text()
    og.main([*flags, "--analyze-only"])  # records not read again, the table kept
    assert json.loads(out.with_suffix(".json").read_text())["magnitude"] == res["magnitude"]
    assert (
        f"| oracle-r1 | 0 | {want['changed']:.3f} | {want['repair_share']:.3f} |" in out.read_text()
    )
