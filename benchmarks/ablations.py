"""Why does MVPO trail GiGPO in the learning study? Ablations of MVPO on the *train* split only.

Each variant is the study's ``mvpo`` arm (``benchmarks/learning_env.py``: same policy, warm
start, rooms, batch and seeds) with one MVPO option changed, chosen on training success; the
variants named with ``--test`` are then evaluated once on the held-out splits. What it reports
and what it found: docs/learning_study.md, "Ablations". Resumable like the study::

    python benchmarks/ablations.py                 # table + plot: benchmarks/results/ablations.md
    python benchmarks/ablations.py --analyze-only  # again from runs/ablations/ (or the JSON)

``--form`` is MVPO's form in every arm (default: the estimator's default form,
``mvpo_train.credit.mvpo.DEFAULT_FORM``); it goes into each run's estimator kwargs, the
results JSON's ``settings`` and ``BASE/settings.json`` (a base holding runs of another form is
refused). The committed study's runs used ``form="v1"``: its page's commands with
``--form v1`` rerun it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from learning_env import ALFWORLD, ARMS, FINAL_EVALS, RESULTS, ROOT

from mvpo_train.credit.mvpo import DEFAULT_FORM, FORM_BEFORE_DEFAULT_CHANGE, FORMS
from mvpo_train.study.ablation_report import analyse, plot, write_markdown
from mvpo_train.study.analyze_only import AnalyzeOnlyError
from mvpo_train.study.learning_runs import eval_cmd, run_all, warm_start_and_eval
from mvpo_train.study.paired import check_settings
from mvpo_train.study.run_sets import read_config
from mvpo_train.study.runs import eval_file, fingerprint, n_metrics, pending_runs, run_local
from mvpo_train.study.saved_page import save_page, saved_table
from mvpo_train.study.study_env import StudyEnv
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
#: the column recomputed from every iteration's batch record (``credit_alignment``): a page
#: rebuilt from its JSON alone needs it there
RECOMPUTED = ("phi_split_spearman_failed",)


def study_env(form: str) -> StudyEnv:
    """The learning study's ALFWorld settings with ``mvpo`` and every variant as an arm, MVPO's
    ``form`` in each arm's estimator kwargs (beside the variant's own)."""

    def arm(flags: list[str]) -> list[str]:
        own = json.loads(flags[1]) if flags[:1] == ["--estimator-kwargs"] else {}
        return [*ARMS["mvpo"], *_kw(form=form, **own), *(flags[2:] if own else flags)]

    variants = {name: arm(flags) for name, (flags, _) in VARIANTS.items()}
    return ALFWORLD._replace(arm_flags={"mvpo": arm([]), **variants})


def settings(args: argparse.Namespace) -> dict[str, str]:
    """What the sweep's runs share beyond the learning study's settings, fingerprinted in
    ``BASE/settings.json`` (:func:`mvpo_train.study.paired.check_settings`)."""
    return {"form": args.form}


def run_form(base: Path) -> str | list[str | None] | None:
    """MVPO's form as the runs under ``base`` name it in their ``config.yaml``'s estimator
    kwargs: one form, or the sorted list when they differ (None: a run named none, so it ran
    the default form of its day)."""
    forms = {
        (read_config(run).get("estimator_kwargs") or {}).get("form")
        for run in sorted(base.glob("*-seed*"))
        if (run / "config.yaml").is_file()
    }
    return forms.pop() if len(forms) == 1 else sorted(forms, key=str) or None


def sweep_args(args: argparse.Namespace) -> argparse.Namespace:
    """The learning study's arguments for this sweep (study settings, train split only)."""
    env = study_env(args.form)
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
            eval_cmd(path, sp, e, study_env(args.form))
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


def rerun_line(table: dict, json_path: Path) -> str:
    """Why the JSON alone cannot rebuild today's page, and the commands that rerun its study
    (the page's commands with its runs' ``--form``), with their cost as the JSON records it."""
    # a JSON without settings predates --form: its runs used the form before the default change
    form = table.get("settings", {}).get("form", FORM_BEFORE_DEFAULT_CHANGE)
    cmds = [
        c if "--form" in c.split() else f"{c} --form {form}"
        for c in table.get("commands") or ["python benchmarks/ablations.py"]
    ]
    cmds = [f"`{c}`" for c in cmds]
    arms = table.get("arms", {}).values()
    runs = sum(len(r["seeds"]) for r in arms)
    minutes = sum(r["minutes"][0] * len(r["seeds"]) for r in arms if r.get("minutes"))
    return (
        f"--analyze-only: {json_path} has no {', '.join(RECOMPUTED)} (recomputed from the runs' "
        f'batch records, never committed); its runs used form="{form}": rerun the study with '
        f"{', then '.join(cmds)} ({runs} runs, ~{minutes:.0f} run-minutes at 1 thread, about "
        "3.5-4 CPU hours with the warm start and held-out tests), then --analyze-only"
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
    p.add_argument("--form", default=DEFAULT_FORM, choices=sorted(FORMS),
                   help="MVPO's form in every arm's estimator kwargs (default: %(default)s, "
                   "the estimator's default; the committed study: v1)")  # fmt: skip
    p.add_argument("--analyze-only", action="store_true", help="only rebuild the table and plot")
    p.add_argument("--out", default=str(RESULTS / "ablations.md"))
    args = p.parse_args(argv)
    args.argv = [a for a in argv if a != "--analyze-only"]
    if not args.analyze_only:
        base = Path(args.base)
        check_settings(base, settings(args), fingerprint(settings(args)), "ablations")
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
    table = saved_table(Path(args.out), args.analyze_only, Path(args.base))  # no runs here
    if table is not None and any(k not in r for r in table["arms"].values() for k in RECOMPUTED):
        raise AnalyzeOnlyError(rerun_line(table, Path(args.out).with_suffix(".json")))
    if table is None:
        table = analyse(Path(args.base), args.iterations, list(VARIANTS), splits, study)
        table["settings"] = {"form": run_form(Path(args.base))}
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
