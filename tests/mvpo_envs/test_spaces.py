"""AnyText: any Unicode text, exact through flatten and async shared memory (docs/environments.md)."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces import Text
from gymnasium.spaces.utils import flatten, unflatten
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

import mvpo_envs  # noqa: F401
from mvpo_envs.spaces import PAD, AnyText, decode_text, encode_text

TEXTS = [
    "",
    "look",
    "-= Welcome =-\n\nYou are in the middle of a room.\n",
    "Café «crème» 🍵 日本",
    "x" * 12,
]


def test_contains_any_string_within_length_only():
    space = AnyText(12, min_length=1)
    assert space.contains("é\n\t🍵")
    assert not space.contains("") and not space.contains("x" * 13)
    assert not space.contains(b"look") and not space.contains(3)


@pytest.mark.parametrize("text", TEXTS)
def test_encode_decode_and_flatten_roundtrip(text):
    space = AnyText(12 if len(text) <= 12 else 64)
    codes = encode_text(space, text)
    assert codes.dtype == np.int32 and codes.shape == (space.max_length,)
    assert (codes[len(text) :] == PAD).all() and codes[: len(text)].tolist() == [
        ord(c) for c in text
    ]
    assert decode_text(codes) == text
    assert unflatten(space, flatten(space, text)) == text


def test_too_long_or_non_text_is_an_error_not_a_cut():
    space = AnyText(4)
    with pytest.raises(ValueError, match="max_length=4"):
        encode_text(space, "abcde")
    with pytest.raises(TypeError, match="expected a str"):
        encode_text(space, 42)  # type: ignore[arg-type]


def test_shared_memory_roundtrip_of_several_envs():
    space = AnyText(64)
    memory = create_shared_memory(space, n=len(TEXTS))
    for i, text in enumerate(TEXTS):
        write_to_shared_memory(space, i, text, memory)
    view = read_from_shared_memory(space, memory, n=len(TEXTS))
    snapshot = copy.deepcopy(view)
    assert snapshot == tuple(TEXTS) and type(snapshot) is tuple and view[1:3] == tuple(TEXTS[1:3])
    write_to_shared_memory(space, 1, "changed", memory)  # a worker writes the next step
    assert view[1] == "changed" and snapshot[1] == TEXTS[1]  # live view, frozen copy


def test_plain_text_space_still_fails_on_a_newline():
    """Why AnyText exists: Gymnasium's Text encodes by charset index (KeyError('\\n'))."""
    with pytest.raises(KeyError):
        flatten(Text(8), "a\nb")


def test_sampling_is_seeded_and_inside_the_space():
    a, b = AnyText(20, seed=3), AnyText(20, seed=3)
    samples = [a.sample() for _ in range(5)]
    assert samples == [b.sample() for _ in range(5)]
    assert all(a.contains(s) for s in samples)
    assert AnyText(20) == AnyText(20) != AnyText(21) and len({AnyText(20), AnyText(20)}) == 1


def _make_vec_async_vs_sync(num_envs: int) -> dict:
    results = {}
    for mode in ("async", "sync"):
        envs = gym.make_vec("mvpo/ALFWorld-v0", num_envs=num_envs, vectorization_mode=mode)
        try:
            obs, infos = envs.reset(seed=[s // 2 for s in range(num_envs)])
            first = [actions[0] for actions in infos["admissible_actions"]]
            obs2, rewards, *_ = envs.step(tuple(first))
        finally:
            envs.close()
        results[mode] = (tuple(obs), tuple(obs2), rewards.tolist(), first)
    return results


def test_make_vec_async_with_shared_memory_carries_multiline_text():
    """docs/environments.md, "Vector envs", on 2 envs: shared memory on, multi-line
    observations, every step's observations (not the buffer's first read), the same as the
    sync vector env."""
    results = _make_vec_async_vs_sync(2)
    assert results["async"] == results["sync"]
    assert (
        all("\n" in o for o in results["async"][0]) and results["async"][0] != results["async"][1]
    )


@pytest.mark.slow
def test_readme_make_vec_async_line_works_as_written():
    """``gym.make_vec("mvpo/ALFWorld-v0", num_envs=8, vectorization_mode="async")``."""
    results = _make_vec_async_vs_sync(8)
    assert results["async"] == results["sync"]
