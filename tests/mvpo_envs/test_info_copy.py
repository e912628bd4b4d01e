"""The info copy of :class:`mvpo_envs.base.TextEnv` (:mod:`mvpo_envs.info_copy`).

``copy_plain`` replaced ``copy.deepcopy`` in ``TextEnv._record``; these tests hold it to the
old results: every env's infos pickle to the same bytes as with ``deepcopy`` (values, types,
and which objects are shared), infos handed out never change afterwards, and a user who
mutates an info cannot change what the env does next (which an info aliasing the env's own
state, the tracker's previous state or the state an invalid step reuses, would).
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs import base
from mvpo_envs.info_copy import copy_plain

#: env id -> gym.make keywords (small data where the env has a preset)
ENVS: dict[str, dict[str, Any]] = {
    "mvpo/ALFWorld-v0": {"preset": "mini"},
    "mvpo/MilestoneChain-v0": {"difficulty": 1},
    "mvpo/WebShop-v0": {},
    "mvpo/SearchQA-v0": {},
}
INVALID = "jump over the moon"


def _nodes(value: Any) -> list[Any]:
    """Every dict and list of a tree (the value itself included)."""
    out, todo = [], [value]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            out.append(v)
            todo.extend(v.values())
        elif isinstance(v, list | tuple):
            out += [v] if isinstance(v, list) else []
            todo.extend(v)
    return out


def test_copy_plain_equals_deepcopy_and_shares_no_container():
    tree = {
        "a": [1, 2.5, "x", None, True, {"b": [[], {}]}],
        "c": {"d": {"e": [3]}},
        7: "int key",
        "t": ([1], 2),  # a tuple holding a list: deepcopy's branch copies the list
    }
    got = copy_plain(tree)
    assert pickle.dumps(got) == pickle.dumps(copy.deepcopy(tree))
    mine = {id(n) for n in _nodes(got)}
    assert not mine & {id(n) for n in _nodes(tree)}
    got["a"][5]["b"][0].append(1)
    got["t"][0].append(1)
    assert tree["a"][5]["b"][0] == [] and tree["t"][0] == [1]


def test_copy_plain_hands_other_types_to_deepcopy():
    arr = np.arange(3)
    value = {"arr": arr, "np": np.float64(0.5), "set": {1, 2}, "sub": _Sub(k=[1])}
    got = copy_plain(value)
    assert got["arr"] is not arr and np.array_equal(got["arr"], arr)
    assert type(got["np"]) is np.float64 and type(got["sub"]) is _Sub
    assert got["sub"]["k"] is not value["sub"]["k"] and got["set"] == {1, 2}


class _Sub(dict):
    """A dict subclass: copied by deepcopy, keeping its type."""


def test_a_cycle_falls_back_to_deepcopy():
    loop: list[Any] = [1]
    loop.append(loop)
    got = copy_plain({"loop": loop})
    assert got["loop"] is not loop and got["loop"][1] is got["loop"]


def _mutate(value: Any) -> None:
    """Empty every dict and list of a tree (leaving a marker): what a careless user might do."""
    for node in _nodes(value):
        node.clear()
        if isinstance(node, dict):
            node["__mutated__"] = True
        else:
            node.append("__mutated__")


def _episodes(env_id: str, mutate: bool) -> tuple[list[bytes], list[bytes], list[Any]]:
    """3 seeded episodes with random admissible actions and an invalid action every 5th step:
    the pickle of every reset or step result and of its info, taken as it returns, and the
    infos themselves (with ``mutate``, each emptied once its pickles are taken)."""
    env = gym.make(env_id, **ENVS[env_id])
    dumps, info_dumps, infos = [], [], []
    for episode in range(3):
        rng = np.random.default_rng(episode)
        out: tuple[Any, ...] = env.reset(seed=episode)
        for t in range(26):
            info = out[-1]
            dumps.append(pickle.dumps(out))
            info_dumps.append(pickle.dumps(info))
            infos.append(info)
            adm = list(info["admissible_actions"])
            if mutate:
                _mutate(info)
            if t == 25 or (len(out) == 5 and (out[2] or out[3])):
                break
            out = env.step(INVALID if t % 5 == 2 or not adm else adm[rng.integers(len(adm))])
    env.close()
    return dumps, info_dumps, infos


@pytest.mark.parametrize("env_id", list(ENVS))
def test_infos_are_bit_identical_to_deepcopy_and_never_aliased(env_id, monkeypatch):
    with monkeypatch.context() as patch:  # the reference: the deepcopy _record had
        patch.setattr(base, "copy_plain", copy.deepcopy)
        reference, _, _ = _episodes(env_id, mutate=False)
    dumps, info_dumps, infos = _episodes(env_id, mutate=False)
    assert dumps == reference  # same values, types and sharing, step by step
    assert [pickle.dumps(i) for i in infos] == info_dumps  # kept infos did not change later
    mutated, _, _ = _episodes(env_id, mutate=True)
    assert mutated == reference  # emptying each info changed nothing the env did next


def test_the_aliasing_check_fails_without_a_copy(monkeypatch):
    """The check above is not vacuous: an info that shares the env's state fails it."""
    env_id = "mvpo/MilestoneChain-v0"
    reference, _, _ = _episodes(env_id, mutate=False)
    monkeypatch.setattr(base, "copy_plain", lambda value: value)
    try:
        changed = _episodes(env_id, mutate=True)[0] != reference
    except KeyError:  # the env read its emptied state back (the abstraction's key is gone)
        changed = True
    assert changed
