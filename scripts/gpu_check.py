"""GPU check of mvpo_train: generate and score modes on CUDA, HF and (if importable) vLLM.

Run by ``scripts/gpu_check.sh`` on a CUDA machine (docs/training.md, "GPU check"). Each step
is timed and reported; a failing step does not stop the next:

1. versions (torch, CUDA, transformers, vLLM) and the GPU;
2. ``generate`` mode (``<think>``/``<action>``) with the bundled tiny model, HF backend,
   2 iterations with KL + entropy, bf16 on the GPU;
3. ``score`` mode on the GPU (batched KV-cache candidate scoring), 2 iterations;
4. the same ``generate`` run on the vLLM backend (weights pushed after every update), and a
   weight-sync check (greedy vLLM tokens after a sync vs greedy HF tokens) -- skipped with a
   note when vLLM is not importable;
5. a randomly initialised model of Qwen2.5-1.5B's shape (no download needed): one generate
   iteration with KL, peak GPU memory and phase times (``MVPO_CHECK_QWEN_SHAPE=0`` skips);
6. optional: ``$MVPO_QWEN_PATH`` (a local Qwen2.5-1.5B-Instruct folder), one iteration;
7. step 4 with LoRA (rank 8, merged weights pushed; :func:`vllm_lora`) -- skipped with a note
   when vLLM or peft is not importable.

The env is ALFWorld's bundled mini split when ``alfworld`` imports, else the tiny
``mvpo-check/KeyRoom-v0`` env of ``scripts/gpu_check_env.py`` (same info contract).
Everything goes to ``$OUT`` (default ``./gpu_check_out``): ``gpu_check.json`` + metrics.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
OUT = Path(os.environ.get("OUT") or "gpu_check_out")
OUT.mkdir(parents=True, exist_ok=True)
REPORT: dict = {"steps": {}}


def run_step(name, fn):
    t0 = time.time()
    print(f"\n=== {name} ===", flush=True)
    try:
        result = fn() or {}
        entry = {"ok": True, "seconds": round(time.time() - t0, 1), **result}
    except Exception as err:  # keep going: the report says what failed
        traceback.print_exc()
        entry = {"ok": False, "seconds": round(time.time() - t0, 1), "error": repr(err)}
    print(json.dumps(entry, indent=1, default=str), flush=True)
    path = OUT / "gpu_check.json"
    report = json.loads(path.read_text()) if path.exists() else {"steps": {}}
    report["steps"][name] = entry
    path.write_text(json.dumps(report, indent=1, default=str))
    REPORT["steps"][name] = entry


def env_choice() -> dict:
    if os.environ.get("MVPO_CHECK_ENV") == "keyroom":
        from gpu_check_env import register

        return {"env_id": register(), "max_steps": 6, "eval_split": "train"}
    try:
        import alfworld  # noqa: F401
        import textworld  # noqa: F401

        return {"env_id": "mvpo/ALFWorld-v0", "max_steps": 6}
    except Exception:
        from gpu_check_env import register

        return {"env_id": register(), "max_steps": 6, "eval_split": "train"}


def base_cfg(**kw):
    from mvpo_train.config import TrainConfig

    values = dict(
        model="tiny-qwen2", device=os.environ.get("MVPO_CHECK_DEVICE", "cuda"), dtype="bfloat16",
        action_mode="generate", prompt_style="seed", num_groups=2, group_size=4, iterations=2,
        max_new_tokens=48,
        lr=1e-4, kl_coef=0.01, entropy_coef=0.001, estimator="mvpo", progress=False,
        tensorboard=False, threads=4, micro_batch_size=16, max_tokens_per_forward=65536,
        vllm_gpu_memory_utilization=0.25, save_every=0, tasks=[], overwrite=True, **env_choice(),
    )  # fmt: skip
    values.update(kw)
    return TrainConfig(**values)


def summarize(rows):
    keep = (
        "iteration", "success", "format_error_ratio", "invalid_action_ratio", "episode_length",
        "adv/zero_credit_ratio", "loss/kl", "loss/entropy", "loss/grad_norm", "time/rollout",
        "time/logp_ref", "time/advantage", "time/update", "time/total",
    )  # fmt: skip
    return [{k: r.get(k) for k in keep} for r in rows]


def versions():
    import torch
    import transformers

    info = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda_available": torch.cuda.is_available(),
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "env": env_choice()["env_id"],
    }
    try:
        import vllm

        info["vllm"] = vllm.__version__
    except Exception as err:
        info["vllm"] = f"not importable: {err!r}"
    return info


def hf_generate():
    from mvpo_train.trainer import train

    return {"metrics": summarize(train(base_cfg(run_dir=str(OUT / "run-hf"), backend="hf")))}


def hf_score():
    from mvpo_train.trainer import train

    rows = train(
        base_cfg(run_dir=str(OUT / "run-score"), action_mode="score", prompt_style="compact",
                 kl_coef=0.0, entropy_coef=0.0, lr=2e-3, dtype="float32")
    )  # fmt: skip
    return {"metrics": summarize(rows)}


def vllm_generate():
    try:
        import vllm  # noqa: F401
    except Exception as err:
        return {"skipped": f"vllm not importable ({err!r})"}
    from mvpo_train.trainer import train

    return {"metrics": summarize(train(base_cfg(run_dir=str(OUT / "run-vllm"), backend="vllm")))}


PROMPTS = ("You arrive at fridge 1.", "Your task is to: put a mug", "> go to")


def token_agreement(a: list[list[int]], b: list[list[int]]) -> float:
    """The share of equal tokens position by position (over the shorter of each pair)."""
    agree = sum(x == y for r, s in zip(a, b, strict=True) for x, y in zip(r, s, strict=False))
    return agree / max(sum(min(len(r), len(s)) for r, s in zip(a, b, strict=True)), 1)


def sync_check(policy, vb, params, hf=None) -> dict:
    """Greedy vLLM tokens (``vb``) vs greedy HF tokens (``hf()``, default ``policy.generate``)
    around one "update" (seed-0 noise of scale 0.05 added to ``params``): equal before it,
    stale until ``vb.sync_weights(policy.model)``, equal again after it."""
    import torch

    prompts = [policy.encode(t) for t in PROMPTS]
    hf = hf or (lambda: policy.generate(prompts, 12, greedy=True))
    before, hf_before = vb.generate(prompts, 12, greedy=True), hf()
    params = list(params)
    with torch.no_grad():
        g = torch.Generator(device=params[0].device).manual_seed(0)
        for p in params:
            p.add_(torch.randn(p.shape, generator=g, device=p.device, dtype=p.dtype) * 0.05)
    stale = vb.generate(prompts, 12, greedy=True)
    t0 = time.time()
    vb.sync_weights(policy.model)
    sync_s = time.time() - t0
    after, hf_after = vb.generate(prompts, 12, greedy=True), hf()
    return {
        "vllm_equals_hf_before": before == hf_before,
        "stale_until_sync": stale == before,
        "changed_after_sync": after != before,
        "vllm_equals_hf_after_sync": after == hf_after,
        "token_agreement_vllm_vs_hf": token_agreement(after, hf_after),
        "sync_seconds": round(sync_s, 3),
    }


def vllm_sync():
    try:
        import vllm  # noqa: F401
    except Exception as err:
        return {"skipped": f"vllm not importable ({err!r})"}
    from mvpo_train.backends import make_backend
    from mvpo_train.trainer import load_policy

    policy = load_policy(base_cfg())
    vb = make_backend("vllm", policy, gpu_memory_utilization=0.2)
    result = sync_check(policy, vb, policy.model.parameters())
    vb.close()
    return result


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a.detach().cpu(), b.detach().cpu()))


def train_keeping_policy(cfg):
    """``train(cfg)``'s rows and the trainer's own policy (its ``load_policy``, wrapped for
    the run, keeps what it returns)."""
    from mvpo_train import trainer

    load, kept = trainer.load_policy, []

    def keep(*args, **kwargs):
        kept.append(load(*args, **kwargs))
        return kept[-1]

    trainer.load_policy = keep
    try:
        rows = trainer.train(cfg)
    finally:
        trainer.load_policy = load
    return rows, kept[0]


def vllm_lora(**kw):
    """LoRA on the vLLM backend (docs/training.md, "LoRA", "vLLM"): two ``generate``
    iterations (rank 8, every linear layer), then the trained policy's base is bit for bit the
    base it started from, its adapters moved, the checkpoint holds adapters only, and
    :func:`sync_check` on the adapters (HF side: peft's ``merge_and_unload`` of a copy)."""
    try:
        import peft  # noqa: F401
        import vllm  # noqa: F401
    except Exception as err:
        return {"skipped": f"vllm or peft not importable ({err!r})"}
    import copy

    from mvpo_train.backends import make_backend
    from mvpo_train.checkpoint import ADAPTER_WEIGHTS, latest_checkpoint
    from mvpo_train.policy import Policy
    from mvpo_train.trainer import load_policy

    lora = dict(lora_rank=8, lora_alpha=16.0, lora_target_modules=["all-linear"], lr=1e-3)
    cfg = base_cfg(**{"run_dir": str(OUT / "run-vllm-lora"), "backend": "vllm", **lora, **kw})
    rows, policy = train_keeping_policy(cfg)
    start = load_policy(cfg)  # the same seed: the base and the adapters the run started from
    now, then = dict(policy.model.named_parameters()), dict(start.model.named_parameters())
    adapter = {n for n, p in now.items() if p.requires_grad}

    def base_unchanged() -> bool:
        return all(torch_equal(now[n], then[n]) for n in now if n not in adapter)

    moved = max(float((now[n] - then[n]).detach().abs().max()) for n in adapter)
    trained_base = base_unchanged()
    ckpt = latest_checkpoint(cfg.run_dir)
    files = sorted(f.name for f in ckpt.iterdir())
    prompts = [policy.encode(t) for t in PROMPTS]

    def merged_hf():
        merged = copy.deepcopy(policy.model).merge_and_unload()
        return policy.with_model(merged, Policy).generate(prompts, 12, greedy=True)

    vb = make_backend("vllm", policy, gpu_memory_utilization=0.2)
    vb.sync_weights(policy.model)  # the engine loaded the base: push base + trained adapters
    sync = sync_check(policy, vb, [now[n] for n in sorted(adapter)], hf=merged_hf)
    vb.close()
    return {
        "metrics": summarize(rows),
        "frozen_base_unchanged": trained_base,
        "adapters_max_change": moved,
        "adapters_moved": moved > 0,
        "adapters_only_checkpoint": ADAPTER_WEIGHTS in files and "model.safetensors" not in files,
        "checkpoint": {"path": str(ckpt), "files": files,
                       "adapter_bytes": (ckpt / ADAPTER_WEIGHTS).stat().st_size},
        "base_unchanged_by_sync": base_unchanged(),
        **sync,
    }  # fmt: skip


def qwen():
    path = os.environ.get("MVPO_QWEN_PATH")
    if not path:
        return {"skipped": "set MVPO_QWEN_PATH to a local Qwen2.5-1.5B-Instruct folder"}
    from mvpo_train.trainer import train

    report = json.loads((OUT / "gpu_check.json").read_text())
    vllm_version = str(report["steps"].get("versions", {}).get("vllm", "not importable"))
    backend = "hf" if vllm_version.startswith("not importable") else "vllm"
    rows = train(
        base_cfg(run_dir=str(OUT / "run-qwen"), model=path, backend=backend, iterations=1,
                 max_new_tokens=256, lr=1e-6)
    )  # fmt: skip
    return {"backend": backend, "metrics": summarize(rows)}


def padding_nan():
    """Gradients through left- vs right-padded batches (why the policy pads on the right)."""
    import torch

    from mvpo_train.trainer import load_policy

    policy = load_policy(base_cfg())
    model, dev = policy.model, policy.device
    out = {}
    for side in ("left", "right"):
        rows = [[5, 6, 7, 8, 9, 10], [11, 12]]
        width = max(map(len, rows))
        pad = [[0] * (width - len(r)) for r in rows]
        ids = [p + r if side == "left" else r + p for p, r in zip(pad, rows, strict=False)]
        mask = [[0] * len(p) + [1] * len(r) if side == "left" else [1] * len(r) + [0] * len(p)
                for p, r in zip(pad, rows, strict=False)]  # fmt: skip
        model.zero_grad(set_to_none=True)
        logits = model(
            input_ids=torch.tensor(ids, device=dev), attention_mask=torch.tensor(mask, device=dev)
        ).logits
        m = torch.tensor(mask, device=dev).unsqueeze(-1)
        (logits.float() * m).sum().backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        out[f"{side}_padding_nan_logits"] = bool(torch.isnan(logits[m.squeeze(-1).bool()]).any())
        out[f"{side}_padding_nan_grads"] = bool(any(torch.isnan(g).any() for g in grads))
    return out


def qwen_shaped():
    """A randomly initialised model of Qwen2.5-1.5B's shape (no download): memory and phase
    times of one generate-mode iteration at that size (tiny tokenizer; ids stay in range)."""
    if os.environ.get("MVPO_CHECK_QWEN_SHAPE", "1") == "0":
        return {"skipped": "MVPO_CHECK_QWEN_SHAPE=0"}
    import shutil

    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from mvpo_train.tiny_model import default_model_path
    from mvpo_train.trainer import train

    folder = Path("/tmp/mvpo-qwen2.5-1.5b-shape")
    if not (folder / "model.safetensors").exists() and not (folder / "config.json").exists():
        config = Qwen2Config(
            vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
            num_attention_heads=12, num_key_value_heads=2, max_position_embeddings=32768,
            rope_theta=1000000.0, tie_word_embeddings=True, eos_token_id=2, pad_token_id=0,
        )  # fmt: skip
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = Qwen2ForCausalLM(config).to(torch.bfloat16)
        model.save_pretrained(folder)
        del model
        for f in default_model_path().iterdir():
            if f.name.startswith(("tokenizer", "chat_template", "generation_config")):
                shutil.copy(f, folder / f.name)
    torch.cuda.reset_peak_memory_stats()
    rows = train(
        base_cfg(run_dir=str(OUT / "run-qwen-shape"), model=str(folder), backend="hf",
                 iterations=1, max_new_tokens=64, group_size=4, num_groups=2, max_steps=3,
                 lr=1e-6, micro_batch_size=8)
    )  # fmt: skip
    return {
        "shape": "Qwen2.5-1.5B (28 layers, hidden 1536, vocab 151936), random weights",
        "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1),
        "metrics": summarize(rows),
    }


STEPS = {
    "versions": versions,
    "padding and NaN gradients": padding_nan,
    "generate mode, HF backend": hf_generate,
    "score mode on the GPU": hf_score,
    "generate mode, vLLM backend": vllm_generate,
    "vLLM weight sync": vllm_sync,
    "Qwen2.5-1.5B-shaped random model, HF backend": qwen_shaped,
    "Qwen2.5-1.5B-Instruct (MVPO_QWEN_PATH)": qwen,
    "generate mode, vLLM backend, LoRA": vllm_lora,  # last: the steps before keep their time
}


def main() -> int:
    """Each step in its own process: a CUDA error in one cannot poison the next."""
    import subprocess

    if len(sys.argv) == 3 and sys.argv[1] == "--step":
        run_step(sys.argv[2], STEPS[sys.argv[2]])
        return 0
    for name in STEPS:
        proc = subprocess.run([sys.executable, __file__, "--step", name], timeout=300)
        part = (
            json.loads((OUT / "gpu_check.json").read_text())["steps"]
            if (OUT / "gpu_check.json").exists()
            else {}
        )
        REPORT["steps"][name] = part.get(
            name, {"ok": False, "error": f"exit status {proc.returncode}"}
        )
        (OUT / "gpu_check.json").write_text(json.dumps(REPORT, indent=1, default=str))
    ok = all(s["ok"] for s in REPORT["steps"].values())
    print(f"\nGPU check {'passed' if ok else 'had failures'}; report in {OUT / 'gpu_check.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
