"""Policy, tiny model, prompts and projection."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from mvpo_train.policy import Policy
from mvpo_train.projection import INVALID_ACTION, action_tag, get_projection, search_answer
from mvpo_train.prompts import PromptBuilder, env_family, get_template
from mvpo_train.tiny_model import MICRO_SPEC, build_tiny_model, default_model_path


@pytest.fixture(scope="module")
def policy(micro) -> Policy:
    torch.manual_seed(0)
    pol = Policy.from_pretrained(str(micro), device="cpu", dtype="float32")
    with torch.no_grad():  # break the symmetry of the fresh init so log-probs differ
        for p in pol.model.parameters():
            p.add_(torch.randn(p.shape) * 0.1)
    return pol


def _unpadded(policy: Policy, prompt: list[int], cont: list[int]) -> torch.Tensor:
    ids = torch.tensor([prompt + cont])
    with torch.no_grad():
        logp = torch.log_softmax(
            policy.model(input_ids=ids).logits[0].float() / policy.temperature, -1
        )
    return torch.stack([logp[len(prompt) - 1 + k, t] for k, t in enumerate(cont)])


# ------------------------------------------------------------------ tiny model


def test_tiny_model_loads_through_auto_classes(micro):
    tok = AutoTokenizer.from_pretrained(micro)
    model = AutoModelForCausalLM.from_pretrained(micro)
    assert type(model).__name__ == "Qwen2ForCausalLM"
    text = "You arrive at countertop 1. <think>x</think><action>go to fridge 1</action> héllo"
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text
    assert tok.chat_template and "<|im_start|>assistant" in tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False
    )
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(micro / "tokenizer.json"))
    assert raw.encode(text).ids == ids  # same split whichever class loads it


def test_tiny_model_build_is_deterministic(tmp_path):
    a = build_tiny_model(tmp_path / "a", MICRO_SPEC, texts=["take apple 1 from countertop 1"] * 2)
    b = build_tiny_model(tmp_path / "b", MICRO_SPEC, texts=["take apple 1 from countertop 1"] * 2)
    for name in ("model.safetensors", "tokenizer.json", "config.json", "tokenizer_config.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_bundled_tiny_model_is_small_and_loads():
    path = default_model_path()
    if not (path / "config.json").is_file():
        pytest.skip("data/models/tiny-qwen2 not built (mvpo-build-tiny-model)")
    size = sum(f.stat().st_size for f in path.iterdir())
    assert size < 5_000_000
    pol = Policy.from_pretrained(str(path), device="cpu", dtype="float32")
    meta = json.loads((path / "mvpo_tiny_model.json").read_text())
    assert sum(p.numel() for p in pol.model.parameters()) == meta["parameters"]


# ------------------------------------------------------------------ log-probs


def test_candidate_logprobs_kv_concat_and_unpadded_agree(policy):
    tpl = get_template("mvpo/ALFWorld-v0", "compact")
    prompts = [
        policy.prompt_ids(
            "Task: put a clean apple in fridge.\nYou arrive at countertop 1.\n", tpl, "score"
        ),
        policy.prompt_ids("Task: x\n", tpl, "score"),
    ]
    cands = [
        [
            policy.candidate_ids(a, tpl)
            for a in ("go to fridge 1", "take apple 1 from countertop 1", "look")
        ],
        [policy.candidate_ids("inventory", tpl)],
    ]
    kv = policy.candidate_logprobs(prompts, cands)
    policy.score_impl = "concat"
    try:
        cc = policy.candidate_logprobs(prompts, cands)
    finally:
        policy.score_impl = "kv"
    for b in range(2):
        for j in range(len(cands[b])):
            ref = _unpadded(policy, prompts[b], cands[b][j])
            torch.testing.assert_close(kv[b][j], ref, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(cc[b][j], ref, atol=1e-5, rtol=1e-5)


def test_chunking_does_not_change_results(policy):
    prompts = [[5 + i for i in range(n)] for n in (3, 9, 5, 12)]
    cands = [[[7, 8], [9]], [[10, 11, 12]], [[7]], [[8, 9], [10], [11, 12, 13]]]
    full = policy.candidate_logprobs(prompts, cands)
    old = policy.max_tokens_per_forward
    policy.max_tokens_per_forward = 8
    try:
        small = policy.candidate_logprobs(prompts, cands)
        tl_small, _ = policy.token_logprobs(prompts, [c[0] for c in cands])
    finally:
        policy.max_tokens_per_forward = old
    tl_full, _ = policy.token_logprobs(prompts, [c[0] for c in cands])
    for a, b in zip(full, small, strict=True):
        for x, y in zip(a, b, strict=True):
            torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)
    for x, y in zip(tl_full, tl_small, strict=True):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)


def test_token_logprobs_match_unpadded_and_carry_gradients(policy):
    prompts = [[5, 6, 7, 8], [9, 10]]
    responses = [[11, 12], [13, 14, 15]]
    lp, ent = policy.token_logprobs(prompts, responses, entropy=True)
    for p, r, x in zip(prompts, responses, lp, strict=True):
        torch.testing.assert_close(x.detach(), _unpadded(policy, p, r), atol=1e-5, rtol=1e-5)
    assert all(e.min() > 0 for e in ent)
    sum(x.sum() for x in lp).backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.model.parameters())
    policy.model.zero_grad(set_to_none=True)


def test_score_norm_sum_vs_mean(policy):
    prompts = [[5, 6, 7]]
    cands = [[[8, 9, 10], [11]]]
    s_sum = policy.score_candidates(prompts, cands, norm="sum")
    s_mean = policy.score_candidates(prompts, cands, norm="mean")
    lp = [s_sum.token_logprobs(0, 0), s_sum.token_logprobs(0, 1)]
    assert [len(x) for x in lp] == [3, 1]
    torch.testing.assert_close(s_sum.scores[0], torch.stack([lp[0].sum(), lp[1].sum()]))
    torch.testing.assert_close(s_mean.scores[0], torch.stack([lp[0].mean(), lp[1].mean()]))


def test_temperature_scales_logits(micro):
    hot = Policy.from_pretrained(str(micro), device="cpu", dtype="float32", temperature=2.0)
    lp, _ = hot.token_logprobs([[5, 6]], [[7]])
    with torch.no_grad():
        logits = hot.model(input_ids=torch.tensor([[5, 6]])).logits[0, -1] / 2.0
    torch.testing.assert_close(
        lp[0][0].detach(), torch.log_softmax(logits, -1)[7], atol=1e-6, rtol=1e-6
    )


def test_generate_stops_at_eos_and_is_seeded(policy):
    prompts = [[5, 6, 7], [8, 9]]
    torch.manual_seed(1)
    a = policy.generate(prompts, max_new_tokens=6)
    torch.manual_seed(1)
    b = policy.generate(prompts, max_new_tokens=6)
    assert a == b
    eos = {policy.tokenizer.eos_token_id, policy.pad_id}
    for r in a:
        assert 1 <= len(r) <= 6
        assert not any(t in eos for t in r[:-1])


# ------------------------------------------------------------------ prompts


def test_templates_by_env_id():
    assert env_family("mvpo/ALFWorld-v0") == "alfworld"
    assert env_family("mvpo/WebShop-v0") == "webshop"
    assert env_family("mvpo/SearchQA-v0") == "searchqa"
    assert env_family("other/Thing-v1") == "generic"
    seed = get_template("mvpo/ALFWorld-v0", "seed")
    text = seed.render(
        "heat some egg.",
        "You arrive at fridge 1.",
        ["open fridge 1", "look"],
        [("obs0", "go to fridge 1")],
        1,
    )
    assert "<think>" in text and "<action>" in text and "'open fridge 1', 'look'" in text
    assert "heat some egg." in text and "go to fridge 1" in text
    assert get_template("mvpo/SearchQA-v0", "seed").projection == "search_answer"


def test_prompt_builder_keeps_recent_history():
    b = PromptBuilder(get_template("x", "compact"), num_envs=1, history_length=2)
    b.reset(0, "o0", "task")
    for k in range(1, 4):
        b.record(0, f"a{k}", f"o{k}")
    text = b.render(0, ["look"])
    assert text == "Task: task\no1\n> a2\no2\n> a3\no3\n"


# ------------------------------------------------------------------ projection


@pytest.mark.parametrize(
    ("text", "action", "valid"),
    [
        ("<think>go</think><action>Go to  Fridge 1</action>", "go to fridge 1", True),
        ("<action>look</action>", "look", True),
        ("no tags at all", INVALID_ACTION, False),
        ("<action></action>", INVALID_ACTION, False),
        ("<action>a</action><action>b</action>", INVALID_ACTION, False),
        ("<action>去冰箱</action>", INVALID_ACTION, False),
        ("<action>look", INVALID_ACTION, False),
        ("<think>хорошо</think><action>look</action>", INVALID_ACTION, False),  # Cyrillic
        ("<think>λ</think><action>look</action>", INVALID_ACTION, False),  # Greek
        ("<action>한국</action>", INVALID_ACTION, False),  # Hangul
        ("<think>café, naïve, Straße 2°C ✓ 😀</think><action>look</action>", "look", True),
        ("<ACTION>look</Action>", "look", True),  # tags case-insensitive
    ],
)
def test_action_tag_projection(text, action, valid):
    out = action_tag(text, ["go to fridge 1", "look"])
    assert (out.action, out.valid) == (action, valid)


def test_require_think_and_search_answer():
    assert not action_tag("<action>look</action>", require_think=True).valid
    assert (
        search_answer("<think>a</think><search> who  is </search>").action
        == "<search>who  is</search>"  # Search-R1 strips the query, nothing more
    )
    assert search_answer("<answer>Paris</answer>").action == "<answer>Paris</answer>"
    assert not search_answer("Paris").valid
    # Search-R1's rule: cut after the first </search>, then the first complete pair
    assert search_answer("<answer>a</answer><search>q</search>").action == "<answer>a</answer>"
    assert search_answer("<search></search>").action == "<search></search>"  # empty allowed
    assert not search_answer("<SEARCH>q</SEARCH>").valid  # case-sensitive there
    assert search_answer("<think>t</think><search>q</search>", require_think=True).valid
    assert not search_answer("<search>q</search><think>t</think>", require_think=True).valid
    assert get_projection("action_tag") is action_tag
    with pytest.raises(KeyError):
        get_projection("nope")
