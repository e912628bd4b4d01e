"""Learning study: GRPO vs GiGPO vs MVPO (and MVPO with a learned abstraction) on ALFWorld-scale rooms.

Every arm trains the same encoder policy from the same warm start on the same tasks and seeds;
only the credit estimator (and, for ``mvpo-learned``, the abstraction) differs. ``--env webshop``
is the MVPO paper's WebShop ablation (their Table 2). The settings, what is reported and how to
read it: docs/learning_study.md. Runs go to ``--base`` as ``<arm>-seed<k>/``; rerunning the
command skips finished runs and resumes interrupted ones. From the repository root::

    python benchmarks/learning.py                  # the study: table + plots in benchmarks/results/
    python benchmarks/learning.py --analyze-only   # the table and plots again (no runs: the JSON)
    python benchmarks/learning.py --quick          # smoke test: 1 seed, 3 iterations
    python benchmarks/learning.py --env webshop    # the WebShop study
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from learning_env import ALFWORLD, ENVS, ROOT

from mvpo_train.study.learning_page import (
    candidates_markdown,
    plot,
    study_settings,
    summarize,
    write_markdown,
)
from mvpo_train.study.learning_runs import run_all, warm_candidates, warm_start_and_eval
from mvpo_train.study.runs import load_runs
from mvpo_train.study.saved_page import save_page, saved_table


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The study's arguments; ``--env`` picks the defaults (``args.study_env``)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--env", choices=sorted(ENVS), default=ALFWORLD.name)
    env = ENVS[pre.parse_known_args(argv)[0].env]
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--env", choices=sorted(ENVS), default=ALFWORLD.name,
                   help="the study: alfworld (docs/learning_study.md) or webshop (its section "
                   "'WebShop study'); sets the defaults below")  # fmt: skip
    p.add_argument("--arms", "--estimators", nargs="+", default=list(env.arms),
                   choices=env.arm_names(), help="what to compare (an estimator, or mvpo-learned)")  # fmt: skip
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--iterations", type=int, default=env.iterations)
    p.add_argument("--num-groups", type=int, default=env.num_groups, help="tasks per iteration")
    p.add_argument("--group-size", type=int, default=8, help="rollouts per task")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eval-every", type=int, default=env.eval_every,
                   help="held-out evaluation during training")  # fmt: skip
    splits = [s for s, _ in env.final_evals]
    p.add_argument("--eval-episodes", type=int, default=env.eval_episodes,
                   help=f"episodes per {splits[0]} task of each evaluation during training")  # fmt: skip
    p.add_argument("--final-episodes", type=int, nargs=len(splits),
                   metavar=tuple(s.upper() for s in splits), default=[e for _, e in env.final_evals],
                   help=f"episodes per task of the final {' / '.join(splits)} evaluations")  # fmt: skip
    p.add_argument("--warm", default=env.warm, help="the warm start's folder (made if missing)")
    p.add_argument("--warm-checked", action="store_true",
                   help="the caller has just made or checked --warm (e.g. tuning_grid.py, once "
                   "for all its points): only compare its saved settings with --warm-args "
                   "(seconds), without replaying the expert plans")  # fmt: skip
    p.add_argument("--warm-args", default=env.warm_args,
                   help="flags of `python -m mvpo_train.encoder_policy` for the warm start")  # fmt: skip
    p.add_argument("--warm-candidates", type=int, nargs="+", default=None, metavar="STEPS",
                   help="only measure warm starts of these BC step counts (0 = a fresh head) on "
                   "the train split (--candidate-tasks tasks x 1 sampled episode, seed 0)")  # fmt: skip
    p.add_argument("--candidate-tasks", type=int, default=200,
                   help="train tasks of --warm-candidates (the split's first N)")  # fmt: skip
    p.add_argument("--env-kwargs", default=env.env_kwargs,
                   help=f"{env.env_id} keywords of every run, as JSON (e.g. the full split)")  # fmt: skip
    p.add_argument("--threshold", type=float, default=0.2, help="success threshold")
    p.add_argument("--more-thresholds", type=float, nargs="+", default=[], metavar="T",
                   help="further success thresholds: iterations to each in their own table and "
                   "in learning.json (reach_at); analysis only, the runs are the same")  # fmt: skip
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel (1 thread each)")
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="run each run as a Ray task: on a cluster (ADDRESS, e.g. 'auto' or "
        "ray://head:10001) or, without ADDRESS, on a local instance of --jobs CPUs",
    )
    p.add_argument("--base", default=env.base)
    p.add_argument("--arm-flags", action="append", default=[], metavar="ARM='FLAGS'",
                   help="mvpo-train flags of one arm only (repeatable), e.g. the tuning grid's "
                   "choice: --arm-flags \"grpo=--lr 0.001 --kl-coef 0.05\"")  # fmt: skip
    p.add_argument("--embedding-cache", default=None,
                   help="embedding cache file of every run (default: BASE/embeddings.npz); "
                   "sweeps over the same games can share one")  # fmt: skip
    p.add_argument("--fresh", action="store_true", help="retrain even if runs exist")
    p.add_argument("--no-eval", dest="eval", action="store_false",
                   help="skip the final held-out evaluations")  # fmt: skip
    p.add_argument("--no-study", dest="study", action="store_false",
                   help="plain cpu-tiny runs (+ the extra flags): no warm start, no study flags")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="1 seed, 3 iterations, own --base")
    p.add_argument("--analyze-only", action="store_true", help="only rebuild the table and plot")
    p.add_argument("--out", default=env.out)
    p.add_argument(
        "extra", nargs="*", help="extra mvpo-train flags after --, e.g. -- --max-steps 20"
    )
    args = p.parse_args(argv)
    args.study_env = env
    args.argv = [a for a in argv if a != "--analyze-only"]
    if "--analyze-only" in args.extra:  # added after `-- FLAGS`, as a page says: never a run
        args.extra, args.analyze_only = [a for a in args.extra if a != "--analyze-only"], True
    if args.quick:
        quick = "learning-quick" if env is ALFWORLD else f"learning-{env.name}-quick"
        args.seeds, args.iterations, args.eval_every = [0], 3, 3
        args.base = str(ROOT / "runs" / quick)
        args.out = str(ROOT / "runs" / quick / Path(env.out).name)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    env = args.study_env
    base = Path(args.base)
    if args.warm_candidates is not None:
        print(candidates_markdown(warm_candidates(args, base, ROOT)))
        return 0
    if not args.analyze_only:
        if args.study:
            warm_start_and_eval(args, base, ROOT)
        run_all(args, base, ROOT)
        if args.study:
            warm_start_and_eval(args, base, ROOT, build=False)  # the eval needs a run's config
    table = saved_table(Path(args.out), args.analyze_only, base)  # no runs here: the JSON's
    if table is None:
        runs = load_runs(base, args.arms, args.seeds, args.iterations)
        table = summarize(
            runs, base, args.threshold, args.iterations, env=env,
            more_thresholds=tuple(args.more_thresholds),
        )  # fmt: skip
        table["settings"] = study_settings(args)
    save_page(
        table,
        Path(args.out),
        lambda t, png: plot(t, png, args.threshold, env),
        lambda t, out, png: write_markdown(t, args, out, png),
        args.analyze_only,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
