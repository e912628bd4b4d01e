"""Search-R1's observation budget: cut an observation to its first ``max_obs_tokens`` tokens.

docs/searchqa.md ("Turns and observation budget"). Search-R1 tokenizes every observation it
appends to the context (``LLMGenerationManager._process_next_obs``: the policy's tokenizer,
``add_special_tokens=False``) and keeps the first ``max_obs_length`` token ids (500 in its
training scripts); the whole observation string is cut, ``<information>`` tags included, so a
long block loses its closing tag. Here the cut is made on the text: the observation up to the
first character of the first token past the budget (a character split across that boundary by
a byte-level tokenizer is dropped whole).

The tokenizer is the policy's. ``"tiny-qwen2"`` (default) is the bundled default policy's
tokenizer (``data/models/tiny-qwen2/tokenizer.json``); pass your policy's model folder (one
holding ``tokenizer.json``), a ``tokenizer.json`` path, a hub id already in the local Hugging
Face cache (nothing is downloaded), a ``tokenizers.Tokenizer`` or a fast Hugging Face tokenizer.
From the trainer: ``env_kwargs='{"tokenizer": "<the --model value>"}'``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from mvpo_envs.searchqa.data import project_data_dir

DEFAULT_TOKENIZER = "tiny-qwen2"
#: Search-R1's ``data.max_obs_length`` in its training and evaluation scripts
SEARCH_R1_MAX_OBS_TOKENS = 500


def _tokenizer_file(spec: str | os.PathLike) -> Path:
    if str(spec) == DEFAULT_TOKENIZER:
        path = project_data_dir() / "models" / "tiny-qwen2" / "tokenizer.json"
    else:
        path = Path(spec).expanduser()
        if path.is_dir():
            path = path / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"tokenizer: no tokenizer.json at {path}; pass the policy's model folder, a "
            "tokenizer.json file, a tokenizers.Tokenizer or a fast Hugging Face tokenizer"
        )
    return path


@lru_cache(maxsize=8)
def _load(path: str) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(path)


@lru_cache(maxsize=8)
def _load_hub(name: str) -> Any:
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError) as err:
        raise FileNotFoundError(
            f"tokenizer: {name!r} is neither a folder, a tokenizer.json nor a model in the local "
            f"Hugging Face cache ({type(err).__name__})"
        ) from None
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:
        raise TypeError(f"tokenizer: {name!r} has no fast (tokenizers) backend")
    return backend


def resolve_tokenizer(spec: Any) -> Any:
    """A ``tokenizers.Tokenizer`` from a name, a path, a hub id in the local Hugging Face cache
    (``"Qwen/Qwen2.5-3B"``, loaded offline) or a tokenizer object."""
    if isinstance(spec, (str, os.PathLike)):
        text = str(spec)
        looks_like_hub_id = (
            text != DEFAULT_TOKENIZER
            and not Path(text).expanduser().exists()
            and text.count("/") == 1
            and not text.startswith((".", "/", "~"))
        )
        if looks_like_hub_id:
            return _load_hub(text)
        return _load(str(_tokenizer_file(spec)))
    backend = getattr(spec, "backend_tokenizer", None)  # a fast transformers tokenizer
    if backend is not None:
        return backend
    if callable(getattr(spec, "encode", None)) and hasattr(spec, "decode"):
        return spec
    raise TypeError(
        f"tokenizer must be a name, a path or a tokenizer object, got {type(spec).__name__}"
    )


def cut_to_tokens(text: str, tokenizer: Any, max_tokens: int) -> tuple[str, bool]:
    """``(text cut to its first max_tokens tokens, whether anything was cut)``."""
    if not text:
        return text, False
    encoding = tokenizer.encode(text, add_special_tokens=False)
    if len(encoding.ids) <= max_tokens:
        return text, False
    return text[: encoding.offsets[max_tokens][0]], True
