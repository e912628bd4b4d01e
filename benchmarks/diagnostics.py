"""The MVPO paper's training diagnostics, measured and drawn: GRPO vs GiGPO vs MVPO on ALFWorld and WebShop.

Read from the runs on disk (``metrics.jsonl``, ``config.yaml``; nothing is trained here): per
run set, zero-advantage and zero-credit ratios of the first iterations, kappa and EMA success,
the grouping ratios, the potential's checks, the step-level alignment of MVPO's repair
(``--alignment-json``), AMP weights and time per phase. Written to
``benchmarks/results/diagnostics.md`` (+ ``.json``, one ``diagnostics_<set>.png`` per set). The
sets, what each table means and the commands: docs/learning_study.md, "Diagnostics"::

    python benchmarks/diagnostics.py --analyze-only \
        --alfworld-full-base benchmarks/results/learning_full_runs [--alignment-json OUT ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from diagnostics_data import (
    ALFWORLD_ARMS,
    ALFWORLD_BASE,
    ALFWORLD_FULL_ARMS,
    ALFWORLD_FULL_BASE,
    ALFWORLD_FULL_COPIES,
    HEADLINE_SETS,
    HISTORY_SETS,
    RESULTS,
    ROOT,
    STUDY_ITERATIONS,
    TEXT,
    WEBSHOP_ARMS,
    WEBSHOP_BASE,
    WEBSHOP_STUDY_ARMS,
    WEBSHOP_STUDY_BASE,
    _rel,
)

from mvpo_train.study.page_command import with_page_command
from mvpo_train.study.run_set_draw import SetSpec, draw_sets
from mvpo_train.study.run_set_page import write_markdown
from mvpo_train.study.run_set_report import read_previous
from mvpo_train.study.run_sets import (
    ALIGNMENT_CMD,
    alignment_summary,
    load_runset,
    read_alignment,
)
from mvpo_train.study.tables import command_line


def set_specs(args: argparse.Namespace) -> list[SetSpec]:
    """The headline sets (the two studies in the MVPO paper's regime), then the history sets."""
    full = Path(args.alfworld_full_base)
    copies = full.resolve() == ALFWORLD_FULL_COPIES.resolve()
    specs = [
        SetSpec(
            "alfworld-full", full, ALFWORLD_FULL_ARMS, tuple(args.alfworld_full_seeds),
            "python benchmarks/learning.py --arms grpo gigpo mvpo --seeds 0 1 2 3 4 "
            "--iterations 60 --num-groups 16 --group-size 8 ... --base runs/full/learning",
            STUDY_ITERATIONS, ALFWORLD_FULL_BASE, oracle=True,
            note="The full command: docs/learning_study.md, \"The MVPO paper's regime\". " + (
                "Read from the committed compact copies (`metrics.jsonl`, `config.yaml` and "
                "evaluations of each run, as far as the study had run when they were exported "
                "by `python benchmarks/study_archive.py export --base runs/full/learning --to "
                f"{_rel(ALFWORLD_FULL_COPIES)}`)." if copies else
                "The committed compact copies redraw this set without the runs: "
                f"`--alfworld-full-base {_rel(ALFWORLD_FULL_COPIES)}`."),
        ),
        SetSpec(
            "webshop-study", Path(args.webshop_study_base), WEBSHOP_STUDY_ARMS,
            tuple(args.webshop_study_seeds),
            "python benchmarks/learning.py --env webshop --base runs/webshop/learning",
            STUDY_ITERATIONS, WEBSHOP_STUDY_BASE,
        ),
        SetSpec("alfworld", Path(args.alfworld_base), ALFWORLD_ARMS, tuple(args.alfworld_seeds),
                "python benchmarks/learning.py", default_base=ALFWORLD_BASE, oracle=True),
    ]  # fmt: skip
    web = Path(args.webshop_base)  # made by this script's former --run-webshop (git history)
    specs += [
        SetSpec(name, base, WEBSHOP_ARMS, tuple(seeds), "python benchmarks/diagnostics.py --run-webshop (removed since; git history)")
        for name, base, seeds in (("webshop", web, args.webshop_seeds),
                                  ("webshop-score", web / "score", args.webshop_score_seeds))
    ]  # fmt: skip
    return specs


def analyze(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = read_previous(args.previous_json)
    alignments = [
        alignment_summary(read_alignment(Path(f)), Path(f), ROOT) for f in args.alignment_json
    ]
    specs = {sp.name: sp for sp in set_specs(args)}
    loaded = {n: load_runset(n, sp.base, sp.arms, sp.seeds, sp.plan) for n, sp in specs.items()}
    if lost := [
        n for n in HEADLINE_SETS if not loaded[n].found() and previous.get(n, {}).get("found")
    ]:
        raise ValueError(  # never a page emptier than the one it replaces
            f"no runs of {', '.join(lost)} under "
            f"{', '.join(_rel(specs[n].base) for n in lost)}, which {_rel(Path(args.previous_json))} "
            "shows; nothing written (`python benchmarks/diagnostics.py --analyze-only` alone "
            "rebuilds the page with its own command)"
        )
    alf = loaded["alfworld"]
    carried = {
        n for n in HISTORY_SETS if not loaded[n].found() and previous.get(n, {}).get("found")
    }
    if (
        args.alfworld_preview
        and "alfworld" not in carried
        and (not alf.found() or alf.partial_notes())
    ):
        quick = load_runset("alfworld-quick", Path(args.alfworld_preview), ALFWORLD_ARMS, [0])
        if quick.found():  # the study is not complete: its smoke sweep as a preview
            specs["alfworld-quick"] = SetSpec(
                "alfworld-quick", quick.base, ALFWORLD_ARMS, (0,),
                "python benchmarks/learning.py --quick",
                note=(f"**Preview only**, shown while the study (`{_rel(alf.base)}`) is "
                      "incomplete: the sweep's smoke runs (one seed, a few iterations, "
                      "otherwise the study's settings). Rerun `--analyze-only` when the study "
                      "is complete; this section then goes."),
            )  # fmt: skip
            loaded["alfworld-quick"] = quick
    order, pngs = draw_sets(
        loaded,
        specs,
        carried,
        previous,
        Path(args.previous_json),
        alignments,
        out,
        args.early,
        ROOT,
        HEADLINE_SETS,
        ["alfworld-quick"],
    )
    write_markdown(order, args.command, args.early, out, pngs, TEXT)
    out.with_suffix(".json").write_text(json.dumps(order, indent=1, default=float) + "\n")
    return order


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python benchmarks/diagnostics.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--analyze-only", action="store_true",
                   help="rebuild the md, json and figures from the runs on disk (what this "
                   "script always does); alone (or with --out): with the arguments of the "
                   "command the page at --out names")  # fmt: skip
    p.add_argument("--alfworld-full-base", default=str(ALFWORLD_FULL_BASE),
                   help="the ALFWorld full-split study's runs (headline set `alfworld-full`); "
                   f"its committed compact copies: {_rel(ALFWORLD_FULL_COPIES)}")  # fmt: skip
    p.add_argument("--alfworld-full-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--webshop-study-base", default=str(WEBSHOP_STUDY_BASE),
                   help="the WebShop study's runs (headline set `webshop-study`)")  # fmt: skip
    p.add_argument("--webshop-study-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--alignment-json", action="append", default=[], metavar="PATH",
                   help=f"a file of `{ALIGNMENT_CMD}` (repeatable): its run's step-level "
                   "alignment, shown in the section of the set holding the run")  # fmt: skip
    p.add_argument("--previous-json", default=str(RESULTS / "diagnostics.json"),
                   help="history sets (alfworld, webshop, webshop-score) whose runs are not on "
                   "disk are carried over from this json as last drawn; '' for none")  # fmt: skip
    p.add_argument("--alfworld-base", default=str(ALFWORLD_BASE), help="ALFWorld sweep folder")
    p.add_argument("--alfworld-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--alfworld-preview", default=str(ROOT / "runs" / "learning-quick"),
                   help="shown as a preview set while the --alfworld-base study is incomplete: "
                   "the sweep's `--quick` runs; '' for none")  # fmt: skip
    p.add_argument("--webshop-base", default=str(WEBSHOP_BASE), help="WebShop runs folder")
    p.add_argument("--webshop-seeds", nargs="+", type=int, default=[0, 1, 2],
                   help="seeds of the main WebShop set (the MVPO paper's success reward)")  # fmt: skip
    p.add_argument("--webshop-score-seeds", nargs="*", type=int, default=[0, 1, 2],
                   help="seeds of the WebShop set with WebShop's score reward (none: skip)")  # fmt: skip
    p.add_argument("--early", type=int, default=5, help="'first iterations' of the tables")
    p.add_argument("--out", default=str(RESULTS / "diagnostics.md"))
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    page = build_parser().parse_args(argv).out
    argv = with_page_command(argv, Path(page), "benchmarks/diagnostics.py", "diagnostics")
    args = build_parser().parse_args(argv)
    args.command = command_line("benchmarks/diagnostics.py", argv)
    try:
        analyze(args)
    except ValueError as e:  # bad input (an alignment file, the previous json): one line
        print(f"diagnostics: {e}", file=sys.stderr)
        return 2
    print(Path(args.out).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
