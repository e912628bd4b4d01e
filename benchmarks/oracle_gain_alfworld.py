"""The oracle-gain study on ALFWorld at one setting (docs/alignment.md, "The oracle-gain study on
ALFWorld": the arms, the setting and the held-out evaluation): does MVPO's repair, driven by the
exact plan-length oracle, speed learning where the ALFWorld study learned?

Five arms (:data:`ARMS`), paired by seed, in the ``cpu-showcase`` setting (:func:`settings`):
GiGPO and the oracle repair at rho 0 and 1 (the question), and two controls that say what limits
rho = 1 if it does not help: the same aligned repair at the spread of GiGPO's credit
(``oracle_scale="credit"``: magnitude) and exact oracle step credit on every row (the positive
control: what this policy and optimiser reach with it).
Runs go to ``--base`` (``<base>/<arm>-seed<k>/``, :mod:`mvpo_train.study.runs`): a finished run
is skipped, an interrupted one resumes, ``<base>/settings.json`` refuses a changed setting.
Every finished run's compact files are copied into ``--archive`` (committed;
:mod:`mvpo_train.study.archive`), which every call first imports into ``--base``. Results:
``benchmarks/results/oracle_gain_alfworld.{md,json}``.

    python benchmarks/oracle_gain_alfworld.py --size       # CPU cost of one run, the estimate
    python benchmarks/oracle_gain_alfworld.py              # the runs (resumable), then the tables
    python benchmarks/oracle_gain_alfworld.py --analyze-only

``--size`` measures 2 iterations of the ``oracle-r1`` arm (process CPU seconds, one torch
thread, split by ``benchmarks/cpu_cost.py --worker``) and a held-out evaluation of
``--size-eval-games`` games in a scratch folder, and writes the estimate into the results.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.records import find_records
from mvpo_train.study import cost_estimate
from mvpo_train.study.archive import copy_compact, import_
from mvpo_train.study.gain_pages import one_setting_page
from mvpo_train.study.gain_sweep import FINAL
from mvpo_train.study.gain_table import pair_cells, seed_cells
from mvpo_train.study.paired import SEEDS, check_settings, json_clean
from mvpo_train.study.repair_magnitude import repair_magnitude
from mvpo_train.study.routing_tables import (
    magnitude_lines,
    mean_or_nan,
    mechanism,
    mechanism_lines,
)
from mvpo_train.study.runs import (
    eval_file,
    fingerprint,
    load_runs,
    n_metrics,
    pending_runs,
    python_entry,
    read_eval,
    resume_flag,
    run_dir,
    run_local,
)
from mvpo_train.study.tables import command_line, machine_line

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV_ID = "mvpo/ALFWorld-v0"
ENV_KWARGS = {"num_games": "full", "progress_oracle": True}
HELDOUT = "valid_unseen"
REFERENCE = "gigpo"
#: arm -> (estimator, estimator keywords)
ARMS: dict[str, tuple[str, dict[str, Any]]] = {
    "gigpo": ("gigpo", {}),
    "oracle-r0": ("mvpo", {"repair_source": "oracle", "oracle_rho": 0.0}),
    "oracle-r1": ("mvpo", {"repair_source": "oracle", "oracle_rho": 1.0}),
    "oracle-r1-credit": (
        "mvpo",
        {"repair_source": "oracle", "oracle_rho": 1.0, "oracle_scale": "credit"},
    ),
    "positive": ("mvpo", {"repair_source": "positive"}),
}
METRICS = ("area", "final", "heldout")


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Everything a run's numbers depend on besides the arm and the seed (the fingerprint)."""
    return {
        "env_id": ENV_ID, "preset": "cpu-showcase", "env_kwargs": ENV_KWARGS,
        "iterations": args.iterations, "lr": args.lr, "kl_coef": args.kl_coef,
        "ppo_epochs": args.ppo_epochs, "heldout_split": HELDOUT,
        "final_episodes": args.final_episodes, "eval_seed": 0,
    }  # fmt: skip


def train_argv(path: Path, arm: str, seed: int, args: argparse.Namespace, iterations: int) -> list:
    """The ``mvpo-train`` flags of one run (the preset holds the policy, the warm start, the
    history, 16 x 8 x 50 and the held-out split)."""
    estimator, kwargs = ARMS[arm]
    argv = [
        "--preset", "cpu-showcase", "--env-kwargs", json.dumps(ENV_KWARGS),
        "--estimator", estimator, "--lr", str(args.lr), "--kl-coef", str(args.kl_coef),
        "--ppo-epochs", str(args.ppo_epochs), "--iterations", str(iterations),
        "--seed", str(seed), "--run-dir", str(path), "--threads", "1", "--no-progress",
        "--no-tensorboard", "--save-every", "5", "--eval-every", "0",
        "--embedding-cache", str(Path(args.base) / "embeddings.npz"),
        # MiniLM one text per pass, as the study's first runs had it (before pad8xdyn)
        "--embedding-batching", "rows1",
    ]  # fmt: skip
    if kwargs:
        argv += ["--estimator-kwargs", json.dumps(kwargs, sort_keys=True)]
    return argv


def eval_argv(path: Path, episodes: int, max_tasks: int = 0) -> list[str]:
    """The ``mvpo-eval`` flags of a run's held-out evaluation (every game unless ``max_tasks``)."""
    argv = ["--run-dir", str(path), "--split", HELDOUT, "--episodes", str(episodes), "--sampled",
            "--seed", "0", "--threads", "1", "--no-progress", "--out", str(eval_file(path, HELDOUT))]  # fmt: skip
    return argv + (["--max-tasks", str(max_tasks)] if max_tasks else [])


def check(args: argparse.Namespace, folder: Path) -> None:
    """Record this study's settings in ``folder`` on first use; refuse others after that."""
    check_settings(folder, settings(args), fingerprint(settings(args)), "oracle_gain_alfworld")


def restore(args: argparse.Namespace) -> None:
    """Import the committed archive's runs into ``--base`` (a run already there is kept), after
    checking that the archive was made with this study's settings."""
    archive = Path(args.archive)
    if archive.is_dir():
        check(args, archive)
        import_(archive, Path(args.base))


def archive_finished(args: argparse.Namespace) -> int:
    """Copy the compact files of every finished run (all iterations and the held-out
    evaluation) into ``--archive``; the count."""
    check(args, Path(args.archive))
    runs = [run_dir(Path(args.base), arm, seed) for seed in args.seeds for arm in args.arms]
    done = [p for p in runs if n_metrics(p) >= args.iterations and eval_file(p, HELDOUT).is_file()]
    return copy_compact(done, Path(args.archive))


def run_all(args: argparse.Namespace) -> None:
    """Train and evaluate every (arm, seed) not finished yet, seed by seed; archive the
    finished ones."""
    check(args, Path(args.base))

    def commands(path: Path, arm: str, seed: int) -> list[list[str]]:
        cmds = []
        if n_metrics(path) < args.iterations:
            argv = train_argv(path, arm, seed, args, args.iterations) + resume_flag(path)
            cmds.append([*python_entry("train_main"), *argv])
        if not eval_file(path, HELDOUT).is_file():
            cmds.append([*python_entry("eval_main"), *eval_argv(path, args.final_episodes)])
        return cmds

    failed = run_local(
        pending_runs(Path(args.base), args.arms, args.seeds, commands), args.jobs, ROOT
    )
    archive_finished(args)
    if failed:
        print(f"oracle_gain_alfworld: failed: {failed} (see their train.log)", flush=True)


# ------------------------------------------------------------------ sizing


def size(args: argparse.Namespace) -> dict[str, Any]:
    """CPU seconds of 2 iterations of ``oracle-r1`` and of a small held-out evaluation (module
    docstring), and the estimate of the whole study."""
    load_start = os.getloadavg()[0]
    scratch = Path(args.size_base)
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    path = run_dir(scratch, "oracle-r1", 0)
    sized = argparse.Namespace(**{**vars(args), "base": str(scratch)})
    worker = scratch / "train-cpu.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "cpu_cost.py"), "--worker", str(worker),
           "--", *train_argv(path, "oracle-r1", 0, sized, 2)]  # fmt: skip
    evaluate = [*python_entry("eval_main"), *eval_argv(path, 1, args.size_eval_games)]
    w, eval_cpu = cost_estimate.measure(cmd, worker, evaluate, ROOT, "oracle_gain_alfworld")
    episodes = int(json.loads(eval_file(path, HELDOUT).read_text())["episodes"])
    sizes = (len(ARMS) * len(args.seeds), args.iterations, args.final_episodes)
    return {
        "command": command_line("benchmarks/oracle_gain_alfworld.py", ["--size"]),
        **cost_estimate.sized(w, eval_cpu, episodes, _heldout_games(), *sizes),
        "load_avg": [load_start, os.getloadavg()[0]], "cpus": os.cpu_count(),
    }  # fmt: skip


def prior_estimate(args: argparse.Namespace) -> dict[str, Any] | None:
    """The cost of the study from committed measurements of the same preset, before ``--size``
    (:func:`mvpo_train.study.cost_estimate.prior`): benchmarks/results/cpu_cost.json
    (``study/after/cold``: setup and one iteration with an empty embedding cache, ``--preset
    cpu-showcase --estimator mvpo``, without the oracle) and benchmarks/results/learning_full.json
    (the study's MVPO arm: minutes per 60-iteration run, two runs at a time on 2 cores, its
    held-out evaluations included). None without them."""
    try:
        cold = json.loads((RESULTS / "cpu_cost.json").read_text())["study/after/cold"]
        study = json.loads((RESULTS / "learning_full.json").read_text())
        sizes = (len(ARMS) * len(args.seeds), args.iterations, args.final_episodes)
        return cost_estimate.prior(cold, study, HELDOUT, *sizes)
    except (OSError, KeyError, ValueError):
        return None


def _heldout_games() -> int:
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the env ids)

    env = gym.make(ENV_ID, split=HELDOUT, num_games="full")
    try:
        return len(env.unwrapped.games)
    finally:
        env.close()


# ------------------------------------------------------------------ analysis


def analyze(args: argparse.Namespace, sizing: dict[str, Any] | None) -> dict[str, Any]:
    base = Path(args.base)
    data = load_runs(base, args.arms, args.seeds, args.iterations)
    per: dict[str, dict[int, dict[str, float]]] = {}
    arms_out: dict[str, Any] = {}
    for arm, runs in data.items():
        per[arm] = {s: _per_run(rows, run_dir(base, arm, s)) for s, rows in runs.items()}
        if not per[arm]:
            continue
        seeds = sorted(per[arm])
        estimator, kwargs = ARMS[arm]
        arms_out[arm] = {
            "estimator": estimator, "kwargs": kwargs, "rho": kwargs.get("oracle_rho"),
            "seeds": seeds, **seed_cells([per[arm][s] for s in seeds], METRICS),
            "auc": mean_or_nan([per[arm][s]["auc"] for s in seeds]),
            "curve": np.mean([[r["success"] for r in runs[s]] for s in seeds], axis=0).tolist(),
            "mechanism": mechanism(runs),
        }  # fmt: skip
    pairs = {}
    for arm in arms_out:
        cells = pair_cells(per, arm, REFERENCE, METRICS)
        if arm != REFERENCE and cells:
            pairs[f"{arm} - {REFERENCE}"] = cells
    # alignment alone: the same routing, kappa and magnitude, exact against random
    if {"oracle-r1", "oracle-r0"} <= set(arms_out):
        if cells := pair_cells(per, "oracle-r1", "oracle-r0", METRICS):
            pairs["oracle-r1 - oracle-r0"] = cells
    done = sum(len(v) for v in per.values())
    return {
        "settings": {**settings(args), "seeds": args.seeds, "fingerprint": fingerprint(settings(args))},
        "progress": {"runs_done": done, "runs_planned": len(args.arms) * len(args.seeds)},
        "arms": arms_out, "pairs": pairs, "sizing": sizing, "prior_estimate": prior_estimate(args),
        "command": command_line("benchmarks/oracle_gain_alfworld.py", args.flags).rstrip(),
    }  # fmt: skip


def magnitude(args: argparse.Namespace) -> dict[str, dict[str, dict[str, float]]]:
    """:func:`~mvpo_train.study.repair_magnitude.repair_magnitude` of every finished oracle
    arm's run (held-out result written) in ``--base`` that kept its batch records: arm -> seed
    -> numbers."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for arm in args.arms:
        if ARMS[arm][0] != "mvpo":
            continue
        for seed in args.seeds:
            path = run_dir(Path(args.base), arm, seed)
            if read_eval(path, HELDOUT) is not None and find_records(path):
                out.setdefault(arm, {})[str(seed)] = repair_magnitude(path)
    return out


def _per_run(rows: list[dict], path: Path) -> dict[str, float]:
    succ = np.asarray([float(r["success"]) for r in rows])
    heldout = read_eval(path, HELDOUT)
    return {
        "area": float(succ.mean()),
        "final": float(succ[-FINAL:].mean()),
        "heldout": float("nan") if heldout is None else heldout,
        "auc": mean_or_nan([r.get("align/auc") for r in rows]),
    }


def head_lines(out: dict[str, Any], machine: str) -> list[str]:
    """The page's title, command, ``machine`` line and settings."""
    st = out["settings"]
    return [
        "# Oracle-gain study on ALFWorld: the oracle repair at rho 0 and 1 against GiGPO, "
        "with two controls",
        "",
        f"Command: `{out['command']}` (tables only: add `--analyze-only`).",
        machine,
        "",
        "Settings (every arm): `--preset cpu-showcase` (the ALFWorld study's MVPO arm: encoder "
        "policy, history-aware head `--history-length 2`, warm start `alfworld-encoder-warm`, "
        f"16 tasks x 8 rollouts x 50 steps), `--env-kwargs '{json.dumps(st['env_kwargs'])}'` (the "
        f"full train split, plan lengths in the infos), lr {st['lr']}, KL {st['kl_coef']}, "
        f"{st['ppo_epochs']} PPO epochs, {st['iterations']} iterations, MiniLM one text per "
        f"pass (`--embedding-batching rows1`), seeds {st[SEEDS]}, "
        f"paired by seed; held-out: the final checkpoint on `{st['heldout_split']}`, sampled, "
        f"seed 0, every game x {st['final_episodes']} episode(s). Arms: GiGPO; MVPO with "
        '`{"repair_source": "oracle", "oracle_rho": 0}` and `... 1`; the controls '
        "`oracle-r1-credit` (`rho = 1` at the spread of GiGPO's non-zero advantage, "
        '`"oracle_scale": "credit"`: magnitude) and `positive` (exact oracle step credit on '
        "every row: what the policy and optimiser reach with it) (docs/alignment.md).",
        "",
    ]


def write(out: dict[str, Any], path: Path, analyze_only: bool, jobs: int) -> None:
    """The markdown and the JSON beside it."""
    detail = f" (shared), {jobs} run(s) at a time, 1 torch thread each"
    md = one_setting_page(out, head_lines(out, machine_line(path, analyze_only, detail)), FINAL)
    command = "python benchmarks/oracle_gain_alfworld.py --jobs 2 --magnitude"
    md += "\n".join([*mechanism_lines(out), *magnitude_lines(out.get("magnitude"), command)]) + "\n"
    path.write_text(md)
    path.with_suffix(".json").write_text(json.dumps(json_clean(out), indent=1) + "\n")
    print(md)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--lr", type=float, default=3e-4, help="every arm's (the study's MVPO arm's)")
    p.add_argument("--kl-coef", type=float, default=0.05, help="every arm's KL coefficient")
    p.add_argument("--ppo-epochs", type=int, default=2)
    p.add_argument("--final-episodes", type=int, default=4,
                   help="held-out episodes per valid_unseen game (the ALFWorld study's 4)")  # fmt: skip
    p.add_argument("--jobs", type=int, default=1, help="runs at a time (1 thread each)")
    p.add_argument("--base", default=str(ROOT / "runs" / "oracle-gain-alfworld"))
    p.add_argument("--out", default=str(RESULTS / "oracle_gain_alfworld.md"))
    p.add_argument("--archive", default=str(RESULTS / "oracle_gain_alfworld_runs"),
                   help="committed compact results of the finished runs")  # fmt: skip
    p.add_argument("--analyze-only", action="store_true", help="only rewrite the tables")
    p.add_argument("--size", action="store_true", help="measure the cost, write the estimate")
    p.add_argument("--magnitude", action="store_true",
                   help="read the repair's magnitude from the runs' batch records")  # fmt: skip
    p.add_argument("--size-base", default=str(ROOT / "runs" / "oracle-gain-alfworld-size"))
    p.add_argument("--size-eval-games", type=int, default=16)
    args = p.parse_args(argv)
    args.flags = [a for a in argv if a not in ("--analyze-only", "--size", "--magnitude")]
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out_path = Path(args.out)
    old = out_path.with_suffix(".json")
    saved = json.loads(old.read_text()) if old.is_file() else {}
    sizing, found = saved.get("sizing"), saved.get("magnitude")
    if not args.size:
        restore(args)
    if args.size:
        sizing = size(args)
    elif not (args.analyze_only or args.magnitude):
        run_all(args)
    else:
        archive_finished(args)  # runs finished since the last call (an interrupted sweep)
    if args.magnitude:
        found = magnitude(args)
    out = {**analyze(args, sizing), **({"magnitude": found} if found else {})}
    write(out, out_path, args.analyze_only or args.size or args.magnitude, args.jobs)


if __name__ == "__main__":
    main()
