"""Does a better-estimated potential help MVPO learn? The new potential options of
docs/estimators.md §3.11-§3.13 on the oracle-gain study's control task, against GRPO, GiGPO and
the MVPO paper's form at the same settings (docs/estimators.md, "The learning study").

The settings are EXACTLY the oracle-gain study's (``benchmarks/oracle_gain.py``, whose setting
flags are accepted here with the same defaults and make the same settings fingerprint), so its
GRPO, GiGPO, MVPO and MVPO-shuffled runs are reused, read from its committed archive
(``--reuse-archive``), else from ``--reuse-base`` (read only); a setting whose fingerprint
differs is refused in one line. The new arms (:func:`new_arms`: pooled, split, their
combination with TD and that combination shuffled) run in ``--base`` (default
``runs/potential-learning``) as the oracle-gain sweep runs its arms, seed by seed. The analysis
writes ``benchmarks/results/potential_learning.{md,json,png}`` (:mod:`mvpo_train.study.gain_pages`):
per arm the study's metrics with t-based and bootstrap intervals, the paired differences against
GiGPO and the paper's form, the estimator's seconds per iteration.

    python benchmarks/potential_learning.py --jobs 2      # the runs (resumable), then the tables
    python benchmarks/potential_learning.py --jobs 2 --analyze-only
    python benchmarks/potential_learning.py --cost 40     # the estimator's cost per batch
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import oracle_gain as og  # the study whose settings and runs this one shares (a sibling script)

from mvpo_train.study.estimator_cost import cost_lines, time_arms, uniform_batches
from mvpo_train.study.gain_pages import potential_learning_page
from mvpo_train.study.gain_results import potential_learning_results, write_results
from mvpo_train.study.gain_sweep import load_timed, seed_embedding_cache, sweep
from mvpo_train.study.page_command import with_page_command
from mvpo_train.study.paired import check_settings, json_clean
from mvpo_train.study.result_archive import load_carried
from mvpo_train.study.run_sets import rel_path
from mvpo_train.study.tables import add_sweep_flags, command_line, machine_line, setting_flags

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: the oracle-gain study's arms whose runs this study reads instead of running them
REUSED = ("grpo", "gigpo", "mvpo", "mvpo-shuffled")
#: the combination of the new options with the best measured alignment (docs/estimators.md §3.13)
COMBINATION = {
    "region_stats": "pooled",
    "potential_estimate": "td",
    "potential_split": "milestones",
}
#: the arms an arm is paired against: GiGPO (every arm) and the MVPO paper's form (MVPO's arms)
REFERENCES = ("gigpo", "mvpo")
WHO = "potential_learning"
DEFAULT_BASE = str(ROOT / "runs" / "potential-learning")


def new_arms() -> list[og.Arm]:
    """The arms this study runs (module docstring), in the order a seed runs them."""
    return [
        og.Arm("mvpo-pooled-td-split", "mvpo", dict(COMBINATION)),
        og.Arm("mvpo-pooled", "mvpo", {"region_stats": "pooled"}),
        og.Arm("mvpo-split", "mvpo", {"potential_split": "milestones"}),
        og.Arm(
            "mvpo-pooled-td-split-shuffled", "mvpo", {**COMBINATION, "repair_source": "shuffled"}
        ),
    ]


def reused_arms() -> list[og.Arm]:
    """The oracle-gain study's arms named in :data:`REUSED`."""
    return [a for a in og.arms() if a.name in REUSED]


# ------------------------------------------------------------------ running


def check_reuse(reuse: Path, settings: dict[str, Any]) -> None:
    """Exit with one line when ``reuse`` holds runs made with settings other than ``settings``
    (its ``settings.json``); a folder without one holds nothing to reuse and is not written."""
    if (Path(reuse) / "settings.json").is_file():
        check_settings(reuse, settings, og.fingerprint(settings), WHO)


def plan_runs(args: argparse.Namespace) -> list[tuple[og.Arm, int]]:
    """The new arms (those named by ``--arm``, all by default) seed by seed."""
    arm_list = [a for a in new_arms() if not args.arm or a.name in args.arm]
    return [(a, s) for s in args.seeds for a in arm_list]


# ------------------------------------------------------------------ estimator cost


def cost(args: argparse.Namespace) -> dict[str, Any]:
    """The estimator's milliseconds per batch of the paper's form and of each new arm on
    ``args.cost`` uniform-policy batches of the study's env and sizes, in order (the pools grow
    as in a run; :mod:`mvpo_train.study.estimator_cost`), written to ``<archive>/cost.json``."""
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the env ids)

    env_kwargs = {"difficulty": 1, "num_milestones": 4, "show_progress": args.show_progress}
    env = gym.make(og.ENV_ID, **env_kwargs, **og.env_options(args))
    batches = uniform_batches(env, args.cost, args.num_groups, args.group_size, 50)
    env.close()
    arms = {a.name: ("mvpo", a.kwargs) for a in [og.Arm("mvpo", "mvpo"), *new_arms()]}
    flags = ["--cost", str(args.cost)] + (
        ["--base", args.base] if args.base != DEFAULT_BASE else []
    )
    out = {"batches": args.cost, "command": command_line("benchmarks/potential_learning.py", flags),
           "arms": time_arms(batches, arms)}  # fmt: skip
    og.archive_dir(args).mkdir(parents=True, exist_ok=True)
    (og.archive_dir(args) / "cost.json").write_text(json.dumps(json_clean(out), indent=1) + "\n")
    return out


# ------------------------------------------------------------------ analysis


def load_all(args: argparse.Namespace) -> tuple[dict[str, dict[int, dict]], dict[str, str]]:
    """Per arm: seed -> compact result (with ``advantage_s``), the reused arms from the
    oracle-gain study's runs (its archive, else ``--reuse-base``) and the new ones from this
    study's (its archive, else ``--base``); and each arm's source. An arm with no run there is
    taken from this study's ``carried.json`` (:func:`analyze`)."""
    data: dict[str, dict[int, dict]] = {}
    source: dict[str, str] = {}
    studies = [(args.reuse_archive, args.reuse_base, reused_arms())]
    studies.append((og.archive_dir(args), args.base, new_arms()))
    for archive, base, arm_list in studies:
        names = [a.name for a in arm_list]
        runs_of = load_timed(Path(archive), Path(base), names, args.seeds, args.iterations)
        for name, runs in runs_of.items():
            data[name], source[name] = runs, rel_path(Path(archive), ROOT)
    return data, source


def analyze(args: argparse.Namespace) -> dict[str, Any]:
    """The tables of the finished runs (module docstring;
    :func:`mvpo_train.study.gain_results.potential_learning_results`), written to ``args.out``
    (.md, .json, .png); the results dict."""
    s = og.settings(args)
    data, source = load_all(args)
    carried = load_carried(og.archive_dir(args), og.fingerprint(s))
    results = potential_learning_results(
        reused_arms() + new_arms(), REUSED, data, source, carried, args.seeds, args.iterations,
        REFERENCES,
    )  # fmt: skip
    out = {
        "settings": {**s, "seeds": args.seeds, "fingerprint": og.fingerprint(s)},
        "reuse_base": rel_path(Path(args.reuse_base), ROOT),
        "reuse_archive": rel_path(Path(args.reuse_archive), ROOT),
        **results,
        "command": command_line("benchmarks/potential_learning.py", args.flags).rstrip(),
    }
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    machine = machine_line(out_path, args.analyze_only, f" (shared), {args.jobs} run(s) at a "
                           "time, 1 torch thread each")  # fmt: skip
    cost_file = og.archive_dir(args) / "cost.json"
    if cost_file.is_file():
        out["cost"] = json.loads(cost_file.read_text())
    md = potential_learning_page(out, machine, cost_lines(cost_file), REUSED)
    groups = [  # batch success: the reused arms; the new ones beside GiGPO and the paper's form
        ("oracle-gain study's runs (reused)", [n for n, a in out["arms"].items() if a["reused"]]),
        ("new potential options vs GiGPO and the paper's form",
         ["gigpo", "mvpo", *[n for n, a in out["arms"].items() if not a["reused"]]]),
    ]  # fmt: skip
    write_results(out, out_path, md, groups, (12, 4.5))
    return out


# ------------------------------------------------------------------ command line


def parse_args(argv: list[str]) -> argparse.Namespace:
    """This study's flags; every other flag is one of ``benchmarks/oracle_gain.py``'s setting
    flags (``--seeds``, ``--iterations``, ``--lr``, ...), parsed by it with its defaults, so
    the settings are the oracle-gain study's unless a flag changes them."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Setting flags (as benchmarks/oracle_gain.py, same defaults): --seeds, "
        "--iterations, --num-groups, --group-size, --lr, --ppo-epochs, --eval-episodes, "
        "--no-show-progress, --num-tasks, --[no-]show-route.",
    )
    p.add_argument("--arm", action="append", default=None, choices=[a.name for a in new_arms()],
                   help="run only these new arms (default: all)")  # fmt: skip
    add_sweep_flags(
        p, DEFAULT_BASE, str(RESULTS / "potential_learning.md"), "the new arms' run folder"
    )
    p.add_argument("--reuse-base", default=str(ROOT / "runs" / "oracle-gain-route"),
                   help="the oracle-gain study's run folder, read only: the runs of "
                   f"{', '.join(REUSED)} and the settings fingerprint they must match")  # fmt: skip
    p.add_argument("--reuse-archive", default=str(RESULTS / "oracle_gain_runs"),
                   help="the oracle-gain study's committed per-run results")  # fmt: skip
    p.add_argument("--cost", type=int, default=0, metavar="BATCHES",
                   help="only measure the estimator's cost on this many batches (<archive>/cost.json; "
                   "no runs)")  # fmt: skip
    mine, rest = p.parse_known_args(argv)
    args = og.parse_args(rest)
    for key, value in vars(mine).items():
        setattr(args, key, value)
    args.flags = setting_flags(argv)
    return args


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    page = Path(parse_args(argv).out).with_suffix(".md")
    args = parse_args(with_page_command(argv, page, "benchmarks/potential_learning.py", WHO))
    check_reuse(Path(args.reuse_base), og.settings(args))
    if args.cost:
        cost(args)
        print("\n".join(cost_lines(og.archive_dir(args) / "cost.json")))
        return
    if not args.analyze_only:
        after = (lambda: analyze(args)) if args.analyze_every else None
        cache = lambda: seed_embedding_cache(Path(args.reuse_base), Path(args.base))  # noqa: E731
        command = lambda p, a, s: og.train_cmd(p, a, s, args)  # noqa: E731
        sweep(og.spec(args, WHO), plan_runs(args), command, args.jobs, after, cache)
    out = analyze(args)
    print(f"{WHO}: wrote {args.out} ({out['progress']['runs_done']} runs)")


if __name__ == "__main__":
    main()
