"""``benchmarks/ablations.py``: the variants are valid trainer configs, and the credit-alignment
analysis recomputes a real run's records (docs/learning_study.md, "Ablations")."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from mvpo_train.cli import train_main
from mvpo_train.config import build_estimator, build_parser, config_from_args
from mvpo_train.study import learning_runs
from mvpo_train.study.analyze_only import AnalyzeOnlyError
from mvpo_train.study.credit_mass import credit_alignment

from .helpers import study_module

TINY = ["--num-groups", "2", "--group-size", "4", "--max-steps", "6", "--ppo-epochs", "1",
        "--threads", "1", "--no-progress", "--no-tensorboard", "--eval-every", "0"]  # fmt: skip


@pytest.fixture(scope="module")
def ablations():
    yield study_module("ablations")


def test_every_variant_is_the_mvpo_arm_plus_one_valid_change(ablations):
    mvpo = study_module("learning_env").ARMS["mvpo"]
    env = ablations.study_env("paper")
    assert env.arm("mvpo") == [*mvpo, "--estimator-kwargs", '{"form": "paper"}']
    base = build_estimator(config_from_args(build_parser().parse_args(env.arm("mvpo"))))
    for name, (flags, what) in ablations.VARIANTS.items():
        arm = env.arm(name)
        cfg = config_from_args(build_parser().parse_args(arm))
        est = build_estimator(cfg)  # raises on an unknown or mistyped estimator option
        assert est.name == "mvpo" and est.config.form == "paper" and what
        if flags[0] == "--estimator-kwargs":
            changed = json.loads(flags[1])
            kwargs = json.loads(arm[arm.index("--estimator-kwargs") + 1])
            assert arm == [*mvpo, "--estimator-kwargs", json.dumps(kwargs, sort_keys=True)]
            assert kwargs == {"form": "paper", **changed}
            assert all(getattr(est.config, k) == v for k, v in changed.items())
            assert any(getattr(base.config, k) != v for k, v in changed.items())
        else:
            assert arm == [*env.arm("mvpo"), *flags]
            assert cfg.abstraction == flags[flags.index("--abstraction") + 1]


def test_the_sweep_trains_the_study_arm_with_the_variant_on_the_train_split_only(
    ablations, tmp_path
):
    args = argparse.Namespace(variants=["mvpo-lambdaL0"], seeds=[0], iterations=3, jobs=1,
                              ray=None, base=str(tmp_path), embedding_cache="e.npz", form="v1")  # fmt: skip
    sweep = ablations.sweep_args(args)
    cmd = learning_runs.train_cmd(tmp_path / "r", "mvpo-lambdaL0", 0, sweep)
    at = cmd.index("--estimator-kwargs")
    assert json.loads(cmd[at + 1]) == {"form": "v1", "lambda_L": 0.0}  # the variant's, in v1
    assert cmd[cmd.index("--eval-every") + 1] == "0" and "--model" in cmd
    cmd = learning_runs.train_cmd(tmp_path / "r", "mvpo", 0, sweep)
    assert json.loads(cmd[cmd.index("--estimator-kwargs") + 1]) == {"form": "v1"}
    assert sweep.arms == ["mvpo", "mvpo-lambdaL0"] and not sweep.eval


class _Stop(Exception):
    """Raised by a recorder in place of the sweep."""


def test_form_is_parsed_fingerprinted_and_never_reuses_runs_of_another(
    ablations, tmp_path, monkeypatch, capsys
):
    """``--form``: MVPO's forms only (default: the estimator's); the sweep records it in
    ``BASE/settings.json``, and a base holding runs of another form is refused in one line
    before any run (finished runs are never reused under another form)."""
    from mvpo_train.credit.mvpo import DEFAULT_FORM

    with pytest.raises(SystemExit) as bad:
        ablations.main(["--form", "nonsense", "--analyze-only"])
    assert bad.value.code == 2 and "--form: invalid choice" in capsys.readouterr().err
    swept: list[argparse.Namespace] = []
    monkeypatch.setattr(ablations, "warm_start_and_eval", lambda *a: None)

    def run_all(sa, base, root):
        swept.append(sa)
        raise _Stop  # before the analysis: the runs are what is checked

    monkeypatch.setattr(ablations, "run_all", run_all)
    base = tmp_path / "runs"
    with pytest.raises(_Stop):
        ablations.main(["--base", str(base), "--form", "v1", "--variants", "mvpo-amp-off"])
    arm = swept[0].study_env.arm("mvpo-amp-off")
    assert json.loads(arm[arm.index("--estimator-kwargs") + 1]) == {"eta": 0.0, "form": "v1"}
    assert json.loads((base / "settings.json").read_text())["settings"] == {"form": "v1"}
    with pytest.raises(SystemExit, match=r"other settings \(changed: \['form'\]\)"):
        ablations.main(["--base", str(base), "--variants", "mvpo-amp-off"])  # default form
    assert len(swept) == 1 and DEFAULT_FORM != "v1"


def _train(run: Path, *extra: str) -> None:
    argv = ["--preset", "cpu-tiny", "--estimator", "mvpo", "--iterations", "2", "--seed", "0",
            "--run-dir", str(run), *TINY, *extra]  # fmt: skip
    assert train_main(argv) == 0


def test_credit_alignment_splits_a_real_run_into_gigpo_credit_and_repair(ablations, tmp_path):
    # the ablations decompose the v1 form (its loop term); benchmarks/results/ablations.md
    _train(tmp_path / "default", "--estimator-kwargs", '{"form": "v1"}')
    success = [json.loads(x)["success"] for x in (tmp_path / "default" / "metrics.jsonl").open()]
    default = credit_alignment(tmp_path / "default")
    # GiGPO's part is not given an alignment (it contains A^E, the outcome itself)
    assert "alignment_gigpo" not in default and "phi_split_spearman_failed" in default
    if not any(success):
        # every group failed: GiGPO's credit is 0 everywhere, all advantage is the repair
        assert default["repair_share"] == 1.0
        assert np.isnan(default["alignment_repair"])
    else:
        assert 0.0 < default["repair_share"] <= 1.0
    # kappa fixed at 0: the repair carries nothing; with every group failed no row has credit
    _train(
        tmp_path / "off",
        "--estimator-kwargs",
        '{"form": "v1", "kappa_schedule": "constant", "kappa_constant": 0.0, "lambda_L": 0.0}',
    )
    off = credit_alignment(tmp_path / "off")
    assert 0.0 < default["loop_share"] <= 1.0 + 1e-9  # v1's lambda_L = 0.5 has a loop term
    assert off["loop_share"] == 0.0 or np.isnan(off["loop_share"])  # lambda_L = 0: none
    assert off["repair_share"] == 0.0 or (not any(success) and np.isnan(off["repair_share"]))


def test_credit_alignment_refuses_a_record_it_does_not_reproduce(ablations, tmp_path):
    from mvpo_train.records import find_records

    _train(tmp_path / "run")
    path = find_records(tmp_path / "run")[1]
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["advantages"] = data["advantages"] + 1.0
    np.savez(path, **data)
    with pytest.raises(RuntimeError, match="differ from the recorded ones"):
        credit_alignment(tmp_path / "run")


def test_the_analysis_tables_a_variant_against_mvpo_on_the_same_seed(ablations, tmp_path):
    """``--analyze-only`` over a base with the ``mvpo`` arm and one variant (2 tiny iterations
    each, batch records kept): the table, its pair and the figure are written."""
    base, out = tmp_path / "runs", tmp_path / "results" / "ablations.md"
    flags = ablations.VARIANTS["mvpo-lambdaL0"][0]
    _train(base / "mvpo-seed0", "--estimator-kwargs", '{"form": "v1"}')
    _train(base / "mvpo-lambdaL0-seed0", "--estimator-kwargs", '{"form": "v1", "lambda_L": 0.0}')
    assert json.loads(flags[1]) == {"lambda_L": 0.0}
    (base / "mvpo-kappa0.1-seed0").mkdir()  # a variant without metrics: not in the table
    argv = ["--analyze-only", "--base", str(base), "--iterations", "2", "--out", str(out)]
    assert ablations.main(argv) == 0
    table = json.loads(out.with_suffix(".json").read_text())
    assert list(table["arms"]) == ["mvpo", "mvpo-lambdaL0"] and table["common_seeds"] == [0]
    assert table["settings"] == {"form": "v1"}  # as the runs' config.yaml name it
    row = table["arms"]["mvpo-lambdaL0"]
    assert row["seeds"] == [0] and row["loop_share"] == 0.0  # lambda_L = 0: no loop term
    assert table["arms"]["mvpo"]["loop_share"] > 0.0
    assert "mvpo-lambdaL0 - mvpo" in table["pairs"]
    text = out.read_text()
    assert "| mvpo-lambdaL0 | no loop penalty (lambda_L 0.5 -> 0) | 1 |" in text
    assert out.with_suffix(".png").stat().st_size > 0

    # without the runs: the same page and table, from the JSON (a note added by hand kept)
    note = "**Note.** added by hand"
    out.write_text(text.replace("\n\n| variant |", f"\n\n{note}\n\n| variant |", 1))
    shutil.rmtree(base)
    saved = out.with_suffix(".json").read_text()
    assert ablations.main(argv) == 0
    assert out.read_text() == text.replace("\n\n| variant |", f"\n\n{note}\n\n| variant |", 1)
    assert out.with_suffix(".json").read_text() == saved


def _legacy_json(path: Path) -> None:
    """The committed ``ablations.json`` as the first runs left it: no ``Phi split Spearman``
    column, no ``settings`` (the runs predate ``--form``), the commands without ``--form``."""
    from .helpers import ROOT

    table = json.loads((ROOT / "benchmarks/results/ablations.json").read_text())
    for row in table["arms"].values():
        row.pop("phi_split_spearman_failed")
    table.pop("settings")
    table["commands"] = [c.replace(" --form v1", "") for c in table["commands"]]
    path.write_text(json.dumps(table))


def test_a_json_without_what_the_page_shows_is_one_line(ablations, tmp_path):
    """A JSON from before the ``Phi split Spearman`` column: rebuilding it without the runs is
    refused in one line (nothing written), not a page with made-up cells."""
    out = tmp_path / "ablations.md"
    _legacy_json(out.with_suffix(".json"))
    argv = ["--analyze-only", "--base", str(tmp_path / "absent"), "--out", str(out)]
    with pytest.raises(AnalyzeOnlyError) as err:
        ablations.main(argv)
    line = str(err.value)
    assert (
        "\n" not in line
        and "has no phi_split_spearman_failed" in line
        and "never committed" in line
    )
    # what to run: the page's commands with the form of its runs, and what it costs
    assert 'its runs used form="v1"' in line
    assert (
        "`python benchmarks/ablations.py --form v1`, then `python benchmarks/ablations.py "
        "--seeds 0 1 2 3 4 --variants mvpo-lambdaL0 --test mvpo-lambdaL0 --form v1`" in line
    )
    assert re.search(r"\(33 runs, ~\d+ run-minutes at 1 thread", line)
    assert not out.exists() and not out.with_suffix(".png").exists()


def test_the_committed_page_rebuilds_from_its_json_alone(ablations, tmp_path):
    """``benchmarks/results/ablations.md`` and its JSON, byte for byte, from the JSON without
    the runs (their batch records are not committed); the hand-added notes kept."""
    from .helpers import ROOT

    out = tmp_path / "ablations.md"
    committed = ROOT / "benchmarks/results/ablations"
    for suffix in (".md", ".json"):
        shutil.copy(committed.with_suffix(suffix), out.with_suffix(suffix))
    argv = ["--analyze-only", "--base", str(tmp_path / "absent"), "--out", str(out)]
    assert ablations.main(argv) == 0
    for suffix in (".md", ".json"):
        assert out.with_suffix(suffix).read_bytes() == committed.with_suffix(suffix).read_bytes()
    assert out.with_suffix(".png").stat().st_size > 0
