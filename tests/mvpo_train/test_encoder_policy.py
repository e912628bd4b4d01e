"""The encoder policy (docs/policies.md): prompt parsing, log-softmax over the admissible
list with gradients in the head only, the history segments (a head that reads them learns
what only the history tells; heads of the first layout load as before; a head of another
history length is one line), learning a fixed mini task, a deterministic cached warm start,
bit-exact resume, checkpoints that load back, and one-line config errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from mvpo_train.config import ConfigError, TrainConfig
from mvpo_train.encoder_policy import (
    EncoderPolicy,
    ScorerHead,
    SegmentEmbedder,
    load_encoder_policy,
    load_head,
    split_compact_history,
    split_compact_prompt,
)
from mvpo_train.metrics import read_metrics, strip_timing
from mvpo_train.prompts import PromptBuilder, get_template
from mvpo_train.trainer import evaluate, load_policy, train
from mvpo_train.warm_start import main as warm_start_main
from mvpo_train.warm_start import warm_start

TEMPLATE = get_template("mvpo/ALFWorld-v0", "compact")


@pytest.fixture(scope="module")
def embedder() -> SegmentEmbedder:
    return SegmentEmbedder()


def _cfg(run_dir: Path, **kw) -> TrainConfig:
    base = dict(
        run_dir=str(run_dir), policy="encoder", device="cpu", threads=1, progress=False,
        tensorboard=False, num_groups=1, group_size=4, max_steps=4, iterations=1,
        save_every=1, tasks=[13], env_kwargs={"preset": "mini"}, lr=1e-2, record_every=0,
    )  # fmt: skip
    base.update(kw)
    return TrainConfig(**base)


def test_compact_prompt_splits_into_task_observation_previous_action():
    b = PromptBuilder(TEMPLATE, 1, 2)
    b.reset(0, "You are in a room.\n\nYour task is to: x", "put a mug on desk.")
    assert split_compact_prompt(b.render(0, []), TEMPLATE) == (
        "put a mug on desk.",
        "You are in a room.\n\nYour task is to: x",
        "",
    )
    b.record(0, "go to desk 1", "You arrive at desk 1.")
    b.record(0, "take mug 1 from desk 1", "You pick up the mug 1.")
    assert split_compact_prompt(b.render(0, []), TEMPLATE) == (
        "put a mug on desk.",
        "You pick up the mug 1.",
        "take mug 1 from desk 1",
    )


def _door_demos(policy: EncoderPolicy, history_length: int):
    """Two states that differ only in the observation *before* the last action: the door
    seen two steps ago tells which door to open (the current observation and the previous
    action are the same)."""
    demos = []
    for colour in ("red", "blue"):
        b = PromptBuilder(TEMPLATE, 1, history_length)
        b.reset(0, f"You see a {colour} door.", "open the door you saw.")
        b.record(0, "turn off the light", "It is dark.")
        adm = ["open red door", "open blue door"]
        cands = [policy.candidate_ids(a, TEMPLATE) for a in adm]
        demos.append(
            (policy.prompt_ids(b.prompt(0, adm), TEMPLATE), cands, adm.index(f"open {colour} door"))
        )
    return demos


@pytest.mark.parametrize("pool", ["concat", "mean"])
def test_a_history_head_learns_what_only_the_history_tells(embedder, pool):
    """Behaviour cloning on the two door states: a head reading one past (observation,
    action) pair picks the right door in both; the first layout (task, observation, previous
    action) sees the same input twice and cannot beat a coin (docs/policies.md)."""
    probs = {}
    for layout in ((1, pool), (1, "last_action")):
        torch.manual_seed(0)
        head = ScorerHead(embedder.dim, 32, embedder.fingerprint, history_length=layout[0],
                          history_pool=layout[1])  # fmt: skip
        policy = EncoderPolicy(head, embedder)
        demos = _door_demos(policy, 1)
        warm_start(policy, demos, steps=60, lr=1e-2, batch_size=2)
        with torch.no_grad():
            res = policy.score_candidates([d[0] for d in demos], [d[1] for d in demos])
        probs[layout[1]] = [
            float(torch.softmax(s, -1)[d[2]]) for s, d in zip(res.scores, demos, strict=True)
        ]
    assert min(probs[pool]) > 0.9, probs
    assert min(probs["last_action"]) <= 0.5 + 1e-6, probs


def test_history_segments_come_from_the_prompt_pieces(embedder):
    """``task, obs, obs_-1, action_-1, obs_-2, action_-2`` (most recent first; pairs not
    shown yet are empty segments); a bare compact text gives the same ids."""
    head = ScorerHead(
        embedder.dim, 8, embedder.fingerprint, history_length=2, history_pool="concat"
    )
    policy = EncoderPolicy(head, embedder)
    n, sep = policy.max_segment_tokens, embedder.sep_id
    b = PromptBuilder(TEMPLATE, 1, 2)
    b.reset(0, "You are in a room.", "put a mug on desk.")
    b.record(0, "go to desk 1", "You arrive at desk 1.")
    ids = policy.prompt_ids(b.prompt(0, []), TEMPLATE)
    texts = ["put a mug on desk.", "You arrive at desk 1.", "You are in a room.", "go to desk 1"]
    want = [y for k, t in enumerate(texts) for y in ([sep] if k else []) + embedder.ids(t, n)]
    assert ids == [*want, sep, sep]  # the second pair: not shown yet
    b.record(0, "take mug 1 from desk 1", "You pick up the mug 1.")
    b.record(0, "look", "You are facing desk 1.")
    prompt = b.prompt(0, [])
    assert split_compact_history(prompt.text, TEMPLATE) == (
        "put a mug on desk.",
        "You are facing desk 1.",
        [("You arrive at desk 1.", "take mug 1 from desk 1"), ("You pick up the mug 1.", "look")],
    )
    assert policy.prompt_ids(prompt, TEMPLATE) == policy.prompt_ids(prompt.text, TEMPLATE)
    assert len(policy._segments(policy.prompt_ids(prompt, TEMPLATE))) == 6


def test_a_head_of_the_first_layout_loads_as_before_and_layouts_are_checked(tmp_path, embedder):
    """A head folder written before the layout was recorded (config.json without it) reads
    task, observation, previous action, with any --history-length; a head reading H pairs
    meets a run showing another number with one line, and so does a config.json whose layout
    does not fit the weights."""
    torch.manual_seed(0)
    old = ScorerHead(embedder.dim, 16, embedder.fingerprint, history_length=1,
                     history_pool="last_action")  # fmt: skip
    assert tuple(old.net[0].weight.shape) == (16, 7 * embedder.dim)  # the first layout's shape
    old.save_pretrained(tmp_path / "old")
    cfg_path = tmp_path / "old" / "config.json"
    meta = json.loads(cfg_path.read_text())
    assert (meta["history_length"], meta["history_pool"]) == (1, "last_action")
    del meta["history_length"], meta["history_pool"]
    cfg_path.write_text(json.dumps(meta))
    for hist in (0, 2, 3):
        policy = load_encoder_policy(
            _cfg(tmp_path, model=str(tmp_path / "old"), history_length=hist)
        )
        assert policy.history_pool == "last_action"
        assert all(
            torch.equal(p, q)
            for p, q in zip(policy.model.parameters(), old.parameters(), strict=True)
        )
    b = PromptBuilder(TEMPLATE, 1, 2)
    b.reset(0, "You are in a room.", "put a mug on desk.")
    b.record(0, "go to desk 1", "You arrive at desk 1.")
    ids = policy.prompt_ids(b.prompt(0, []), TEMPLATE)
    assert ids == policy.prompt_ids(b.prompt(0, []).text, TEMPLATE)
    assert len(policy._segments(ids)) == 3
    assert policy.decode(policy._segments(ids)[2]) == "go to desk 1"
    new = ScorerHead(
        embedder.dim, 16, embedder.fingerprint, history_length=2, history_pool="concat"
    )
    new.save_pretrained(tmp_path / "new")
    assert load_encoder_policy(_cfg(tmp_path, model=str(tmp_path / "new"), history_length=2))
    with pytest.raises(
        ConfigError, match="reads 2 past .* the run shows 1; pass --history-length 2"
    ):
        load_encoder_policy(_cfg(tmp_path, model=str(tmp_path / "new"), history_length=1))
    cfg_path = tmp_path / "new" / "config.json"
    cfg_path.write_text(json.dumps({**json.loads(cfg_path.read_text()), "history_length": 1}))
    with pytest.raises(ConfigError, match="input is 4992 wide, its config.json's layout"):
        load_head(tmp_path / "new", embedder)
    cfg_path.write_text(json.dumps({**json.loads(cfg_path.read_text()), "history_pool": "sum"}))
    with pytest.raises(ConfigError, match="history_pool must be one of"):
        load_head(tmp_path / "new", embedder)
    # a fresh head reads the run's history length
    assert load_encoder_policy(_cfg(tmp_path, history_length=3)).history_length == 3


def test_choice_logprob_is_log_softmax_and_only_the_head_learns(embedder):
    torch.manual_seed(0)
    policy = EncoderPolicy(ScorerHead(embedder.dim, 16, embedder.fingerprint), embedder)
    prompt = policy.prompt_ids("Task: put a mug on desk.\nYou see a mug 1.\n", TEMPLATE)
    cands = [policy.candidate_ids(a, TEMPLATE) for a in ("take mug 1", "go to desk 1", "look")]
    res = policy.score_candidates([prompt, prompt], [cands, cands[:2]])
    assert [s.shape[0] for s in res.scores] == [3, 2]
    assert torch.allclose(res.scores[0][:2], res.scores[1])  # a pair's score: its own inputs
    logp = torch.log_softmax(res.scores[0], dim=-1)
    assert torch.isclose(logp.exp().sum(), torch.tensor(1.0))
    logp[0].backward()
    assert policy.model.net[0].weight.grad.abs().sum() > 0  # (a shared bias cancels out)
    assert not any(p.requires_grad for p in embedder.encoder.parameters())
    # the same segment embeds to the same bits alone or next to texts of other lengths
    seg = tuple(policy.candidate_ids("go to desk 1", TEMPLATE))
    other = tuple(policy.candidate_ids("open the drawer 3 and look inside it", TEMPLATE))
    fresh = SegmentEmbedder()
    assert torch.equal(fresh.embed([seg])[0], SegmentEmbedder().embed([other, seg])[1])


def test_learns_a_fixed_mini_task(tmp_path):
    """Mini task 13 (put the remote control on the coffee table, 4 expert steps): a fresh
    head wins it a few percent of the time in 16 steps; 16 iterations of GRPO + PPO with the
    encoder policy (a fresh head reading one past pair, ``concat``) raise the batch success
    well above that (fixed seed, one thread: deterministic)."""
    rows = train(
        _cfg(
            tmp_path,
            estimator="grpo",
            num_groups=2,
            group_size=8,
            max_steps=16,
            iterations=16,
            ppo_epochs=4,
            save_every=0,
            history_length=1,
        )  # fmt: skip
    )
    succ = np.array([r["success"] for r in rows])
    assert succ[:3].mean() <= 0.2, succ.round(2).tolist()
    assert succ[-3:].mean() >= succ[:3].mean() + 0.4, succ.round(2).tolist()


def test_settings_only_checks_the_folder_without_replaying(tmp_path, capsys, monkeypatch):
    """``--settings-only`` (what ``benchmarks/learning.py --warm-checked`` runs): 0 for a
    folder made with the same arguments, 2 in one line for other arguments or no warm start,
    and no expert plan replayed either way."""
    args = ["--env-kwargs", '{"preset": "mini"}', "--steps", "3", "--batch-size", "8"]
    out = tmp_path / "w"
    assert warm_start_main(["--out", str(out), *args, "--threads", "1"]) == 0
    import mvpo_train.warm_start as ep

    def no_replay(*a, **k):
        raise AssertionError("replayed the expert plans")

    monkeypatch.setattr(ep, "collect_demonstrations", no_replay)
    capsys.readouterr()
    assert warm_start_main(["--out", str(out), *args, "--settings-only"]) == 0
    assert "made with these arguments" in capsys.readouterr().out
    assert warm_start_main(["--out", str(out), *args[:-1], "16", "--settings-only"]) == 2
    assert "another warm start ({'batch_size': 8})" in capsys.readouterr().err
    assert warm_start_main(["--out", str(tmp_path / "none"), *args, "--settings-only"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    # a folder cloned on another embedding batching (one written before it was recorded:
    # 8 rows for every length) is another warm start
    meta = out / "warm_start.json"
    saved = json.loads(meta.read_text())
    assert saved["settings"]["embedding_batching"] == SegmentEmbedder.BATCHING
    del saved["settings"]["embedding_batching"]
    meta.write_text(json.dumps(saved))
    assert warm_start_main(["--out", str(out), *args, "--settings-only"]) == 2
    assert "another warm start ({'embedding_batching': 'rows8'})" in capsys.readouterr().err


def test_warm_start_is_deterministic_and_cached(tmp_path, capsys):
    args = ["--env-kwargs", '{"preset": "mini"}', "--steps", "3", "--batch-size", "2"]
    assert warm_start_main(["--out", str(tmp_path / "a"), *args, "--threads", "1"]) == 0
    assert warm_start_main(["--out", str(tmp_path / "b"), *args, "--threads", "1"]) == 0
    # one thread in every build (a busy 2-core machine made a 2-thread build 20x slower):
    # the seed alone tells c from a
    assert (
        warm_start_main(["--out", str(tmp_path / "c"), *args, "--seed", "1", "--threads", "1"]) == 0
    )
    w = {k: (tmp_path / k / "model.safetensors").read_bytes() for k in "abc"}
    assert w["a"] == w["b"] and w["a"] != w["c"]
    capsys.readouterr()
    assert warm_start_main(["--out", str(tmp_path / "a"), *args]) == 0
    assert "cached" in capsys.readouterr().out
    # same arguments, other expert data (the games changed since): rebuilt, not reused
    meta = tmp_path / "a" / "warm_start.json"
    saved = json.loads(meta.read_text())
    (tmp_path / "a" / "model.safetensors").write_bytes(w["c"])
    meta.write_text(json.dumps({**saved, "demonstrations_sha256": "0" * 64}))
    assert warm_start_main(["--out", str(tmp_path / "a"), *args, "--threads", "1"]) == 0
    assert "rebuilding" in capsys.readouterr().out
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == w["a"]
    assert json.loads(meta.read_text()) == saved
    assert warm_start_main(["--out", str(tmp_path / "a"), *args[:-2], "--batch-size", "4"]) == 2
    meta_head = json.loads((tmp_path / "a" / "config.json").read_text())
    # the default layout is the first one (earlier warm starts reproduce); history is opt-in
    assert (meta_head["history_length"], meta_head["history_pool"]) == (2, "last_action")
    # another layout is another warm start, loaded only with its history length
    d = tmp_path / "d"
    assert warm_start_main(["--out", str(d), *args, "--history-length", "1",
                            "--history-pool", "mean", "--threads", "1"]) == 0  # fmt: skip
    assert (
        load_policy(_cfg(tmp_path / "run", model=str(d), history_length=1)).history_pool == "mean"
    )
    with pytest.raises(ConfigError, match="history_length: model"):
        load_policy(_cfg(tmp_path / "run", model=str(d), history_length=2))
    # a folder of the first layout, written before --history-pool existed: kept with the
    # default (= last_action: same demonstrations, same head), refused in one line with another
    e = tmp_path / "e"
    assert warm_start_main(["--out", str(e), *args, "--threads", "1"]) == 0
    meta_e = json.loads((e / "warm_start.json").read_text())
    del meta_e["settings"]["history_pool"]
    (e / "warm_start.json").write_text(json.dumps(meta_e))
    capsys.readouterr()
    assert warm_start_main(["--out", str(e), *args, "--history-pool", "last_action"]) == 0
    assert "cached" in capsys.readouterr().out
    assert warm_start_main(["--out", str(e), *args, "--history-pool", "concat"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'history_pool': 'last_action'" in err, err
    # the head loads as --model DIR and plays
    cfg = _cfg(tmp_path / "run", model=str(tmp_path / "a"))
    policy = load_policy(cfg)
    out = evaluate(policy, cfg, split="train", tasks=[13], episodes=2, seed=0)
    assert out["episodes"] == 2 and 0.0 <= out["success"] <= 1.0


def test_kill_and_resume_is_bit_exact_and_checkpoints_load(tmp_path):
    kw = dict(estimator="mvpo", iterations=4, group_size=4, max_steps=5, kl_coef=0.05)
    train(_cfg(tmp_path / "full", **kw))
    assert len(train(_cfg(tmp_path / "split", stop_after=2, **kw))) == 2
    rest = train(_cfg(tmp_path / "split", resume=True, **kw))
    assert [r["iteration"] for r in rest] == [3, 4]
    a = [strip_timing(r) for r in read_metrics(tmp_path / "full")]
    b = [strip_timing(r) for r in read_metrics(tmp_path / "split")]
    assert a == b and len(a) == 4
    ck = "checkpoints/iter-000004/model.safetensors"
    assert (tmp_path / "full" / ck).read_bytes() == (tmp_path / "split" / ck).read_bytes()
    # the checkpoint folder is a head folder (mvpo-eval --model CKPT)
    cfg = _cfg(tmp_path / "full", **kw)
    loaded = load_policy(cfg, model=str(tmp_path / "full" / "checkpoints" / "iter-000004"))
    fresh = load_policy(cfg)
    assert any(
        not torch.equal(p, q)
        for p, q in zip(loaded.model.parameters(), fresh.model.parameters(), strict=True)
    )


def test_bad_settings_are_one_line_errors(tmp_path):
    with pytest.raises(ConfigError, match="action_mode='score'"):
        load_encoder_policy(_cfg(tmp_path, action_mode="generate", prompt_style="seed"))
    with pytest.raises(ConfigError, match="prompt_style='compact'"):
        load_encoder_policy(_cfg(tmp_path, prompt_style="seed"))
    (tmp_path / "notahead").mkdir()
    with pytest.raises(ConfigError, match="not an encoder head folder"):
        load_encoder_policy(_cfg(tmp_path, model=str(tmp_path / "notahead")))
    with pytest.raises(ConfigError, match="policy"):
        TrainConfig(policy="bert")


def test_shared_embedding_cache_changes_nothing_but_the_cost(tmp_path):
    """Runs with a shared embedding cache file train exactly as runs without one; the file
    fills up, a second run reads it, and a file of another encoder is refused."""
    kw = dict(estimator="grpo", iterations=2, group_size=4, max_steps=4)
    cache = tmp_path / "emb.npz"
    plain = [strip_timing(r) for r in train(_cfg(tmp_path / "plain", **kw))]
    first = [
        strip_timing(r) for r in train(_cfg(tmp_path / "c1", embedding_cache=str(cache), **kw))
    ]
    assert cache.is_file() and first == plain
    embedder = SegmentEmbedder(runtime="auto")  # the runtime of the runs: the default
    assert embedder.load_cache(cache) > 10
    again = [
        strip_timing(r) for r in train(_cfg(tmp_path / "c2", embedding_cache=str(cache), **kw))
    ]
    assert again == plain
    ck = "checkpoints/iter-000002/model.safetensors"
    assert (tmp_path / "c2" / ck).read_bytes() == (tmp_path / "plain" / ck).read_bytes()
    embedder.fingerprint = "another encoder"
    with pytest.raises(ValueError, match="another sentence encoder"):
        embedder.load_cache(cache)


def test_a_literal_sep_in_an_observation_is_text_not_a_segment_separator():
    """WebShop observations join fields with " [SEP] "; the prompt still has its 6 segments
    (task, observation, 2 x (past observation, past action))."""
    embedder = SegmentEmbedder()
    head = ScorerHead(embedder.dim, 8, embedder.fingerprint, history_pool="concat")
    policy = EncoderPolicy(head, embedder)
    b = PromptBuilder(TEMPLATE, 1, 2)
    b.reset(0, "WebShop [SEP] Instruction: [SEP] i need a red shirt [SEP] Search", "buy a shirt")
    ids = policy.prompt_ids(b.render(0, ["search[red shirt]"]), TEMPLATE)
    assert len(policy._segments(ids)) == 6
    assert embedder.ids("a [SEP] b", 16) != embedder.ids("a b", 16)  # kept as text
    assert embedder.sep_id not in embedder.ids("a [SEP] b", 16)


def test_prompt_ids_read_the_prompt_pieces_not_its_text(embedder):
    """A two-line task and an observation with a "> " line: parsing the text back would take
    the wrong task and a wrong previous action; the pieces are what the builder was given
    (the first layout: task, observation, previous action)."""
    head = ScorerHead(embedder.dim, 8, embedder.fingerprint, history_pool="last_action")
    policy = EncoderPolicy(head, embedder)
    b = PromptBuilder(TEMPLATE, 1, 2)
    b.reset(0, "You are in a room.", "put a mug\non the desk.")
    b.record(0, "look", "A note says:\n> go away\nThe door is shut.")
    prompt = b.prompt(0, ["look"])
    assert prompt.text == b.render(0, ["look"])
    assert prompt.task == "put a mug\non the desk." and prompt.previous_action == "look"
    assert prompt.observation == "A note says:\n> go away\nThe door is shut."
    n, sep = policy.max_segment_tokens, embedder.sep_id
    pieces = ("put a mug\non the desk.", "A note says:\n> go away\nThe door is shut.", "look")
    expected = [*embedder.ids(pieces[0], n), sep, *embedder.ids(pieces[1], n), sep]
    assert policy.prompt_ids(prompt, TEMPLATE) == [*expected, *embedder.ids("look", n)]
    assert split_compact_prompt(prompt.text, TEMPLATE)[2] == "go away"  # what parsing would get


def test_an_embedding_does_not_depend_on_the_texts_embedded_with_it(embedder):
    """A resumed run recomputes what an uninterrupted one had cached, in other batches: the
    bits of a text's embedding must not depend on the batch (fixed-shape forward passes)."""
    seqs = [tuple(embedder.ids(f"you see a mug {i} and a cup {i}", 64)) for i in range(11)]
    assert len({len(s) for s in seqs}) == 1  # one token length: one batch when missing together
    assert embedder.rows_for(len(seqs[0])) == 8  # short: 8 to a pass
    together = embedder.embed(seqs)
    for k in (0, 4, 10):
        embedder._cache.clear()
        alone = embedder.embed([seqs[k]])
        assert torch.equal(alone[0], together[k])


def test_a_long_text_is_embedded_alone_and_the_same_with_any_company(embedder):
    """Texts longer than SHORT_TOKENS have a forward pass of their own (a pass of 8 rows for
    one new long text cost 8x its compute); the bits are the same with any company."""
    text = "on the countertop 1, you see a apple 1, a bread 2, a butterknife 3, and a cup 1."
    long_ = tuple(embedder.ids(text, 64))
    assert len(long_) > embedder.SHORT_TOKENS and embedder.rows_for(len(long_)) == 1
    others = [tuple(embedder.ids(text.replace("1", str(i)), 64)) for i in range(2, 9)]
    assert {len(s) for s in others} == {len(long_)}
    calls: list[tuple[int, ...]] = []
    hook = embedder.encoder.register_forward_hook(
        lambda mod, args, kwargs, out: calls.append(tuple(kwargs["input_ids"].shape)),
        with_kwargs=True,
    )
    try:
        together = embedder.embed([long_, *others])
    finally:
        hook.remove()
    assert calls == [(1, len(long_) + 2)] * 8  # one pass per text, no padding rows
    embedder._cache.clear()
    alone = embedder.embed([long_])
    assert torch.equal(alone[0], together[0])
    # the encoder's own forward of the text alone, mean-pooled, is the cached vector
    ids = torch.tensor([[embedder.cls_id, *long_, embedder.sep_id]])
    with torch.no_grad():
        hidden = embedder.encoder(input_ids=ids, attention_mask=torch.ones_like(ids))[0]
    ref = torch.nn.functional.normalize(hidden.mean(dim=1), dim=-1)[0]
    assert torch.equal(ref, alone[0])


def _groups(n_prompts: int, dim: int, seed: int = 1):
    gen = torch.Generator().manual_seed(seed)
    counts = torch.randint(0, 40, (n_prompts,), generator=gen).tolist()
    ctx = torch.nn.functional.normalize(torch.randn(n_prompts, 6, dim, generator=gen), dim=-1)
    act = torch.nn.functional.normalize(torch.randn(sum(counts), dim, generator=gen), dim=-1)
    return ctx, act, counts


def test_the_concat_form_runs_in_balanced_chunks_with_the_same_scores(embedder, monkeypatch):
    """The ``concat`` form takes a whole batch's candidates in balanced chunks (the memory
    peak, docs/policies.md "Memory"): the same scores and gradients up to float rounding (a
    matrix product's rounding may depend on its row count), unchunked below the limit."""
    torch.manual_seed(0)
    head = ScorerHead(embedder.dim, 256, embedder.fingerprint, history_length=2,
                      history_pool="concat", form="concat")  # fmt: skip
    ctx, act, counts = _groups(1000, embedder.dim)
    rows = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
    whole = head(ctx[rows], act)
    calls = []
    head.register_forward_hook(lambda mod, inp, out: calls.append(len(out)))
    monkeypatch.setattr(ScorerHead, "CHUNK_ROWS", len(rows) // 3 + 1)
    chunked = head.score_groups(ctx, act, counts)
    assert len(calls) == 3 and max(calls) - min(calls) <= 1  # three balanced chunks
    torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-6)
    g_whole = torch.autograd.grad(whole.sum(), head.net[0].weight)[0]
    g_chunk = torch.autograd.grad(head.score_groups(ctx, act, counts).sum(), head.net[0].weight)
    torch.testing.assert_close(g_chunk[0], g_whole, rtol=1e-4, atol=1e-4)  # sums of 20k rows
    monkeypatch.setattr(ScorerHead, "CHUNK_ROWS", 50_000)
    calls.clear()
    assert torch.equal(head.score_groups(ctx, act, counts), whole) and calls == [len(rows)]


@pytest.mark.parametrize("work", [0, 10**9])  # M_p per prompt / the candidate part per row
def test_the_factored_form_gives_the_concat_scores_and_gradients(embedder, monkeypatch, work):
    """The factored head (the default) computes the same function from the same weights:
    scores and first-layer gradients equal to the ``concat`` form up to float rounding,
    prompts without candidates included, in one chunk and in checkpointed chunks, by either
    route of the factored form."""
    monkeypatch.setattr(ScorerHead, "M_CANDIDATE_WORK", work)
    torch.manual_seed(0)
    head = ScorerHead(embedder.dim, 256, embedder.fingerprint, history_length=2,
                      history_pool="concat")  # fmt: skip
    assert head.form == "factored"
    ctx, act, counts = _groups(150, embedder.dim)  # three chunks of <= 64 prompts
    assert 0 in counts
    grads = {}
    for form in ("concat", "factored"):
        head.form = form
        head.zero_grad()
        scores = head.score_groups(ctx, act, counts)
        scores.pow(2).sum().backward()
        grads[form] = (scores.detach(), head.net[0].weight.grad.clone(), head.net[2].weight.grad)
    (s0, g0, o0), (s1, g1, o1) = grads["concat"], grads["factored"]
    assert s1.shape == (sum(counts),)
    torch.testing.assert_close(s1, s0, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g1, g0, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(o1, o0, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="form must be one of"):
        head.form = "fast"


def test_the_bundled_head_scores_the_same_in_both_forms(embedder):
    """The shipped warm start (weights of the concat era) loads and scores in the factored
    form as it did in the concat form, up to float rounding, on real embeddings."""
    from mvpo_train.encoder_policy import bundled_heads, resolve_head

    if "alfworld-encoder-warm" not in bundled_heads():
        pytest.skip("the bundled head is not shipped in this data folder")
    head = load_head(resolve_head("alfworld-encoder-warm"), embedder)
    assert head.form == "factored"
    policy = EncoderPolicy(head, embedder)
    prompt = PromptBuilder(TEMPLATE, 1, 2)
    prompt.reset(0, "You are in the middle of a room. You see a desk 1.", "put a mug on desk.")
    prompt.record(0, "go to desk 1", "You arrive at desk 1. On the desk 1, you see a mug 1.")
    adm = ["take mug 1 from desk 1", "go to shelf 1", "look", "inventory", "examine desk 1"]
    pids = [policy.prompt_ids(prompt.prompt(0, adm), TEMPLATE)] * 2
    cands = [
        [policy.candidate_ids(a, TEMPLATE) for a in adm],
        [policy.candidate_ids("look", TEMPLATE)],
    ]
    with torch.no_grad():
        new = policy.score_candidates(pids, cands).scores
        head.form = "concat"
        old = policy.score_candidates(pids, cands).scores
    for a, b in zip(new, old, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert not torch.equal(old[0], torch.zeros_like(old[0]))


def test_the_config_chooses_the_head_form(tmp_path):
    """``encoder_head`` (``--encoder-head``) sets the form of a loaded policy and its frozen
    reference copy; ``factored`` is the default."""
    assert TrainConfig().encoder_head == "factored"
    policy = load_encoder_policy(_cfg(tmp_path, encoder_head="concat"))
    assert policy.model.form == "concat" and policy.frozen_copy().model.form == "concat"
    assert load_encoder_policy(_cfg(tmp_path)).model.form == "factored"
