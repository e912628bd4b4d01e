"""Score mode's candidate pass on a shared prompt cache (docs/policies.md, "Score mode").

The default ``kv`` scorer feeds all candidates of a prompt as one row on top of the prompt's
cache, with a block mask; the fallback copies the cache once per candidate
(``Policy._copy_prompt_cache``). Both are compared here on the micro Qwen2 model (grouped-query
attention), on ``sdpa`` and ``eager`` attention and through LoRA adapters, and checked against
each candidate scored alone without padding or cache.

Tolerance: log-probs agree to 1e-6 (absolute) + 1e-6 (relative), not bit for bit. The two
passes compute the same function, but the attention sums run over different key layouts (a
prompt's padding and the other candidates are masked out with an additive minimum whose
exponentials are exactly 0, yet the kernels block and order their reductions by key length),
which moves the last float32 bits (observed: <= 1e-6 on log-probs of size ~7).
"""

from __future__ import annotations

import pytest
import torch

from mvpo_train.config import TrainConfig
from mvpo_train.policy import Policy

#: prompts of different lengths; candidates of 1 to 5 tokens, a prompt with one candidate, a
#: prompt whose candidates are all one token long (nothing to feed on top of its cache)
PROMPTS = [[5 + i for i in range(n)] for n in (3, 9, 5, 12, 4)]
CANDS = [
    [[7, 8], [9]],
    [[10, 11, 12], [4, 4, 4, 4, 4], [3]],
    [[7, 30, 31, 32]],
    [[8, 9], [10], [11, 12, 13], [14, 15]],
    [[16], [17]],
]


def _policy(micro, attn: str) -> Policy:
    torch.manual_seed(0)
    pol = Policy.from_pretrained(
        str(micro), device="cpu", dtype="float32", attn_implementation=attn
    )
    with torch.no_grad():  # break the symmetry of the fresh init so log-probs differ
        for p in pol.model.parameters():
            p.add_(torch.randn(p.shape) * 0.1)
    return pol


def _unpadded(policy: Policy, prompt: list[int], cont: list[int]) -> torch.Tensor:
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([prompt + cont])).logits[0]
    logp = torch.log_softmax(logits.float() / policy.temperature, -1)
    return torch.stack([logp[len(prompt) - 1 + k, t] for k, t in enumerate(cont)])


def _score(policy: Policy, copy: bool) -> tuple[list[list[torch.Tensor]], list[torch.Tensor]]:
    """Candidate log-probs and the gradient of their sum, on one of the two passes."""
    policy._copy_prompt_cache = copy
    policy.model.zero_grad(set_to_none=True)
    lp = policy.candidate_logprobs(PROMPTS, CANDS)
    sum(x.sum() for row in lp for x in row).backward()
    grads = [p.grad.clone() for p in policy.model.parameters() if p.requires_grad]
    policy.model.zero_grad(set_to_none=True)
    return [[x.detach() for x in row] for row in lp], grads


def _assert_same(policy: Policy) -> None:
    shared, g_shared = _score(policy, copy=False)
    copied, g_copied = _score(policy, copy=True)
    for b, (cands, row_s, row_c) in enumerate(zip(CANDS, shared, copied, strict=True)):
        assert [len(x) for x in row_s] == [len(c) for c in cands]
        for c, s, k in zip(cands, row_s, row_c, strict=True):
            torch.testing.assert_close(s, k, atol=1e-6, rtol=1e-6)
            torch.testing.assert_close(s, _unpadded(policy, PROMPTS[b], c), atol=1e-5, rtol=1e-5)
    assert g_shared and all(float(g.abs().max()) > 0 for g in g_shared)
    for a, b in zip(g_shared, g_copied, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_shared_cache_pass_equals_the_per_candidate_copies(micro, attn):
    policy = _policy(micro, attn)
    assert policy._copy_prompt_cache is False  # the default on sdpa / eager
    _assert_same(policy)


def test_shared_cache_pass_with_small_forward_budget(micro):
    """Groups of one env each (budget below any env's cost) give the same log-probs."""
    policy = _policy(micro, "sdpa")
    full = policy.candidate_logprobs(PROMPTS, CANDS)
    policy.max_tokens_per_forward = 4
    small = policy.candidate_logprobs(PROMPTS, CANDS)
    for a, b in zip(full, small, strict=True):
        for x, y in zip(a, b, strict=True):
            torch.testing.assert_close(x, y, atol=1e-6, rtol=1e-6)


def test_shared_cache_pass_through_lora_adapters(micro):
    pytest.importorskip("peft")
    from mvpo_train.lora import apply_lora

    cfg = TrainConfig(model=str(micro), lora_rank=4, lora_alpha=8.0, seed=1)
    policy = apply_lora(_policy(micro, "sdpa"), cfg)
    with torch.no_grad():  # nonzero adapters (peft starts lora_B at 0)
        for name, p in policy.model.named_parameters():
            if ".lora_B" in name:
                p.add_(torch.randn(p.shape) * 0.1)
    assert policy._copy_prompt_cache is False
    _assert_same(policy)  # gradients: the adapters' only
    ref = policy.frozen_copy()  # adapters off: the reference log-probs
    with torch.no_grad():
        ref._copy_prompt_cache = False
        a = ref.score_candidates(PROMPTS, CANDS).scores
        ref._copy_prompt_cache = True
        b = ref.score_candidates(PROMPTS, CANDS).scores
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, atol=1e-6, rtol=1e-6)


def test_other_attention_kernels_fall_back_to_cache_copies(micro, monkeypatch):
    """A kernel that takes no custom 4-D mask (flash attention, flex) keeps the copies; so
    does every policy built while the class switch is off (a benchmark's "before")."""
    policy = _policy(micro, "sdpa")
    monkeypatch.setattr(Policy, "_share_prompt_cache", False)
    assert policy.with_model(policy.model)._copy_prompt_cache is True
    monkeypatch.setattr(Policy, "_share_prompt_cache", True)
    assert policy.with_model(policy.model)._copy_prompt_cache is False
    policy.model.config._attn_implementation = "flash_attention_2"  # only read, never run
    assert policy.with_model(policy.model)._copy_prompt_cache is True
