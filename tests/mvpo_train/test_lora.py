"""LoRA through peft (docs/training.md, "LoRA"): only the adapters train and are checkpointed,
the KL reference is the base with the adapters disabled, resume is bit-exact, the merged model
computes what the adapter model computes, the vLLM push carries merged base-named weights,
data-parallel ranks all-reduce the adapters only, and bad settings are one line."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

pytest.importorskip("peft")

from safetensors.torch import load_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from mvpo_train import distributed as D  # noqa: E402
from mvpo_train import trainer as trainer_module  # noqa: E402
from mvpo_train.checkpoint import latest_checkpoint, load_checkpoint  # noqa: E402
from mvpo_train.cli import train_main  # noqa: E402
from mvpo_train.config import ConfigError, TrainConfig  # noqa: E402
from mvpo_train.factories import load_policy  # noqa: E402
from mvpo_train.lora import (  # noqa: E402
    ADAPTER_WEIGHTS,
    engine_weights,
    merge_adapters,
    weights_digest,
)
from mvpo_train.metrics import read_metrics, strip_timing  # noqa: E402
from mvpo_train.policy import Policy  # noqa: E402
from mvpo_train.tiny_model import MICRO_SPEC, build_tiny_model  # noqa: E402
from mvpo_train.trainer import train  # noqa: E402


def _cfg(micro: Path, run_dir: Path, **kw) -> TrainConfig:
    base = dict(
        run_dir=str(run_dir), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, num_groups=2, group_size=2, max_steps=3, iterations=2,
        estimator="mvpo", minibatch_size=8, micro_batch_size=4, ppo_epochs=2, lr=5e-2, seed=3,
        env_kwargs={"preset": "mini"}, lora_rank=4, lora_alpha=8.0, entropy_coef=0.01,
    )  # fmt: skip
    base.update(kw)
    return TrainConfig(**base)


def _base_weights(peft_model) -> dict[str, torch.Tensor]:
    """The base weights inside a peft model, under the plain model's names."""
    inner = peft_model.get_base_model().state_dict()
    return {k.replace(".base_layer.", "."): v for k, v in inner.items() if ".lora_" not in k}


def _logits(model, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits


IDS = torch.tensor([[3, 17, 42, 5, 99, 12, 7, 64]])


@pytest.fixture(scope="module")
def trained(micro, tmp_path_factory):
    """A 2-iteration LoRA run (score mode, KL to the reference, merged at the end); the
    trainer's own policy object is kept (a spy around the real ``load_policy``)."""
    tmp = tmp_path_factory.mktemp("lora")
    seen = []

    def spy(cfg, model=None):
        seen.append(load_policy(cfg, model))
        return seen[-1]

    cfg = _cfg(micro, tmp / "run", kl_coef=0.05, lora_merge_to=str(tmp / "merged"))
    with pytest.MonkeyPatch.context() as mp_:
        mp_.setattr(trainer_module, "load_policy", spy)
        rows = train(cfg)
    return {"cfg": cfg, "run": tmp / "run", "merged": tmp / "merged", "policy": seen[0],
            "rows": rows, "tmp": tmp}  # fmt: skip


def test_only_the_adapters_train_and_the_base_is_unchanged(trained, micro):
    model = trained["policy"].model
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    original = AutoModelForCausalLM.from_pretrained(micro).state_dict()
    base = _base_weights(model)
    assert set(base) == set(original)
    for k, v in original.items():
        assert torch.equal(base[k], v), k  # bit for bit
    lora_b = [p for n, p in model.named_parameters() if ".lora_B." in n]
    assert max(float(p.detach().abs().max()) for p in lora_b) > 1e-4  # peft starts lora_B at 0
    assert all(r["loss/grad_norm"] > 0 for r in trained["rows"])


@pytest.mark.filterwarnings("ignore::FutureWarning")  # transformers' notes inside peft
def test_the_checkpoint_holds_the_adapters_only_and_names_the_base(trained, micro):
    ckpt = latest_checkpoint(trained["run"])
    files = sorted(p.name for p in ckpt.iterdir())
    assert ADAPTER_WEIGHTS in files and "adapter_config.json" in files
    assert "model.safetensors" not in files and "config.json" not in files
    tensors = load_file(ckpt / ADAPTER_WEIGHTS)
    assert tensors and all(".lora_A." in k or ".lora_B." in k for k in tensors)
    model_file = (Path(micro) / "model.safetensors").stat().st_size
    assert (ckpt / ADAPTER_WEIGHTS).stat().st_size < model_file / 10
    saved = load_checkpoint(ckpt)
    n_adapters = sum(1 for n, p in trained["policy"].model.named_parameters() if p.requires_grad)
    assert len(saved["optimizer"]["state"]) == n_adapters == len(tensors)  # AdamW: adapters
    lora = saved["state"]["lora"]
    base = AutoModelForCausalLM.from_pretrained(micro)
    assert lora["base_sha256"] == weights_digest(base) and lora["rank"] == 4
    assert lora["base_model"] == str(micro)
    # peft's own loader reads the folder: the same adapters, the same outputs
    from peft import PeftModel

    loaded = PeftModel.from_pretrained(base, str(ckpt))
    torch.testing.assert_close(
        _logits(loaded, IDS), _logits(trained["policy"].model, IDS), rtol=0, atol=0
    )


def test_the_reference_is_the_base_with_adapters_disabled(trained, micro):
    policy = trained["policy"]
    ref = policy.frozen_copy()
    assert ref.model is policy.model  # no second copy of the weights
    plain = Policy(AutoModelForCausalLM.from_pretrained(micro), policy.tokenizer)
    prompts, responses = [[3, 17, 42, 5], [9, 8, 7]], [[99, 12], [64, 5, 6]]
    with torch.no_grad():
        want, _ = plain.token_logprobs(prompts, responses)
        got, _ = ref.token_logprobs(prompts, responses)
        now, _ = policy.token_logprobs(prompts, responses)
    for g, w, n in zip(got, want, now, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-6)
        assert float((n - w).abs().max()) > 1e-6  # the adapters changed the policy
    cands = [[[5, 6], [7]], [[8, 9, 10]]]
    for impl in ("kv", "concat"):
        ref.score_impl = plain.score_impl = impl
        with torch.no_grad():
            a = ref.score_candidates(prompts, cands).scores
            b = plain.score_candidates(prompts, cands).scores
        for x, y in zip(a, b, strict=True):
            torch.testing.assert_close(x, y, rtol=0, atol=1e-6)
    # leaving the reference leaves the adapters on and trainable
    assert all(p.requires_grad for n, p in policy.model.named_parameters() if ".lora_" in n)
    with torch.no_grad():
        again, _ = policy.token_logprobs(prompts, responses)
    for a, n in zip(again, now, strict=True):
        assert torch.equal(a, n)


def test_the_merged_model_computes_what_the_adapter_model_computes(trained, micro):
    adapter_model = trained["policy"].model
    want = _logits(adapter_model, IDS)
    base = _logits(AutoModelForCausalLM.from_pretrained(micro), IDS)
    assert float((want - base).abs().max()) > 1e-4  # not vacuous: the adapters matter
    # written by the trainer at the end (lora_merge_to) and by merge_adapters(run_dir, out)
    out = merge_adapters(trained["run"], trained["tmp"] / "merged-again")
    for folder in (trained["merged"], out):
        merged = AutoModelForCausalLM.from_pretrained(folder)
        assert not any("lora" in k for k in merged.state_dict())
        assert torch.allclose(_logits(merged, IDS), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ConfigError, match="not an empty folder"):
        merge_adapters(trained["run"], out)


def test_the_vllm_push_is_the_merged_weights_under_the_base_names(trained, micro):
    """What ``VLLMBackend.sync_weights`` pushes (vLLM itself is not installed here): the base
    model's names, each LoRA layer merged; loaded into a plain model it gives the adapter
    model's outputs."""
    model = trained["policy"].model
    pushed = dict(engine_weights(model))
    fresh = AutoModelForCausalLM.from_pretrained(micro)
    assert set(pushed) == set(fresh.state_dict())
    fresh.load_state_dict(pushed, strict=True)
    torch.testing.assert_close(_logits(fresh, IDS), _logits(model, IDS), rtol=1e-5, atol=1e-5)
    assert {k for k, v in pushed.items() if not torch.equal(v, _base_weights(model)[k])}
    plain = AutoModelForCausalLM.from_pretrained(micro)
    assert [k for k, _ in engine_weights(plain)] == list(plain.state_dict())


@pytest.mark.parametrize("action_mode", ["score", "generate"])
def test_resume_is_bit_exact(micro, tmp_path, action_mode):
    extra = dict(lora_dropout=0.1, kl_coef=0.05, iterations=4)
    if action_mode == "generate":
        extra.update(action_mode="generate", prompt_style="seed", max_new_tokens=3)
    train(_cfg(micro, tmp_path / "full", **extra))
    first = train(_cfg(micro, tmp_path / "split", stop_after=2, **extra))
    assert len(first) == 2
    rest = train(_cfg(micro, tmp_path / "split", resume=True, **extra))
    assert [r["iteration"] for r in rest] == [3, 4]
    a = [strip_timing(r) for r in read_metrics(tmp_path / "full")]
    b = [strip_timing(r) for r in read_metrics(tmp_path / "split")]
    assert len(a) == 4 and a == b
    for name in (ADAPTER_WEIGHTS, "optimizer.pt"):
        wa = (tmp_path / "full" / "checkpoints" / "iter-000004" / name).read_bytes()
        wb = (tmp_path / "split" / "checkpoints" / "iter-000004" / name).read_bytes()
        assert wa == wb, name
    before = load_file(tmp_path / "full" / "checkpoints" / "iter-000003" / ADAPTER_WEIGHTS)
    last = load_file(tmp_path / "full" / "checkpoints" / "iter-000004" / ADAPTER_WEIGHTS)
    assert any(not torch.equal(before[k], last[k]) for k in last)  # they trained on


def test_the_same_seed_gives_the_same_adapters_and_leaves_the_global_rng(micro):
    cfg = _cfg(micro, Path("unused"))
    torch.manual_seed(0)
    before = torch.get_rng_state()
    a = load_policy(cfg)
    assert torch.equal(torch.get_rng_state(), before)  # init ran on its own seeded generator
    b = load_policy(cfg)
    c = load_policy(_cfg(micro, Path("unused"), seed=4))
    sa, sb, sc = (
        {k: v for k, v in p.model.state_dict().items() if ".lora_A." in k} for p in (a, b, c)
    )
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert any(not torch.equal(sa[k], sc[k]) for k in sa)


def test_resume_on_another_base_is_one_line_and_changes_nothing(tmp_path, capsys):
    model = build_tiny_model(tmp_path / "base", MICRO_SPEC, texts=["go to fridge 1"] * 3)
    argv = [
        "--model", str(model), "--run-dir", str(tmp_path / "run"), "--device", "cpu",
        "--threads", "1", "--no-progress", "--no-tensorboard", "--num-groups", "2",
        "--group-size", "2", "--max-steps", "3", "--iterations", "1", "--lora-rank", "4",
        "--env-kwargs", '{"preset": "mini"}',
    ]  # fmt: skip
    assert train_main(argv) == 0
    capsys.readouterr()
    # the same folder, rebuilt with other weights
    other = MICRO_SPEC.__class__(**{**MICRO_SPEC.__dict__, "seed": 1})
    build_tiny_model(tmp_path / "base", other, texts=["go to fridge 1"] * 3)
    before = {p: p.read_bytes() for p in sorted((tmp_path / "run").rglob("*")) if p.is_file()}
    rc = train_main([*argv, "--iterations", "2", "--resume"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "mvpo-train: error: model: checkpoint iter-000001 holds LoRA adapters" in err
    assert "sha256" in err and "Traceback" not in err
    after = {p: p.read_bytes() for p in sorted((tmp_path / "run").rglob("*")) if p.is_file()}
    assert after == before


BAD = [
    (["--lora-rank", "-1"], "lora_rank: must be >= 0 and <= 65536, got -1"),
    (["--lora-rank", "4", "--lora-alpha", "0"], "lora_alpha: must be > 0, got 0.0"),
    (["--lora-rank", "4", "--lora-dropout", "1"], "lora_dropout: must be < 1, got 1.0"),
    (["--lora-rank", "4", "--lora-target-modules", "[]"], "lora_target_modules: expected"),
    (["--lora-rank", "4", "--lora-target-modules", "all-linear,q_proj"], "all-linear alone"),
    (["--lora-rank", "4", "--lora-target-modules", "[1]"], "lora_target_modules[0]: expected"),
    (["--lora-alpha", "32"], "lora_alpha: only used with LoRA (lora_rank is 0)"),
    (["--lora-merge-to", "out"], "lora_merge_to: only used with LoRA"),
    (["--lora-rank", "4", "--policy", "encoder"], "lora_rank: LoRA adapts the LM policy"),
    (["--lora-rank", "4", "--parallelism", "fsdp"], "FSDP with LoRA is not supported"),
    (["--lora-rank", "4", "--lora-target-modules", "qq_proj"], "match no layer of"),
]


@pytest.mark.parametrize("flags,expected", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_lora_settings_are_one_line(flags, expected, micro, tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["--run-dir", str(run), "--model", str(micro), "--device", "cpu", *flags]
    assert train_main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("mvpo-train: error: "), err
    assert expected in err, err
    assert not run.exists()


def test_flags_come_from_the_fields(capsys, tmp_path):
    import yaml

    assert train_main(["--print-config", "--lora-rank", "8", "--lora-target-modules",
                       "q_proj,v_proj"]) == 0  # fmt: skip
    out = yaml.safe_load(capsys.readouterr().out)
    assert out["lora_rank"] == 8 and out["lora_target_modules"] == ["q_proj", "v_proj"]
    (tmp_path / "c.yaml").write_text("lora_rank: 2\nlora_target_modules: all-linear\n")
    assert train_main(["--print-config", "--config", str(tmp_path / "c.yaml")]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    assert out["lora_target_modules"] == ["all-linear"] and out["lora_alpha"] == 16.0
    assert TrainConfig().lora_rank == 0  # off by default
    assert TrainConfig(lora_rank=2, lora_target_modules="all-linear").lora_target_modules == [
        "all-linear"
    ]


def test_all_linear_and_eval_of_a_lora_checkpoint(micro, tmp_path, capsys):
    """``all-linear`` adapts the MLP too; ``mvpo-eval --run-dir`` loads base + adapters, a bare
    adapter folder as ``--model`` is one line saying how to evaluate it, and a finished run is
    merged by ``mvpo-train --config RUN/config.yaml --resume --lora-merge-to DIR``."""
    from mvpo_train.cli import eval_main

    cfg = _cfg(micro, tmp_path / "run", iterations=1, lora_target_modules=["all-linear"])
    train(cfg)
    ckpt = latest_checkpoint(tmp_path / "run")
    names = load_file(ckpt / ADAPTER_WEIGHTS)
    assert any(".mlp." in k for k in names) and not any("lm_head" in k for k in names)
    policy = load_policy(cfg, model=str(ckpt))
    saved = load_file(ckpt / ADAPTER_WEIGHTS)
    from peft import get_peft_model_state_dict

    now = get_peft_model_state_dict(policy.model, save_embedding_layers=False)
    assert set(now) == set(saved) and all(torch.equal(now[k], saved[k]) for k in saved)
    eval_argv = ["--run-dir", str(tmp_path / "run"), "--episodes", "1", "--tasks", "1",
                 "--max-steps", "2", "--device", "cpu"]  # fmt: skip
    assert eval_main(eval_argv) == 0
    assert "success" in capsys.readouterr().out
    assert eval_main(["--model", str(ckpt), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "holds LoRA adapters only" in err
    # a finished run merged afterwards: its config, --resume ("nothing to do"), --lora-merge-to
    out = tmp_path / "merged"
    argv = ["--config", str(tmp_path / "run" / "config.yaml"), "--resume", "--lora-merge-to"]
    assert train_main([*argv, str(out)]) == 0
    assert "nothing to do" in capsys.readouterr().err
    merged = AutoModelForCausalLM.from_pretrained(out)
    torch.testing.assert_close(
        _logits(merged, IDS), _logits(policy.model, IDS), rtol=1e-5, atol=1e-5
    )


# ------------------------------------------------------------------ data-parallel (2 gloo ranks)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dp_iteration(ctx, micro: str, out: Path) -> None:
    """One LoRA update on ``ctx``'s ranks (1: plays both shards) from the trainer's pieces;
    records the adapters and how many numbers each gradient all-reduce carried."""
    from mvpo_train import update as update_module
    from mvpo_train.config import build_estimator
    from mvpo_train.factories import make_venv, rollout_config
    from mvpo_train.prompts import get_template
    from mvpo_train.rollout import RolloutCollector
    from mvpo_train.update import ppo_update

    torch.set_num_threads(1)
    # no entropy bonus: Adam turns the rounding of its near-zero gradients into whole steps
    cfg = _cfg(Path(micro), out / "unused", minibatch_size=5, micro_batch_size=3, entropy_coef=0.0)
    torch.manual_seed(cfg.seed)
    policy = load_policy(cfg)
    shards = range(2) if not ctx.enabled else [ctx.rank]
    parts = []
    for r in shards:
        tasks = D.shard_tasks([4, 9], D.DistContext(rank=r, world_size=2))
        venv = make_venv(cfg, cfg.split, len(tasks), cfg.group_size)
        collector = RolloutCollector(
            venv, policy, get_template(cfg.env_id, cfg.prompt_style), rollout_config(cfg),
            None, D.rank_generator(cfg.seed, 1, r),
        )  # fmt: skip
        parts.append(collector.collect(tasks))
        venv.close()
    if ctx.enabled:
        batch, rows = D.gather_batch(parts[0], ctx)
    else:
        batch, _ = D.concat_batches(parts)
        rows = np.arange(len(batch))
    adv = build_estimator(cfg)(batch)[0] + np.random.default_rng(7).standard_normal(len(batch))
    trainable = [p for p in policy.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=cfg.lr)
    reduced: list[int] = []
    real = update_module.sync_gradients

    def counting(params, c):  # the real all-reduce, counted
        reduced.append(sum(p.numel() for p in params) if c.enabled else 0)
        real(params, c)

    update_module.sync_gradients = counting
    try:
        ppo_update(
            policy, optimizer, batch, adv, list(batch.extras["old_logp"]), None, cfg,
            torch.Generator().manual_seed(cfg.seed + 1), rows, ctx,
        )  # fmt: skip
    finally:
        update_module.sync_gradients = real
    D.check_same_weights(policy.model, ctx)
    if ctx.is_main:
        torch.save(
            {
                "adapters": {k: v.clone() for k, v in policy.model.state_dict().items()
                             if ".lora_" in k},
                "base": _base_weights(policy.model),
                "reduced": reduced,
                "adapter_numel": sum(p.numel() for p in trainable),
                "all_numel": sum(p.numel() for p in policy.model.parameters()),
            },
            out / "result.pt",
        )  # fmt: skip


def _dp_worker(rank: int, world: int, port: int, micro: str, out: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world)
    )
    ctx = D.init_distributed("gloo", timeout_s=300)
    try:
        _dp_iteration(ctx, micro, Path(out))
    finally:
        D.shutdown(ctx)
    D.exit_rank(0)


def test_two_ranks_all_reduce_the_adapters_only_and_match_one_process(micro, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    _dp_iteration(D.DistContext(), str(micro), one)
    mp.spawn(_dp_worker, args=(2, _free_port(), str(micro), str(two)), nprocs=2)
    r1, r2 = torch.load(one / "result.pt"), torch.load(two / "result.pt")
    assert r2["reduced"] and set(r2["reduced"]) == {r2["adapter_numel"]}
    assert r2["adapter_numel"] < r2["all_numel"] / 10
    original = AutoModelForCausalLM.from_pretrained(micro).state_dict()
    for k, v in original.items():
        assert torch.equal(r2["base"][k], v), k
    moved = max(float(v.abs().max()) for k, v in r1["adapters"].items() if ".lora_B." in k)
    assert moved > 1e-3
    for k, v in r1["adapters"].items():
        torch.testing.assert_close(r2["adapters"][k], v, rtol=1e-4, atol=1e-5)
    json.dumps(r2["reduced"])  # plain numbers
