"""How ALFWorld-like are the generated games? Generated sets vs real ALFWorld, side by side.

docs/alfworld_generator.md, "Statistics", says what each row and column is. Columns: the bundled
generated presets (``--presets``), any ``--games NAME=DIR``, the real ALFWorld games under
``<realdata>/alfworld/json_2.1.1`` (``--realdata`` or ``MVPO_REALDATA``; ``--no-realdata``
leaves the column out) and the numbers of ReAct's 18 few-shot ALFWorld prompts (stored:
:data:`~mvpo_envs.bench.alfworld_stats_table.REACT`; ``--react-prompts FILE`` recomputes them
from a copy of ``prompts/alfworld_3prompts.json``).

Usage: ``python benchmarks/alfworld_stats.py [--episodes 5] [--markdown OUT.md]`` (the page's
cells are kept as the ``.json`` beside ``OUT.md``; ``--analyze-only`` only rebuilds
``--markdown``, default ``benchmarks/results/alfworld_stats.md``, from it). The numbers are :mod:`mvpo_envs.bench.alfworld_game_stats`, the table
:mod:`mvpo_envs.bench.alfworld_stats_table`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mvpo_envs.bench.alfworld_game_stats import measure_set
from mvpo_envs.bench.alfworld_stats_table import REACT, react_numbers, render_table, table_cells
from mvpo_envs.realdata import add_realdata_argument, require_realdata, without_realdata
from mvpo_train.study.figures_page import write_figures_page

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "alfworld_stats.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--presets", default="alfworld,standard,mini", help="bundled presets to measure")
    p.add_argument("--games", action="append", default=[], help="extra folder of games (NAME=DIR)")
    p.add_argument("--episodes", type=int, default=5, help="random-policy episodes per game")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--react-prompts", type=Path, help="recompute the ReAct column from this file")
    p.add_argument("--markdown", type=Path, help="also write the table (and the command) here")
    p.add_argument(
        "--analyze-only", action="store_true", help="only rebuild --markdown from its JSON"
    )
    add_realdata_argument(p)
    args = p.parse_args(argv)
    if args.analyze_only:
        write_figures_page("alfworld_stats", args.markdown or RESULTS, page)
        return 0
    real_root = None
    if not args.no_realdata:
        real_root = require_realdata(args.realdata, "alfworld/json_2.1.1", "alfworld_stats")
    react = react_numbers(args.react_prompts) if args.react_prompts else REACT
    if args.react_prompts and react != REACT:
        print("note: the prompt file gives other numbers than the stored ones", file=sys.stderr)
    t0 = time.perf_counter()
    sets = []
    data_root = REPO / "data" / "alfworld"
    for preset in [x for x in args.presets.split(",") if x]:
        folders = sorted(d for d in (data_root / preset).iterdir() if d.is_dir())
        sets.append(measure_set(preset, folders, args.episodes, args.steps, args.seed))
    for spec in args.games:
        name, _, folder = spec.partition("=")
        sets.append(measure_set(name, [Path(folder)], args.episodes, args.steps, args.seed))
    if real_root is not None:
        folders = sorted(d for d in real_root.iterdir() if d.is_dir())
        sets.append(measure_set("real", folders, args.episodes * 8, args.steps, args.seed))
    cells = table_cells(sets, react, args.steps)
    print(render_table(cells))
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if args.markdown:
        shown = without_realdata(argv if argv is not None else sys.argv[1:])
        command = "python benchmarks/alfworld_stats.py " + " ".join(shown)
        write_figures_page(
            "alfworld_stats", args.markdown, page, {"command": command.strip(), **cells}
        )
    return 0


def page(f: dict) -> str:
    """The page of a run's figures: its command and the table's cells."""
    return f"# Generated vs real ALFWorld games\n\n`{f['command']}`\n\n{render_table(f)}\n"


if __name__ == "__main__":
    sys.exit(main())
