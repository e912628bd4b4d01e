"""How the encoder policy's MiniLM forward passes are batched (docs/policies.md, "Embedding
cache" and "Where MiniLM runs"), on the texts one training iteration of ``mvpo-train --policy
encoder`` per env had to embed, recorded call by call (``showcase``: the ``cpu-showcase``
preset, the study iteration of ``benchmarks/cpu_cost.py``). Three tables, measured in one
process with the variants alternating (CPU time, 1 thread):

* PyTorch: the earlier scheme (every pass 8 rows of one token length) against the current one
  (8 rows up to ``SegmentEmbedder.SHORT_TOKENS`` word pieces, one row above); the vectors are
  compared.
* The runtimes: PyTorch's current scheme, onnxruntime's (one text per pass, ``rows1``) and
  fixed-shape padded passes on onnxruntime (:data:`PADDED`: a text of ``n`` word pieces goes
  in a pass of ``rows`` rows of ``n + 2`` tokens rounded up to a multiple, padding tokens
  masked, the last text repeated as padding rows: the pass shape depends on the text alone),
  and dynamic ones (as many rows as the call has texts of a padded length, at least 2).
  Each padded variant embeds every call twice, the second time in reverse order (other
  neighbours, other row positions, other padding rows; the dynamic ones at most 5 rows a
  pass, other row counts too), and counts the texts whose vector changed in any bit.
* The floor: MiniLM's arithmetic rate on onnxruntime by pass shape (:func:`arithmetic_rates`).

    python benchmarks/embedding_batching.py            # -> benchmarks/results/embedding_batching.md
    python benchmarks/embedding_batching.py --quick    # 2 groups x 2, for a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

#: padded passes on onnxruntime: name -> (token multiple, rows of every pass; 0: as many rows
#: as the call has texts of that padded length, at least 2, at most :data:`DYNAMIC_CAP`)
PADDED = {"pad16x8": (16, 8), "pad16x4": (16, 4), "pad8x2": (8, 2), "pad2x2": (2, 2),
          "pad4xdyn": (4, 0), "pad8xdyn": (8, 0)}  # fmt: skip
#: the most rows of a dynamic pass
DYNAMIC_CAP = 64
#: pass shapes (tokens, rows) of the arithmetic-rate table
RATE_SHAPES = ((16, 1), (32, 1), (64, 1), (128, 1), (32, 8), (64, 16))

#: env, its mvpo-train flags (the study's settings; docs/learning_study.md)
ENVS = {
    "alfworld": ["--env-kwargs", '{"num_games": "full"}', "--max-steps", "50",
                 "--history-length", "2"],
    "webshop": ["--env-id", "mvpo/WebShop-v0", "--env-kwargs", '{"search_query": "instruction"}',
                "--tasks", "[]", "--max-steps", "15", "--history-length", "2"],
    "showcase": ["--preset", "cpu-showcase"],  # the study iteration of benchmarks/cpu_cost.py
}  # fmt: skip


def record_calls(env: str, groups: int, size: int, seed: int) -> list[list[tuple[int, ...]]]:
    """The texts (word-piece ids) each embed call of one training iteration had to embed."""
    import mvpo_train.encoder_policy as ep
    from mvpo_train.cli import train_main

    calls: list[list[tuple[int, ...]]] = []
    real = ep.SegmentEmbedder.embed

    def recording(self, seqs):
        calls.append([s for s in dict.fromkeys(seqs) if s and s not in self._cache])
        return real(self, seqs)

    ep.SegmentEmbedder.embed = recording
    try:
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["--policy", "encoder", *ENVS[env], "--num-groups", str(groups),
                    "--group-size", str(size), "--iterations", "1", "--threads", "1",
                    "--estimator", "grpo", "--seed", str(seed), "--run-dir", f"{tmp}/run",
                    "--embedding-cache", f"{tmp}/embeddings.npz",  # cold: no shared file
                    "--no-progress", "--no-tensorboard", "--eval-every", "0"]  # fmt: skip
            with contextlib.redirect_stdout(sys.stderr):
                if train_main(argv) != 0:
                    raise SystemExit(f"embedding_batching: the {env} iteration failed")
    finally:
        ep.SegmentEmbedder.embed = real
    return calls


def embed_calls(embedder, calls, rows_for) -> dict:
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


def measure(env: str, groups: int, size: int, seed: int, repeats: int) -> dict:
    from mvpo_train.encoder_policy import SegmentEmbedder

    calls = record_calls(env, groups, size, seed)
    emb = SegmentEmbedder()
    texts = [s for c in calls for s in c]
    schemes = {"8 rows, any length (before)": lambda n: 8, "current": emb.rows_for}
    runs: dict[str, list[dict]] = {k: [] for k in schemes}
    for _ in range(repeats):  # alternating, so both see the same machine load
        for name, rows_for in schemes.items():
            runs[name].append(embed_calls(emb, calls, rows_for))
    before, now = (runs[k] for k in schemes)
    diff = max(float((before[0]["vectors"][s] - now[0]["vectors"][s]).abs().max()) for s in texts)
    cpu = {k: sorted(r["seconds"] for r in v)[len(v) // 2] for k, v in runs.items()}
    return {
        "env": env, "groups": groups, "group_size": size, "seed": seed, "calls": len(calls),
        "texts": len(texts), "mean_tokens": sum(map(len, texts)) / max(1, len(texts)),
        "real_tokens": sum(len(s) + 2 for s in texts),
        "schemes": {k: {"median_cpu_s": cpu[k], "passes": v[0]["passes"],
                        "tokens": v[0]["tokens"]} for k, v in runs.items()},
        "speedup": cpu["8 rows, any length (before)"] / cpu["current"],
        "max_abs_diff": diff,
        "runtimes": compare_runtimes(calls, repeats),
    }  # fmt: skip


class _MaskedPooled(torch.nn.Module):
    """ids and attention mask -> unit-length mean of the unmasked tokens' last hidden states."""

    def __init__(self, encoder: torch.nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask)[0]
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)


def masked_export(encoder: torch.nn.Module, path: Path):
    """An ONNX export of MiniLM that takes an attention mask (the project's export does not:
    its passes have no padding), opened on onnxruntime with 1 thread; the export options of
    :func:`mvpo_train.minilm_onnx.build_export`."""
    import warnings

    from mvpo_train.minilm_onnx import OPSET, OnnxEncoder

    ids = torch.tensor([[101, 2000, 102, 0]] * 2)
    axes = {"rows": 0, "tokens": 1}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            _MaskedPooled(encoder).eval(), (ids, (ids != 0).long()), str(path),
            input_names=["input_ids", "attention_mask"], output_names=["vectors"],
            dynamic_axes={"input_ids": {v: k for k, v in axes.items()},
                          "attention_mask": {v: k for k, v in axes.items()},
                          "vectors": {0: "rows"}},
            opset_version=OPSET, dynamo=False,
        )  # fmt: skip
    return OnnxEncoder(path, threads=1)


def padded_length(n_tokens: int, multiple: int) -> int:
    """Tokens of the padded pass of a text of ``n_tokens`` word pieces ([CLS] and [SEP] too)."""
    return -(-(n_tokens + 2) // multiple) * multiple


def padded_encode(
    session, texts, cls_id: int, sep_id: int, multiple: int, rows: int, cap: int = DYNAMIC_CAP
) -> dict:
    """``texts`` (distinct id sequences) in passes ``[rows, padded_length(n)]``: texts of one
    padded length ``rows`` to a pass in the order given (``rows`` 0: all of them, at least 2
    rows, at most ``cap``), the last repeated as padding rows, padding tokens 0 and
    masked. The vectors, passes and tokens computed."""
    by_len: dict[int, list[tuple[int, ...]]] = {}
    for s in texts:
        by_len.setdefault(padded_length(len(s), multiple), []).append(s)
    out: dict[tuple[int, ...], torch.Tensor] = {}
    passes = tokens = 0
    for length, group in by_len.items():
        step = rows or cap
        for k in range(0, len(group), step):
            part = group[k : k + step]
            n_rows = rows or max(2, len(part))
            ids = torch.zeros(n_rows, length, dtype=torch.long)
            for r, s in enumerate(part + [part[-1]] * (n_rows - len(part))):
                ids[r, : len(s) + 2] = torch.tensor([cls_id, *s, sep_id])
            vec = session(ids, (ids != 0).long())
            out.update(zip(part, vec[: len(part)], strict=True))
            passes, tokens = passes + 1, tokens + n_rows * length
    return {"vectors": out, "passes": passes, "tokens": tokens}


def compare_runtimes(calls, repeats: int) -> dict:
    """Every call's texts embedded by each variant (PyTorch's scheme, onnxruntime's ``rows1``,
    :data:`PADDED`), alternating ``repeats`` times: median CPU s, passes, tokens computed,
    the largest difference from ``rows1``'s vectors and, for the padded variants, the texts
    whose vector changed when its call was embedded in reverse order."""
    from mvpo_train.segment_embedder import SegmentEmbedder

    emb, onnx = SegmentEmbedder(), SegmentEmbedder(runtime="onnx")
    onnx.onnx_encoder  # noqa: B018 - opened (or exported once per machine) before any timing
    with tempfile.TemporaryDirectory() as tmp:
        session = masked_export(emb.encoder, Path(tmp) / "masked.onnx")

        def padded(name: str, order: int = 1) -> dict:
            multiple, rows = PADDED[name]
            out: dict = {"vectors": {}, "passes": 0, "tokens": 0}
            for c in calls:
                cap = DYNAMIC_CAP if order == 1 else 5
                got = padded_encode(
                    session, c[::order], emb.cls_id, emb.sep_id, multiple, rows, cap
                )
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


def arithmetic_rates(repeats: int) -> list[dict]:
    """MiniLM's arithmetic rate on onnxruntime (the project's export, 1 thread) by pass shape
    (:data:`RATE_SHAPES`): CPU ms per pass and GFLOP/s, counting the matrix products of the
    six layers (projections and feed-forward: 2 x weights per token; attention scores and
    mixing: 4 x tokens x hidden per token), the best of ``repeats`` timings."""
    from mvpo_train.segment_embedder import SegmentEmbedder

    onnx = SegmentEmbedder(runtime="onnx")
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


def markdown(rows: list[dict], command: str, rates: list[dict] | None = None) -> str:
    lines = [
        "# Embedding batching: MiniLM's forward passes on PyTorch and onnxruntime",
        "",
        "## PyTorch: 8-row passes vs one row for long texts",
        "",
        f"Command: `{command}` (1 torch thread; CPU time, median of the alternating repeats).",
        "The texts are those one training iteration of `mvpo-train --policy encoder` (fresh "
        "head, the study's env settings) had to embed, call by call; both schemes embed the "
        "same calls in one process. `current` = 8 rows up to 16 word pieces, 1 row above.",
        "",
        "| env | batch | texts | mean word pieces | scheme | passes | tokens computed "
        "(real: with [CLS]/[SEP]) | CPU s | speed-up | max abs diff of the vectors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for k, (name, s) in enumerate(r["schemes"].items()):
            head = (f"| {r['env']} | {r['groups']} x {r['group_size']} | {r['texts']} | "
                    f"{r['mean_tokens']:.1f} |") if k == 0 else "| | | | |"  # fmt: skip
            tail = f"{r['speedup']:.2f}x | {r['max_abs_diff']:.1e} |" if k else "| |"
            lines.append(f"{head} {name} | {s['passes']} | {s['tokens']:,} "
                         f"({r['real_tokens']:,}) | {s['median_cpu_s']:.1f} | {tail}")  # fmt: skip
    lines += [
        "",
        "## The runtimes: PyTorch, onnxruntime one text per pass, fixed-shape padded passes",
        "",
        "The same calls, each variant in turn (median CPU time of the alternating repeats, "
        "1 thread). `onnx rows1` is the `onnx` "
        "runtime's batching; `onnx padLxR`: a text of n word pieces goes in a pass of R rows of "
        "n + 2 tokens rounded up to a multiple of L (padding masked, the last text repeated as "
        "padding rows), so its pass shape depends on the text alone; `onnx padLxdyn`: the "
        f"same lengths, as many rows as the call has texts of that length (at least 2, at most "
        f"{DYNAMIC_CAP}), so the row count of its pass depends on the call. *changed*: texts "
        "whose vector differs in any bit when every call is embedded again in reverse order "
        "(other neighbours, row positions and padding rows; the dynamic variants with at most "
        "5 rows a pass, so other row counts too).",
        "",
        "| env | variant | passes | tokens computed | CPU s | texts per CPU s | vs onnx rows1 "
        "| vs torch | max abs diff from rows1 | changed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rt = r["runtimes"]
        for k, (name, v) in enumerate(rt.items()):
            changed = v.get("changed_with_neighbours")
            changed_text = "" if changed is None else f"{changed} of {r['texts']}"
            lines.append(
                f"| {r['env'] if k == 0 else ''} | {name} | {v['passes']} | {v['tokens']:,} | "
                f"{v['median_cpu_s']:.1f} | {v['texts_per_cpu_s']:.0f} | "
                f"{rt['onnx rows1']['median_cpu_s'] / v['median_cpu_s']:.2f}x | "
                f"{rt['torch (current)']['median_cpu_s'] / v['median_cpu_s']:.2f}x | "
                f"{v['max_abs_diff_from_rows1']:.1e} | "
                f"{changed_text} |"
            )
    if rates:
        lines += [
            "",
            "## The floor: MiniLM's arithmetic rate on onnxruntime by pass shape",
            "",
            "One pass of random word pieces at each shape (tokens with [CLS]/[SEP], rows), the "
            "project's export, 1 thread, best of the repeats; GFLOP/s counts the matrix "
            "products (`arithmetic_rates`). How far a pass of one short text is from the rate "
            "of a large batch bounds what batching can save on the same arithmetic.",
            "",
            "| tokens | rows | CPU ms per pass | GFLOP/s | tokens per CPU s |",
            "|---:|---:|---:|---:|---:|",
        ]
        lines += [f"| {r['tokens']} | {r['rows']} | {r['ms_per_pass']:.2f} | "
                  f"{r['gflops_per_s']:.0f} | {r['tokens_per_cpu_s']:,.0f} |" for r in rates]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--envs", nargs="+", choices=sorted(ENVS), default=sorted(ENVS))
    p.add_argument("--num-groups", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="2 x 2 groups, 1 repeat, no results file")
    p.add_argument("--out", default=str(RESULTS / "embedding_batching.md"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.quick:
        args.num_groups, args.group_size, args.repeats = 2, 2, 1
    rows = [measure(e, args.num_groups, args.group_size, args.seed, args.repeats)
            for e in args.envs]  # fmt: skip
    rates = arithmetic_rates(args.repeats)
    command = "python benchmarks/embedding_batching.py " + " ".join(argv or sys.argv[1:])
    text = markdown(rows, command.strip(), rates)
    print(text)
    if not args.quick:
        Path(args.out).write_text(text)
        saved = {"envs": rows, "rates": rates}
        Path(args.out).with_suffix(".json").write_text(json.dumps(saved, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
