"""Timing score mode's scorers (:mod:`mvpo_train.score_timing`): the batch is seeded and within
its bounds, each scorer name runs its own path, and the policy's settings come back."""

from __future__ import annotations

import pytest
import torch

from mvpo_train.policy import Policy
from mvpo_train.score_timing import SCORERS, score_batch, time_scorers


def test_score_batch_is_seeded_and_within_its_bounds():
    prompts, cands = score_batch(50, 4, 12, candidates=(2, 3), candidate_tokens=(1, 4), seed=3)
    assert (prompts, cands) == score_batch(50, 4, 12, (2, 3), (1, 4), seed=3)
    assert score_batch(50, 4, 12, (2, 3), (1, 4), seed=4) != (prompts, cands)
    assert len(prompts) == 4 and all(len(p) == 12 for p in prompts)
    assert all(2 <= len(c) <= 3 for c in cands)
    assert all(1 <= len(x) <= 4 and all(1 <= t < 50 for t in x) for c in cands for x in c)
    with pytest.raises(ValueError, match="score_batch needs vocab >= 2"):
        score_batch(1, 4, 12)


def test_each_scorer_runs_its_path_and_the_settings_come_back(micro, monkeypatch):
    torch.manual_seed(0)
    policy = Policy.from_pretrained(str(micro), device="cpu", dtype="float32")
    assert (policy.score_impl, policy._copy_prompt_cache) == ("kv", False)
    prompts, cands = score_batch(policy.model.config.vocab_size, 3, 10, seed=0)
    calls = {"shared": 0, "concat": 0}
    shared, concat = policy._candidate_pass_shared, policy.token_logprobs

    def count(name, fn):
        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)

        return wrapped

    monkeypatch.setattr(policy, "_candidate_pass_shared", count("shared", shared))
    monkeypatch.setattr(policy, "token_logprobs", count("concat", concat))
    before = dict(calls)
    times = time_scorers(policy, prompts, cands, backward=True, repeats=2, scorers=("kv",))
    assert list(times) == ["kv"] and times["kv"] > 0
    assert calls["shared"] > before["shared"] and calls["concat"] == before["concat"]
    before = dict(calls)
    time_scorers(policy, prompts, cands, backward=True, repeats=2, scorers=("kv copy",))
    assert calls == before  # the copy path: neither the shared pass nor concat's
    time_scorers(policy, prompts, cands, backward=False, repeats=2, scorers=("concat",))
    assert calls["shared"] == before["shared"] and calls["concat"] == before["concat"] + 2
    times = time_scorers(policy, prompts, cands, backward=True, repeats=1)
    assert list(times) == list(SCORERS) and all(t > 0 for t in times.values())
    assert (policy.score_impl, policy._copy_prompt_cache) == ("kv", False)
    assert all(p.grad is None for p in policy.model.parameters())
    with pytest.raises(ValueError, match=r"unknown scorer\(s\) \['flash'\]"):
        time_scorers(policy, prompts, cands, backward=False, scorers=("flash",))
