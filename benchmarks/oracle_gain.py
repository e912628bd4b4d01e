"""Does an aligned potential speed learning? MVPO's repair driven by an oracle at controlled
alignment, with negative and positive controls, on the control task (docs/alignment.md, "The
oracle-gain study": the arms, the settings, the archive and what the page shows).

One resumable sweep of ``mvpo-train`` runs, :func:`arms` x ``--seeds``, in ``--base`` (default
``runs/oracle-gain-route``, git-ignored; :mod:`mvpo_train.study.gain_sweep`): a finished run is
skipped, an interrupted one resumes from its checkpoint, a settings fingerprint refuses a
changed setting. Each finished run's compact result goes to ``--archive`` (default
``benchmarks/results/oracle_gain_runs/``, committed; the runs before it existed are carried in
its ``carried.json``), from which the tables are built: ``benchmarks/results/oracle_gain.{md,json,png}``.

    python benchmarks/oracle_gain.py --jobs 2                 # the sweep, then the tables
    python benchmarks/oracle_gain.py --jobs 2 --analyze-only  # tables and plot only

The first setting (``show_route`` off, whose first check failed;
benchmarks/results/oracle_gain_show_progress.md): ``--no-show-route --base runs/oracle-gain
--out benchmarks/results/oracle_gain_show_progress.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mvpo_train.study.gain_pages import oracle_gain_machine, oracle_gain_page
from mvpo_train.study.gain_results import oracle_gain_results, write_results
from mvpo_train.study.gain_sweep import GainArm as Arm
from mvpo_train.study.gain_sweep import Sweep, load, sweep
from mvpo_train.study.page_command import with_page_command
from mvpo_train.study.paired import check_settings as record_settings
from mvpo_train.study.result_archive import load_carried
from mvpo_train.study.runs import fingerprint as full_fingerprint
from mvpo_train.study.runs import train_cmd as run_cmd
from mvpo_train.study.saved_page import saved_table
from mvpo_train.study.tables import add_sweep_flags, setting_flags

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV_ID = "mvpo/MilestoneChain-v0"
MAIN_RHOS = (0.0, 0.25, 0.5, 0.75, 1.0)


def _oracle(rho: float, **kw: Any) -> dict[str, Any]:
    return {"repair_source": "oracle", "oracle_rho": rho, **kw}


def arms() -> list[Arm]:
    """The arms of the sweep, main arms first (module docstring)."""
    out = [
        Arm("grpo", "grpo"),
        Arm("gigpo", "gigpo"),
        Arm("mvpo", "mvpo"),
        Arm("mvpo-shuffled", "mvpo", {"repair_source": "shuffled"}),
        *[Arm(f"oracle-r{r:g}", "mvpo", _oracle(r)) for r in MAIN_RHOS],
        Arm("positive", "mvpo", {"repair_source": "positive"}),
    ]
    for d in (0, 2):
        out.append(Arm(f"gigpo-d{d}", "gigpo", difficulty=d, axis="zero-credit"))
        for r in (0.0, 1.0):
            out.append(Arm(f"oracle-r{r:g}-d{d}", "mvpo", _oracle(r), d, "zero-credit"))
    for r in (0.5, 1.0):
        for k in (0.1, 0.3, 1.0):
            kw = _oracle(r, kappa_schedule="constant", kappa_constant=k)
            out.append(Arm(f"oracle-r{r:g}-k{k:g}", "mvpo", kw, axis="strength"))
    return out


def reference(arm: Arm) -> str:
    """The GiGPO arm an arm is paired with: GiGPO at the arm's difficulty."""
    return "gigpo" if arm.difficulty == 1 else f"gigpo-d{arm.difficulty}"


# ------------------------------------------------------------------ running


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Everything a run's numbers depend on besides the arm and the seed (the fingerprint)."""
    return {
        "env_id": ENV_ID, "num_milestones": 4, "show_progress": args.show_progress,
        "num_groups": args.num_groups, "group_size": args.group_size, "max_steps": 50,
        "iterations": args.iterations, "lr": args.lr, "ppo_epochs": args.ppo_epochs,
        "policy": "encoder", "model": "fresh", "eval_episodes": args.eval_episodes,
        **env_options(args),
    }  # fmt: skip


def env_options(args: argparse.Namespace) -> dict[str, Any]:
    """The env keywords beyond difficulty, K and ``show_progress`` that a run passes.

    Only the options that are on: a setting without them has the fingerprint it had before they
    existed (so the runs of that setting still resume), and one with them never mixes with it.
    """
    out: dict[str, Any] = {}
    if args.num_tasks is not None:
        out["num_tasks"] = args.num_tasks
    if args.show_route:
        out["show_route"] = True
    return out


def fingerprint(s: dict[str, Any]) -> str:
    """The settings' fingerprint (:func:`mvpo_train.study.runs.fingerprint`), 16 digits."""
    return full_fingerprint(s)[:16]


def check_settings(base: Path, s: dict[str, Any]) -> None:
    """Record the settings of ``base`` on first use; refuse a changed setting after that."""
    record_settings(base, s, fingerprint(s), "oracle_gain")


def archive_dir(args: argparse.Namespace) -> Path:
    """The committed per-run results (``--archive``; default: ``<out stem>_runs`` beside
    ``--out``)."""
    if args.archive:
        return Path(args.archive)
    out = Path(args.out)
    return out.with_name(out.stem + "_runs")


def spec(args: argparse.Namespace, who: str = "oracle_gain") -> Sweep:
    """Where the sweep of ``args`` runs, its archive and its settings."""
    s = settings(args)
    return Sweep(Path(args.base), archive_dir(args), s, fingerprint(s), args.iterations, who)


def train_cmd(path: Path, arm: Arm, seed: int, args: argparse.Namespace) -> list[str]:
    """The ``mvpo-train`` command of one run (:func:`mvpo_train.study.runs.train_cmd`: resumed
    from its latest complete checkpoint, or started over)."""
    env_kwargs = {"difficulty": arm.difficulty, "num_milestones": 4}
    if args.show_progress:
        env_kwargs["show_progress"] = True
    env_kwargs.update(env_options(args))
    before = [
        "--env-id", ENV_ID, "--env-kwargs", json.dumps(env_kwargs), "--tasks", "[]",
        "--max-steps", "50", "--policy", "encoder", "--model", "fresh",
        "--num-groups", str(args.num_groups), "--group-size", str(args.group_size),
        "--ppo-epochs", str(args.ppo_epochs), "--lr", str(args.lr), "--estimator", arm.estimator,
    ]  # fmt: skip
    after = [
        "--embedding-cache", str(Path(args.base) / "embeddings.npz"), "--eval-split", "eval",
        "--eval-every", str(args.iterations), "--no-eval-greedy",
        "--eval-episodes", str(args.eval_episodes),
    ]  # fmt: skip
    if arm.kwargs:
        after += ["--estimator-kwargs", json.dumps(arm.kwargs, sort_keys=True)]
    return run_cmd(path, seed, args.iterations, before, after)


# ------------------------------------------------------------------ analysis


def analyze(args: argparse.Namespace) -> dict[str, Any]:
    """The tables of the finished runs (:func:`mvpo_train.study.gain_results.oracle_gain_results`),
    written to ``args.out`` (.json, .md, .png); the results dict."""
    arm_list = arms()
    names = [a.name for a in arm_list]
    data = load(archive_dir(args), Path(args.base), names, args.seeds, args.iterations)
    carried = load_carried(archive_dir(args), fingerprint(settings(args)))
    results = oracle_gain_results(
        arm_list, data, carried, args.seeds, args.iterations, reference, MAIN_RHOS
    )
    out = {
        "settings": {**settings(args), "seeds": args.seeds, "fingerprint": fingerprint(settings(args))},
        **results,
        "command": "python benchmarks/oracle_gain.py" + (" " + " ".join(args.flags) if args.flags else ""),
    }  # fmt: skip
    write_pages(out, args)
    return out


def write_pages(out: dict[str, Any], args: argparse.Namespace, keep_json: bool = True) -> None:
    """The JSON (unless not ``keep_json``), page and figure of the results ``out``."""
    out_path = Path(args.out)
    png, archive = out_path.with_suffix(".png").name, archive_dir(args).name
    machine = oracle_gain_machine(out_path.with_suffix(".md"), args.analyze_only, args.jobs)
    groups = [
        ("difficulty 1: baselines and controls",
         ["grpo", "gigpo", "mvpo", "mvpo-shuffled", "positive"]),
        ("difficulty 1: oracle repair by rho", ["gigpo"] + [f"oracle-r{r:g}" for r in MAIN_RHOS]),
        ("zero-credit and strength axes",
         [n for n, a in out["arms"].items() if a["axis"] != "main"]),
    ]  # fmt: skip
    page = oracle_gain_page(out, machine, png, archive)
    write_results(out, out_path, page, groups, (16, 4.5), keep_json)


# ------------------------------------------------------------------ command line


#: the order of the main arms within a seed: the controls and the ends of the rho axis first,
#: so that a partial sweep answers the first questions (can this policy learn with exact step
#: credit? does rho = 1 help over GiGPO?) before the middle of the curve
MAIN_ORDER = ("positive", "gigpo", "oracle-r1", "oracle-r0", "grpo", "mvpo", "mvpo-shuffled",
              "oracle-r0.5", "oracle-r0.25", "oracle-r0.75")  # fmt: skip


def plan_runs(args: argparse.Namespace) -> list[tuple[Arm, int]]:
    """Main arms seed by seed first (in :data:`MAIN_ORDER`), then the axes seed by seed."""
    arm_list = [a for a in arms() if not args.arm or a.name in args.arm]
    main = sorted((a for a in arm_list if a.axis == "main"), key=lambda a: MAIN_ORDER.index(a.name))
    rest = [a for a in arm_list if a.axis != "main"]
    return [(a, s) for s in args.seeds for a in main] + [(a, s) for s in args.seeds for a in rest]


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line (``args.flags``: the flags that name the setting, for the results)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument("--num-groups", type=int, default=8, help="layouts per iteration")
    p.add_argument("--group-size", type=int, default=8, help="rollouts per layout")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--ppo-epochs", type=int, default=2)
    p.add_argument("--eval-episodes", type=int, default=2, help="held-out episodes per layout")
    p.add_argument("--no-show-progress", dest="show_progress", action="store_false",
                   help="the task as it is by default (progress not observable)")  # fmt: skip
    p.add_argument("--num-tasks", type=int, default=None,
                   help="layouts per split (the env's num_tasks; default: all, 128 train and "
                   "64 eval): the train layouts drawn from, and the held-out ones")  # fmt: skip
    p.add_argument("--show-route", action=argparse.BooleanOptionalAction, default=True,
                   help="the env's show_route: every observation names the next optimal "
                   "action (default: on; --no-show-route: the first setting, whose first "
                   "check failed)")  # fmt: skip
    p.add_argument("--arm", action="append", default=None, help="run only these arms")
    add_sweep_flags(p, str(ROOT / "runs" / "oracle-gain-route"), str(RESULTS / "oracle_gain.md"),
                    "run folder (the first setting's runs: runs/oracle-gain)")  # fmt: skip
    p.add_argument("--archive", default=None,
                   help="committed per-run results (default: <out stem>_runs/ beside --out)")  # fmt: skip
    args = p.parse_args(argv)
    args.flags = setting_flags(argv)
    return args


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    page = Path(parse_args(argv).out).with_suffix(".md")
    args = parse_args(with_page_command(argv, page, "benchmarks/oracle_gain.py", "oracle_gain"))
    if not args.analyze_only:
        after = (lambda: analyze(args)) if args.analyze_every else None
        sweep(
            spec(args), plan_runs(args), lambda p, a, s: train_cmd(p, a, s, args), args.jobs, after
        )
    if args.analyze_only and not archive_dir(args).is_dir():  # no committed per-run results
        saved = saved_table(Path(args.out), True, Path(args.base))
        if saved is not None:  # nor the run folders: the page from its committed JSON
            write_pages(saved, args, keep_json=False)
            return
    out = analyze(args)
    print(f"oracle_gain: wrote {args.out} ({out['progress']['runs_done']} runs)")


if __name__ == "__main__":
    main()
