"""A synthetic rollout batch shaped like ALFWorld's, for timing the credit estimators
(``benchmarks/credit.py``, ``benchmarks/abstraction.py``; docs/estimators.md §5, "Cost").

G rollouts per task walk between 20 receptacles for a fixed horizon, revisit some (anchors
repeat, loops), fire sparse milestones at the task's target and sometimes win at the last step;
anchors are observations of about 170 characters, signatures look like
``cabinet 1|cup+potato|d6``. The same arguments give the same batch. :func:`process_times`
times calls on such batches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import fields

import numpy as np

from mvpo_train.batch import StepBatch

__all__ = [
    "REFERENCE_ADV_S",
    "REFERENCE_STEP_S",
    "fresh",
    "process_times",
    "synthetic_batch",
    "time_major",
]

#: the MVPO paper, Table 3 (ALFWorld, MVPO): seconds per training step, and of them the
#: advantage construction's
REFERENCE_STEP_S = 340.0
REFERENCE_ADV_S = 1.2
LOCATIONS = [f"{k} {i}" for k in ("cabinet", "drawer", "countertop", "shelf") for i in (1, 2, 3)]
LOCATIONS += ["fridge 1", "microwave 1", "sinkbasin 1", "stoveburner 1", "garbagecan 1",
              "diningtable 1", "toaster 1", "coffeemachine 1"]  # fmt: skip
OBJECTS = ["apple", "knife", "mug", "bread", "egg", "potato", "spoon", "cup"]
SCENERY = ["peppershaker", "saltshaker", "creditcard", "cellphone", "dishsponge", "spatula",
           "butterknife", "soapbottle", "papertowelroll", "winebottle", "fork", "ladle"]  # fmt: skip
MILESTONES = ["target_seen", "target_in_hand", "operation_done", "at_goal", "placed"]


def synthetic_batch(
    n_groups: int, group_size: int = 8, horizon: int = 50, seed: int = 0, p_win: float = 0.2
) -> StepBatch:
    """A batch of ``n_groups * group_size * horizon`` rows, sorted by trajectory."""
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


def time_major(batch: StepBatch) -> StepBatch:
    """The same rows in the order ``rollout.collect()`` emits them: step t of every env, then
    step t + 1 (so estimators first sort them by trajectory)."""
    return batch.take(np.lexsort((batch.traj, batch.t)))


def process_times(
    names: Iterable[str], setup: Callable[[str], Callable[[], object]], repeats: int
) -> dict[str, list[float]]:
    """Process CPU seconds of each name's call, one per round: ``setup(name)`` builds the call
    (untimed: a new batch and estimator, say), then the call alone is timed. Rounds are
    interleaved across the names, so a busy machine slows every name alike."""
    names = list(names)
    times: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(repeats):
        for name in names:
            call = setup(name)
            t0 = time.process_time()
            call()
            times[name].append(time.process_time() - t0)
    return times
