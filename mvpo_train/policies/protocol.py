"""What the trainer, the rollout, the PPO update and the checkpoint call on a policy.

docs/architecture.md, "A new policy, backend or tracker". Both built-in policies satisfy
:class:`Policy`: :class:`mvpo_train.policy.Policy` (the Hugging Face causal LM, both action
modes) and :class:`mvpo_train.encoder_policy.EncoderPolicy` (the encoder scorer, ``score``
mode only). A policy of the ``generate`` mode also needs a generation backend that can run it
(:mod:`mvpo_train.backends`; the ``hf`` backend calls :meth:`Generates.generate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

    from mvpo_train.policy import CandidateIds, ScoreResult, TokenIds
    from mvpo_train.prompts import Prompt, PromptTemplate

__all__ = ["Generates", "Policy"]


@runtime_checkable
class Policy(Protocol):
    """A policy as the loop uses it.

    ``model`` is the trainable ``torch.nn.Module``: the optimizer takes its ``parameters()``,
    the loop switches ``train()`` / ``eval()``, a checkpoint calls
    ``model.save_pretrained(folder, safe_serialization=True)`` (it must write
    ``model.safetensors``, which ``--resume`` loads back strictly). ``tokenizer`` is saved
    beside it when not ``None`` (``tokenizer.save_pretrained(folder)``). ``pad_id`` fills an
    empty response. Optional: ``resolved_settings``, a dict of ``TrainConfig`` fields the
    policy resolved from ``auto`` (the encoder policy: where MiniLM runs), which a fresh run's
    ``config.yaml`` records instead, so that its resume runs the same.
    """

    model: Any
    tokenizer: Any
    pad_id: int

    @property
    def device(self) -> torch.device:
        """Where the model's parameters live."""
        ...

    def prompt_ids(self, prompt: Prompt | str, template: PromptTemplate, mode: str) -> list[int]:
        """The ids the policy reads for a prompt (a :class:`~mvpo_train.prompts.Prompt` or its
        text) in action mode ``mode``; a mode it does not play is a ``ValueError``."""
        ...

    def candidate_ids(self, action: str, template: PromptTemplate) -> list[int]:
        """The ids of one admissible action (``score`` mode)."""
        ...

    def score_candidates(
        self, prompts: TokenIds, candidates: CandidateIds, norm: str = "mean"
    ) -> ScoreResult:
        """Per prompt, the sampling logits of its candidates (gradients flow when enabled);
        ``score_logprob="choice"`` takes the log-softmax at the chosen one."""
        ...

    def token_logprobs(
        self, prompts: TokenIds, responses: TokenIds, *, entropy: bool = False
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        """Per row, the log-prob (and entropy) of each response token given its prompt
        (``generate`` mode, ``score_logprob="tokens"``); a policy without tokens raises
        ``ValueError`` naming the setting to use."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """The text of response ids (``generate`` mode: what the projection parses)."""
        ...

    def frozen_copy(self) -> Policy:
        """The frozen reference of the KL penalty: the same scores, no gradients, unaffected
        by later updates."""
        ...


@runtime_checkable
class Generates(Protocol):
    """A policy the ``hf`` backend can sample from (the ``vllm`` backend also reads
    ``model``, ``tokenizer`` and ``temperature``)."""

    temperature: float

    def generate(
        self,
        prompts: TokenIds,
        max_new_tokens: int = 256,
        *,
        greedy: bool = False,
        top_p: float = 1.0,
        top_k: int = 0,
    ) -> list[list[int]]:
        """One response (token ids, up to and including the first end token) per prompt."""
        ...
