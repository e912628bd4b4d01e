"""Policy candidates for the MVPO paper's regime on ALFWorld-scale rooms (docs/policies.md).

Measures, for each candidate, with 50-step episodes and sampled actions (temperature 1): the
initial success on ``train`` and ``valid_unseen`` (with a 95% Wilson interval), env steps per
second while playing, and (``--iteration``) the wall time of one training iteration of 16
groups x 8 rollouts x 50 steps (rollout + update, GRPO), split into phases.

Candidates: ``lm`` (the bundled tiny causal LM, score mode, as ``cpu-tiny`` starts) and
``encoder:K[:H[:POOL]]`` (the frozen-MiniLM scorer after K behaviour-cloning steps on the
train split's expert walkthroughs, K=0 the fresh head; reading H past (observation, action)
pairs, default ``--history-length``, pooled by POOL: ``concat`` | ``mean`` | ``last_action``,
docs/policies.md "Input layout"). ``--env-kwargs '{"num_games": "full"}'`` plays the full
generated split (3,553 train games); ``--train-tasks N`` samples N train tasks (seeded, one
episode each) instead of every task x ``--episodes``. ``--score-prompts N...`` times the tiny
LM's score-mode scorers (``kv``, ``kv copy``, ``concat``: :mod:`mvpo_train.score_timing`) on
``--score-batch`` prompts of N tokens, the median of ``--score-repeats``. Writes a Markdown
section (``--out``, ``--section``: replaced in place when the file already has it)::

    nice -n 10 python benchmarks/policy_candidates.py --threads 1 \\
        --env-kwargs '{"num_games": "full"}' --train-tasks 300 --splits train \\
        --candidates encoder:200:2:concat encoder:200:0 --out benchmarks/results/policy_candidates.md \\
        --section "Full train split"
    nice -n 10 python benchmarks/policy_candidates.py --threads 1 --candidates \\
        --score-prompts 80 200 400 --out benchmarks/results/policy_candidates.md

Each section's figures are kept in ``policy_candidates.json`` beside ``--out``;
``--analyze-only`` rebuilds the page (default: the committed one) from that JSON alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from mvpo_train.config import json_arg
from mvpo_train.study import candidates
from mvpo_train.study.demo_layouts import split_games
from mvpo_train.study.figures_page import write_figures_page
from mvpo_train.study.tables import command_line

#: the page's title
TITLE = "Policy candidates on ALFWorld-scale rooms (50-step episodes)"
ENV = "mvpo/ALFWorld-v0"
RESULTS = Path(__file__).resolve().parent / "results" / "policy_candidates.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--candidates", nargs="*", default=["lm", "encoder:0", "encoder:20"])
    p.add_argument("--episodes", type=int, default=4, help="sampled episodes per task")
    p.add_argument("--train-tasks", type=int, default=0,
                   help="sample this many train tasks, one episode each (0: every task)")  # fmt: skip
    p.add_argument("--splits", nargs="+", default=["train", "valid_unseen"])
    p.add_argument("--env-kwargs", type=json_arg(dict), default={}, help="gym.make keywords")
    p.add_argument("--history-length", type=int, default=2,
                   help="pairs shown (candidates without :H; the builder of last_action)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iteration", nargs="*", default=[], help="candidates to time one iteration")
    p.add_argument("--learn", default=None, help="candidate for a short learning run")
    p.add_argument("--learn-iterations", type=int, default=8)
    p.add_argument("--learn-groups", type=int, default=8)
    p.add_argument("--layouts", nargs="*", default=[],
                   help="H:POOL layouts compared by behaviour cloning on held-out train games")  # fmt: skip
    p.add_argument("--layout-steps", type=int, default=200, help="BC steps of --layouts")
    p.add_argument("--held-out", type=float, default=0.05,
                   help="share of train games held out of --layouts' cloning (seeded)")  # fmt: skip
    p.add_argument("--embedding-cache", default="", help="embedding cache file (speed only)")
    p.add_argument("--demos-cache", default="", help="JSON file of the collected expert steps "
                   "(reused when written for the same env kwargs; speed only)")  # fmt: skip
    p.add_argument("--score-prompts", nargs="*", type=int, default=[],
                   help="prompt lengths (tokens) at which to time the LM's score-mode scorers")  # fmt: skip
    p.add_argument("--score-batch", type=int, default=64, help="prompts per scored batch")
    p.add_argument("--score-repeats", type=int, default=7,
                   help="rounds per cell (median; 7: ratios within ~15%% run to run here)")  # fmt: skip
    p.add_argument("--work", default="runs/policy_candidates", help="scratch folder")
    p.add_argument("--out", default=None, help="Markdown results file")
    p.add_argument("--section", default="", help="replace (or append) this section of --out")
    p.add_argument("--analyze-only", action="store_true", help="rebuild --out from its JSON")
    args = p.parse_args(argv)
    if args.analyze_only:
        write_figures_page("policy_candidates", Path(args.out or RESULTS), candidates.page)
        return 0
    command = command_line("benchmarks/policy_candidates.py", sys.argv[1:])
    bench = candidates.Bench(
        ENV, dict(args.env_kwargs), args.history_length, args.threads, args.embedding_cache
    )
    torch.set_num_threads(args.threads)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.score_prompts:
        rows_ = bench.scoring(args.score_prompts, args.score_batch, args.score_repeats, args.seed)
        if args.out:
            candidates.write_scoring(Path(args.out), rows_, args, command)
    embedder = demos = None
    encoders = [c for c in args.candidates + args.iteration + [args.learn or "lm"] if c != "lm"]
    encoders += [f"encoder:0:{x}" for x in args.layouts]
    if encoders or args.demos_cache:
        embedder, demos = bench.expert_steps(encoders, args.demos_cache)
    rows, iters, layouts = [], [], []

    def write(learn=()) -> None:
        if args.out:  # after every stage: an interrupted run keeps what it measured
            n = len(demos or [])
            candidates.write_page(
                Path(args.out), rows, iters, args, command, n, learn, layouts, TITLE
            )

    if args.layouts:
        fit, held = split_games(demos, embedder.sep_id, args.held_out, args.seed)
        layouts.extend(candidates.layouts(args.layouts, args.layout_steps, embedder, fit, held,
                                          args.seed))  # fmt: skip
        if args.embedding_cache:
            embedder.save_cache(args.embedding_cache)
        write()

    for name in args.candidates:
        t0 = time.perf_counter()
        policy = bench.policy(name, args.seed, embedder, demos)
        warm = time.perf_counter() - t0
        policy.cache_file = args.embedding_cache if name != "lm" else ""
        row = bench.success(name, policy, args.episodes, args.seed, args.splits, args.train_tasks)
        row["warm_start_s"] = warm
        rows.append(row)
        print(json.dumps(row), flush=True)
        write()
    for name in args.iteration:
        warm_dir = work / name.replace(":", "-")
        if name != "lm":
            policy = bench.policy(name, args.seed, embedder, demos)
            policy.model.save_pretrained(warm_dir)
        it = bench.iteration(name, warm_dir, work / f"iter-{name.replace(':', '-')}", args.seed)
        iters.append(it)
        print(json.dumps(it), flush=True)
        write()
    if args.learn:
        warm_dir = work / args.learn.replace(":", "-")
        policy = bench.policy(args.learn, args.seed, embedder, demos)
        policy.model.save_pretrained(warm_dir)
        learn = bench.learning(
            args.learn, warm_dir, work / "learn", args.seed, args.learn_iterations,
            args.learn_groups, args.episodes,
        )  # fmt: skip
        print(json.dumps(learn), flush=True)
        write(learn)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
