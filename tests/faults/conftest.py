"""Fixtures of the fault suite (docs/training.md, "Reliability"): a micro model and a small,
fast trainer config."""

from __future__ import annotations

from pathlib import Path

import pytest

from mvpo_train.tiny_model import MICRO_SPEC, build_tiny_model


@pytest.fixture(scope="session")
def micro(tmp_path_factory) -> Path:
    """A micro Qwen2 model + tokenizer, built in seconds."""
    return build_tiny_model(
        tmp_path_factory.mktemp("micro"), MICRO_SPEC, texts=["go to fridge 1"] * 3
    )


@pytest.fixture(scope="session")
def train_argv(micro: Path):
    """``train_argv(run_dir, *extra, iterations=4)``: ``mvpo-train`` flags of a small run
    (about a second per iteration on one thread)."""

    def make(run_dir: Path, *extra: str, iterations: int = 4) -> list[str]:
        return _argv(micro, run_dir, *extra, iterations=iterations)

    return make


#: iterations of the shared :func:`reference` run
REFERENCE_ITERATIONS = 4


@pytest.fixture(scope="session")
def reference(tmp_path_factory, train_argv) -> Path:
    """An uninterrupted run of ``train_argv`` (4 iterations, every checkpoint kept), shared
    read-only by the fault tests that compare a killed, failed or resumed run with it: one
    training run for the suite instead of one per module."""
    from mvpo_train.cli import train_main

    run = tmp_path_factory.mktemp("ref") / "run"
    argv = train_argv(run, "--keep-checkpoints", "9", iterations=REFERENCE_ITERATIONS)
    assert train_main(argv) == 0
    return run


def _argv(micro: Path, run_dir: Path, *extra: str, iterations: int) -> list[str]:
    return [
        "--model", str(micro), "--run-dir", str(run_dir), "--device", "cpu", "--threads", "1",
        "--no-progress", "--no-tensorboard", "--num-groups", "2", "--group-size", "2",
        "--max-steps", "4", "--iterations", str(iterations), "--estimator", "mvpo",
        "--minibatch-size", "8", "--micro-batch-size", "4", "--ppo-epochs", "2", "--lr", "5e-3",
        "--seed", "3", "--env-kwargs", '{"preset": "mini"}', *extra,
    ]  # fmt: skip
