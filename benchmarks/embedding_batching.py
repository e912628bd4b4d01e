"""How the encoder policy's MiniLM forward passes are batched (docs/policies.md, "Embedding
cache" and "Where MiniLM runs"), on the texts one training iteration of ``mvpo-train --policy
encoder`` per env had to embed, recorded call by call (``showcase``: the ``cpu-showcase``
preset, the study iteration of ``benchmarks/cpu_cost.py``). Three tables, measured in one
process with the variants alternating (CPU time, 1 thread):

* PyTorch: the earlier scheme (every pass 8 rows of one token length) against the current one
  (8 rows up to ``SegmentEmbedder.SHORT_TOKENS`` word pieces, one row above); the vectors are
  compared.
* The runtimes: PyTorch's current scheme, onnxruntime's first one (one text per pass,
  ``rows1``) and fixed-shape padded passes on onnxruntime (:data:`PADDED`: a text of ``n``
  word pieces goes in a pass of ``rows`` rows of ``n + 2`` tokens rounded up to a multiple,
  padding tokens masked, the last text repeated as padding rows: the pass shape depends on the
  text alone), and dynamic ones (as many rows as the call has texts of a padded length, at
  least 2; ``pad8xdyn``, since this page the ``onnx`` runtime's default batching).
  Each padded variant embeds every call twice, the second time in reverse order (other
  neighbours, other row positions, other padding rows; the dynamic ones at most 5 rows a
  pass, other row counts too), and counts the texts whose vector changed in any bit.
* The floor: MiniLM's arithmetic rate on onnxruntime by pass shape (:func:`arithmetic_rates`).

The passes: :mod:`mvpo_train.study.minilm_passes` (the padded ones and the masked export:
:mod:`mvpo_train.minilm_onnx`); the page: :mod:`mvpo_train.study.batching_page`.

    python benchmarks/embedding_batching.py            # -> benchmarks/results/embedding_batching.md
    python benchmarks/embedding_batching.py --quick    # 2 groups x 2, for a smoke run
    python benchmarks/embedding_batching.py --analyze-only  # the page from its committed JSON
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

from mvpo_train.study import minilm_passes as passes
from mvpo_train.study.batching_page import markdown
from mvpo_train.study.figures_page import write_figures_page
from mvpo_train.study.minilm_passes import (  # noqa: F401  (the names tests/benchmarks use)
    DYNAMIC_CAP,
    PADDED,
    arithmetic_rates,
    embed_calls,
    masked_export,
    padded_encode,
    padded_length,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

#: env, its mvpo-train flags (the study's settings; docs/learning_study.md)
ENVS = {
    "alfworld": ["--env-kwargs", '{"num_games": "full"}', "--max-steps", "50",
                 "--history-length", "2"],
    "webshop": ["--env-id", "mvpo/WebShop-v0", "--env-kwargs", '{"search_query": "instruction"}',
                "--tasks", "[]", "--max-steps", "15", "--history-length", "2"],
    "showcase": ["--preset", "cpu-showcase"],  # the study iteration of benchmarks/cpu_cost.py
}  # fmt: skip


def record_calls(env: str, groups: int, size: int, seed: int) -> list[list[tuple[int, ...]]]:
    """The texts (word-piece ids) each embed call of one training iteration of ``env`` had to
    embed (:func:`mvpo_train.study.minilm_passes.record_calls`), from a cold embedding cache."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["--policy", "encoder", *ENVS[env], "--num-groups", str(groups),
                "--group-size", str(size), "--iterations", "1", "--threads", "1",
                "--estimator", "grpo", "--seed", str(seed), "--run-dir", f"{tmp}/run",
                "--embedding-cache", f"{tmp}/embeddings.npz",  # cold: no shared file
                "--no-progress", "--no-tensorboard", "--eval-every", "0"]  # fmt: skip
        return passes.record_calls(argv, f"embedding_batching: the {env} iteration failed")


def measure(env: str, groups: int, size: int, seed: int, repeats: int) -> dict:
    """One env's row of the page: its iteration's calls embedded by every scheme and runtime."""
    calls = record_calls(env, groups, size, seed)
    row = {"env": env, "groups": groups, "group_size": size, "seed": seed}
    return {**row, **passes.compare_schemes(calls, repeats)}


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
    p.add_argument("--analyze-only", action="store_true", help="rebuild --out from its JSON")
    args = p.parse_args(argv)
    out = Path(args.out)

    def report(saved: dict) -> str:
        return markdown(saved["envs"], saved["command"], saved["rates"])

    if args.analyze_only:
        write_figures_page("embedding_batching", out, report)
        return 0
    torch.set_num_threads(1)
    if args.quick:
        args.num_groups, args.group_size, args.repeats = 2, 2, 1
    rows = [measure(e, args.num_groups, args.group_size, args.seed, args.repeats)
            for e in args.envs]  # fmt: skip
    flags = " ".join(sys.argv[1:] if argv is None else argv)
    saved = {"command": f"python benchmarks/embedding_batching.py {flags}".strip(),
             "envs": rows, "rates": arithmetic_rates(args.repeats)}  # fmt: skip
    if args.quick:
        print(report(saved))
    else:
        write_figures_page("embedding_batching", out, report, saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
