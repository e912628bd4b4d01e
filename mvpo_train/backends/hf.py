"""HF backend: ``model.generate`` on the training model (see :mod:`mvpo_train.backends`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class HFBackend:
    """Generates with :meth:`mvpo_train.policy.Policy.generate` (global torch RNG)."""

    name = "hf"

    def __init__(self, policy: Any, top_p: float = 1.0, top_k: int = 0, **_: Any):
        self.policy = policy
        self.top_p = top_p
        self.top_k = top_k

    def generate(
        self, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, greedy: bool = False
    ) -> list[list[int]]:
        return self.policy.generate(
            prompts, max_new_tokens, greedy=greedy, top_p=self.top_p, top_k=self.top_k
        )

    def sync_weights(self, model: Any) -> None:
        """Nothing to do: generation runs on the training model."""

    def close(self) -> None:
        pass
