"""The info contract in vector envs: one type per key, so Gymnasium's info merge never breaks.

docs/environments.md, "Info contract". 32 envs of each env id play seeded random admissible
actions (plus some garbled ones) through mixed states — search pages, results, items, answers,
finished episodes and their autoresets — and every info they return must (a) give each key,
nested ``state`` keys included, one Python type, and (b) survive Gymnasium's merge: the merged
arrays, unbatched, give back exactly what each sub-env returned.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.async_worker import TextAsyncVectorEnv
from mvpo_envs.base import INFO_KEYS
from mvpo_envs.info_contract import INFO_TYPES, contract_errors
from mvpo_envs.vector import unbatch_infos

NUM_ENVS = 32
STEPS = {
    "mvpo/ALFWorld-v0": 14,
    "mvpo/WebShop-v0": 14,
    "mvpo/SearchQA-v0": 10,
    "mvpo/MilestoneChain-v0": 30,
}
WORDS = ("red", "shirt", "women", "tea", "organic", "shoes", "size", "capital", "year", "x")


pytestmark = pytest.mark.usefixtures("forget_shared_retrievers")


class InfoRecorder(gym.Wrapper):
    """Keeps the last info and the type of every key path of every info it returned."""

    def __init__(self, env: gym.Env, env_id: str):
        super().__init__(env)
        self.env_id = env_id
        self.types: dict[str, set[str]] = {}
        self.errors: set[str] = set()
        self.last_info: dict[str, Any] = {}

    def _keep(self, info: dict[str, Any]) -> None:
        self.last_info = info
        self.errors.update(contract_errors(info, self.env_id))
        for path, name in type_paths(info):
            self.types.setdefault(path, set()).add(name)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._keep(info)
        return obs, info

    def step(self, action):
        out = self.env.step(action)
        self._keep(out[-1])
        return out


def type_paths(info: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """``("state.page", "str")`` for every key, nested dicts flattened."""
    out = []
    for key, value in info.items():
        path = f"{prefix}{key}"
        out.append((path, type(value).__name__))
        if isinstance(value, dict):
            out += type_paths(value, path + ".")
    return out


def random_action(rng: random.Random, info: dict[str, Any]) -> str:
    """A seeded random admissible action, its template filled with words; 10% garbage."""
    admissible = list(info.get("admissible_actions") or [])
    if not admissible or rng.random() < 0.1:
        return rng.choice(["garbage", "click[nowhere]", "<search></search>", ""])
    action = rng.choice(admissible)
    words = " ".join(rng.sample(str(info.get("task", "")).split() or list(WORDS), k=1))
    words += " " + rng.choice(WORDS)
    if action == "search[<query>]":
        return f"search[{words}]"
    if action == "<search> query </search>":
        return f"<search> {words} </search>"
    if action == "<answer> text </answer>":
        golden = list(info.get("golden_answers") or [])
        answer = rng.choice(golden) if golden and rng.random() < 0.4 else words
        return f"<answer> {answer} </answer>"
    return action


def _assert_merge_is_lossless(infos: dict[str, Any], recorders: list[InfoRecorder]) -> None:
    merged = unbatch_infos(infos, len(recorders))
    for i, recorder in enumerate(recorders):
        assert merged[i] == recorder.last_info, f"env {i}: the vector info differs"


def _play(venv: gym.vector.VectorEnv, env_id: str, seed: int) -> list[dict[str, Any]]:
    """Random play; returns every merged info (checked against each sub-env when visible)."""
    rng = random.Random(seed)
    recorders = [e for e in getattr(venv, "envs", []) if isinstance(e, InfoRecorder)] or None
    obs, infos = venv.reset(seed=[seed + i // 4 for i in range(venv.num_envs)])
    seen = [infos]
    for _ in range(STEPS[env_id]):
        per_env = unbatch_infos(infos, venv.num_envs)
        actions = tuple(random_action(rng, info) for info in per_env)
        obs, rewards, terminated, truncated, infos = venv.step(actions)
        seen.append(infos)
        assert rewards.dtype == np.float64 and terminated.dtype == np.bool_
        if recorders is not None:
            _assert_merge_is_lossless(infos, recorders)
    return seen


def _pages(env_id: str, seen: list[dict[str, Any]]) -> set[str]:
    """Which kinds of states were visited (to prove the play was mixed)."""
    kinds: set[str] = set()
    for infos in seen:
        state = infos["state"]
        if env_id == "mvpo/WebShop-v0":
            kinds |= {str(p) for p in state["page"]}
        elif env_id == "mvpo/SearchQA-v0":
            kinds |= {str(k) or "start" for k in state["last_action_type"]}
        elif env_id == "mvpo/MilestoneChain-v0":
            kinds |= {"progress" if d else "start" for d in state["milestones_done"]}
        else:
            kinds |= {"holding" if h else "empty" for h in state["holding"]}
        kinds |= {"won"} if infos["won"].any() else set()
        kinds |= {"invalid"} if infos["invalid_action"].any() else set()
    return kinds


MIXED = {
    "mvpo/ALFWorld-v0": {"holding", "empty", "invalid"},
    "mvpo/WebShop-v0": {"search", "results", "item", "done", "invalid"},
    "mvpo/SearchQA-v0": {"start", "search", "answer", "invalid"},
    "mvpo/MilestoneChain-v0": {"start", "progress", "invalid"},
}
ENV_KWARGS = {
    "mvpo/ALFWorld-v0": {"split": "train"},
    "mvpo/WebShop-v0": {},
    "mvpo/SearchQA-v0": {},
    "mvpo/MilestoneChain-v0": {},
}


@pytest.mark.parametrize("env_id", sorted(STEPS))
def test_32_sync_envs_one_type_per_key(env_id: str) -> None:
    kwargs = ENV_KWARGS[env_id]
    venv = gym.vector.SyncVectorEnv(
        [lambda: InfoRecorder(gym.make(env_id, **kwargs), env_id) for _ in range(NUM_ENVS)]
    )
    try:
        seen = _play(venv, env_id, seed=11)
        types: dict[str, set[str]] = {}
        errors: set[str] = set()
        for recorder in venv.envs:
            errors |= recorder.errors
            for path, names in recorder.types.items():
                types.setdefault(path, set()).update(names)
    finally:
        venv.close()
    assert not errors, f"{env_id} breaks its declared contract: {sorted(errors)[:10]}"
    mixed = {path: names for path, names in types.items() if len(names) > 1}
    assert not mixed, f"{env_id}: keys with more than one type: {mixed}"
    assert "NoneType" not in {n for names in types.values() for n in names}
    assert set(INFO_KEYS) <= set(types), set(INFO_KEYS) - set(types)
    assert MIXED[env_id] <= _pages(env_id, seen), _pages(env_id, seen)


@pytest.mark.parametrize("env_id", ["mvpo/WebShop-v0", "mvpo/SearchQA-v0"])
def test_32_async_envs_merge_the_same_mixed_infos_as_sync(env_id: str) -> None:
    """32 worker processes (cheap for these two envs; ALFWorld's game loading is not) merge
    exactly the infos of 32 sync envs, step by step; Gymnasium's own AsyncVectorEnv too."""
    kwargs = ENV_KWARGS[env_id]
    fns = [lambda: gym.make(env_id, **kwargs) for _ in range(NUM_ENVS)]
    runs = []
    for make in (
        gym.vector.SyncVectorEnv,
        lambda f: TextAsyncVectorEnv(f, shared_memory=False),
        lambda f: gym.vector.AsyncVectorEnv(f, shared_memory=False),
    ):
        venv = make(fns)
        try:
            runs.append([unbatch_infos(i, NUM_ENVS) for i in _play(venv, env_id, seed=5)])
        finally:
            venv.close()
    assert MIXED[env_id] <= set().union(*(_kinds(env_id, infos) for infos in runs[0]))
    assert runs[1] == runs[0] and runs[2] == runs[0]


def _kinds(env_id: str, per_env: list[dict[str, Any]]) -> set[str]:
    """:func:`_pages` for unbatched infos."""
    merged = {
        "state": {
            k: [i["state"][k] for i in per_env]
            for k in ("page", "last_action_type", "holding")
            if k in per_env[0]["state"]
        },
        "won": np.array([i["won"] for i in per_env]),
        "invalid_action": np.array([i["invalid_action"] for i in per_env]),
    }
    return _pages(env_id, [merged])


def test_the_common_keys_are_the_pages_table():
    """``INFO_KEYS`` (which the env tests check every info against) is the page's table."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "environments.md").read_text()
    table = page.split("**Every env, every `reset` and `step`**", 1)[1].split("\n\n")[1]
    assert tuple(re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)) == INFO_KEYS
    assert len(INFO_KEYS) == 10


def test_contract_checker_catches_each_kind_of_break():
    env = gym.make("mvpo/WebShop-v0")
    _, info = env.reset(seed=0)
    assert contract_errors(info, "mvpo/WebShop-v0") == []
    bad = {**info, "won": 1, "extra": 0.5, "state": {**info["state"], "results_page": None}}
    del bad["task"]
    errors = contract_errors(bad, "mvpo/WebShop-v0")
    assert "info: missing key 'task'" in errors
    assert "info['won']: expected bool, got int (1)" in errors
    assert "info: undeclared key 'extra' (float)" in errors
    assert any(
        e.startswith("info['state']['results_page']: expected int, got NoneType") for e in errors
    )
    bad_list = {**info, "admissible_actions": ["search[<query>]", 3]}
    assert contract_errors(bad_list, "mvpo/WebShop-v0") == [
        "info['admissible_actions'][1]: expected str, got int (3)"
    ]
    assert set(INFO_TYPES) == set(STEPS)
