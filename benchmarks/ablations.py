"""Why does MVPO trail GiGPO in the learning study? Ablations of MVPO on the *train* split only.

Each variant is the study's ``mvpo`` arm (``benchmarks/learning_env.py``: same policy, warm
start, rooms, batch and seeds) with one MVPO option changed, chosen on training success; the
variants named with ``--test`` are then evaluated once on the held-out splits. What it reports
and what it found: docs/learning_study.md, "Ablations". Resumable like the study::

    python benchmarks/ablations.py                 # table + plot: benchmarks/results/ablations.md
    python benchmarks/ablations.py --analyze-only  # again from runs/ablations/ (or the JSON)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from learning_env import ALFWORLD, ARMS, FINAL_EVALS, RESULTS, ROOT

from mvpo_train.study.ablation_report import analyse, plot, write_markdown
from mvpo_train.study.analyze_only import AnalyzeOnlyError
from mvpo_train.study.learning_runs import eval_cmd, run_all, warm_start_and_eval
from mvpo_train.study.runs import eval_file, n_metrics, pending_runs, run_local
from mvpo_train.study.saved_page import save_page, saved_table
from mvpo_train.study.tables import command_line


def _kw(**kwargs: object) -> list[str]:
    return ["--estimator-kwargs", json.dumps(kwargs, sort_keys=True)]


#: variant -> (mvpo-train flags added to the ``mvpo`` arm, what it tests; docs/estimators.md §3)
VARIANTS: dict[str, tuple[list[str], str]] = {
    "mvpo-kappa0.25": (
        _kw(kappa_schedule="constant", kappa_constant=0.25),
        "potential scale: kappa fixed at 0.25 (the default schedule 1 - EMA success keeps it "
        "near 0.9 here)",
    ),
    "mvpo-kappa0.1": (
        _kw(kappa_schedule="constant", kappa_constant=0.1),
        "potential scale: kappa fixed at 0.1",
    ),
    "mvpo-lambdaL0": (_kw(lambda_L=0.0), "no loop penalty (lambda_L 0.5 -> 0)"),
    "mvpo-lambdaL1": (_kw(lambda_L=1.0), "stronger loop penalty (lambda_L 0.5 -> 1)"),
    "mvpo-lambdaL0-kappa0.25": (
        _kw(lambda_L=0.0, kappa_schedule="constant", kappa_constant=0.25),
        "both: no loop penalty and kappa fixed at 0.25",
    ),
    "mvpo-scope-batch": (_kw(scope="batch"), "regions over the whole batch, not per group"),
    "mvpo-singletons": (_kw(repair_singletons=True), "repair singleton step groups as well"),
    "mvpo-amp-off": (_kw(eta=0.0), "milestone weights fixed uniform (AMP off, eta 0)"),
    "mvpo-text-rules": (
        ["--abstraction", "alfworld-text"],
        "milestone set and signatures read from the observation text (the paper's string rules)",
    ),
}
#: the first sweep (``python benchmarks/ablations.py``): every variant but the combination
DEFAULT_VARIANTS = tuple(v for v in VARIANTS if v != "mvpo-lambdaL0-kappa0.25")
#: the learning study's ALFWorld settings with every variant as an arm
STUDY_ENV = ALFWORLD._replace(
    arm_flags={name: [*ARMS["mvpo"], *flags] for name, (flags, _) in VARIANTS.items()}
)


def sweep_args(args: argparse.Namespace) -> argparse.Namespace:
    """The learning study's arguments for this sweep (study settings, train split only)."""
    env = STUDY_ENV
    return argparse.Namespace(
        study_env=env, arms=["mvpo", *args.variants], seeds=args.seeds,
        iterations=args.iterations, num_groups=8, group_size=8, lr=2e-3, eval_every=0,
        eval_episodes=env.eval_episodes, threshold=0.2, jobs=args.jobs, ray=args.ray,
        base=args.base, embedding_cache=args.embedding_cache, fresh=False, eval=False,
        study=True, extra=[], warm=env.warm, warm_args=env.warm_args, warm_checked=False,
        env_kwargs=env.env_kwargs,
    )  # fmt: skip


def test_held_out(args: argparse.Namespace) -> None:
    """The final held-out evaluations (as in the study) of ``mvpo`` and the ``--test`` variants,
    on their finished runs: a variant chosen on the train split, then tested once."""

    def commands(path: Path, arm: str, seed: int) -> list[list[str]]:
        if n_metrics(path) < args.iterations:
            return []
        return [
            eval_cmd(path, sp, e, STUDY_ENV)
            for sp, e in FINAL_EVALS
            if not eval_file(path, sp).is_file()
        ]

    pending = pending_runs(Path(args.base), ["mvpo", *args.test], args.seeds, commands)
    run_local(pending, args.jobs, ROOT)


#: the page's settings sentence ({it}: iterations)
SETTINGS = (
    "the learning study's `mvpo` arm (docs/learning_study.md: encoder policy "
    "warm-started on the train walkthroughs, bundled `alfworld` preset, all train tasks, "
    "50-step episodes, 8 tasks x 8 rollouts, {it} iterations, lr 0.002, 2 PPO epochs), one "
    "option changed per variant; chosen on the train split only (no evaluation during "
    "training; a held-out test only of the variants named with `--test`, after the choice)."
)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--variants", nargs="+", default=list(DEFAULT_VARIANTS), choices=list(VARIANTS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel (1 thread each)")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="one Ray task per run, as in benchmarks/learning.py")  # fmt: skip
    p.add_argument("--base", default=str(ROOT / "runs" / "ablations"))
    p.add_argument(
        "--embedding-cache",
        default=str(ROOT / "runs" / "learning-study" / "embeddings.npz"),
        help="embedding cache file shared with the learning study",
    )
    p.add_argument(
        "--test",
        nargs="+",
        default=[],
        choices=list(VARIANTS),
        metavar="VARIANT",
        help="after choosing on the train split: the final held-out evaluations of these "
        "variants and of mvpo on their finished runs (as in the learning study)",
    )
    p.add_argument("--analyze-only", action="store_true", help="only rebuild the table and plot")
    p.add_argument("--out", default=str(RESULTS / "ablations.md"))
    args = p.parse_args(argv)
    args.argv = [a for a in argv if a != "--analyze-only"]
    if not args.analyze_only:
        base = Path(args.base)
        base.mkdir(parents=True, exist_ok=True)
        cmd = command_line("benchmarks/ablations.py", args.argv)
        log = base / "commands.txt"
        if cmd.strip() not in (log.read_text().splitlines() if log.is_file() else []):
            with log.open("a") as f:
                f.write(cmd.strip() + "\n")
        sa = sweep_args(args)
        warm_start_and_eval(sa, base, ROOT)  # the cached warm start
        Path(args.embedding_cache).parent.mkdir(parents=True, exist_ok=True)
        run_all(sa, base, ROOT)
        if args.test:
            test_held_out(args)
    splits, study = [s for s, _ in FINAL_EVALS], RESULTS / "learning.json"
    needs = ("phi_split_spearman_failed",)  # no runs here: the JSON's table, if it has these
    table = saved_table(Path(args.out), args.analyze_only, Path(args.base), needs)
    if table is None:
        table = analyse(Path(args.base), args.iterations, list(VARIANTS), splits, study)
    what = {name: w for name, (_, w) in VARIANTS.items()}
    text = SETTINGS.format(it=args.iterations)
    save_page(
        table,
        Path(args.out),
        plot,
        lambda t, out, png: write_markdown(t, args, out, png, what, FINAL_EVALS, text),
        args.analyze_only,
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AnalyzeOnlyError as err:
        sys.exit(f"ablations: {err}")
