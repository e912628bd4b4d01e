"""Generation backends for the ``generate`` action mode, behind one small interface.

docs/architecture.md, ``policy.py (HF / vLLM)``. A backend turns prompt token ids into response
token ids; the trainer's HF model always recomputes the log-probs (the "Logp+Ref" phase of
the seeds' Table 3), so a backend never has to return them.

* ``hf`` (default): :class:`mvpo_train.backends.hf.HFBackend`, HF ``generate`` on the training
  model itself; nothing to sync.
* ``vllm`` (optional extra ``mvpo[vllm]``, imported lazily):
  :class:`mvpo_train.backends.vllm.VLLMBackend`,
  a vLLM engine on the same GPU whose weights are reloaded from the training model after
  every update (:meth:`Backend.sync_weights`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Backend", "make_backend"]


@runtime_checkable
class Backend(Protocol):
    """What the rollout needs from a generator."""

    name: str

    def generate(
        self, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, greedy: bool = False
    ) -> list[list[int]]:
        """One response (token ids, ending with EOS when one was produced) per prompt."""
        ...

    def sync_weights(self, model: Any) -> None:
        """Make the generator use ``model``'s current weights."""
        ...

    def close(self) -> None: ...


def make_backend(name: str, policy: Any, **kwargs: Any) -> Backend:
    """``hf`` or ``vllm`` (lazy import; ``pip install 'mvpo[vllm]'``)."""
    if name == "hf":
        from mvpo_train.backends.hf import HFBackend

        return HFBackend(policy, **kwargs)
    if name == "vllm":
        from mvpo_train.backends.vllm import VLLMBackend

        return VLLMBackend(policy, **kwargs)
    raise KeyError(f"unknown backend {name!r}; use 'hf' or 'vllm'")
