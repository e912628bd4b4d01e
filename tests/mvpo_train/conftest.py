"""Fixtures shared by the trainer tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from mvpo_train.tiny_model import MICRO_SPEC, build_tiny_model


@pytest.fixture(scope="module")
def micro(tmp_path_factory) -> Path:
    """A micro Qwen2 model + tokenizer, built in seconds, for fast trainer tests."""
    return build_tiny_model(
        tmp_path_factory.mktemp("micro"), MICRO_SPEC, texts=["go to fridge 1"] * 3
    )
