"""Build the tiny default policy: a byte-level BPE tokenizer + a small ``Qwen2ForCausalLM``.

``mvpo-build-tiny-model`` (:func:`mvpo_train.cli.build_model_main`) runs :func:`build_tiny_model`:

1. a text corpus, offline (:func:`env_corpus`): every task of the chosen env id and splits
   is played through Gymnasium (the env's expert plan when it offers one, then a few seeded
   random episodes) and its task, observations and admissible actions are kept; the prompt
   templates of :mod:`mvpo_train.prompts` are rendered on them; the env's domain words (when
   it offers them) are added. Nothing here knows a particular env: the default env id is
   only the ``cpu-tiny`` preset's;
2. a ``tokenizers`` ByteLevel BPE (any byte sequence still encodes) with the special tokens
   ``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>`` and a ChatML chat template, wrapped as a
   ``PreTrainedTokenizerFast``;
3. a ``Qwen2ForCausalLM`` built from a ``Qwen2Config`` with seeded random weights;
4. both saved with ``save_pretrained`` (safetensors), so the tiny model loads through
   ``AutoModelForCausalLM.from_pretrained(path)`` / ``AutoTokenizer.from_pretrained(path)``,
   the same path that serves ``Qwen/Qwen2.5-1.5B-Instruct`` on a GPU.

Same arguments, same files (the BPE trainer and the seeded init are deterministic).
docs/architecture.md: ``policy.py (HF / vLLM)``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mvpo_envs.declaration import default_env_id
from mvpo_train.prompts import available_templates, get_template

__all__ = [
    "DEFAULT_CORPUS_ENV",
    "DEFAULT_TINY_MODEL",
    "EnvCorpus",
    "MICRO_SPEC",
    "TinyModelSpec",
    "build_tiny_model",
    "default_model_path",
    "env_corpus",
    "resolve_model_path",
]

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def default_model_path() -> Path:
    """``data/models/tiny-qwen2`` of the project (``$MVPO_DATA`` moves ``data/``)."""
    env = os.environ.get("MVPO_DATA")
    root = Path(env) if env else Path(__file__).resolve().parents[1] / "data"
    return root / "models" / "tiny-qwen2"


#: the path string presets use; resolved by :func:`resolve_model_path`
DEFAULT_TINY_MODEL = "tiny-qwen2"
#: the env whose tasks feed the default corpus (the ``cpu-tiny`` preset's env)
DEFAULT_CORPUS_ENV = default_env_id()  # the declared default env (mvpo_envs.declaration)


def resolve_model_path(name: str) -> str:
    """``tiny-qwen2`` -> the bundled folder; anything else (a path or a hub id) unchanged."""
    if name == DEFAULT_TINY_MODEL:
        path = default_model_path()
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"the tiny model is not built at {path}; run `mvpo-build-tiny-model` first"
            )
        return str(path)
    return name


@dataclass(frozen=True)
class TinyModelSpec:
    """Size of the tiny model and its tokenizer."""

    vocab_size: int = 2048
    hidden_size: int = 64
    intermediate_size: int = 192
    num_hidden_layers: int = 2
    num_attention_heads: int = 2  # head size 32: a size every vLLM attention backend takes
    num_key_value_heads: int = 2
    max_position_embeddings: int = 4096
    rope_theta: float = 10000.0
    #: std of the random init; small values start the policy near uniform over candidates
    initializer_range: float = 0.02
    seed: int = 0


#: the fields of :class:`TinyModelSpec` that are ``Qwen2Config`` fields of the same name
QWEN2_FIELDS = (
    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "max_position_embeddings", "rope_theta", "initializer_range",
)  # fmt: skip

#: a much smaller model for unit tests (built in a second from the template corpus alone)
MICRO_SPEC = TinyModelSpec(
    vocab_size=600,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    max_position_embeddings=2048,
)


# ------------------------------------------------------------------ corpus

#: the optional env hooks the corpus reads from ``env.unwrapped`` (docs/architecture.md,
#: "A new policy, backend or tracker"): ``expert_actions(task_index) -> list[str] | None`` (a
#: scripted solution of the task, e.g. a game's walkthrough) and ``vocabulary() -> list[str]`` (domain
#: words worth a token, e.g. object names). An env without them gets seeded random play only.
EXPERT_HOOK = "expert_actions"
VOCABULARY_HOOK = "vocabulary"


class EnvCorpus(NamedTuple):
    """What :func:`env_corpus` collects: rendered episode texts and the env's domain words."""

    texts: list[str]
    words: list[str]


def env_corpus(
    env_id: str,
    env_kwargs: Sequence[Mapping[str, Any]] = ({},),
    random_episodes: int = 2,
    random_steps: int = 15,
    max_tasks: int | None = None,
    seed: int = 0,
    styles: Sequence[str] = ("paper", "compact"),
) -> EnvCorpus:
    """Texts seen while playing an env's tasks (its expert plan, then seeded random play).

    Works for any env id through Gymnasium and the info contract (``task``,
    ``admissible_actions``): one env is made per entry of ``env_kwargs`` (e.g. one per split);
    every task index ``0..len(task_ids)-1`` is played. Each text is a prompt rendered with the
    env id's templates of ``styles``, the admissible actions and a ``<think>``/``<action>``
    answer, so the BPE learns the words and the template glue the policy will read. The env's
    optional hooks (:data:`EXPERT_HOOK`, :data:`VOCABULARY_HOOK`) add its expert plans and
    domain words.
    """
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the env ids)

    templates = [get_template(env_id, style) for style in styles]
    texts: list[str] = []
    words: set[str] = set()
    rng = np.random.default_rng(seed)
    for kwargs in env_kwargs:
        env = gym.make(env_id, max_episode_steps=random_steps, **dict(kwargs))
        try:
            base = env.unwrapped
            expert = getattr(base, EXPERT_HOOK, None)
            vocabulary = getattr(base, VOCABULARY_HOOK, None)
            if vocabulary is not None:
                words.update(str(w) for w in vocabulary())
            n_tasks = len(base.task_ids)
            n = n_tasks if max_tasks is None else min(max_tasks, n_tasks)
            for index in range(n):
                plans: list[list[str] | None] = [None] * random_episodes
                plan = expert(index) if expert is not None else None
                if plan is not None:
                    plans.insert(0, list(plan))
                for plan in plans:
                    texts.extend(_play(env, templates, index, plan, rng, random_steps))
        finally:
            env.close()
    return EnvCorpus(texts, sorted(words))


def _play(
    env: Any,
    templates: Sequence[Any],
    index: int,
    plan: list[str] | None,
    rng: np.random.Generator,
    steps: int,
) -> list[str]:
    """Texts of one episode of task ``index``: ``plan``'s actions, or seeded random ones."""
    windows = (2, 3)  # history pairs shown by the first and second template
    obs, info = env.reset(options={"task_index": index})
    history: list[tuple[str, str]] = []
    out: list[str] = []
    for t in range(steps):
        adm = list(info["admissible_actions"])
        for k, tpl in enumerate(templates):
            out.append(tpl.render(info["task"], obs, adm, history[-windows[min(k, 1)] :], t))
        if plan is not None:
            if t >= len(plan):
                break
            action = plan[t]
        else:
            action = str(adm[int(rng.integers(len(adm)))])
        out.append("\n".join(f"> {a}" for a in adm))
        out.append(f"<think>I should {action} now.</think><action>{action}</action>")
        history.append((obs, action))
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            out.append(obs)
            break
    return out


def _data_kwargs(split: str, preset: str, data_dir: str | None) -> dict[str, Any]:
    """``gym.make`` keywords of one split: bundled ``preset`` data or the user's ``data_dir``."""
    return (
        {"split": split, "data_dir": data_dir} if data_dir else {"split": split, "preset": preset}
    )


def template_corpus() -> list[str]:
    """Every registered template rendered on placeholder text (the fixed prompt glue)."""
    out = []
    for family, style in available_templates():
        tpl = get_template(family, style)
        hist = [("You arrive at a place.", "look"), ("Nothing happens.", "inventory")]
        out.append(tpl.render("do the task.", "You see nothing.", ["look", "inventory"], [], 0))
        out.append(tpl.render("do the task.", "You see nothing.", ["look", "inventory"], hist, 2))
    return out


# ------------------------------------------------------------------ build


#: Qwen2's pre-tokenizer regex: the tiny tokenizer splits text exactly as Qwen's does, so it
#: tokenizes the same whichever class ``AutoTokenizer`` picks for it
QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Any:
    """A ByteLevel BPE trained on ``texts``, with Qwen2's normaliser and pre-tokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        min_frequency=2,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    return tok


def save_tokenizer(tok: Any, out: Path) -> None:
    """``tokenizer.json`` + a ``tokenizer_config.json`` shaped like Qwen2.5's (portable to
    transformers 4.x and 5.x) + ``chat_template.jinja``."""
    tok.save(str(out / "tokenizer.json"))
    added = {
        str(tok.token_to_id(t)): {
            "content": t, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": True,
        }
        for t in SPECIAL_TOKENS
    }  # fmt: skip
    config = {
        "tokenizer_class": "Qwen2Tokenizer",
        "added_tokens_decoder": added,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "errors": "replace",
        "split_special_tokens": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 4096,
        "padding_side": "left",
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE)


def build_model(spec: TinyModelSpec, tokenizer: Any) -> Any:
    """A seeded ``Qwen2ForCausalLM`` of the given size."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=tokenizer.get_vocab_size(),
        **{name: getattr(spec, name) for name in QWEN2_FIELDS},
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.token_to_id("<|im_end|>"),
        pad_token_id=tokenizer.token_to_id("<|endoftext|>"),
        attention_dropout=0.0,
        use_cache=True,
    )
    torch.manual_seed(spec.seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=[config.eos_token_id, config.pad_token_id],
        pad_token_id=config.pad_token_id,
        do_sample=True,
    )
    return model.to(torch.float32)


def build_tiny_model(
    out_dir: str | os.PathLike,
    spec: TinyModelSpec | None = None,
    texts: Sequence[str] | None = None,
    *,
    env_id: str = DEFAULT_CORPUS_ENV,
    splits: Sequence[str] = ("train",),
    preset: str = "mini",
    data_dir: str | None = None,
    max_games: int | None = None,
) -> Path:
    """Build and save the tokenizer + model under ``out_dir``; returns the folder.

    The corpus is :func:`env_corpus` of ``env_id`` over ``splits`` (bundled ``preset`` data,
    or ``data_dir``); ``texts`` replaces it (tests use a short list).
    """
    spec = spec or TinyModelSpec()
    out = Path(out_dir)
    words: list[str] = []
    if texts is None:
        texts, words = env_corpus(
            env_id,
            [_data_kwargs(split, preset, data_dir) for split in splits],
            max_tasks=max_games,
            seed=spec.seed,
        )
    corpus = list(texts) + template_corpus() + words
    tokenizer = train_tokenizer(corpus, spec.vocab_size)
    out.mkdir(parents=True, exist_ok=True)
    save_tokenizer(tokenizer, out)
    model = build_model(spec, tokenizer)
    model.save_pretrained(out, safe_serialization=True)
    meta = {
        "builder": "mvpo-build-tiny-model",
        "spec": asdict(spec),
        "corpus_texts": len(corpus),
        "splits": list(splits),
        "preset": preset,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vocab": int(tokenizer.get_vocab_size()),
    }
    (out / "mvpo_tiny_model.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return out
