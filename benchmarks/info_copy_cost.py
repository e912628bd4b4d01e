"""Env steps per process-CPU second with the info copy of ``TextEnv._record`` as
``copy.deepcopy`` (before) and as :func:`mvpo_envs.info_copy.copy_plain` (after), in one run.

Per env, single ``gym.make`` envs and the trainer's ALFWorld vector env (``GroupedVectorEnv``,
16 groups x 8 rollouts, sync, only the rollout's info keys): the same seeded episodes (a
random admissible action per step, an invalid one every 7th step) are played with each copy,
alternating ``--repeats`` times after an untimed round, timing the ``step`` calls alone; the
median steps per CPU second of each and their ratio. The two variants' observations, rewards
and infos are asserted equal, so only the cost differs. One process, one thread, process CPU
time (other jobs on the machine do not count, though they slow its caches: compare the two
columns of one run, not runs)::

    nice -n 10 python benchmarks/info_copy_cost.py --out benchmarks/results/info_copy_cost.md

The figures the page prints are kept as ``info_copy_cost.json`` beside ``--out``;
``--analyze-only`` rebuilds the page (default: the committed one) from that JSON alone. The
plays, the comparison and the page are :mod:`mvpo_envs.bench.info_copy_cost`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mvpo_envs.bench.info_copy_cost import (
    ENVS,
    Play,
    compare,
    page_figures,
    page_lines,
    play_single,
    play_vector,
)
from mvpo_train.rollout import ROLLOUT_INFO_KEYS
from mvpo_train.study.figures_page import write_figures_page
from mvpo_train.study.tables import command_line

RESULTS = Path(__file__).resolve().parent / "results" / "info_copy_cost.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=2000, help="steps per single-env round")
    p.add_argument("--vector-steps", type=int, default=50, help="vector steps per round")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None, help="Markdown results page")
    p.add_argument("--analyze-only", action="store_true", help="rebuild --out from its JSON")
    args = p.parse_args(argv)
    if args.analyze_only:
        write_figures_page("info_copy_cost", Path(args.out or RESULTS), render)
        return 0
    plays: dict[str, Play] = {
        env_id: (lambda e=env_id: play_single(e, args.steps)) for env_id in ENVS
    }
    plays["ALFWorld vector env 16 x 8"] = lambda: play_vector(args.vector_steps, ROLLOUT_INFO_KEYS)
    rows = compare(plays, args.repeats)
    cmd = command_line("benchmarks/info_copy_cost.py", sys.argv[1:] if argv is None else argv)
    figures = page_figures(rows, cmd, args)
    print(render(figures))
    if args.out:
        write_figures_page("info_copy_cost", Path(args.out), render, figures)
    return 0


def render(figures: dict) -> str:
    """The page's text."""
    return "\n".join(page_lines(figures))


if __name__ == "__main__":
    raise SystemExit(main())
