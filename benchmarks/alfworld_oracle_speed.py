"""The ALFWorld progress oracle's CPU cost on a trained policy's steps, before and after a change.

A study run with ``progress_oracle=True`` spends most of its rollout in the oracle's
breadth-first search once its policy has trained a little (a py-spy profile of an ALFWorld
oracle-gain run at its third iteration, not committed: most of the process's samples). The
episodes measured are a trained run's own, extracted once from its batch records into a
committed JSON (``--extract``); each version of the code replays them in a process of its own
(its git worktree first on ``PYTHONPATH``, :mod:`mvpo_train.study.worktree`), and the page gives
the CPU seconds of both and checks that every step's plan decrease is the same in both and equal
to the one the training run recorded::

    python benchmarks/alfworld_oracle_speed.py --extract runs/oracle-gain-alfworld/gigpo-seed0
    python benchmarks/alfworld_oracle_speed.py --before f2b81ac   # the page and its JSON
    python benchmarks/alfworld_oracle_speed.py --analyze-only     # the page from its JSON
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from mvpo_train.study.figures_page import write_figures_page
from mvpo_train.study.worktree import checkout, run_in, short_sha

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = RESULTS / "alfworld_oracle_speed.md"
EPISODES = RESULTS / "alfworld_oracle_speed_episodes.json"
REPLAY = ROOT / "mvpo_envs" / "bench" / "oracle_replay.py"


def extract(run: Path, iterations: list[int], per_iteration: int) -> dict[str, Any]:
    """The first ``per_iteration`` trajectories of each of ``iterations``' batch records."""
    import numpy as np

    from mvpo_train.records import find_records, read_batch_record

    records = find_records(run)
    episodes = []
    for it in iterations:
        batch = read_batch_record(records[it]).batch
        for traj in np.unique(batch.traj)[:per_iteration]:
            rows = np.flatnonzero(batch.traj == traj)
            rows = rows[np.argsort(batch.t[rows])]
            dec = batch.extras["oracle_plan_decrease"][rows]
            episodes.append({
                "iteration": it, "task_index": int(batch.extras["task_index"][rows[0]]),
                "actions": [str(a) for a in batch.action[rows]],
                "plan_decrease": [None if math.isnan(x) else int(x) for x in dec],
            })  # fmt: skip
    return {"run": str(run.relative_to(ROOT) if run.is_relative_to(ROOT) else run),
            "iterations": iterations, "episodes": episodes}  # fmt: skip


def measure(before: str, after: str, work: Path) -> dict[str, Any]:
    """Replay the committed episodes with the code of ``before`` and ``after``."""
    data = json.loads(EPISODES.read_text())
    out: dict[str, Any] = {"episodes_file": str(EPISODES.relative_to(ROOT)), "run": data["run"],
                           "iterations": data["iterations"], "episodes": len(data["episodes"])}  # fmt: skip
    decreases = {}
    for name, ref in (("before", before), ("after", after)):
        src = checkout(ROOT, ref, work)
        result_file = work / f"{name}.json"
        # this tree's replay script, run as a file: every package it imports comes from ``src``
        cmd = [sys.executable, str(REPLAY), str(EPISODES), str(result_file)]
        res = run_in(src, cmd, result_file, src, "alfworld_oracle_speed")
        decreases[name] = res.pop("plan_decrease")
        out[name] = {
            "commit": short_sha(ROOT, ref),
            **{k: res[k] for k in ("cpu_s", "oracle_cpu_s", "steps")},
        }
    recorded = [
        ep["plan_decrease"][: len(d)]
        for ep, d in zip(data["episodes"], decreases["after"], strict=True)
    ]
    out["same_as_before"] = decreases["before"] == decreases["after"]
    out["same_as_recorded"] = all(
        r is None or r == x for rec, got in zip(recorded, decreases["after"], strict=True) for r, x in zip(rec, got, strict=True)
    )  # fmt: skip
    return out


def report(f: dict[str, Any]) -> str:
    b, a = f["before"], f["after"]
    rows = [
        f"| {name} | {v['commit']} | {v['steps']} | {v['cpu_s']:.2f} | {v['oracle_cpu_s']:.2f} | "
        f"{1000 * v['oracle_cpu_s'] / v['steps']:.2f} |"
        for name, v in (("before", b), ("after", a))
    ]
    return "\n".join([
        "# The ALFWorld progress oracle on a trained policy's steps",
        "",
        f"Command: `python benchmarks/alfworld_oracle_speed.py --before {b['commit']} --after "
        f"{a['commit']}` (benchmarks/alfworld_oracle_speed.py, module docstring); process CPU "
        "seconds, one process per version, run one after the other.",
        "",
        f"Episodes: {f['episodes']} trajectories of `{f['run']}` (iterations "
        f"{', '.join(map(str, f['iterations']))}), replayed from `{f['episodes_file']}` on "
        "`mvpo/ALFWorld-v0` with `progress_oracle=True`.",
        "",
        "| code | commit | steps | replay CPU s | oracle CPU s | oracle ms per step |",
        "|---|---|---:|---:|---:|---:|",
        *rows,
        "",
        f"- oracle: x{b['oracle_cpu_s'] / a['oracle_cpu_s']:.2f} faster; replay: "
        f"x{b['cpu_s'] / a['cpu_s']:.2f}",
        f"- every step's plan decrease the same before and after: {f['same_as_before']}; equal "
        f"to the training run's recorded ones: {f['same_as_recorded']}",
        "",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--extract", type=Path, metavar="RUN", help="write the episodes JSON from RUN")
    p.add_argument("--iterations", type=int, nargs="+", default=[3, 18])
    p.add_argument("--per-iteration", type=int, default=24, help="trajectories per iteration")
    p.add_argument("--before", default="f2b81ac", help="the commit before the oracle's speed-up")
    p.add_argument("--after", default="HEAD")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "alfworld-oracle-speed")
    p.add_argument("--out", type=Path, default=PAGE, help="the page (its JSON beside it)")
    p.add_argument("--analyze-only", action="store_true", help="rebuild the page from its JSON")
    args = p.parse_args(argv)
    if args.extract:
        data = extract(args.extract.resolve(), args.iterations, args.per_iteration)
        EPISODES.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        print(f"wrote {EPISODES}: {len(data['episodes'])} episodes")
        return 0
    figures = None
    if not args.analyze_only:
        args.work.mkdir(parents=True, exist_ok=True)
        figures = measure(args.before, args.after, args.work)
        if not (figures["same_as_before"] and figures["same_as_recorded"]):
            raise SystemExit("alfworld_oracle_speed: the oracle's plan decreases changed")
    write_figures_page("alfworld_oracle_speed", args.out, report, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
