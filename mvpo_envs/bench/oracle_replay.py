"""Replay recorded ALFWorld episodes with the progress oracle on and time it
(``benchmarks/alfworld_oracle_speed.py``).

An episode is ``{"task_index": i, "actions": [...], "plan_decrease": [...]}``: a game of the
full generated train split and the commands a policy played in it, with the oracle's plan
decrease of each step as the training run recorded it (``None`` where unknown). Run as a file
(``python mvpo_envs/bench/oracle_replay.py EPISODES OUT``, another commit's packages first on
``PYTHONPATH``) it measures that commit's oracle with this replay.
:func:`replay` plays each one on ``mvpo/ALFWorld-v0`` (``progress_oracle=True``) and returns the
process CPU seconds of the whole replay and of the oracle's ``distance`` calls, and every step's
plan decrease, so that two versions of the code can be compared on the same steps: the same
decreases (and the recorded ones), in less time. Run as a module it writes that result as JSON
with the folder its code came from.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["replay"]

_PACKAGES = ("mvpo_envs", "mvpo_train", "mvpo_abstraction")


def replay(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Play ``episodes`` (module docstring) in one env; CPU seconds and plan decreases."""
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the env ids)
    from mvpo_envs.alfworld import oracle as oracle_module

    oracle_cpu = 0.0
    distance = oracle_module.ProgressOracle.distance

    def timed(self: Any, store: Any) -> int:
        nonlocal oracle_cpu
        start = time.process_time()
        try:
            return distance(self, store)
        finally:
            oracle_cpu += time.process_time() - start

    env = gym.make("mvpo/ALFWorld-v0", num_games="full", progress_oracle=True)
    oracle_module.ProgressOracle.distance = timed  # type: ignore[method-assign]
    decreases: list[list[int]] = []
    start = time.process_time()
    try:
        for ep in episodes:
            _, info = env.reset(options={"task_index": int(ep["task_index"])})
            before, out = int(info["oracle_plan_length"]), []
            for action in ep["actions"]:
                _, _, term, trunc, info = env.step(action)
                after = int(info["oracle_plan_length"])
                out.append(before - after)
                before = after
                if term or trunc:
                    break
            decreases.append(out)
    finally:
        oracle_module.ProgressOracle.distance = distance  # type: ignore[method-assign]
        env.close()
    return {
        "cpu_s": time.process_time() - start,
        "oracle_cpu_s": oracle_cpu,
        "steps": sum(len(d) for d in decreases),
        "plan_decrease": decreases,
    }


def _code_folder() -> tuple[str, list[str]]:
    """The folder the packages came from, and any module of them imported from elsewhere."""
    import mvpo_envs

    code = Path(mvpo_envs.__file__).resolve().parents[1]
    foreign = sorted(
        name
        for name, m in list(sys.modules.items())
        if name.split(".")[0] in _PACKAGES
        and getattr(m, "__file__", None)
        and not Path(m.__file__).resolve().is_relative_to(code)
    )
    return str(code), foreign


def main(argv: list[str] | None = None) -> int:
    episodes_file, out = (sys.argv[1:] if argv is None else argv)[:2]
    result = replay(json.loads(Path(episodes_file).read_text())["episodes"])
    code, foreign = _code_folder()
    Path(out).write_text(json.dumps({**result, "code": code, "foreign_modules": foreign}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
