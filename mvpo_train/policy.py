"""The policy: a Hugging Face causal LM and its tokenizer, with two action modes.

docs/architecture.md, ``policy.py (HF / vLLM)``. One :class:`Policy` wraps
``AutoModelForCausalLM`` + ``AutoTokenizer`` loaded from a local folder or a hub id (the tiny
default model and ``Qwen/Qwen2.5-1.5B-Instruct`` go through the same path). Every log-prob is
computed with logits divided by the sampling ``temperature``, so the rollout's "old" log-probs
and the trainer's recomputed ones are the same function of the weights.

Action modes (``TrainConfig.action_mode``):

``score``
    The admissible actions are candidates. Each is scored by the log-prob of its tokens
    (``score_prefix + action + score_suffix`` of the prompt template) given the prompt, summed
    (``score_norm="sum"``) or averaged over its tokens (``"mean"``); the action is sampled from
    ``softmax(score)``. Scoring is batched across envs and candidates: one forward over the
    right-padded prompts with the KV cache kept, then one forward over all candidates of the
    chunk reusing each prompt's cache (``score_impl="kv"``, default), or prompt+candidate
    sequences batched without a cache (``"concat"``; measured slower, see docs/training.md).
    The ``kv`` candidate pass packs all candidates of a prompt into one row that attends to
    that prompt's cache through a block mask, so the cache is never copied per candidate
    (with ``sdpa`` or ``eager`` attention; other attention kernels take no custom mask and
    fall back to one cache copy per candidate).
``generate``
    Free generation of ``<think>...</think><action>...</action>`` text (HF ``generate`` or vLLM,
    :mod:`mvpo_train.backends`), parsed by :mod:`mvpo_train.projection`.

Log-probs run the base model and apply the LM head only at the positions that predict an
action token (a standard ``*ForCausalLM``: ``base_model_prefix`` + output embeddings), so a
150k-token vocabulary costs memory only where it is used. Padding is on the right: no
attention row is fully masked (such rows give NaN gradients in some CUDA attention kernels;
seen on an H200 with bf16 SDPA). Transformers 4.x calls the cache ``past_key_values`` and 5.x
``cache``; both are handled.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from mvpo_train.prompts import Prompt, PromptTemplate

__all__ = ["Policy", "ScoreResult", "resolve_device", "resolve_dtype"]


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` -> ``cuda`` when available, else ``cpu``."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str | torch.dtype, device: torch.device) -> torch.dtype:
    """``auto`` -> bfloat16 on a GPU that supports it, else float32."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


#: token ids of each prompt; of each candidate continuation of each prompt (the scoring API
#: every policy implements, docs/policies.md)
TokenIds = Sequence[Sequence[int]]
CandidateIds = Sequence[Sequence[Sequence[int]]]


@dataclass
class ScoreResult:
    """Per env: candidate scores (the sampling logits) and the candidates' token log-probs."""

    scores: list[torch.Tensor]  # [n_candidates] per env
    matrices: list[tuple[torch.Tensor, list[int]]]  # per env: [n_candidates, longest], lengths

    def token_logprobs(self, env: int, candidate: int) -> torch.Tensor:
        m, lens = self.matrices[env]
        return m[candidate, : lens[candidate]]


def _pad_rows(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    if not rows:
        return torch.zeros(0, 0)
    return torch.nn.utils.rnn.pad_sequence(list(rows), batch_first=True)


class Policy:
    """A causal LM + tokenizer; see the module docstring.

    ``max_tokens_per_forward`` bounds the padded tokens of one forward pass (memory); it
    changes nothing but speed and the last floating-point bits.
    """

    #: ``False`` makes policies built from now on copy the prompt cache once per candidate in
    #: the ``kv`` scorer (the path before the shared cache, kept for comparisons: the tests,
    #: a benchmark's "before"); an instance's choice is ``_copy_prompt_cache``
    _share_prompt_cache: bool = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        temperature: float = 1.0,
        use_chat_template: str | bool = "auto",
        max_tokens_per_forward: int = 32_768,
        score_impl: str = "kv",
    ):
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if score_impl not in ("kv", "concat"):
            raise ValueError(f"score_impl must be 'kv' or 'concat', got {score_impl!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = float(temperature)
        self.use_chat_template = use_chat_template
        self.max_tokens_per_forward = int(max_tokens_per_forward)
        self.score_impl = score_impl
        pad = tokenizer.pad_token_id
        if pad is None:
            pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        self.pad_id = int(pad)
        # base model + LM head: logits are computed only where a log-prob is needed; a peft
        # (LoRA) model's adapters sit inside its causal LM (mvpo_train.lora)
        lm = model.get_base_model() if hasattr(model, "peft_config") else model
        self._base = getattr(lm, lm.base_model_prefix, None) or lm.model
        self._head = lm.get_output_embeddings()
        params = inspect.signature(self._base.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._cand_cache: dict[tuple[str, str], list[int]] = {}
        # the shared-cache candidate pass feeds a custom 4-D additive mask, which the sdpa and
        # eager attention of transformers take as is; other kernels (flash attention, flex)
        # get the per-candidate cache copies (the old path)
        impl = getattr(getattr(self._base, "config", None), "_attn_implementation", None)
        self._copy_prompt_cache = not self._share_prompt_cache or impl not in ("sdpa", "eager")

    def settings(self) -> dict[str, Any]:
        """This policy's keyword settings (everything but the model and the tokenizer)."""
        return {
            "temperature": self.temperature,
            "use_chat_template": self.use_chat_template,
            "max_tokens_per_forward": self.max_tokens_per_forward,
            "score_impl": self.score_impl,
        }

    def with_model(self, model: Any, cls: type[Policy] | None = None) -> Policy:
        """A policy of class ``cls`` (default: this one's) on ``model``, with this policy's
        tokenizer and settings (the KL reference, the LoRA wrapper)."""
        return (cls or type(self))(model, self.tokenizer, **self.settings())

    def frozen_copy(self) -> Policy:
        """The frozen reference of the KL penalty: a copy of the model without gradients, in
        eval mode, as a plain :class:`Policy` (:class:`mvpo_train.lora.LoraPolicy` overrides
        it: the adapters disabled, no copy)."""
        model = copy.deepcopy(self.model).eval().requires_grad_(False)
        return self.with_model(model, Policy)

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_pretrained(
        cls,
        path: str,
        *,
        device: str = "auto",
        dtype: str = "auto",
        attn_implementation: str | None = None,
        trust_remote_code: bool = False,
        **kwargs: Any,
    ) -> Policy:
        """Load model + tokenizer from a local folder or a hub id (offline if local)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        dev = resolve_device(device)
        dt = resolve_dtype(dtype, dev)
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        tokenizer.padding_side = "left"
        model_kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
        if attn_implementation:
            model_kwargs["attn_implementation"] = attn_implementation
        try:
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dt, **model_kwargs)
        except TypeError:  # transformers < 4.56 calls it torch_dtype
            model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dt, **model_kwargs)
        model.to(dev)
        return cls(model, tokenizer, **kwargs)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # ------------------------------------------------------------------ text -> ids
    def chat(self, template: PromptTemplate) -> bool:
        """Whether prompts of ``template`` go through the tokenizer's chat template."""
        if self.use_chat_template == "auto":
            return bool(template.use_chat and getattr(self.tokenizer, "chat_template", None))
        return bool(self.use_chat_template)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def prompt_ids(self, prompt: Prompt | str, template: PromptTemplate, mode: str) -> list[int]:
        """Token ids of a prompt (a :class:`~mvpo_train.prompts.Prompt`, whose text the model
        reads, or the text itself); in ``score`` mode the template's ``score_prefix`` ends it."""
        text = prompt.text if isinstance(prompt, Prompt) else prompt
        if self.chat(template):
            text = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=False
            )
        if mode == "score":
            text = text + template.score_prefix
        return self.encode(text)

    def candidate_ids(self, action: str, template: PromptTemplate) -> list[int]:
        """Token ids of one candidate action (with the template's ``score_suffix``), cached."""
        key = (action, template.score_suffix)
        ids = self._cand_cache.get(key)
        if ids is None:
            ids = self.encode(action + template.score_suffix)
            if not ids:
                ids = [self.pad_id]
            if len(self._cand_cache) > 200_000:
                self._cand_cache.clear()
            self._cand_cache[key] = ids
        return ids

    # ------------------------------------------------------------------ forward helpers
    def _hidden(self, input_ids, attention_mask, position_ids, cache=None, use_cache=False):
        """Last hidden states (after the final norm) of the base model, and its cache."""
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "position_ids": position_ids,
            "use_cache": use_cache or cache is not None,
        }
        if cache is not None:
            kwargs[self._cache_arg] = cache
        out = self._base(**kwargs)
        new_cache = out["cache"] if "cache" in out else out.get("past_key_values")
        return out["last_hidden_state"], new_cache

    def _chunks(self, lengths: Sequence[int]) -> list[list[int]]:
        """Index chunks whose padded size (rows x longest) stays under the token budget."""
        chunks: list[list[int]] = []
        cur: list[int] = []
        longest = 0
        for i, n in enumerate(lengths):
            m = max(longest, n)
            if cur and m * (len(cur) + 1) > self.max_tokens_per_forward:
                chunks.append(cur)
                cur, m = [], n
            cur.append(i)
            longest = m
        if cur:
            chunks.append(cur)
        return chunks

    def _logp_and_entropy(self, logits: torch.Tensor, targets: torch.Tensor, entropy: bool):
        logits = logits.float()
        if self.temperature != 1.0:  # x / 1 is x: no pass over [rows, vocab] for nothing
            logits = logits / self.temperature
        logz = torch.logsumexp(logits, dim=-1)
        logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logz
        ent = None
        if entropy:
            p = torch.softmax(logits, dim=-1)
            ent = logz - (p * logits).sum(-1)
        return logp, ent

    # ------------------------------------------------------------------ log-probs
    def token_logprobs(
        self,
        prompts: TokenIds,
        responses: TokenIds,
        *,
        entropy: bool = False,
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        """Log-prob (and entropy) of every response token given its prompt.

        Layout: ``prompt + response`` right-padded (a padded query always has real keys to
        attend to: no fully masked attention row, whose backward is NaN in some CUDA kernels);
        the LM head runs only on the hidden states before response tokens. Gradients flow when
        enabled.
        """
        n = len(prompts)
        out: list[torch.Tensor] = [torch.empty(0)] * n
        ents: list[torch.Tensor] = [torch.empty(0)] * n
        dev = self.device
        lengths = [len(p) + len(r) for p, r in zip(prompts, responses, strict=True)]
        for chunk in self._chunks(lengths):
            L = max(lengths[i] for i in chunk)
            R = max(len(responses[i]) for i in chunk)
            seqs = [list(prompts[i]) + list(responses[i]) for i in chunk]
            ids = torch.tensor([x + [self.pad_id] * (L - len(x)) for x in seqs], device=dev)
            mask = torch.tensor([[1] * len(x) + [0] * (L - len(x)) for x in seqs], device=dev)
            pos = torch.arange(L, device=dev).unsqueeze(0).expand(len(chunk), -1)
            hidden, _ = self._hidden(ids, mask, pos)
            # the hidden state before each response token (clamped inside the row: padding)
            start = torch.tensor([len(prompts[i]) - 1 for i in chunk], device=dev)
            idx = (start.unsqueeze(1) + torch.arange(R, device=dev).unsqueeze(0)).clamp(max=L - 1)
            h = hidden.gather(1, idx.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
            targets = torch.tensor(
                [list(responses[i]) + [self.pad_id] * (R - len(responses[i])) for i in chunk],
                device=dev,
            )
            logp, ent = self._logp_and_entropy(self._head(h), targets, entropy)
            for k, i in enumerate(chunk):
                r = len(responses[i])
                out[i] = logp[k, :r]
                if entropy:
                    ents[i] = ent[k, :r]
        return out, (ents if entropy else None)

    def candidate_logprobs(
        self,
        prompts: TokenIds,
        candidates: CandidateIds,
    ) -> list[list[torch.Tensor]]:
        """Token log-probs of every candidate continuation of every prompt."""
        mats = self._candidate_matrices(prompts, candidates)
        return [[m[j, :n] for j, n in enumerate(lens)] for m, lens in mats]

    def score_candidates(
        self,
        prompts: TokenIds,
        candidates: CandidateIds,
        norm: str = "mean",
    ) -> ScoreResult:
        """Scores (sampling logits) of the candidates: summed or mean token log-prob."""
        mats = self._candidate_matrices(prompts, candidates)
        scores = []
        for m, lens in mats:
            total = m.sum(dim=1)  # padding holds zeros
            if norm == "mean":
                total = total / torch.tensor(lens, dtype=total.dtype, device=total.device)
            scores.append(total)
        return ScoreResult(scores, mats)

    def _candidate_matrices(self, prompts, candidates) -> list[tuple[torch.Tensor, list[int]]]:
        """Per prompt: a ``[n_candidates, longest]`` matrix of token log-probs (0-padded) and
        the candidate lengths."""
        lens = [[len(c) for c in cands] for cands in candidates]
        if self.score_impl == "concat":
            flat_p = [prompts[b] for b, cands in enumerate(candidates) for _ in cands]
            flat_c = [c for cands in candidates for c in cands]
            lp, _ = self.token_logprobs(flat_p, flat_c)
            out, k = [], 0
            for b in range(len(candidates)):
                n = len(candidates[b])
                out.append((_pad_rows(lp[k : k + n]), lens[b]))
                k += n
            return out
        return self._candidate_matrices_kv(prompts, candidates, lens)

    # ------------------------------------------------------------------ KV-cache candidate scorer
    # The "kv" scorer computes, for every env b and every candidate c of b, the log-prob of each
    # token of c given prompt b, in two forwards per group of envs:
    #
    #   1. prompt pass: the group's prompts, right-padded, with the KV cache kept; the hidden
    #      state at each prompt's last real token gives the log-prob of every candidate's FIRST
    #      token (one LM-head row per env);
    #   2. candidate pass: tokens 1..n-1 of every candidate of env b, packed one after the other
    #      in ONE row per env, fed on top of the prompt cache as it is (no copy per candidate);
    #      a block mask lets each token see its prompt's real tokens and the earlier tokens of
    #      its own candidate only, and positions restart after the prompt for each candidate,
    #      so every token gets exactly the inputs it has in prompt + candidate alone. It gives
    #      the log-probs of tokens 2..n of each candidate. (Fallback, ``_copy_prompt_cache``:
    #      one row per (env, candidate) on a copy of its env's cache rows.)
    #
    # Rows are 0-padded: the padded matrix sums to each candidate's total log-prob.

    def _budget_groups(self, prompts, candidates) -> list[list[int]]:
        """Consecutive env indices grouped so that each group's candidate pass (every
        candidate with its prompt: the larger of the two passes) stays under
        ``max_tokens_per_forward`` tokens; an env over budget on its own is a group alone."""
        cost = [
            sum(len(prompts[b]) + len(c) for c in candidates[b]) or 1 for b in range(len(prompts))
        ]
        groups: list[list[int]] = []
        cur: list[int] = []
        acc = 0
        for b, c in enumerate(cost):
            if cur and acc + c > self.max_tokens_per_forward:
                groups.append(cur)
                cur, acc = [], 0
            cur.append(b)
            acc += c
        if cur:
            groups.append(cur)
        return groups

    def _prompt_pass(
        self, group: list[int], prompts
    ) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Step 1: ``(cache, mask [g, P], prompt_len [g], first_logp [g, vocab])``.

        ``first_logp[k]`` is the temperature-scaled log-softmax at env ``group[k]``'s last
        prompt token: the distribution of any candidate's first token.
        """
        dev = self.device
        P = max(len(prompts[b]) for b in group)
        ids = torch.tensor(
            [list(prompts[b]) + [self.pad_id] * (P - len(prompts[b])) for b in group]
        )
        mask = torch.tensor([[1] * len(prompts[b]) + [0] * (P - len(prompts[b])) for b in group])
        prompt_len = mask.sum(-1)
        pos = torch.arange(P).unsqueeze(0).expand(len(group), -1)
        ids, mask, pos, prompt_len = ids.to(dev), mask.to(dev), pos.to(dev), prompt_len.to(dev)
        hidden, cache = self._hidden(ids, mask, pos, use_cache=True)
        h_last = hidden[torch.arange(len(group), device=dev), prompt_len - 1]  # [g, H]
        first_logp = torch.log_softmax(self._head(h_last).float() / self.temperature, dim=-1)
        return cache, mask, prompt_len, first_logp

    def _candidate_rows(
        self, group: list[int], candidates
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
        """All candidates of the group as rows: ``(row_env [R], ids [R, C], mask [R, C],
        counts)``, where ``row_env[r]`` is the position in ``group`` of row ``r``'s env and
        ``counts[k]`` the number of candidates of ``group[k]``."""
        dev = self.device
        counts = [len(candidates[b]) for b in group]
        row_env = torch.repeat_interleave(torch.arange(len(group)), torch.tensor(counts)).to(dev)
        flat = [list(c) for b in group for c in candidates[b]]
        C = max(len(c) for c in flat)
        ids = torch.tensor([c + [self.pad_id] * (C - len(c)) for c in flat], device=dev)
        mask = torch.tensor([[1] * len(c) + [0] * (C - len(c)) for c in flat], device=dev)
        return row_env, ids, mask, counts

    def _candidate_pass(
        self,
        cache: Any,
        prompt_mask: torch.Tensor,
        prompt_len: torch.Tensor,
        row_env: torch.Tensor,
        cand_ids: torch.Tensor,
        cand_mask: torch.Tensor,
    ) -> torch.Tensor:
        """Step 2, fallback: log-probs ``[R, C-1]`` of candidate tokens 2..C given the cached
        prompt, one row per candidate.

        Each row gets a copy of its env's cache rows; its attention mask is the prompt's
        (padding included) followed by its own tokens, and its positions continue after the
        prompt's real length. The last candidate token is never fed (nothing to predict).
        """
        dev = self.device
        cache_rows = _make_cache([(k_[row_env], v_[row_env]) for k_, v_ in _cache_tensors(cache)])
        attention = torch.cat([prompt_mask[row_env], cand_mask], dim=1)
        C = cand_ids.shape[1]
        positions = prompt_len[row_env].unsqueeze(1) + torch.arange(C, device=dev).unsqueeze(0)
        hidden, _ = self._hidden(
            cand_ids[:, :-1], attention[:, :-1], positions[:, :-1], cache=cache_rows
        )
        rest, _ = self._logp_and_entropy(self._head(hidden), cand_ids[:, 1:], False)
        return rest

    def _candidate_pass_shared(
        self,
        group: list[int],
        candidates,
        cache: Any,
        prompt_mask: torch.Tensor,
        prompt_len: torch.Tensor,
        cand_ids: torch.Tensor,
    ) -> torch.Tensor:
        """Step 2: log-probs ``[R, C-1]`` of candidate tokens 2..C given the cached prompt,
        with the prompt cache shared by all candidates of an env (no copy per candidate).

        Row ``k`` feeds tokens ``1..n-1`` of every candidate of env ``group[k]`` one after
        the other (``S`` tokens, right-padded) on the prompt pass's cache, not copied (this
        pass appends to it; nothing reads it after). The additive mask ``[g, 1, S, P + S]``
        opens a query to its prompt's real tokens and to its own candidate's tokens up to
        itself; a padding query sees the prompt only (no fully masked row). Positions continue after the prompt's real length within each candidate.
        The LM head runs on the real (fed) positions only; other entries of the result are 0.
        """
        dev = self.device
        g, P = prompt_mask.shape
        rows: list[list[int]] = []  # per env: the fed tokens
        seg: list[list[int]] = []  # per env: the candidate (flat row) of each fed token
        off: list[list[int]] = []  # per env: each fed token's index inside its candidate
        row = 0
        for b in group:
            ids_b: list[int] = []
            seg_b: list[int] = []
            off_b: list[int] = []
            for c in candidates[b]:
                fed = list(c)[:-1]
                ids_b += fed
                seg_b += [row] * len(fed)
                off_b += list(range(len(fed)))
                row += 1
            rows.append(ids_b)
            seg.append(seg_b)
            off.append(off_b)
        S = max(len(x) for x in rows)
        ids = torch.tensor([x + [self.pad_id] * (S - len(x)) for x in rows], device=dev)
        seg_t = torch.tensor([x + [-1] * (S - len(x)) for x in seg], device=dev)
        off_t = torch.tensor([x + [0] * (S - len(x)) for x in off], device=dev)
        positions = prompt_len.unsqueeze(1) + off_t
        # allowed keys: the prompt's real tokens; the own candidate's tokens up to the query
        keys_prompt = prompt_mask.bool().unsqueeze(1).expand(g, S, P)
        causal = torch.ones(S, S, dtype=torch.bool, device=dev).tril()
        same = (seg_t.unsqueeze(2) == seg_t.unsqueeze(1)) & (seg_t.unsqueeze(2) >= 0)
        allowed = torch.cat([keys_prompt, same & causal], dim=2).unsqueeze(1)
        dtype = _cache_tensors(cache)[0][0].dtype
        mask = torch.zeros(allowed.shape, dtype=dtype, device=dev)
        mask = mask.masked_fill(~allowed, torch.finfo(dtype).min)
        hidden, _ = self._hidden(ids, mask, positions, cache=cache)
        # the real fed positions -> (flat row, token index) of the result
        env_i, pos_i = (seg_t >= 0).nonzero(as_tuple=True)
        flat_row = seg_t[env_i, pos_i]
        col = off_t[env_i, pos_i]
        targets = cand_ids[flat_row, col + 1]
        logp, _ = self._logp_and_entropy(self._head(hidden[env_i, pos_i]), targets, False)
        rest = torch.zeros(cand_ids.shape[0], cand_ids.shape[1] - 1, dtype=logp.dtype, device=dev)
        return rest.index_put((flat_row, col), logp)

    def _candidate_matrices_kv(
        self, prompts, candidates, lens
    ) -> list[tuple[torch.Tensor, list[int]]]:
        """The ``"kv"`` scorer (see the comment above): per env, the 0-padded
        ``[n_candidates, longest]`` token log-prob matrix and the candidate lengths."""
        dev = self.device
        out: list[tuple[torch.Tensor, list[int]]] = [(torch.zeros(0, 0), [])] * len(prompts)
        for group in self._budget_groups(prompts, candidates):
            cache, prompt_mask, prompt_len, first_logp = self._prompt_pass(group, prompts)
            if sum(len(candidates[b]) for b in group) == 0:
                for b in group:
                    out[b] = (torch.zeros(0, 0, device=dev), [])
                continue
            row_env, cand_ids, cand_mask, counts = self._candidate_rows(group, candidates)
            logp = first_logp[row_env, cand_ids[:, 0]].unsqueeze(1)  # first tokens, [R, 1]
            if cand_ids.shape[1] > 1:
                if self._copy_prompt_cache:
                    rest = self._candidate_pass(
                        cache, prompt_mask, prompt_len, row_env, cand_ids, cand_mask
                    )
                else:
                    rest = self._candidate_pass_shared(
                        group, candidates, cache, prompt_mask, prompt_len, cand_ids
                    )
                logp = torch.cat([logp, rest], dim=1)
            logp = logp * cand_mask.to(logp.dtype)  # zero the padding
            for b, m in zip(group, torch.split(logp, counts), strict=True):
                out[b] = (m, lens[b])
        return out

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def generate(
        self,
        prompts: TokenIds,
        max_new_tokens: int = 256,
        *,
        greedy: bool = False,
        top_p: float = 1.0,
        top_k: int = 0,
    ) -> list[list[int]]:
        """Sample a response per prompt with HF ``generate`` (global torch RNG).

        Returns the new tokens up to and including the first end-of-sequence token.
        """
        dev = self.device
        eos = _eos_ids(self.model, self.tokenizer)
        out: list[list[int]] = [[] for _ in prompts]
        lengths = [len(p) + max_new_tokens for p in prompts]
        for chunk in self._chunks(lengths):
            P = max(len(prompts[i]) for i in chunk)
            ids = torch.full((len(chunk), P), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(chunk), P), dtype=torch.long)
            for k, i in enumerate(chunk):
                p = list(prompts[i])
                ids[k, P - len(p) :] = torch.tensor(p, dtype=torch.long)
                mask[k, P - len(p) :] = 1
            gen = self.model.generate(
                input_ids=ids.to(dev),
                attention_mask=mask.to(dev),
                max_new_tokens=max_new_tokens,
                do_sample=not greedy,
                temperature=self.temperature if not greedy else None,
                top_p=top_p if not greedy else None,
                top_k=top_k if not greedy else None,
                eos_token_id=eos,
                pad_token_id=self.pad_id,
            )
            for k, i in enumerate(chunk):
                out[i] = cut_at_eos(gen[k, P:].tolist(), eos)
        return out


def cut_at_eos(tokens: list[int], eos: Sequence[int]) -> list[int]:
    """Tokens up to and including the first end-of-sequence id."""
    eos_set = set(eos)
    for k, t in enumerate(tokens):
        if t in eos_set:
            return tokens[: k + 1]
    return tokens


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    ids: list[int] = []
    gen_cfg = getattr(model, "generation_config", None)
    val = getattr(gen_cfg, "eos_token_id", None) if gen_cfg is not None else None
    for v in (val, tokenizer.eos_token_id):
        if v is None:
            continue
        for x in v if isinstance(v, list | tuple) else [v]:
            if int(x) not in ids:
                ids.append(int(x))
    return ids


def _cache_tensors(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(key, value) per layer from a transformers cache (5.x layers, 4.x lists, or tuples)."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache, strict=True))
    return [(k, v) for k, v in cache]


def _make_cache(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> Any:
    from transformers import DynamicCache

    try:
        return DynamicCache(ddp_cache_data=pairs)
    except TypeError:  # transformers 4.x
        return DynamicCache.from_legacy_cache(tuple(pairs))
