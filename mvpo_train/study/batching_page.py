"""The page of ``benchmarks/embedding_batching.py`` (:mod:`mvpo_train.study.minilm_passes`'s
figures): PyTorch's two schemes, the runtimes and padded variants, MiniLM's arithmetic rate."""

from __future__ import annotations

from typing import Any

from mvpo_train.study.minilm_passes import DYNAMIC_CAP

__all__ = ["markdown"]


def markdown(
    rows: list[dict[str, Any]], command: str, rates: list[dict[str, Any]] | None = None
) -> str:
    """The page of the envs' ``rows`` (:func:`~mvpo_train.study.minilm_passes.compare_schemes`
    with the env and batch) measured by ``command``, and the arithmetic ``rates``."""
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
        "1 thread). `onnx rows1` was the `onnx` runtime's batching when these were measured "
        "(`onnx pad8xdyn` is its default since, `--embedding-batching`); `onnx padLxR`: a text of n word pieces goes in a pass of R rows of "
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
