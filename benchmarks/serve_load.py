"""Load on ``mvpo-serve``: sessions x steps/s, step latency and server memory.

docs/integrations.md, "Load". Starts ``mvpo-serve ENV_ID --port 0`` (``--max-sessions`` the
largest level); per level S and transport (``http``, ``ws``) S client threads, each its own
session, play seeded random admissible actions until ``--steps`` steps in all
(:func:`mvpo_envs.serve.load.session_load`); a last session over the limit must get ``503``.

``python benchmarks/serve_load.py`` writes ``benchmarks/results/serve_load.md`` and the figures it
prints as ``serve_load.json`` beside it; ``--analyze-only`` rebuilds the page from that JSON
alone. Linux only. The measurement and the page are :mod:`mvpo_envs.bench.serve_load`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mvpo_envs.bench.serve_load import page, page_figures, run
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).resolve().parent / "results" / "serve_load.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="mvpo/ALFWorld-v0")
    p.add_argument("--env-kwargs", default="{}", help="JSON object for the server's gym.make")
    p.add_argument("--levels", default="1,8,32,64", help="sessions at once, comma-separated")
    p.add_argument("--steps", type=int, default=2000, help="steps per level and transport")
    p.add_argument("--transports", default="http,ws")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--analyze-only", action="store_true", help="rebuild --out from its JSON")
    args = p.parse_args(argv)
    if args.analyze_only:
        write_figures_page("serve_load", args.out, page)
        return 0
    levels = [int(x) for x in args.levels.split(",")]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    got = run(
        args.env_id, args.env_kwargs, levels, args.steps, args.transports.split(","), args.seed
    )
    command = "python benchmarks/serve_load.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    write_figures_page("serve_load", args.out, page, page_figures(args, command, load, got))
    return 0 if got["refused"] and not any(r["failed"] for r in got["rows"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
