"""Config, flags, YAML, presets and the console entry points."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

import pytest

from mvpo_train.cli import build_model_main, eval_main, plot_main, train_main
from mvpo_train.config import (
    PRESETS,
    ConfigError,
    TrainConfig,
    build_parser,
    changed_fields,
    choices_of,
    config_from_args,
    preset,
    resume_safe_fields,
)
from mvpo_train.credit.mvpo import DEFAULT_FORM
from mvpo_train.metrics import read_metrics


def _micro_run(micro: Path, run: Path, *extra: str) -> list[str]:
    """``mvpo-train`` flags of one iteration of the micro model: 1 group of 1, 2 steps."""
    return [
        "--model", str(micro), "--run-dir", str(run), "--iterations", "1",
        "--num-groups", "1", "--group-size", "1", "--max-steps", "2", "--threads", "1",
        "--no-progress", "--no-tensorboard", *extra,
    ]  # fmt: skip


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """What the command wrote to stderr, checked to be one line."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_every_field_has_a_help_string_and_a_flag():
    parser = build_parser()
    flags = {a.dest: a for a in parser._actions}
    for f in dataclasses.fields(TrainConfig):
        assert f.metadata.get("help"), f.name
        assert f.name in flags and flags[f.name].help.startswith(f.metadata["help"])


def test_layering_defaults_preset_yaml_flags(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default run folder is free here
    p = build_parser()
    default = config_from_args(p.parse_args([]))
    assert default == TrainConfig(env_kwargs={"preset": "mini"})  # cpu-tiny: mini rooms
    # the preset's env keywords belong to its env id and yield to any given ones; WebShop's
    # declaration fills the search template for the score-mode CPU preset, not for the GPU one
    webshop = config_from_args(p.parse_args(["--env-id", "mvpo/WebShop-v0"]))
    assert webshop.env_kwargs == {"search_query": "instruction"}
    gpu_webshop = ["--env-id", "mvpo/WebShop-v0", "--preset", "gpu-qwen2.5-1.5b"]
    assert config_from_args(p.parse_args(gpu_webshop)).env_kwargs == {}
    given = config_from_args(p.parse_args(["--env-kwargs", '{"preset": "alfworld"}']))
    assert given.env_kwargs == {"preset": "alfworld"}
    gpu = config_from_args(p.parse_args(["--preset", "gpu-qwen2.5-1.5b"]))
    assert (gpu.lr, gpu.kl_coef, gpu.clip_ratio, gpu.gamma) == (1e-6, 0.01, 0.2, 0.95)
    assert (gpu.group_size, gpu.num_groups, gpu.max_steps, gpu.action_mode) == (
        8,
        16,
        50,
        "generate",
    )
    yaml_file = tmp_path / "x.yaml"
    yaml_file.write_text(
        "preset: gpu-qwen2.5-1.5b\nlr: 0.001\nestimator: gigpo\nestimator_kwargs: {omega: 0.5}\n"
    )
    cfg = config_from_args(
        p.parse_args(["--config", str(yaml_file), "--estimator", "ecpo", "--no-progress"])
    )
    assert cfg.lr == 0.001 and cfg.estimator == "ecpo" and cfg.progress is False
    assert (
        cfg.estimator_kwargs == {"omega": 0.5} and cfg.model == PRESETS["gpu-qwen2.5-1.5b"]["model"]
    )
    cfg = config_from_args(p.parse_args(["--tasks", "3,5", "--env-kwargs", '{"data_dir": "/d"}']))
    assert cfg.tasks == [3, 5] and cfg.env_kwargs == {"data_dir": "/d"}


def test_bad_values_are_rejected(tmp_path, capsys):
    with pytest.raises(ConfigError, match="action_mode: expected one of score, generate"):
        TrainConfig(action_mode="dance")
    bad = tmp_path / "bad.yaml"
    bad.write_text("learning_rate: 1\n")
    assert train_main(["--config", str(bad)]) == 2
    assert "bad.yaml: unknown config field 'learning_rate'" in _one_error_line(capsys)
    with pytest.raises(KeyError):
        preset("nope")
    # the estimator and its kwargs are checked when the config is built
    with pytest.raises(ConfigError, match="estimator: unknown estimator 'gipgo'"):
        TrainConfig(estimator="gipgo")
    with pytest.raises(ConfigError, match=r"estimator_kwargs: .*\['lamda_L'\]"):
        TrainConfig(estimator="mvpo", estimator_kwargs={"lamda_L": 0.3})
    with pytest.raises(ConfigError, match="estimator_kwargs: eps must be > 0"):
        TrainConfig(estimator="grpo", estimator_kwargs={"eps": -1.0})


def test_enum_fields_choices_and_checks_come_from_their_literal():
    """One place: the Literal of a field gives the argparse choices and the validation."""
    import typing

    parser = build_parser()
    flags = {a.dest: a for a in parser._actions}
    hints = typing.get_type_hints(TrainConfig)
    enums = [f.name for f in dataclasses.fields(TrainConfig) if choices_of(f.name)]
    assert {"action_mode", "loss_agg", "vectorization", "dtype", "backend"} <= set(enums)
    for name in enums:
        assert typing.get_origin(hints[name]) is typing.Literal
        allowed = choices_of(name)
        assert tuple(flags[name].choices) == allowed
        assert getattr(TrainConfig(), name) in allowed
        for value in allowed:
            assert getattr(TrainConfig(**{name: value}), name) == value
        with pytest.raises(ConfigError, match=f"^{name}: expected one of"):
            TrainConfig(**{name: "not-a-choice"})
    assert flags["lr"].help.endswith("; > 0)") and flags["top_p"].help.endswith("> 0 and <= 1)")


def test_types_and_bounds():
    assert TrainConfig(lr="1e-3").lr == 0.001  # YAML 1.1 reads 1e-3 as a string
    assert TrainConfig(lr=1).lr == 1.0 and isinstance(TrainConfig(lr=1).lr, float)
    for kw, match in [
        ({"num_groups": "four"}, "num_groups: expected an integer, got 'four'"),
        ({"num_groups": 4.0}, "num_groups: expected an integer"),
        ({"progress": "yes"}, "progress: expected true or false"),
        ({"ppo_epochs": -1}, "ppo_epochs: must be > 0, got -1"),
        ({"minibatch_size": -3}, "minibatch_size: must be >= 0, got -3"),
        ({"keep_checkpoints": -1}, "keep_checkpoints: must be > 0"),
        ({"lr": -0.1}, "lr: must be > 0, got -0.1"),
        ({"lr": float("nan")}, "lr: expected a finite number"),
        ({"top_p": 1.5}, "top_p: must be > 0 and <= 1, got 1.5"),
        ({"seed": -1}, "seed: must be >= 0 and <= 4294967295, got -1"),
        ({"tasks": [1, -2]}, r"tasks\[1\]: expected a task index >= 0"),
        ({"env_kwargs": [1]}, "env_kwargs: expected a mapping"),
    ]:
        with pytest.raises(ConfigError, match=match):
            TrainConfig(**kw)


def test_resume_safe_fields_and_changed_fields():
    safe = resume_safe_fields()
    assert {"iterations", "resume", "overwrite", "stop_after", "keep_checkpoints"} <= safe
    assert not {"lr", "seed", "estimator", "estimator_kwargs", "num_groups", "model"} & safe
    base = TrainConfig()
    saved = base.to_dict()
    state = {"form": DEFAULT_FORM}  # what a checkpoint of the default MVPO records
    assert (
        changed_fields(saved, TrainConfig(iterations=99, resume=True, progress=False), state) == {}
    )
    diff = changed_fields(saved, TrainConfig(lr=0.01, seed=3), state)
    assert diff == {"lr": (0.003, 0.01), "seed": (0, 3)}
    assert changed_fields({**saved, "old_field": 1}, base, state) == {"old_field": (1, None)}
    # a run saved before a field existed resumes when the field keeps its default, not otherwise
    older = {k: v for k, v in saved.items() if k != "lora_rank"}
    assert changed_fields(older, base, state) == {}
    assert changed_fields(older, TrainConfig(lora_rank=8), state) == {"lora_rank": (None, 8)}


def test_a_run_keeps_the_mvpo_form_it_started_with():
    """docs/estimators.md §3.10: a checkpoint without a recorded form ran v1 (the default then)."""
    saved = TrainConfig().to_dict()  # estimator mvpo, estimator_kwargs {}
    assert saved["estimator"] == "mvpo" and saved["estimator_kwargs"] == {}
    old_state = {"ema_success": 0.1, "iteration": 3, "amp": {}}  # no "form": saved before
    diff = changed_fields(saved, TrainConfig(), old_state)
    assert diff == {"estimator_kwargs": ({"form": "v1"}, {"form": DEFAULT_FORM})}
    assert changed_fields(saved, TrainConfig(estimator_kwargs={"form": "v1"}), old_state) == {}
    # a checkpoint that records its form, or a config that names it, is taken at its word
    assert changed_fields(saved, TrainConfig(), {**old_state, "form": DEFAULT_FORM}) == {}
    named = TrainConfig(estimator_kwargs={"form": DEFAULT_FORM}).to_dict()
    assert changed_fields(named, TrainConfig(), old_state) == {}
    # other estimators are untouched by the rule
    grpo = TrainConfig(estimator="grpo").to_dict()
    assert changed_fields(grpo, TrainConfig(estimator="grpo"), None) == {}


def test_print_config(capsys):
    assert train_main(["--print-config", "--lr", "0.5"]) == 0
    assert "lr: 0.5" in capsys.readouterr().out


def test_train_eval_plot_end_to_end(micro, tmp_path, capsys):
    run = tmp_path / "run"
    argv = [
        "--model", str(micro), "--run-dir", str(run), "--iterations", "2",
        "--num-groups", "1", "--group-size", "2", "--max-steps", "3", "--threads", "1",
        "--no-progress", "--no-tensorboard", "--estimator", "gigpo", "--tasks", "[13]",
        "--env-kwargs", '{"preset": "mini"}',
    ]  # fmt: skip
    assert train_main(argv) == 0
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2]
    out = tmp_path / "eval.json"
    assert eval_main(["--run-dir", str(run), "--max-tasks", "2", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["episodes"] == 2 and 0 <= result["success"] <= 1
    argv = ["--run-dir", str(run), "--split", "train", "--tasks", "13,1", "--episodes", "2"]
    assert eval_main([*argv, "--sampled", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["episodes"] == 4
    assert any(k.startswith("success/") for k in result)
    png = tmp_path / "curves.png"
    assert (
        plot_main([str(run), "--out", str(png), "--keys", "success", "adv/zero_credit_ratio"]) == 0
    )
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_build_model_main(tmp_path, capsys):
    out = tmp_path / "m"
    argv = [
        "--out", str(out), "--max-games", "1", "--hidden-size", "32",
        "--intermediate-size", "64", "--num-hidden-layers", "1", "--num-attention-heads", "2",
        "--num-key-value-heads", "1",
    ]  # fmt: skip
    assert build_model_main(argv) == 0
    meta = json.loads((out / "mvpo_tiny_model.json").read_text())
    assert meta["spec"]["hidden_size"] == 32 and meta["vocab"] > 300
    assert "parameters" in capsys.readouterr().out


def test_task_list_flag_forms_and_empty_run_dir(tmp_path, capsys, monkeypatch):
    parse = build_parser().parse_args
    assert parse(["--tasks", "7"]).tasks == [7]  # a list of one, as mvpo-eval --tasks 7
    assert parse(["--tasks", "1,8"]).tasks == [1, 8]
    assert parse(["--tasks", "[1, 8]"]).tasks == [1, 8]
    with pytest.raises(ConfigError, match="expected a list such as 1,8,13"):
        parse(["--tasks", ","])  # not a silent "all tasks"
    with pytest.raises(ConfigError, match="run_dir: empty"):
        TrainConfig(run_dir=" ")
    monkeypatch.chdir(tmp_path)
    assert train_main(["--run-dir", "", "--iterations", "1"]) == 2
    assert "run_dir: empty" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_task_index_out_of_range_is_one_line_before_any_rollout(micro, tmp_path, capsys):
    run = tmp_path / "run"
    argv = _micro_run(micro, run, "--tasks", "3,99", "--env-kwargs", '{"preset": "mini"}')
    assert train_main(argv) == 2  # 99 % 48 would silently train on task 3
    assert "tasks: [99] out of range" in _one_error_line(capsys)
    assert not (run / "metrics.jsonl").exists()


def test_eval_task_index_out_of_range_is_one_line(micro, tmp_path, capsys):
    run = tmp_path / "run"
    argv = _micro_run(micro, run, "--env-kwargs", '{"preset": "mini"}')
    assert train_main(argv) == 0
    capsys.readouterr()
    assert eval_main(["--run-dir", str(run), "--split", "eval", "--tasks", "1,500"]) == 2
    assert "tasks: [500] out of range; split 'eval'" in _one_error_line(capsys)


def test_an_eval_split_the_env_refuses_fails_before_training(micro, tmp_path, capsys):
    run = tmp_path / "run"
    argv = _micro_run(
        micro, run, "--env-id", "mvpo/SearchQA-v0", "--action-mode", "generate",
        "--prompt-style", "seed", "--max-new-tokens", "4", "--eval-every", "1",
        "--eval-split", "nope",
    )  # fmt: skip
    assert train_main(argv) == 2  # was: one iteration trained, then the error, no metrics
    assert "refused split='nope'" in _one_error_line(capsys)
    assert not run.exists()


def test_eval_out_folder_is_checked_before_evaluating(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "eval.json"  # a folder that cannot be made
    assert eval_main(["--run-dir", str(run), "--out", str(out)]) == 2  # was a traceback after it
    assert "--out: cannot create the folder of" in _one_error_line(capsys)


def test_plot_bad_suffix_and_empty_run_are_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("")
    assert plot_main([str(run), "--out", str(tmp_path / "c.png")]) == 2
    assert "no metrics rows yet" in capsys.readouterr().err
    (run / "metrics.jsonl").write_text('{"iteration": 1, "success": 0.5}\n')
    assert plot_main([str(run), "--out", str(tmp_path / "curves.txt")]) == 2  # was a traceback
    assert "has no image suffix" in _one_error_line(capsys)
    assert plot_main([str(run), "--out", str(tmp_path / "c.svg"), "--keys", "success"]) == 0
    assert (tmp_path / "c.svg").read_text().lstrip().startswith("<?xml")


def test_an_unreachable_retrieval_server_is_one_line(capsys):
    """SearchQA's http retriever raises ConnectionError mid-rollout: was a traceback."""
    from mvpo_envs.searchqa.retrievers.http import HttpRetriever
    from mvpo_train.cli import _guard

    def run(argv):
        return HttpRetriever("http://127.0.0.1:1/retrieve", timeout=1, retries=0).search(["x"], 1)

    assert _guard("mvpo-train", run, []) == 1
    assert "could not reach the retrieval server" in _one_error_line(capsys)


def test_unavailable_device_and_missing_extra_are_one_line(tmp_path, capsys, monkeypatch):
    import torch

    from mvpo_train.cli import _guard, check_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match=r"device: cuda:1 is not available .* 0 CUDA device"):
        check_device("cuda:1")
    check_device("cpu")
    run = tmp_path / "run"
    assert train_main(["--device", "cuda", "--run-dir", str(run), "--iterations", "1"]) == 2
    assert "device: cuda is not available" in capsys.readouterr().err and not run.exists()

    def needs_extra(argv):
        raise ImportError("the vllm backend needs vLLM: pip install 'mvpo[vllm]' (a CUDA machine)")

    assert _guard("mvpo-train", needs_extra, []) == 2  # was a traceback
    assert "pip install 'mvpo[vllm]'" in _one_error_line(capsys)


def test_snake_case_flags_are_the_dashed_flags(tmp_path):
    """``--run_dir`` (the YAML key's spelling) is ``--run-dir``, for every flag and form."""
    p = build_parser()
    dashed = config_from_args(p.parse_args(["--run-dir", "x", "--num-groups=2", "--no-progress"]))
    snake = config_from_args(p.parse_args(["--run_dir", "x", "--num_groups=2", "--no_progress"]))
    assert snake == dashed and snake.run_dir == "x" and snake.num_groups == 2
    assert not snake.progress
    # a value is never rewritten, nor anything after "--"
    args = p.parse_args(["--env-kwargs", '{"data_dir": "a_b"}', "--run_dir=--my_dir"])
    assert args.env_kwargs == {"data_dir": "a_b"} and args.run_dir == "--my_dir"
    with pytest.raises(ConfigError, match="unrecognized"):
        p.parse_args(["--not_a_flag", "1"])


def test_default_run_folder_per_preset_env_estimator_and_seed(tmp_path, monkeypatch):
    """Runs without --run-dir never share a folder: one per preset, env, estimator and seed,
    then -2, -3 ... when it holds a run; --resume and --overwrite take the newest."""
    monkeypatch.chdir(tmp_path)
    p = build_parser()

    def run_dir(*argv: str) -> str:
        return config_from_args(p.parse_args(list(argv))).run_dir

    assert run_dir() == "runs/cpu-tiny/alfworld-mvpo-seed0"
    assert run_dir("--estimator", "gigpo", "--seed", "1") == "runs/cpu-tiny/alfworld-gigpo-seed1"
    assert (
        run_dir("--env-id", "mvpo/MilestoneChain-v0") == "runs/cpu-tiny/milestonechain-mvpo-seed0"
    )
    assert run_dir("--preset", "gpu-qwen2.5-1.5b").startswith("runs/gpu-qwen2.5-1.5b/")
    assert run_dir("--preset", "cpu-showcase") == "runs/showcase"  # the showcase's own
    assert run_dir("--resume") == "runs/cpu-tiny/alfworld-mvpo-seed0"  # nothing there yet
    first = tmp_path / "runs/cpu-tiny/alfworld-mvpo-seed0"
    first.mkdir(parents=True)
    assert run_dir() == "runs/cpu-tiny/alfworld-mvpo-seed0"  # an empty folder holds no run
    (first / "config.yaml").write_text("seed: 0\n")
    assert run_dir() == "runs/cpu-tiny/alfworld-mvpo-seed0-2"
    (tmp_path / "runs/cpu-tiny/alfworld-mvpo-seed0-2").mkdir()
    (tmp_path / "runs/cpu-tiny/alfworld-mvpo-seed0-2/metrics.jsonl").write_text("")
    assert run_dir() == "runs/cpu-tiny/alfworld-mvpo-seed0-3"
    assert run_dir("--resume") == "runs/cpu-tiny/alfworld-mvpo-seed0-2"
    assert run_dir("--overwrite") == "runs/cpu-tiny/alfworld-mvpo-seed0-2"
    assert run_dir("--run-dir", "mine") == "mine"


def test_ctrl_c_is_one_line_with_the_exact_resume_command(micro, tmp_path, capsys, monkeypatch):
    """Ctrl-C: exit 130 and one line naming the command that continues the run: --resume once
    a checkpoint exists, --overwrite when the folder holds a run without one."""
    import mvpo_train.cli as cli

    run = tmp_path / "run"
    argv = _micro_run(micro, run, "--iterations", "2", "--stop-after", "1")
    assert train_main(argv) == 0  # a real run, stopped after its first checkpoint
    capsys.readouterr()

    def interrupted_train(config):
        raise KeyboardInterrupt

    monkeypatch.setattr("mvpo_train.trainer.train", interrupted_train)
    assert train_main([*argv, "--resume"]) == cli.EXIT_INTERRUPTED
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    command = err.split("continue with: ", 1)[1]
    assert command.startswith("mvpo-train --model ") and command.endswith(" --resume")
    assert command.count("--resume") == 1
    monkeypatch.undo()
    assert train_main(shlex.split(command)[1:]) == 0  # the line, pasted, finishes the run
    assert [r["iteration"] for r in read_metrics(run)] == [1, 2]
    # a run folder without a checkpoint: the hint starts afresh
    (run / "checkpoints").rename(tmp_path / "gone")
    assert cli.resume_command("mvpo-train", ["--resume"], run) == "mvpo-train --overwrite"
    assert cli.resume_command("mvpo-train", ["--seed", "1"], tmp_path / "new") == (
        "mvpo-train --seed 1"
    )


def test_eval_takes_threads_and_progress(micro, tmp_path, capsys):
    run = tmp_path / "run"
    assert train_main(_micro_run(micro, run)) == 0
    capsys.readouterr()
    base = ["--run-dir", str(run), "--split", "train", "--tasks", "13", "--max-steps", "2"]
    assert eval_main([*base, "--threads", "1"]) == 0
    assert "eval train" in capsys.readouterr().err  # the progress bar, on by default
    assert eval_main([*base, "--threads", "1", "--no-progress"]) == 0
    assert "eval train" not in capsys.readouterr().err
    assert eval_main([*base, "--threads", "-1"]) == 2


def test_plot_panels_have_whole_iteration_ticks_and_a_time_unit():
    """A short run's iteration axis ticks only whole iterations; a time panel names seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mvpo_train.metrics import format_axis

    fig, (a, b) = plt.subplots(1, 2)
    a.plot([1, 2, 3], [0.1, 0.2, 0.15])
    format_axis(a, "success", "iteration")
    b.plot([1, 2, 3], [30.0, 31.0, 29.0])
    format_axis(b, "time/total", "iteration")
    fig.canvas.draw()
    ticks = [t for t in a.get_xticks() if 1 <= t <= 3]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert a.get_title() == "success" and a.get_ylabel() == ""
    assert b.get_title() == "time/total (seconds per iteration)" and b.get_ylabel() == "seconds"
    plt.close(fig)
