"""The tiny model's spec reaches the Qwen2 config whole (mvpo_train/tiny_model.py)."""

from __future__ import annotations

import dataclasses

from transformers import Qwen2Config

from mvpo_train.tiny_model import MICRO_SPEC, QWEN2_FIELDS, TinyModelSpec


def test_every_spec_field_is_a_qwen2_field_or_handled_apart():
    names = {f.name for f in dataclasses.fields(TinyModelSpec)}
    # vocab_size comes from the trained tokenizer, seed seeds the init: both handled apart
    assert names - set(QWEN2_FIELDS) == {"vocab_size", "seed"}
    # each one lands in the config built from it (transformers 5 keeps rope_theta in
    # rope_parameters)
    values = {n: getattr(MICRO_SPEC, n) for n in QWEN2_FIELDS}
    cfg = Qwen2Config(**values)
    for name, value in values.items():
        got = getattr(cfg, name, None)
        if got is None and name == "rope_theta":
            got = cfg.rope_parameters["rope_theta"]
        assert got == value, name


def test_micro_spec_fields_differ_from_the_default_so_the_copy_is_observable():
    # a field dropped from QWEN2_FIELDS would leave Qwen2Config's default in the built model
    changed = [n for n in QWEN2_FIELDS if getattr(MICRO_SPEC, n) != getattr(TinyModelSpec(), n)]
    assert {"hidden_size", "intermediate_size", "num_hidden_layers"} <= set(changed)
