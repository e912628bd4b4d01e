"""Benchmark: advantage construction time per estimator (docs/estimators.md §5, "Cost").

Synthetic but ALFWorld-like batches: G = 8 rollouts per task, 50 steps each, rollouts that walk
between ~20 receptacles, revisit some (anchors repeat, loops), fire sparse milestones and
sometimes win at the last step. Sizes: 16 groups (6,400 rows) and 160 groups (64,000 rows).
Reported: median wall time over repeats, ratio to GiGPO, and share of a reference training step
(the MVPO paper's Table 3: MVPO on ALFWorld, 340.0 s per step, of which 1.2 s advantage construction).

Run from the repository root: ``python benchmarks/credit.py`` (writes
``benchmarks/results/credit.md``).
"""

from __future__ import annotations

import os
import platform
import sys
import time
from dataclasses import fields
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mvpo_train.batch import FIELDS, StepBatch  # noqa: E402
from mvpo_train.credit import available_estimators, get_estimator  # noqa: E402

REFERENCE_STEP_S = 340.0  # the MVPO paper, Table 3: ALFWorld, MVPO, seconds per training step
REFERENCE_ADV_S = 1.2  # same row: advantage construction
ESTIMATORS = [
    "grpo",
    "rloo",
    "reinforce",
    "gigpo",
    "mvpo",
    "mvpo-paper",
    "ecpo",
    "progpo",
    "beacon",
]
VARIANTS = {"mvpo-paper": ("mvpo", {"form": "paper"})}  # docs/estimators.md §3.8
LOCATIONS = [f"{k} {i}" for k in ("cabinet", "drawer", "countertop", "shelf") for i in (1, 2, 3)]
LOCATIONS += ["fridge 1", "microwave 1", "sinkbasin 1", "stoveburner 1", "garbagecan 1",
              "diningtable 1", "toaster 1", "coffeemachine 1"]  # fmt: skip
OBJECTS = ["apple", "knife", "mug", "bread", "egg", "potato", "spoon", "cup"]
SCENERY = [
    "peppershaker",
    "saltshaker",
    "creditcard",
    "cellphone",
    "dishsponge",
    "spatula",
    "butterknife",
    "soapbottle",
    "papertowelroll",
    "winebottle",
    "fork",
    "ladle",
]
MILESTONES = ["target_seen", "target_in_hand", "operation_done", "at_goal", "placed"]


def synthetic_batch(
    n_groups: int, group_size: int = 8, horizon: int = 50, seed: int = 0, p_win: float = 0.2
) -> StepBatch:
    """An ALFWorld-like rollout batch of ``n_groups * group_size * horizon`` rows."""
    rng = np.random.default_rng(seed)
    n_loc = len(LOCATIONS)
    steps: list[dict] = []
    for g in range(n_groups):
        # per task: which objects lie where, and which location holds the target
        contents = [tuple(sorted(rng.choice(OBJECTS, size=2, replace=False))) for _ in range(n_loc)]
        scenery = [
            rng.choice(SCENERY, size=int(rng.integers(2, 7)), replace=False) for _ in range(n_loc)
        ]
        target = int(rng.integers(n_loc))
        for r in range(group_size):
            traj = g * group_size + r
            win = rng.random() < p_win
            loc, prev, stage = 0, 0, 0
            for t in range(horizon):
                objs = contents[loc]
                anchor = (
                    f"You arrive at {LOCATIONS[loc]}. On the {LOCATIONS[loc]}, you see "
                    + (", ".join(f"a {o} {k + 1}" for k, o in enumerate(scenery[loc])))
                    + f", a {objs[0]} 1, and a {objs[1]} 2."
                )
                if stage:
                    anchor += f" You carry the {OBJECTS[g % len(OBJECTS)]}."
                sig = f"{LOCATIONS[loc]}|{objs[0]}+{objs[1]}|d{3 * (t // 3)}"
                fired: tuple[str, ...] = ()
                if loc == target and stage < len(MILESTONES) and rng.random() < 0.5:
                    fired = (MILESTONES[stage],)
                    stage += 1
                last = t == horizon - 1
                steps.append(dict(
                    group=g, traj=traj, t=t, reward=1.0 if (last and win) else 0.0,
                    terminated=last and win, truncated=last and not win,
                    anchor=anchor, signature=sig, milestones=fired,
                    action=f"go to {LOCATIONS[loc]}", success=win,
                ))  # fmt: skip
                # policy: go back (loop) 30%, towards the target 20%, else anywhere
                u = rng.random()
                nxt = prev if u < 0.3 else target if u < 0.5 else int(rng.integers(n_loc))
                prev, loc = loc, nxt
    return StepBatch.from_steps(steps)


def make(name: str):
    """A new estimator: a registered name or one of ``VARIANTS`` (name + config)."""
    base, kwargs = VARIANTS.get(name, (name, {}))
    return get_estimator(base, **kwargs)


def _new_strings(col: np.ndarray) -> np.ndarray:
    out = np.empty(len(col), dtype=object)
    out[:] = [s.encode().decode() for s in col.tolist()]  # equal text, new objects
    return out


def fresh(batch: StepBatch) -> StepBatch:
    """A newly built copy, as the trainer builds each batch: new string objects, validated by
    the constructor, and no derived view cached by an earlier estimator call."""
    cols = {f.name: getattr(batch, f.name) for f in fields(StepBatch) if f.name != "extras"}
    for name in ("anchor", "signature", "action"):
        cols[name] = _new_strings(cols[name])
    return StepBatch(**cols)


def time_estimators(
    names: list[str], batch: StepBatch, repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds of one call per estimator, and the median ratio to GiGPO.

    Repeats are interleaved across estimators and each ratio is taken within one round, so a
    busy machine slows both sides alike. Each call gets a fresh batch and a fresh estimator.
    """
    times: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(repeats):
        for name in names:
            est, b = make(name), fresh(batch)
            t0 = time.process_time()
            est(b)
            times[name].append(time.process_time() - t0)
    ref = np.asarray(times["gigpo"])
    med = {n: float(np.median(v)) for n, v in times.items()}
    ratio = {n: float(np.median(np.asarray(v) / ref)) for n, v in times.items()}
    return med, ratio


def time_build(batch: StepBatch, repeats: int = 5) -> float:
    """Median seconds to build the batch from one dict per step (shared by every estimator)."""
    steps = [{f: getattr(batch, f)[k] for f in FIELDS} for k in range(len(batch))]
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        StepBatch.from_steps(steps)
        times.append(time.process_time() - t0)
    return float(np.median(times))


def time_major(batch: StepBatch) -> StepBatch:
    """The same rows in the order ``rollout.collect()`` emits them: step t of every env, then
    step t + 1 (so estimators first sort them by trajectory)."""
    return batch.take(np.lexsort((batch.traj, batch.t)))


def table(names: list[str], res: dict, ratio: dict) -> list[str]:
    """Markdown rows: ms and ratio to GiGPO at both sizes, share of the reference step."""
    lines = [
        "| estimator | ms @ 6,400 rows | ms @ 64,000 rows | x GiGPO (6,400) | x GiGPO (64,000) "
        "| share of a 340 s step (6,400) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for n in names:
        a, b = res["6,400"][n], res["64,000"][n]
        ra, rb = ratio["6,400"][n], ratio["64,000"][n]
        share = a / REFERENCE_STEP_S * 100
        lines.append(
            f"| {n} | {a * 1e3:.2f} | {b * 1e3:.1f} | {ra:.2f} | {rb:.2f} | {share:.5f}% |"
        )
    return lines


def main() -> None:
    """Time every estimator on 6,400 and 64,000 rows and write the markdown table."""
    sizes = {"6,400": (16, 21), "64,000": (160, 7)}
    by_traj = {k: synthetic_batch(n) for k, (n, _) in sizes.items()}
    orders = {"traj": by_traj, "time": {k: time_major(b) for k, b in by_traj.items()}}
    names = [n for n in ESTIMATORS if VARIANTS.get(n, (n,))[0] in available_estimators()]
    for name in names:  # warm-up (imports, first-call allocations)
        make(name)(fresh(by_traj["6,400"]))
    res: dict[str, dict] = {}
    ratio: dict[str, dict] = {}
    for o, batches in orders.items():
        timed = {k: time_estimators(names, batches[k], sizes[k][1]) for k in sizes}
        res[o] = {k: v[0] for k, v in timed.items()}
        ratio[o] = {k: v[1] for k, v in timed.items()}
    build = time_build(orders["time"]["6,400"])
    _, diag = get_estimator("mvpo")(by_traj["6,400"])
    _, seeds = make("mvpo-paper")(by_traj["6,400"])
    vs_mvpo = {o: {k: res[o][k]["mvpo-paper"] / res[o][k]["mvpo"] for k in sizes} for o in orders}
    lines = [
        "# Advantage construction time per estimator",
        "",
        "Generated by `python benchmarks/credit.py`: synthetic ALFWorld-like batches (8 rollouts",
        "per group, 50 steps each, observations of ~170 characters as anchors, signatures like",
        "`cabinet 1|cup+potato|d6`, five sparse milestones, ~20% wins). Median of 21 repeats at",
        "6,400 rows and 7 at 64,000, interleaved across estimators; every call gets a newly built",
        "batch and a new estimator, so nothing cached by an earlier call is reused. Times are the",
        "process's CPU time (NumPy runs single-threaded here), so other jobs sharing the machine",
        "do not inflate them. The ratio to GiGPO is the median of the per-round ratios.",
        "",
        f"Reference step: the MVPO paper's Table 3, ALFWorld, MVPO: **{REFERENCE_STEP_S:.1f} s** per",
        f"training step, of which {REFERENCE_ADV_S} s advantage construction (16 x 8 x 50 rows).",
        "",
        "## Rows in rollout order (time-major, as `rollout.collect()` emits them)",
        "",
        *table(names, res["time"], ratio["time"]),
        "",
        "## Rows already sorted by trajectory (no sort needed: the lowest cost of every estimator)",
        "",
        *table(names, res["traj"], ratio["traj"]),
        "",
        f"Building the 6,400-row StepBatch from step dicts (shared by all estimators, not in the "
        f"tables): {build * 1e3:.1f} ms.",
        "",
        f"MVPO on the 6,400-row batch: zero_credit_ratio {diag['zero_credit_ratio']:.3f}, "
        f"grouping_ratio {diag['grouping_ratio']:.3f}, {diag['num_regions']} regions, "
        f"success rate {diag['success_rate']:.3f}.",
        "",
        '`mvpo-paper` is `mvpo` with `form="paper"` (docs/estimators.md §3.8); its time over '
        "the default MVPO's (ratio of medians): "
        + ", ".join(
            f"{vs_mvpo[o][k]:.2f}x ({k} rows, {'rollout' if o == 'time' else 'sorted'} order)"
            for o in orders
            for k in sizes
        )
        + f". Its non-circular statistic on the 6,400-row batch: phi_split_spearman_failed "
        f"{seeds['phi_split_spearman_failed']:+.3f} over {seeds['phi_split_rows']} rows "
        f"(default form: {diag['phi_split_spearman_failed']:+.3f}).",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared with other jobs while "
        f"measured), Python {platform.python_version()}, NumPy {np.__version__}.",
        "",
    ]
    out = ROOT / "benchmarks" / "results" / "credit.md"
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
