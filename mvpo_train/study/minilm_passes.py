"""MiniLM's forward passes batched several ways and timed (``benchmarks/embedding_batching.py``;
docs/policies.md, "Embedding cache" and "Where MiniLM runs"): the recorded embed calls of a
training iteration embedded by PyTorch's schemes (:func:`embed_calls`), by onnxruntime one text
a pass and in fixed-shape or dynamic padded passes (:func:`compare_runtimes`, on an export that
takes an attention mask: :func:`masked_export`, :func:`padded_encode`), and MiniLM's arithmetic
rate on onnxruntime by pass shape (:func:`arithmetic_rates`). CPU time, the caller's threads.
The padded passes and the masked export are the product's (:mod:`mvpo_train.minilm_onnx`:
``pad8xdyn`` is the ``onnx`` runtime's default batching); this module only varies their
shapes."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from mvpo_train.minilm_onnx import DYNAMIC_CAP, padded_encode, padded_length, write_masked_model

__all__ = ["DYNAMIC_CAP", "PADDED", "RATE_SHAPES", "arithmetic_rates", "compare_runtimes",
           "compare_schemes", "embed_calls", "masked_export", "padded_encode", "padded_length", "record_calls"]  # fmt: skip


#: padded passes on onnxruntime: name -> (token multiple, rows of every pass; 0: as many rows
#: as the call has texts of that padded length, at least 2, at most :data:`DYNAMIC_CAP`;
#: ``pad8xdyn`` is the ``onnx`` runtime's default)
PADDED = {"pad16x8": (16, 8), "pad16x4": (16, 4), "pad8x2": (8, 2), "pad2x2": (2, 2),
          "pad4xdyn": (4, 0), "pad8xdyn": (8, 0)}  # fmt: skip
#: pass shapes (tokens, rows) of the arithmetic-rate table
RATE_SHAPES = ((16, 1), (32, 1), (64, 1), (128, 1), (32, 8), (64, 16))


def record_calls(train_argv: list[str], failed: str) -> list[list[tuple[int, ...]]]:
    """The texts (word-piece ids) each embed call of the ``mvpo-train`` run ``train_argv``
    (in this process, its output to stderr) had to embed: every call's distinct texts not
    already in the embedder's cache. A run that fails stops with the line ``failed``."""
    import contextlib
    import sys

    import mvpo_train.encoder_policy as ep
    from mvpo_train.cli import train_main

    calls: list[list[tuple[int, ...]]] = []
    real = ep.SegmentEmbedder.embed

    def recording(self: Any, seqs: Sequence[tuple[int, ...]]) -> Any:
        calls.append([s for s in dict.fromkeys(seqs) if s and s not in self._cache])
        return real(self, seqs)

    ep.SegmentEmbedder.embed = recording  # type: ignore[method-assign]
    try:
        with contextlib.redirect_stdout(sys.stderr):
            if train_main(train_argv) != 0:
                raise SystemExit(failed)
    finally:
        ep.SegmentEmbedder.embed = real  # type: ignore[method-assign]
    return calls


def embed_calls(
    embedder: Any, calls: list[list[tuple[int, ...]]], rows_for: Callable[[int], int]
) -> dict[str, Any]:
    """Embed every call's texts with ``embedder.encode`` in passes of ``rows_for(length)``
    rows; the vectors, CPU seconds, passes and tokens computed (padding rows included)."""
    shapes: list[tuple[int, ...]] = []
    hook = embedder.encoder.register_forward_hook(
        lambda mod, args, kwargs, out: shapes.append(tuple(kwargs["input_ids"].shape)),
        with_kwargs=True,
    )
    out: dict[tuple[int, ...], torch.Tensor] = {}
    start = time.process_time()
    try:
        for missing in calls:
            out.update(embedder.encode(missing, rows_for))
    finally:
        hook.remove()
    return {"seconds": time.process_time() - start, "passes": len(shapes),
            "tokens": sum(r * n for r, n in shapes), "vectors": out}  # fmt: skip


def compare_schemes(calls: list[list[tuple[int, ...]]], repeats: int) -> dict[str, Any]:
    """``calls`` embedded by PyTorch's earlier scheme (8 rows a pass, any length) and its
    current one (``SegmentEmbedder.rows_for``), alternating ``repeats`` times: the texts, the
    median CPU s, passes and tokens of each scheme, the speed-up, the largest difference of
    the vectors, and every runtime's row (:func:`compare_runtimes`)."""
    from mvpo_train.encoder_policy import SegmentEmbedder

    emb = SegmentEmbedder()
    texts = [s for c in calls for s in c]
    schemes: dict[str, Callable[[int], int]] = {
        "8 rows, any length (before)": lambda n: 8,
        "current": emb.rows_for,
    }
    runs: dict[str, list[dict]] = {k: [] for k in schemes}
    for _ in range(repeats):  # alternating, so both see the same machine load
        for name, rows_for in schemes.items():
            runs[name].append(embed_calls(emb, calls, rows_for))
    before, now = (runs[k] for k in schemes)
    diff = max(float((before[0]["vectors"][s] - now[0]["vectors"][s]).abs().max()) for s in texts)
    cpu = {k: sorted(r["seconds"] for r in v)[len(v) // 2] for k, v in runs.items()}
    return {
        "calls": len(calls),
        "texts": len(texts), "mean_tokens": sum(map(len, texts)) / max(1, len(texts)),
        "real_tokens": sum(len(s) + 2 for s in texts),
        "schemes": {k: {"median_cpu_s": cpu[k], "passes": v[0]["passes"],
                        "tokens": v[0]["tokens"]} for k, v in runs.items()},
        "speedup": cpu["8 rows, any length (before)"] / cpu["current"],
        "max_abs_diff": diff,
        "runtimes": compare_runtimes(calls, repeats),
    }  # fmt: skip


def masked_export(encoder: torch.nn.Module, path: Path) -> Any:
    """The masked ONNX export of MiniLM (:func:`mvpo_train.minilm_onnx.write_masked_model`,
    not checked) written to ``path``, opened on onnxruntime with 1 thread."""
    from mvpo_train.minilm_onnx import OnnxEncoder

    write_masked_model(encoder, path)
    return OnnxEncoder(path, threads=1)


def compare_runtimes(calls: list[list[tuple[int, ...]]], repeats: int) -> dict[str, Any]:
    """Every call's texts embedded by each variant (PyTorch's scheme, onnxruntime's ``rows1``,
    :data:`PADDED`), alternating ``repeats`` times: median CPU s, passes, tokens computed,
    the largest difference from ``rows1``'s vectors and, for the padded variants, the texts
    whose vector changed when its call was embedded in reverse order."""
    from mvpo_train.segment_embedder import SegmentEmbedder

    emb, onnx = SegmentEmbedder(), SegmentEmbedder(runtime="onnx", batching="rows1")
    # both exports opened (or built and checked once per machine) before any timing
    onnx.onnx_encoder  # noqa: B018
    session = SegmentEmbedder(runtime="onnx", batching="pad8xdyn").onnx_encoder

    def padded(name: str, order: int = 1) -> dict:
        multiple, rows = PADDED[name]
        out: dict = {"vectors": {}, "passes": 0, "tokens": 0}
        for c in calls:
            cap = DYNAMIC_CAP if order == 1 else 5
            got = padded_encode(session, c[::order], emb.cls_id, emb.sep_id, multiple, rows, cap)
            out["vectors"].update(got["vectors"])
            out["passes"] += got["passes"]
            out["tokens"] += got["tokens"]
        return out

    def unpadded(e: SegmentEmbedder) -> dict:
        vectors = {k: v for c in calls for k, v in e.encode(c).items()}
        sizes: dict[tuple[int, int], int] = {}  # (call, length) -> texts
        for k, c in enumerate(calls):
            for s in c:
                sizes[k, len(s)] = sizes.get((k, len(s)), 0) + 1
        rows = {key: e.pass_rows(key[1]) for key in sizes}
        passes = sum(-(-m // rows[key]) for key, m in sizes.items())
        tokens = sum(-(-m // rows[key]) * rows[key] * (key[1] + 2) for key, m in sizes.items())
        return {"vectors": vectors, "passes": passes, "tokens": tokens}

    variants = {"torch (current)": lambda: unpadded(emb), "onnx rows1": lambda: unpadded(onnx),
                **{f"onnx {name}": (lambda name=name: padded(name)) for name in PADDED}}  # fmt: skip
    runs: dict[str, list[tuple[float, dict]]] = {k: [] for k in variants}
    with torch.no_grad():
        for _ in range(repeats):
            for name, fn in variants.items():
                start = time.process_time()
                got = fn()
                runs[name].append((time.process_time() - start, got))
        # dynamic passes: reversed and at most 5 rows (other row counts too)
        reversed_ = {name: padded(name, -1)["vectors"] for name in PADDED}
    texts = [s for c in calls for s in c]
    ref = runs["onnx rows1"][0][1]["vectors"]
    out = {}
    for name, got in runs.items():
        cpu = sorted(t for t, _ in got)[len(got) // 2]
        vec = got[0][1]["vectors"]
        row = {"median_cpu_s": cpu, "texts_per_cpu_s": len(texts) / cpu,
               "passes": got[0][1]["passes"], "tokens": got[0][1]["tokens"],
               "max_abs_diff_from_rows1": max(float((vec[s] - ref[s]).abs().max()) for s in texts)}  # fmt: skip
        key = name.removeprefix("onnx ")
        if key in reversed_:
            row["changed_with_neighbours"] = sum(
                not torch.equal(vec[s], reversed_[key][s]) for s in texts
            )
        out[name] = row
    return out


def arithmetic_rates(repeats: int) -> list[dict[str, Any]]:
    """MiniLM's arithmetic rate on onnxruntime (the project's export, 1 thread) by pass shape
    (:data:`RATE_SHAPES`): CPU ms per pass and GFLOP/s, counting the matrix products of the
    six layers (projections and feed-forward: 2 x weights per token; attention scores and
    mixing: 4 x tokens x hidden per token), the best of ``repeats`` timings."""
    from mvpo_train.segment_embedder import SegmentEmbedder

    onnx = SegmentEmbedder(runtime="onnx", batching="rows1")
    cfg = onnx.encoder.config
    h, ffn, layers = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    gen = torch.Generator().manual_seed(0)
    out = []
    for tokens, rows in RATE_SHAPES:
        ids = torch.randint(1000, 20000, (rows, tokens), generator=gen)
        onnx.forward(ids)  # warm
        passes = max(3, 400 // (tokens * rows))
        best = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            for _ in range(passes):
                onnx.forward(ids)
            best = min(best, (time.process_time() - start) / passes)
        flops = rows * tokens * layers * (2 * (4 * h * h + 2 * h * ffn) + 4 * tokens * h)
        out.append({"tokens": tokens, "rows": rows, "ms_per_pass": best * 1e3,
                    "gflops_per_s": flops / best / 1e9, "tokens_per_cpu_s": rows * tokens / best})  # fmt: skip
    return out
