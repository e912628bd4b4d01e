"""Bad input to the CLIs: one line naming the field or file and what is allowed, exit code 2,
no traceback (``--debug`` shows it), nothing written (docs/training.md, "Reliability")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mvpo_train.cli import build_model_main, eval_main, plot_main, train_main
from mvpo_train.config import ConfigError, TrainConfig, load_config
from mvpo_train.credit import get_estimator

MAINS = {
    "mvpo-train": train_main,
    "mvpo-eval": eval_main,
    "mvpo-plot": plot_main,
    "mvpo-build-tiny-model": build_model_main,
}


def _one_line_error(capsys, prog: str, rc: int) -> str:
    captured = capsys.readouterr()
    assert rc == 2, captured
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    return lines[0]


# (case id, YAML text or None, flags, expected fragment of the one line)
TRAIN_CASES = [
    ("yaml-syntax", "lr: [0.1,\nseed: 1\n", [], "YAML syntax error at line"),
    ("yaml-not-mapping", "- 1\n- 2\n", [], "expected a mapping of config fields"),
    ("yaml-unknown-field", "learning_rate: 0.1\n", [], "unknown config field 'learning_rate'"),
    ("yaml-wrong-type", "num_groups: four\n", [], "num_groups: expected an integer, got 'four'"),
    ("yaml-negative-epochs", "ppo_epochs: -1\n", [], "ppo_epochs: must be > 0, got -1"),
    ("yaml-negative-keep", "keep_checkpoints: -1\n", [], "keep_checkpoints: must be > 0"),
    ("yaml-negative-lr", "lr: -0.1\n", [], "lr: must be > 0, got -0.1"),
    ("yaml-bad-enum", "loss_agg: mean\n", [], "loss_agg: expected one of token-mean"),
    ("yaml-bad-kwargs", "estimator_kwargs: [1]\n", [], "estimator_kwargs: expected a mapping"),
    ("flag-wrong-type", None, ["--num-groups", "four"], "--num-groups: invalid int value"),
    ("flag-negative-minibatch", None, ["--minibatch-size", "-3"], "minibatch_size: must be >= 0"),
    ("flag-zero-groups", None, ["--group-size", "0"], "group_size: must be > 0, got 0"),
    ("flag-bad-choice", None, ["--action-mode", "dance"], "--action-mode: invalid choice"),
    ("flag-bad-json", None, ["--env-kwargs", "[1]"], "expected a JSON dict"),
    ("flag-negative-task", None, ["--tasks", "[1,-2]"], "tasks[1]: expected a task index >= 0"),
    ("unknown-estimator", None, ["--estimator", "gipgo"], "estimator: unknown estimator 'gipgo'"),
    (
        "unknown-estimator-kwarg",
        None,
        ["--estimator-kwargs", '{"lamda_L": 0.3}'],
        "estimator_kwargs: estimator 'mvpo' got unknown config field(s) ['lamda_L']",
    ),
    ("bad-estimator-value", None, ["--estimator-kwargs", '{"eps": -1}'], "eps must be > 0"),
    ("missing-config-file", None, ["--config", "/nonexistent/x.yaml"], "config file not found"),
    ("unknown-preset-in-yaml", "preset: huge\n", [], "preset: unknown preset 'huge'"),
    ("missing-model", None, ["--model", "/nonexistent/model"], "model: /nonexistent/model"),
    ("unknown-env-id", None, ["--env-id", "mvpo/Nope-v0"], "env_id: unknown env id"),
    ("unknown-split", None, ["--split", "nope"], "split / env_kwargs: mvpo/ALFWorld-v0 refused"),
    (
        "unknown-env-kwarg",
        None,
        ["--env-kwargs", '{"data_dri": "/x"}'],
        "unexpected keyword argument 'data_dri'",
    ),
    ("abstraction-of-another-env", None, ["--abstraction", "webshop"], "reads the state key"),
    ("abstraction-without-folder", None, ["--abstraction", "learned:"], "needs a folder"),
    ("bad-device", None, ["--device", "gpu"], "device: expected auto, cpu, cuda, cuda:N or mps"),
    ("resume-missing-run", None, ["--resume"], "does not exist, so there is nothing to resume"),
    ("resume-and-overwrite", None, ["--resume", "--overwrite"], "exclude each other"),
    # non-finite and out-of-range numbers, refused before the run folder is written
    (
        "kwarg-nan",
        None,
        ["--estimator-kwargs", '{"lambda_L": NaN}'],
        "estimator_kwargs['lambda_L']: expected a finite number, got nan",
    ),
    (
        "yaml-kwarg-nan",
        "estimator_kwargs:\n  lambda_L: .nan\n",
        [],
        "estimator_kwargs['lambda_L']: expected a finite number, got nan",
    ),
    (
        "kwarg-inf-rloo",
        None,
        ["--estimator", "rloo", "--estimator-kwargs", '{"eps": Infinity}'],
        "estimator_kwargs['eps']: expected a finite number, got inf",
    ),
    (
        "kwarg-huge-int",
        None,
        ["--estimator-kwargs", '{"omega": 1' + "0" * 400 + "}"],
        "estimator_kwargs['omega']: integer out of range",
    ),
    (
        "kwarg-out-of-range",
        None,
        ["--estimator", "beacon", "--estimator-kwargs", '{"omega": -1}'],
        "estimator 'beacon': config field 'omega' must be >= 0, got -1",
    ),
    (
        "env-kwargs-infinity",
        None,
        ["--env-kwargs", '{"preset": "mini", "x": -Infinity}'],
        "env_kwargs['x']: expected a finite number, got -inf",
    ),
    (
        "yaml-env-kwargs-date",
        "env_kwargs:\n  preset: mini\n  when: 2020-01-01\n",
        [],
        "env_kwargs['when']: expected JSON values",
    ),
    (
        "seed-huge",
        None,
        ["--seed", "1180591620717411303424"],
        "seed: must be >= 0 and <= 4294967295",
    ),
    ("seed-2**32", None, ["--seed", str(2**32)], "seed: must be >= 0 and <= 4294967295, got"),
    ("threads-huge", None, ["--threads", str(2**40)], "threads: must be >= 0 and <= 4096"),
    ("yaml-int-64-bit", "iterations: " + str(2**64) + "\n", [], "iterations: integer out of range"),
    ("yaml-float-huge-int", "lr: 1" + "0" * 400 + "\n", [], "lr: expected a finite number"),
    (
        "too-many-envs",
        None,
        ["--num-groups", "300", "--group-size", "300"],
        "num_groups / group_size: 300 x 300 environments in one batch; at most 65536",
    ),
    ("nproc-zero", None, ["--nproc", "0"], "--nproc: expected an integer >= 1, got '0'"),
    # parser limits: deep nesting, huge integers, duplicate keys, encodings
    ("yaml-deep", "env_kwargs: " + "[" * 5000 + "]" * 5000 + "\n", [], "nested deeper than 100"),
    ("flag-deep-json", None, ["--env-kwargs", "[" * 5000 + "]" * 5000], "nested deeper than 100"),
    ("flag-deep-tasks", None, ["--tasks", "[" * 5000 + "]" * 5000], "nested deeper than 100"),
    ("flag-5000-digits", None, ["--tasks", "9" * 5000], "an integer of more than 4300 digits"),
    ("yaml-5000-digits", "lr: " + "9" * 5000 + "\n", [], "an integer of more than 4300 digits"),
    ("yaml-duplicate-key", "seed: 1\nlr: 0.1\nseed: 2\n", [], "duplicate key 'seed' at line 3"),
    ("yaml-not-utf8", b"lr: \xff\n", [], "config file is not valid UTF-8 (byte 4, line 1)"),
    ("yaml-nul", 'split: "tr\\0ain"\n', [], "split: contains a NUL character"),
    # empty strings that would silently mean a default
    ("empty-model", None, ["--model", ""], "model: empty"),
    ("empty-split", None, ["--split", ""], "split: empty"),
    ("empty-eval-split", None, ["--eval-split", ""], "eval_split: empty"),
    # two settings that say different things
    (
        "split-conflict",
        None,
        ["--split", "eval", "--env-kwargs", '{"split": "train"}'],
        "env_kwargs / split: env_kwargs['split'] = 'train' conflicts with split = 'eval'",
    ),
    (
        "max-steps-conflict",
        None,
        ["--max-steps", "5", "--env-kwargs", '{"preset": "mini", "max_episode_steps": 9}'],
        "env_kwargs['max_episode_steps'] = 9 conflicts with max_steps = 5",
    ),
    (
        "abstraction-conflict",
        None,
        ["--abstraction", "alfworld", "--env-kwargs", '{"abstraction": "webshop"}'],
        "env_kwargs['abstraction'] = 'webshop' conflicts with abstraction = 'alfworld'",
    ),
    (
        "env-kwarg-the-trainer-sets",
        None,
        ["--env-kwargs", '{"vectorization_mode": "async"}'],
        "env_kwargs: 'vectorization_mode' is set by the trainer (from the field vectorization)",
    ),
    (
        "abstraction-kwargs-unused",
        None,
        ["--abstraction-kwargs", '{"k": 2}'],
        "abstraction_kwargs: only used with --abstraction learned",
    ),
    (
        "refit-every-unused",
        None,
        ["--abstraction-refit-every", "2"],
        "abstraction_refit_every: only used with --abstraction learned",
    ),
    (
        "refit-unknown-kwarg",
        None,
        ["--abstraction", "learned", "--abstraction-kwargs", '{"kk": 2}'],
        "abstraction_kwargs['kk']: unknown field (did you mean 'k'?)",
    ),
    (
        "refit-bad-k",
        None,
        ["--abstraction", "learned", "--abstraction-kwargs", '{"k": 0}'],
        "abstraction_kwargs['k']: must be >= 1, got 0",
    ),
    (
        "refit-seed-twice",
        None,
        ["--abstraction", "learned", "--abstraction-kwargs", '{"seed": 5}'],
        "abstraction_kwargs['seed']: set it with the field seed instead",
    ),
]


@pytest.mark.parametrize("case", TRAIN_CASES, ids=[c[0] for c in TRAIN_CASES])
def test_mvpo_train_bad_input(case, tmp_path, capsys, micro):
    _, yaml_text, flags, expected = case
    run = tmp_path / "run"
    model = [] if "--model" in flags else ["--model", str(micro)]
    argv = ["--run-dir", str(run), *model, *flags]
    if yaml_text is not None:
        data = yaml_text if isinstance(yaml_text, bytes) else yaml_text.encode()
        (tmp_path / "c.yaml").write_bytes(data)
        argv += ["--config", str(tmp_path / "c.yaml")]
    line = _one_line_error(capsys, "mvpo-train", train_main(argv))
    assert expected in line
    assert not run.exists()  # nothing written


def test_config_files_that_are_folders_or_fifos_are_refused(tmp_path, capsys):
    """A FIFO would block the read forever; a folder is not a config file."""
    (tmp_path / "folder").mkdir()
    cases = [(tmp_path / "folder", "config file is a folder")]
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        cases.append((tmp_path / "fifo", "config file is not a regular file"))
    for path, expected in cases:
        argv = ["--run-dir", str(tmp_path / "run"), "--config", str(path)]
        assert expected in _one_line_error(capsys, "mvpo-train", train_main(argv))
        with pytest.raises(ConfigError, match=expected):
            load_config(path)
    assert not (tmp_path / "run").exists()


# (estimator, field, value, expected fragment): the registry checks every caller's values
ESTIMATOR_VALUES = [
    ("rloo", "eps", float("nan"), "config field 'eps' must be a finite number, got nan"),
    ("reinforce", "eps", -1.0, "config field 'eps' must be > 0, got -1.0"),
    ("ecpo", "k", float("nan"), "config field 'k' must be a finite number"),
    ("gigpo", "omega", float("inf"), "config field 'omega' must be a finite number, got inf"),
    ("gigpo", "omega", 10**400, "config field 'omega' must be at most 2**63 in size"),
    ("beacon", "c", float("-inf"), "config field 'c' must be a finite number"),
    ("beacon", "omega", -0.5, "config field 'omega' must be >= 0, got -0.5"),
    ("progpo", "omega", -1, "config field 'omega' must be >= 0"),
    ("mvpo", "lambda_F", -0.2, "config field 'lambda_F' must be >= 0"),
    ("mvpo", "c_succ", -1.0, "config field 'c_succ' must be >= 0"),
]


@pytest.mark.parametrize("case", ESTIMATOR_VALUES, ids=[f"{c[0]}-{c[1]}" for c in ESTIMATOR_VALUES])
def test_estimator_values_are_checked_by_the_registry(case):
    name, field, value, expected = case
    with pytest.raises(ValueError, match=expected.replace("*", r"\*")):
        get_estimator(name, **{field: value})


def test_good_values_still_pass():
    """The checks refuse only what is out of range: boundaries and nested values are fine."""
    cfg = TrainConfig(
        seed=2**32 - 1,
        threads=4096,
        split="train",
        env_kwargs={"preset": "mini", "split": "train", "max_episode_steps": 20},
        estimator_kwargs={"lambda_L": 0.0, "eps": 1e-9, "milestone_names": ["a", "b"]},
        abstraction="learned",
        abstraction_kwargs={"k": 2, "model_path": None},
    )
    assert cfg.seed == 2**32 - 1 and cfg.estimator_kwargs["lambda_L"] == 0.0
    assert get_estimator("beacon", omega=0, c=0.0, gamma_ms=1.0).config.omega == 0


def test_estimator_is_checked_before_the_model_loads(tmp_path, capsys):
    """A typo in the estimator is reported even when the model is missing too."""
    argv = ["--run-dir", str(tmp_path / "r"), "--model", "/nonexistent/m", "--estimator", "x"]
    assert "estimator: unknown estimator 'x'" in _one_line_error(
        capsys, "mvpo-train", train_main(argv)
    )


def test_a_failing_command_leaves_the_runs_config_yaml_alone(tmp_path, capsys, train_argv):
    run = tmp_path / "run"
    assert train_main(train_argv(run, iterations=1)) == 0
    before = (run / "config.yaml").read_bytes()
    metrics = (run / "metrics.jsonl").read_bytes()
    capsys.readouterr()
    for flags in (
        ["--resume", "--lr", "0.5"],  # refused: a changed config
        ["--resume", "--model", "/nonexistent/m"],  # refused: a missing model
        ["--overwrite", "--env-id", "mvpo/Nope-v0"],  # refused before the old run is moved
        ["--resume", "--estimator", "nope"],
    ):
        assert train_main(train_argv(run, *flags, iterations=2)) == 2, flags
        capsys.readouterr()
        assert (run / "config.yaml").read_bytes() == before, flags
        assert (run / "metrics.jsonl").read_bytes() == metrics, flags
    assert not list(tmp_path.glob("run.old-*"))


# ------------------------------------------------------------------ mvpo-eval / plot / build


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, train_argv) -> Path:
    run = tmp_path_factory.mktemp("evalrun") / "run"
    assert train_main(train_argv(run, iterations=1)) == 0
    return run


def _other_cases(run: Path, tmp: Path) -> list[tuple[str, list[str], str]]:
    bad_metrics = tmp / "bad.jsonl"
    bad_metrics.write_text('{"iteration": 1}\nnot json\n{"iteration": 3}\n')
    (tmp / "syntax.yaml").write_text("a: [\n")
    (tmp / "dup.yaml").write_text("seed: 1\nseed: 2\n")
    (tmp / "norun").mkdir(exist_ok=True)
    fifo = []
    if hasattr(os, "mkfifo") and not (tmp / "fifo").exists():
        os.mkfifo(tmp / "fifo")
        fifo = [("mvpo-plot", [str(tmp / "fifo")], "runs: ")]
    return [
        *fifo,
        ("mvpo-eval", ["--run-dir", ""], "--run-dir: empty"),
        ("mvpo-eval", ["--run-dir", str(run), "--split", ""], "--split: empty"),
        ("mvpo-eval", ["--run-dir", str(run), "--model", ""], "--model: empty"),
        (
            "mvpo-eval",
            ["--run-dir", str(run), "--seed", str(2**70)],
            "--seed: expected an integer <=",
        ),
        ("mvpo-eval", ["--run-dir", str(run), "--seed", "-1"], "--seed: expected an integer >= 0"),
        ("mvpo-eval", ["--run-dir", str(run), "--episodes", "9" * 30], "--episodes: expected an"),
        ("mvpo-eval", ["--run-dir", str(run), "--out", str(tmp / "norun")], "is a folder"),
        ("mvpo-eval", ["--run-dir", str(run), "--config", str(tmp / "dup.yaml")], "duplicate key"),
        ("mvpo-plot", [""], "runs: empty"),
        ("mvpo-build-tiny-model", ["--seed", "-1"], "--seed: expected an integer >= 0"),
        ("mvpo-build-tiny-model", ["--seed", str(2**64)], "--seed: expected an integer <="),
        ("mvpo-build-tiny-model", ["--rope-theta", "nan"], "--rope-theta: expected a finite"),
        ("mvpo-build-tiny-model", ["--initializer-range", "-1"], "--initializer-range: expected"),
        ("mvpo-build-tiny-model", ["--hidden-size", "65536"], "parameters (more than 1e+09)"),
        ("mvpo-build-tiny-model", ["--data-dir", ""], "--data-dir: empty"),
        ("mvpo-build-tiny-model", ["--splits", ""], "--splits: empty"),
        ("mvpo-build-tiny-model", ["--preset", "nope"], "--splits / --preset / --data-dir: "),
        ("mvpo-build-tiny-model", ["--splits", "nope"], "--splits / --preset / --data-dir: "),
        ("mvpo-eval", ["--run-dir", str(tmp / "missing")], "--run-dir: "),
        ("mvpo-eval", ["--run-dir", str(tmp / "norun")], "has no config.yaml"),
        ("mvpo-eval", ["--run-dir", str(run), "--tasks", "a,b"], "--tasks: expected comma"),
        ("mvpo-eval", ["--run-dir", str(run), "--episodes", "0"], "--episodes: expected an"),
        ("mvpo-eval", ["--model", "/nonexistent/m"], "model: /nonexistent/m"),
        ("mvpo-eval", ["--run-dir", str(run), "--env-id", "Nope-v9"], "env_id: unknown env id"),
        ("mvpo-eval", ["--config", str(tmp / "syntax.yaml")], "YAML syntax error at line 2"),
        ("mvpo-eval", ["--preset", "huge"], "--preset: invalid choice"),
        ("mvpo-eval", ["--run-dir", str(run), "--split", "nope"], "refused split='nope'"),
        ("mvpo-plot", [str(tmp / "missing")], "no such metrics file"),
        ("mvpo-plot", [str(bad_metrics)], "bad.jsonl: line 2 is not a JSON object"),
        ("mvpo-plot", [str(run), "--keys", "nope"], "--keys: none of ['nope']"),
        ("mvpo-plot", [str(run), "--smooth", "0"], "--smooth: expected an integer >= 1"),
        ("mvpo-plot", [str(run), "--labels", "a", "b"], "--labels: expected one label per run"),
        ("mvpo-plot", [str(run), "--x", "nope"], "--x: 'nope' is not a metric"),
        ("mvpo-build-tiny-model", ["--hidden-size", "0"], "--hidden-size: expected an integer"),
        (
            "mvpo-build-tiny-model",
            ["--hidden-size", "30", "--num-attention-heads", "4"],
            "--hidden-size: must be a multiple of --num-attention-heads",
        ),
        ("mvpo-build-tiny-model", ["--data-dir", str(tmp / "missing")], "--data-dir: "),
        ("mvpo-build-tiny-model", ["--env-id", "Nope-v9"], "--env-id: unknown env id"),
    ]


def test_eval_plot_build_bad_input(run_dir, tmp_path, capsys):
    out = tmp_path / "out"
    for prog, argv, expected in _other_cases(run_dir, tmp_path):
        if prog == "mvpo-build-tiny-model":
            argv = [*argv, "--out", str(out)]
        if prog == "mvpo-plot":
            argv = [*argv, "--out", str(out / "x.png")]
        line = _one_line_error(capsys, prog, MAINS[prog](argv))
        assert expected in line, (prog, argv, line)
        assert not out.exists(), (prog, argv)


def test_an_empty_output_path_is_refused_not_the_current_folder(tmp_path, capsys, monkeypatch):
    """``--out ''`` would write into the current folder (or nowhere): refused."""
    monkeypatch.chdir(tmp_path)
    for prog, argv in (
        ("mvpo-build-tiny-model", ["--out", ""]),
        ("mvpo-eval", ["--out", ""]),
        ("mvpo-plot", [str(tmp_path), "--out", ""]),
    ):
        assert "--out: empty" in _one_line_error(capsys, prog, MAINS[prog](argv))
    assert list(tmp_path.iterdir()) == []


def test_plot_refuses_an_output_that_is_a_folder(run_dir, tmp_path, capsys):
    (tmp_path / "dir.png").mkdir()
    argv = [str(run_dir), "--out", str(tmp_path / "dir.png")]
    line = _one_line_error(capsys, "mvpo-plot", plot_main(argv))
    assert f"--out: {tmp_path / 'dir.png'} is a folder" in line


def test_eval_reads_the_run_and_plot_skips_only_a_torn_last_line(run_dir, tmp_path, capsys):
    torn = tmp_path / "m.jsonl"
    rows = (run_dir / "metrics.jsonl").read_text()
    torn.write_text(rows + '{"iteration": 2, "succ')  # killed mid-write
    out = tmp_path / "c.png"
    assert plot_main([str(torn), "--keys", "success", "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    res = tmp_path / "e.json"
    argv = ["--run-dir", str(run_dir), "--max-tasks", "1", "--out", str(res)]
    assert eval_main(argv) == 0
    assert json.loads(res.read_text())["model"].endswith("iter-000001")


# ------------------------------------------------------------------ real processes


def _run(prog: str, argv: list[str]) -> subprocess.CompletedProcess:
    fn = {"mvpo-train": "train_main", "mvpo-eval": "eval_main", "mvpo-plot": "plot_main"}[prog]
    code = f"import sys; from mvpo_train.cli import {fn}; sys.exit({fn}())"
    return subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120
    )


def test_console_scripts_exit_2_with_one_line_and_debug_shows_the_traceback(tmp_path):
    (tmp_path / "c.yaml").write_text("num_groups: four\n")
    res = _run("mvpo-train", ["--config", str(tmp_path / "c.yaml")])
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == [
        "mvpo-train: error: num_groups: expected an integer, got 'four' (str)"
    ]
    res = _run("mvpo-plot", [str(tmp_path / "none")])
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1
    res = _run("mvpo-train", ["--config", str(tmp_path / "c.yaml"), "--debug"])
    assert res.returncode == 1
    assert "Traceback" in res.stderr and "ConfigError: num_groups" in res.stderr


def test_eval_run_dir_name_too_long_is_one_line(tmp_path, capsys):
    """``Path.is_dir()`` raises ``File name too long`` (not False) for a 300-byte name."""
    line = _one_line_error(
        capsys, "mvpo-eval", eval_main(["--run-dir", str(tmp_path / ("r" * 300))])
    )
    assert "--run-dir" in line and "too long" in line


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, '{"a": ' + "9" * 5000 + "}", "{"])
def test_other_clis_read_env_kwargs_with_bounded_json(text, tmp_path, capsys):
    """mvpo-fit-abstraction and the encoder warm start parse --env-kwargs like mvpo-train:
    deep nesting, a 5,000-digit integer and bad JSON are one usage error, not a traceback."""
    from mvpo_train.fit_abstraction import main as fit_main
    from mvpo_train.warm_start import main as encoder_main

    argv = ["--out", str(tmp_path / "out"), "--env-kwargs", text]
    assert fit_main(["mvpo/ALFWorld-v0", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--env-kwargs" in err, err
    with pytest.raises(SystemExit) as info:  # a plain argparse usage error: exit 2
        encoder_main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--env-kwargs" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
