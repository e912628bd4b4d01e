"""vLLM backend (optional extra ``mvpo[vllm]``; imported only when chosen).

A colocated ``vllm.LLM`` on the training GPU generates the responses of the ``generate`` mode;
after every update :meth:`VLLMBackend.sync_weights` copies the training model's weights into
the engine (the trainer's HF model still recomputes every log-prob, so the two never need to
agree bit for bit).

Weight sync: the engine runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0`` is set before
vLLM is imported), and the weights are pushed with ``llm.collective_rpc(fn)`` where ``fn``
calls ``model.load_weights(...)`` on the worker's model; older engines are reached through
``llm.llm_engine.model_executor.driver_worker``. The prefix cache is reset afterwards.
Tensor parallelism is not supported (one GPU per engine).

LoRA (``lora_rank > 0``, :mod:`mvpo_train.lora`): the engine loads the base model, and every
sync pushes the base model's weights with the adapters merged
(:func:`mvpo_train.lora.engine_weights`, under the base model's names), so the engine needs no
LoRA support of its own (no ``enable_lora``, no ``LoRARequest``) and the push path is the same as
for full fine-tuning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from mvpo_train.lora import engine_weights
from mvpo_train.policy import _eos_ids, cut_at_eos


def _worker_model(worker: Any) -> Any:
    for path in ("model_runner.model", "worker.model_runner.model"):
        obj = worker
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
            return obj
        except AttributeError:
            continue
    if hasattr(worker, "get_model"):
        return worker.get_model()
    raise AttributeError("cannot find the model inside the vLLM worker")


def _load_weights_on_worker(worker: Any, weights: list) -> int:
    """Runs inside the vLLM worker (``collective_rpc``): load HF-named tensors."""
    model = _worker_model(worker)
    model.load_weights(weights=iter(weights))
    return len(weights)


class VLLMBackend:
    """Generation with vLLM; see the module docstring."""

    name = "vllm"

    def __init__(
        self,
        policy: Any,
        model_path: str | None = None,
        gpu_memory_utilization: float = 0.3,
        max_model_len: int | None = None,
        top_p: float = 1.0,
        top_k: int = 0,
        seed: int = 0,
        enforce_eager: bool = True,
        dtype: str = "auto",
        **_: Any,
    ):
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        try:
            import vllm
        except ImportError as err:  # pragma: no cover - needs the extra
            raise ImportError(
                "the vllm backend needs vLLM: pip install 'mvpo[vllm]' (a CUDA machine)"
            ) from err
        self._vllm = vllm
        self.policy = policy
        path = model_path or getattr(policy.model, "name_or_path", None)
        if not path:
            raise ValueError("VLLMBackend needs the model's path (model_path=)")
        kwargs: dict[str, Any] = {
            "model": str(path),
            "tokenizer": str(path),
            "gpu_memory_utilization": gpu_memory_utilization,
            "enforce_eager": enforce_eager,
            "seed": seed,
            "enable_prefix_caching": True,
        }
        if dtype == "auto":  # the training model's dtype
            dtype = str(next(policy.model.parameters()).dtype).replace("torch.", "")
        kwargs["dtype"] = dtype
        if max_model_len:
            kwargs["max_model_len"] = max_model_len
        self.llm = vllm.LLM(**kwargs)
        self.top_p = top_p
        self.top_k = top_k
        self.eos = _eos_ids(policy.model, policy.tokenizer)
        self.syncs = 0

    def generate(
        self, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, greedy: bool = False
    ) -> list[list[int]]:
        import torch

        # per-request seeds drawn from torch's global RNG: a resumed run replays them
        seeds = torch.randint(0, 2**31 - 1, (len(prompts),)).tolist()
        params = [
            self._vllm.SamplingParams(
                n=1,
                temperature=0.0 if greedy else self.policy.temperature,
                top_p=1.0 if greedy else self.top_p,
                top_k=self.top_k if self.top_k > 0 else -1,
                max_tokens=max_new_tokens,
                stop_token_ids=list(self.eos),
                seed=None if greedy else int(s),
                detokenize=False,
            )
            for s in seeds
        ]
        requests = [{"prompt_token_ids": list(p)} for p in prompts]
        outputs = self.llm.generate(requests, params, use_tqdm=False)
        return [cut_at_eos(list(o.outputs[0].token_ids), self.eos) for o in outputs]

    def sync_weights(self, model: Any) -> None:
        """Push ``model``'s weights into the engine (a LoRA model's merged into the base
        names), then drop the prefix cache."""
        weights = engine_weights(model)
        errors = []
        attempts = (
            # vLLM >= 0.11: in-place reload that also handles weights the engine repacked after
            # loading (e.g. the CPU backend's linear layers), with HF checkpoint names
            lambda: self.llm.collective_rpc(
                "reload_weights", kwargs={"weights_iterator": weights, "is_checkpoint_format": True}
            ),
            # engines without reload_weights: the model's own load_weights in the worker
            lambda: self.llm.collective_rpc(_load_weights_on_worker, args=(weights,)),
            lambda: _load_weights_on_worker(
                self.llm.llm_engine.model_executor.driver_worker, weights
            ),
        )
        for attempt in attempts:
            try:
                attempt()
                break
            except Exception as err:
                errors.append(repr(err))
        else:
            raise RuntimeError(f"vLLM weight sync failed: {errors}")
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()
        self.syncs += 1

    def close(self) -> None:
        del self.llm
