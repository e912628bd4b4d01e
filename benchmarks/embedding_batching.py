"""How the encoder policy's MiniLM forward passes are batched (docs/policies.md, "Embedding
cache"): the earlier scheme (every pass 8 rows of one token length) against the current one
(8 rows up to ``SegmentEmbedder.SHORT_TOKENS`` word pieces, one row above), on the texts one
training iteration of ``mvpo-train --policy encoder`` per env had to embed, recorded call by
call; both schemes embed the same calls in one process, alternating (CPU time), and the
vectors are compared.

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

#: env, its mvpo-train flags (the study's settings; docs/learning_study.md)
ENVS = {
    "alfworld": ["--env-kwargs", '{"num_games": "full"}', "--max-steps", "50",
                 "--history-length", "2"],
    "webshop": ["--env-id", "mvpo/WebShop-v0", "--env-kwargs", '{"search_query": "instruction"}',
                "--tasks", "[]", "--max-steps", "15", "--history-length", "2"],
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
    }  # fmt: skip


def markdown(rows: list[dict], command: str) -> str:
    lines = [
        "# Embedding batching: 8-row passes vs one row for long texts",
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
    command = "python benchmarks/embedding_batching.py " + " ".join(argv or sys.argv[1:])
    text = markdown(rows, command.strip())
    print(text)
    if not args.quick:
        Path(args.out).write_text(text)
        Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
