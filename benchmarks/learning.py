"""Learning benchmark: GRPO vs GiGPO vs MVPO with the tiny CPU policy on ALFWorld mini.

Every estimator trains with the same ``cpu-tiny`` configuration (same env
split, same model, same hyper-parameters) on the same seeds; only ``--estimator`` differs.
Reported per estimator (mean +- std over seeds):

* training success per iteration (the rollout batch's success rate), and its curve;
* iterations to reach a success threshold (first iteration whose 3-iteration moving average
  of batch success reaches ``--threshold``; "not reached" counts as the run's length);
* the zero-credit ratio early in training (mean over the first 5 iterations): the share of
  rows in step groups whose returns do not vary (docs/estimators.md §2/§3.7);
* final success (mean over the last 5 iterations) and greedy success on the eval split at
  the end (``mvpo-eval`` on the last checkpoint).

Run from the repository root (two runs at a time on a 2-core machine, ~30-60 min)::

    python benchmarks/learning.py                 # writes benchmarks/results/learning.{md,png}
    python benchmarks/learning.py --quick         # 1 seed, few iterations (smoke test)

Runs go to ``runs/benchmark-learning/<estimator>-seed<k>/``; an existing complete run is
reused (``--fresh`` retrains), so an interrupted benchmark continues where it stopped.

On Ray (docs/scaling.md, "Sweeps on Ray"), one Ray task per run, results gathered as above::

    python benchmarks/learning.py --ray           # a local Ray instance of --jobs CPUs
    python benchmarks/learning.py --ray auto      # the cluster this node belongs to
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ESTIMATORS = ("grpo", "gigpo", "mvpo")


def run_dir(base: Path, estimator: str, seed: int) -> Path:
    return base / f"{estimator}-seed{seed}"


def complete(path: Path, iterations: int) -> bool:
    f = path / "metrics.jsonl"
    return f.is_file() and sum(1 for _ in f.open()) >= iterations


def train_cmd(path: Path, estimator: str, seed: int, args: argparse.Namespace) -> list[str]:
    cmd = [
        sys.executable, "-c", "from mvpo_train.cli import train_main; train_main()",
        "--preset", "cpu-tiny", "--estimator", estimator, "--seed", str(seed),
        "--iterations", str(args.iterations), "--run-dir", str(path), "--threads", "1",
        "--no-progress", "--no-tensorboard", "--save-every", "5",
    ]  # fmt: skip
    # an interrupted run resumes from its checkpoint; a run folder without one starts over
    if (path / "checkpoints" / "LATEST").is_file():
        cmd.append("--resume")
    elif path.exists() and any(path.iterdir()):
        cmd.append("--overwrite")
    return cmd + list(args.extra)


def eval_cmd(path: Path, args: argparse.Namespace) -> list[str]:
    return [
        sys.executable, "-c", "from mvpo_train.cli import eval_main; eval_main()",
        "--run-dir", str(path), "--out", str(path / "eval.json"), "--seed", "0",
    ]  # fmt: skip


def run_all(args: argparse.Namespace, base: Path) -> None:
    """Train (and evaluate) every (estimator, seed) pair not finished yet.

    Locally ``--jobs`` processes at a time, or with ``--ray`` one Ray task per run.
    """
    jobs = [(e, s) for s in args.seeds for e in args.estimators]
    pending = []
    for est, seed in jobs:
        path = run_dir(base, est, seed)
        if args.fresh and path.exists():
            import shutil

            shutil.rmtree(path)
        if complete(path, args.iterations) and (not args.eval or (path / "eval.json").is_file()):
            continue
        cmds = [train_cmd(path, est, seed, args)] + ([eval_cmd(path, args)] if args.eval else [])
        script = " && ".join(" ".join(_quote(x) for x in cmd) for cmd in cmds)
        pending.append((f"{est}-seed{seed}", path, script))
    if args.ray is not None:
        _run_ray(pending, args)
    else:
        _run_local(pending, args)


_RUN_ENV = {"PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}


def _status(rc: int, path: Path) -> str:
    return "ok" if rc == 0 else f"FAILED ({rc}, see {path}/train.log)"


def _run_local(pending: list[tuple[str, Path, str]], args: argparse.Namespace) -> None:
    running: list[tuple[subprocess.Popen, str, Path, float]] = []
    env = {**os.environ, **_RUN_ENV}
    pending = list(pending)
    while pending or running:
        while pending and len(running) < args.jobs:
            name, path, script = pending.pop(0)
            path.mkdir(parents=True, exist_ok=True)
            log = open(path / "train.log", "a")
            proc = subprocess.Popen(
                ["bash", "-c", script], stdout=log, stderr=log, cwd=ROOT, env=env
            )
            running.append((proc, name, path, time.time()))
            print(f"[start] {name}", flush=True)
        time.sleep(0.5)
        for item in list(running):
            proc, name, path, t0 = item
            if proc.poll() is not None:
                running.remove(item)
                status = _status(proc.returncode, path)
                print(f"[done]  {name} in {time.time() - t0:.0f} s: {status}", flush=True)


def run_in_task(script: str, cwd: str, log: str) -> int:
    """Body of one Ray task: the run's shell script, logged like a local run; its exit code."""
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:
        env = {**os.environ, **_RUN_ENV}
        return subprocess.run(
            ["bash", "-c", script], stdout=f, stderr=f, cwd=cwd, env=env
        ).returncode


def _run_ray(pending: list[tuple[str, Path, str]], args: argparse.Namespace) -> None:
    """One Ray task per run (1 CPU each) on ``--ray ADDRESS`` or a local instance.

    A cluster's nodes need this repository and its venv at the same paths and ``--base`` on
    storage they share (docs/scaling.md, "Sweeps on Ray"); finished runs are skipped before
    anything is submitted, so rerunning the command resumes the sweep.
    """
    import ray

    if ray.is_initialized():
        pass
    elif args.ray == "local":
        # a laptop: a private instance on loopback, --jobs runs at a time
        ray.init(
            num_cpus=args.jobs,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
        )
    else:
        ray.init(address=args.ray, log_to_driver=False)
    task = ray.remote(num_cpus=1, max_retries=0)(run_in_task)
    refs = {}
    for name, path, script in pending:
        refs[task.remote(script, str(ROOT), str(path / "train.log"))] = (name, path, time.time())
        print(f"[submit] {name}", flush=True)
    while refs:
        done, _ = ray.wait(list(refs), num_returns=1)
        name, path, t0 = refs.pop(done[0])
        try:
            status = _status(ray.get(done[0]), path)
        except ray.exceptions.RayError as err:
            status = f"FAILED (Ray task: {str(err).strip().splitlines()[0]})"
        print(f"[done]  {name} in {time.time() - t0:.0f} s: {status}", flush=True)


def _quote(x: str) -> str:
    import shlex

    return shlex.quote(x)


# ------------------------------------------------------------------ analysis


def load_runs(base: Path, estimators, seeds) -> dict[str, list[list[dict]]]:
    out: dict[str, list[list[dict]]] = {}
    for est in estimators:
        out[est] = []
        for seed in seeds:
            f = run_dir(base, est, seed) / "metrics.jsonl"
            if f.is_file():
                out[est].append([json.loads(x) for x in f.read_text().splitlines() if x.strip()])
    return out


def first_reach(success: np.ndarray, threshold: float, window: int = 3) -> int | None:
    for i in range(len(success)):
        if np.mean(success[max(0, i - window + 1) : i + 1]) >= threshold and i + 1 >= window:
            return i + 1
    return None


def summarize(runs: dict[str, list[list[dict]]], base: Path, seeds, threshold: float) -> dict:
    table = {}
    for est, per_seed in runs.items():
        if not per_seed:
            continue
        n = min(len(r) for r in per_seed)
        succ = np.array([[row["success"] for row in r[:n]] for r in per_seed])
        zc = np.array(
            [[row.get("adv/zero_credit_ratio", np.nan) for row in r[:n]] for r in per_seed]
        )
        za = np.array([[row.get("adv/zero_adv_ratio", np.nan) for row in r[:n]] for r in per_seed])
        secs = np.array([sum(row.get("time/total", 0.0) for row in r[:n]) for r in per_seed])
        reach = [first_reach(s, threshold) for s in succ]
        evals = []
        for seed in seeds:
            f = run_dir(base, est, seed) / "eval.json"
            if f.is_file():
                evals.append(json.loads(f.read_text())["success"])
        table[est] = {
            "seeds": len(per_seed),
            "iterations": n,
            "success_curve": succ.mean(0).tolist(),
            "success_curve_std": succ.std(0).tolist(),
            "zero_credit_curve": np.nanmean(zc, 0).tolist(),
            "early_zero_credit": float(np.nanmean(zc[:, :5])),
            "early_zero_adv": float(np.nanmean(za[:, :5])),
            "zero_adv_curve": np.nanmean(za, 0).tolist(),
            "first_success": float(succ[:, :5].mean()),
            "final_success": float(succ[:, -5:].mean()),
            "final_success_std": float(succ[:, -5:].mean(1).std()),
            "reach": reach,
            "reach_mean": float(np.mean([r if r is not None else n for r in reach])),
            "reached": sum(r is not None for r in reach),
            "eval_success": float(np.mean(evals)) if evals else None,
            "eval_success_std": float(np.std(evals)) if evals else None,
            "minutes_per_run": float(secs.mean() / 60),
        }
    return table


def plot(table: dict, out: Path, threshold: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for est, row in table.items():
        y = np.array(row["success_curve"])
        s = np.array(row["success_curve_std"])
        x = np.arange(1, len(y) + 1)
        k = 3  # moving average for readability
        ys = np.array([y[max(0, i - k + 1) : i + 1].mean() for i in range(len(y))])
        axes[0].plot(x, ys, label=f"{est} (n={row['seeds']})")
        axes[0].fill_between(x, np.clip(ys - s, 0, 1), np.clip(ys + s, 0, 1), alpha=0.15)
        axes[1].plot(x, row["zero_adv_curve"], label=est)
    axes[0].axhline(threshold, color="grey", lw=0.8, ls="--")
    axes[0].set(title="training success (3-iteration moving average, ±1 std over seeds)",
                xlabel="iteration", ylabel="success rate")  # fmt: skip
    axes[1].set(title="zero-advantage ratio (steps whose advantage is exactly 0)",
                xlabel="iteration", ylabel="ratio")  # fmt: skip
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def write_markdown(table: dict, args: argparse.Namespace, out: Path, png: Path) -> None:
    from mvpo_train.config import preset

    cfg = preset("cpu-tiny")
    lines = [
        "# Learning benchmark: GRPO vs GiGPO vs MVPO (tiny CPU policy, ALFWorld mini)",
        "",
        "Produced by `python benchmarks/learning.py` (table and plot: `--analyze-only`) on "
        f"{platform.machine()} with {os.cpu_count()} CPU cores, "
        f"{time.strftime('%Y-%m-%d')}. Each run: the `cpu-tiny` preset "
        f"({cfg.num_groups} tasks x {cfg.group_size} rollouts per iteration, "
        f"{cfg.max_steps} steps max, model `{cfg.model}`, `{cfg.action_mode}` mode, lr {cfg.lr}, "
        f"{cfg.ppo_epochs} PPO epochs) for {args.iterations} iterations, only `--estimator` "
        f"differing; seeds {list(args.seeds)}; {' '.join(args.extra) or 'no extra flags'}.",
        "",
        f"![curves]({png.name})",
        "",
        f"| estimator | seeds | success, first 5 it. | success, last 5 it. | eval success (greedy) "
        f"| iterations to {args.threshold:.0%} (3-it. avg) | runs reaching it "
        f"| zero-credit ratio, first 5 it. | zero-advantage ratio, first 5 it. | minutes / run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for est, r in table.items():
        ev = (
            "-"
            if r["eval_success"] is None
            else f"{r['eval_success']:.3f} ± {r['eval_success_std']:.3f}"
        )
        reach = ", ".join("-" if x is None else str(x) for x in r["reach"])
        lines.append(
            f"| {est} | {r['seeds']} | {r['first_success']:.3f} | {r['final_success']:.3f} ± "
            f"{r['final_success_std']:.3f} | {ev} | {r['reach_mean']:.1f} ({reach}) | "
            f"{r['reached']}/{r['seeds']} | {r['early_zero_credit']:.3f} | "
            f"{r['early_zero_adv']:.3f} | "
            f"{r['minutes_per_run']:.1f} |"
        )
    lines += [
        "",
        "Iterations to threshold: a run that never reaches it counts as its length in the mean",
        "(the per-seed values are in brackets, `-` = not reached). Success is the training batch's",
        "(stochastic policy), so single iterations are noisy. Eval (with `--eval`): greedy play of",
        "the last checkpoint on every task of the eval split. Zero-credit ratio: each estimator's",
        "own diagnostic (GRPO: rows of groups whose episode returns are all equal; GiGPO and MVPO:",
        "rows of anchor-state step groups whose returns are all equal, which MVPO then repairs);",
        "zero-advantage ratio: rows whose final advantage is exactly 0 (no gradient at all).",
        "",
    ]
    out.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--estimators", nargs="+", default=list(ESTIMATORS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--iterations", type=int, default=25)
    p.add_argument("--threshold", type=float, default=0.25, help="success threshold")
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
    p.add_argument("--base", default=str(ROOT / "runs" / "benchmark-learning"))
    p.add_argument("--fresh", action="store_true", help="retrain even if runs exist")
    p.add_argument(
        "--eval", action="store_true", help="also run mvpo-eval on each final checkpoint"
    )
    p.add_argument("--quick", action="store_true", help="1 seed, 4 iterations")
    p.add_argument("--analyze-only", action="store_true", help="only rebuild the table and plot")
    p.add_argument("--out", default=str(RESULTS / "learning.md"))
    p.add_argument(
        "extra", nargs="*", help="extra mvpo-train flags after --, e.g. -- --max-steps 20"
    )
    args = p.parse_args(argv)
    if args.quick:
        args.seeds, args.iterations = [0], 4
    base = Path(args.base)
    if not args.analyze_only:
        run_all(args, base)
    runs = load_runs(base, args.estimators, args.seeds)
    table = summarize(runs, base, args.seeds, args.threshold)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    png = out.with_suffix(".png")
    plot(table, png, args.threshold)
    write_markdown(table, args, out, png)
    (out.with_suffix(".json")).write_text(json.dumps(table, indent=1))
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
