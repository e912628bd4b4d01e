"""``mvpo-eval`` that also writes each episode's env return into its result file, as ``scores``
(and their mean, ``score``): an env whose return is a graded score beside the won flag (the
WebShop study's ``benchmarks/learning_webshop.py eval_main``; docs/learning_study.md).

The returns are read from the batches :mod:`mvpo_train.evaluation` collects, through
``eval_main``'s ``on_batch`` hook (nothing of the package is swapped). Padding episodes (the
last chunk of tasks is padded to its size) come last and are dropped, and the kept episodes
must give exactly the success ``mvpo-eval`` reports, else this fails rather than misreport.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mvpo_train.batch import StepBatch

__all__ = ["eval_with_scores"]


def eval_with_scores(argv: list[str], prog: str = "mvpo-eval", label: str = "the return") -> int:
    """``mvpo-eval ARGV`` that also writes every kept episode's env return into ``--out``
    (``scores``, rounded to 6 digits, and their mean ``score``); ``prog`` names the command in
    its errors, ``label`` the score in its last line. Returns ``mvpo-eval``'s status."""
    from mvpo_train import cli

    if "--out" not in argv:
        raise SystemExit(f"{prog}: --out is required (the score goes there)")
    played: list[tuple[np.ndarray, np.ndarray]] = []  # (return, success) per trajectory, by call

    def keep_returns(batch: StepBatch) -> None:
        env_reward = np.asarray(batch.extras["env_reward"], dtype=np.float64)
        ret = np.bincount(batch.traj_index, weights=env_reward, minlength=batch.n_traj)
        order = np.argsort(batch.traj_group, kind="stable")  # task order, as kept
        played.append((ret[order], np.asarray(batch.traj_success)[order]))

    rc = cli.eval_main(argv, on_batch=keep_returns)
    if rc != 0:
        return rc
    out = Path(argv[argv.index("--out") + 1])
    result = json.loads(out.read_text())
    n = int(result["episodes"])
    scores = np.concatenate([r for r, _ in played])[:n] if played else np.zeros(0)
    wins = np.concatenate([s for _, s in played])[:n] if played else np.zeros(0, dtype=bool)
    if len(scores) != n or not np.isclose(float(np.mean(wins)) if n else 0.0, result["success"]):
        raise SystemExit(
            f"{prog}: the episodes read ({len(scores)}) do not give "
            f"mvpo-eval's success {result['success']} over {n} episodes"
        )
    result["score"] = float(scores.mean()) if n else 0.0
    result["scores"] = [round(float(x), 6) for x in scores]
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"score     {result['score']:.3f}  ({label}, mean over {n} episodes)")
    return 0
