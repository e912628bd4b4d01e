"""Tuning grid of the learning study: lr x PPO epochs x KL on the *train* split, short runs.

docs/learning_study.md, "Tuning". Every grid point is one ``benchmarks/learning.py`` sweep of
its own (``--base BASE/<point>``, no held-out evaluation at all: ``--eval-every 0 --no-eval``),
so each arm gets the same budget at every point (same iterations, batch, seeds, warm start);
the choice per arm is the point with the largest training-success area (mean batch success
over the run, the train split's rollouts only). Nothing here reads a validation split.

    python benchmarks/tuning_grid.py --lr 3e-4 1e-3 --ppo-epochs 2 --kl-coef 0 0.05 \\
        --iterations 10 --train-flags '--history-length 2' -- --env-kwargs '{"num_games": "full"}'

Resumable: rerunning the same command skips finished points and runs (learning.py resumes
interrupted runs from their checkpoints); ``--analyze-only`` rewrites the table only. Results:
``--out`` (markdown) and its ``.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

from mvpo_train.stats import SMOOTH
from mvpo_train.study.page_command import with_page_command
from mvpo_train.study.runs import load_runs

#: the repository root: a study runs from there (its paths are relative to it)
ROOT = Path.cwd()
RESULTS = ROOT / "benchmarks" / "results"
SCRIPT = "benchmarks/tuning_grid.py"


def point_name(lr: float, epochs: int, kl: float) -> str:
    return f"lr{lr:g}-ep{epochs}-kl{kl:g}"


def points(args: argparse.Namespace) -> list[tuple[float, int, float]]:
    return list(itertools.product(args.lr, args.ppo_epochs, args.kl_coef))


def learning_cmd(
    args: argparse.Namespace, lr: float, epochs: int, kl: float, first: bool = True
) -> list[str]:
    """The learning.py sweep of one grid point (its own base folder, no held-out evaluation).
    Only the ``first`` point makes or checks the warm start (it replays every expert plan of
    the split); the later ones only compare its saved settings (``--warm-checked``)."""
    base = Path(args.base) / point_name(lr, epochs, kl)
    return [
        sys.executable, str(ROOT / "benchmarks" / "learning.py"),
        "--arms", *args.arms, "--seeds", *map(str, args.seeds),
        "--iterations", str(args.iterations), "--num-groups", str(args.num_groups),
        "--group-size", str(args.group_size), "--lr", str(lr), "--jobs", str(args.jobs),
        "--eval-every", "0", "--no-eval", "--base", str(base),
        *([] if first else ["--warm-checked"]),
        "--out", str(base / "learning.md"),
        "--embedding-cache", args.embedding_cache or str(Path(args.base) / "embeddings.npz"),
        *args.learning_flags,
        "--", "--ppo-epochs", str(epochs), "--kl-coef", str(kl), *shlex.split(args.train_flags),
    ]  # fmt: skip


def point_arms(base: Path, args: argparse.Namespace) -> dict | None:
    """Per arm with every seed finished: training area / final (mean over seeds) of the point in
    ``base``, from its sweep's ``learning.json`` or, without one (a committed archive of the
    runs, ``benchmarks/study_archive.py``), from the runs' metrics; None when neither is there."""
    f = base / "learning.json"
    if f.is_file():
        arms = json.loads(f.read_text())["arms"]
        mean = {a: {k: r[k][0] for k in ("auc", "final")} for a, r in arms.items()}
        seeds = {a: r["seeds"] for a, r in arms.items()}
    else:
        runs = {
            a: r for a, r in load_runs(base, args.arms, args.seeds, args.iterations).items() if r
        }
        if not runs:
            return None
        succ = {
            a: [np.array([x["success"] for x in rows]) for rows in r.values()]
            for a, r in runs.items()
        }
        mean = {a: {"auc": float(np.mean([c.mean() for c in cs])),
                    "final": float(np.mean([c[-SMOOTH:].mean() for c in cs]))} for a, cs in succ.items()}  # fmt: skip
        seeds = {a: sorted(r) for a, r in runs.items()}
    return {a: {**mean[a], "seeds": seeds[a]} for a in mean if len(seeds[a]) == len(args.seeds)}


def summarize(args: argparse.Namespace) -> dict:
    """Per point and arm: training area / final (mean over seeds); the choice per arm."""
    table: dict = {"points": {}, "choice": {}}
    for lr, epochs, kl in points(args):
        name = point_name(lr, epochs, kl)
        arms = point_arms(Path(args.base) / name, args)
        if arms is None:
            continue
        table["points"][name] = {"lr": lr, "ppo_epochs": epochs, "kl_coef": kl, "arms": arms}
    for arm in args.arms:
        done = {n: p["arms"][arm] for n, p in table["points"].items() if arm in p["arms"]}
        if len(done) == len(points(args)):  # a choice only over the whole grid
            table["choice"][arm] = max(done, key=lambda n: (done[n]["auc"], done[n]["final"]))
    return table


def write_markdown(table: dict, args: argparse.Namespace, out: Path) -> None:
    lines = [
        "# Tuning grid of the learning study (train split only)",
        "",
        f"Command: `python benchmarks/tuning_grid.py {shlex.join(args.argv)}`",
        "",
        f"Each point: `benchmarks/learning.py` with arms {', '.join(args.arms)}, seeds "
        f"{list(args.seeds)}, {args.iterations} iterations of {args.num_groups} x "
        f"{args.group_size}, no held-out evaluation; cell = training-success area (mean batch "
        "success over the run) / final (last 5 iterations), mean over seeds. Choice per arm: "
        "the largest area (ties: final).",
        "",
        "| point | " + " | ".join(args.arms) + " |",
        "|---|" + "---|" * len(args.arms),
    ]
    for name, p in table["points"].items():
        cells = []
        for arm in args.arms:
            r = p["arms"].get(arm)
            mark = " **(chosen)**" if table["choice"].get(arm) == name else ""
            cells.append(f"{r['auc']:.3f} / {r['final']:.3f}{mark}" if r else "-")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    missing = len(points(args)) - len(table["points"])
    if missing or len(table["choice"]) < len(args.arms):
        lines += ["", f"Partial: {missing} of {len(points(args))} points not finished; rerun the "
                  "command to continue."]  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(table, indent=1) + "\n")
    print(out.read_text())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--arms", nargs="+", default=["grpo", "gigpo", "mvpo"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--lr", nargs="+", type=float, default=[3e-4, 1e-3])
    p.add_argument("--ppo-epochs", nargs="+", type=int, default=[2])
    p.add_argument("--kl-coef", nargs="+", type=float, default=[0.0, 0.05])
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--num-groups", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--base", default=str(ROOT / "runs" / "tuning-grid"))
    p.add_argument("--out", default=str(RESULTS / "tuning_grid.md"))
    p.add_argument("--embedding-cache", default=None,
                   help="one embedding cache file for every point (default: BASE/embeddings.npz)")  # fmt: skip
    p.add_argument("--analyze-only", action="store_true",
                   help="rewrite the table from the finished points only; alone (or with "
                   "--out): with the arguments of the command the page at --out names")  # fmt: skip
    p.add_argument("--train-flags", default="",
                   help="mvpo-train flags of every run, e.g. '--history-length 2'")  # fmt: skip
    p.add_argument(
        "learning_flags", nargs="*", help="learning.py flags after --, e.g. -- --env-kwargs '{}'"
    )
    argv = with_page_command(argv, Path(p.parse_args(argv).out), SCRIPT, "tuning_grid")
    args = p.parse_args(argv)
    args.argv = [a for a in argv if a != "--analyze-only"]
    if not args.analyze_only:
        for k, (lr, epochs, kl) in enumerate(points(args)):
            subprocess.run(learning_cmd(args, lr, epochs, kl, k == 0), cwd=ROOT, check=True)
    table = summarize(args)
    if args.analyze_only and not table["points"]:  # never a page emptier than the one it replaces
        print(f"tuning_grid: --analyze-only: no finished grid point under {args.base}; nothing "
              f"written (`python {SCRIPT} --analyze-only` alone rebuilds the page with its own "
              "command)", file=sys.stderr)  # fmt: skip
        return 2
    write_markdown(table, args, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
