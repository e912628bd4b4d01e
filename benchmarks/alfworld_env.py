"""Speed of mvpo/ALFWorld-v0's two engines against ALFWorld's own loop, in one run.

docs/alfworld_engine.md, "Speed". ALFWorld's own loop (``PddlEnv`` + ``AlfredDemangler`` +
``AlfredInfos``, the game loaded at every reset), ``engine="pddl"`` and ``engine="fast"`` play
the same games with the same seeded script (the walkthrough but its last command, then seeded
random admissible actions); the run checks every feedback, admissible list and ``won`` agree.
Measured: steps/s, warm reset, first load, the same through ``gym.make``, MiB per env, cost
against room size, and sync against async batching.

``python benchmarks/alfworld_env.py`` writes ``benchmarks/results/alfworld_env.md`` and the
page's figures as the ``.json`` beside it; ``--quick`` plays fewer games and steps;
``--analyze-only`` only rebuilds the page from that JSON. The measurements are
:func:`mvpo_envs.bench.alfworld_engine_speed.compare_all`, the page
:mod:`mvpo_envs.bench.alfworld_env_page`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mvpo_envs.alfworld.data import bundled_split_dir, collect_games
from mvpo_envs.bench.alfworld_engine_speed import compare_all
from mvpo_envs.bench.alfworld_env_page import page_figures, report
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).resolve().parent / "results" / "alfworld_env.md"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="alfworld", help="bundled preset of the main comparison")
    p.add_argument("--split", default="valid_unseen", help="bundled split to play")
    p.add_argument("--games", type=int, default=8, help="number of games (sorted ids)")
    p.add_argument("--extra", type=int, default=15, help="random admissible steps per episode")
    p.add_argument("--episodes", type=int, default=2, help="passes over the games")
    p.add_argument("--vector-steps", type=int, default=20)
    p.add_argument("--async-envs", type=int, default=16, help="sub-envs (processes) of the pool")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--analyze-only", action="store_true", help="only rebuild --out from its JSON")
    args = p.parse_args(argv)
    if args.analyze_only:
        write_figures_page("alfworld_env", args.out, report)
        return
    if args.quick:
        args.games, args.extra, args.episodes, args.vector_steps, args.async_envs = 3, 5, 1, 5, 4
    env_kwargs = {"preset": args.preset, "split": args.split}
    games = collect_games(bundled_split_dir(args.split, args.preset))[: args.games]
    m = compare_all(
        games, args.extra, args.episodes, args.vector_steps, args.async_envs, env_kwargs
    )
    shown = (args.quick, len(games), args.preset, args.split, args.episodes, args.extra)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_figures_page("alfworld_env", args.out, report, page_figures(m, *shown))
    if not (m["identical"] and m["env_identical"]):
        raise SystemExit("the engines differ from ALFWorld's engine")


if __name__ == "__main__":
    main()
