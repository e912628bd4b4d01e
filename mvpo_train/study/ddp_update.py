"""Wall time of one data-parallel PPO update of the micro model (benchmarks/scaling.py --ddp).

:func:`time_update` runs one PPO epoch over a fixed global batch (:func:`synthetic_batch`: 128
rows, 4 mini-batches of 32, so 4 gradient all-reduces) on ``world_size`` gloo processes on
loopback, the batch split evenly between the ranks; :func:`update_section` times 1 and 2
processes and writes the results section (:func:`update_lines`).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def time_update(world_size: int, repeats: int = 3) -> float:
    """Median seconds of one PPO update of the micro model on the fixed global batch with
    ``world_size`` gloo processes on loopback."""
    import torch.multiprocessing as mp

    from mvpo_train.distributed import _free_port

    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        mp.spawn(_time_worker, args=(world_size, port, tmp, repeats), nprocs=world_size, join=True)
        return float((Path(tmp) / "seconds.txt").read_text())


def _time_worker(rank: int, world: int, port: int, tmp: str, repeats: int) -> None:
    import torch

    from mvpo_train import distributed as D
    from mvpo_train.config import preset
    from mvpo_train.factories import load_policy
    from mvpo_train.tiny_model import MICRO_SPEC, build_tiny_model
    from mvpo_train.update import ppo_update

    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world)
    )
    torch.set_num_threads(1)
    ctx = D.init_distributed("gloo")
    if rank == 0:
        build_tiny_model(Path(tmp) / "micro", MICRO_SPEC, texts=["go to fridge 1"] * 3)
    ctx.barrier()
    cfg = preset(
        "cpu-tiny", model=str(Path(tmp) / "micro"), device="cpu", ppo_epochs=1, minibatch_size=32
    )
    torch.manual_seed(0)
    policy = load_policy(cfg)
    batch, old = synthetic_batch(policy, groups=8, group_size=4, steps=4)
    adv = np.random.default_rng(0).standard_normal(len(batch))
    per = len(batch) // world
    local = np.arange(rank * per, (rank + 1) * per)
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-4)
    secs = []
    for k in range(repeats):
        ctx.barrier()
        t0 = time.perf_counter()
        ppo_update(
            policy, opt, batch, adv, old, None, cfg, torch.Generator().manual_seed(k),
            local, ctx,
        )  # fmt: skip
        secs.append(time.perf_counter() - t0)
    if rank == 0:
        (Path(tmp) / "seconds.txt").write_text(str(float(np.median(secs))))
    D.shutdown(ctx)
    D.exit_rank(0)


def synthetic_batch(policy: Any, groups: int, group_size: int, steps: int) -> tuple[Any, list]:
    """A score-mode batch of fixed prompts and 4 candidates per step (token ids from
    ``policy.encode``), and the old log-probabilities (uniform over the candidates)."""
    from mvpo_train.batch import StepBatch

    rows, prompt_ids, cand_ids, choice, old = [], [], [], [], []
    cands = [policy.encode(f" go to drawer {k}") for k in range(4)]
    for g in range(groups):
        for i in range(group_size):
            for t in range(steps):
                traj = g * group_size + i
                rows.append(
                    dict(group=g, traj=traj, t=t, reward=float(t == steps - 1 and i % 2),
                         terminated=t == steps - 1, truncated=False, anchor=f"s{g}-{t}",
                         signature=f"s{t}", milestones=(), action=f"go to drawer {traj % 4}",
                         success=bool(i % 2))
                )  # fmt: skip
                prompt_ids.append(policy.encode(f"Task {g}: step {t} of {steps}."))
                cand_ids.append(cands)
                choice.append(traj % 4)
                old.append(np.array([-np.log(4.0)]))
    extras = {"prompt_ids": prompt_ids, "cand_ids": cand_ids, "choice": choice}
    return StepBatch.from_steps(rows, extras=extras), old


def update_lines(one: float, two: float) -> list[str]:
    """The results section: seconds per update on 1 process and on 2 gloo processes."""
    return [
        "### Data-parallel update: micro model, one PPO epoch over the same global batch "
        "(128 rows, 4 mini-batches)",
        "",
        "| processes | seconds per update (median) |",
        "|---:|---:|",
        f"| 1 | {one:.3f} |",
        f"| 2 (gloo, loopback) | {two:.3f} |",
    ]


def update_times(repeats: int) -> dict[str, float]:
    """Seconds per update on 1 (``one``) and 2 gloo processes (``two``), each the median of
    ``repeats`` updates (:func:`time_update`); the two times are printed too."""
    one = time_update(world_size=1, repeats=repeats)
    two = time_update(world_size=2, repeats=repeats)
    print(f"update: 1 process {one:.3f} s, 2 gloo processes {two:.3f} s", flush=True)
    return {"one": one, "two": two}


def update_section(repeats: int) -> list[str]:
    """The results section of :func:`update_times`."""
    return update_lines(**update_times(repeats))
