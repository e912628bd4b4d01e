"""Speed of mvpo/WebShop-v0: start-up, steps per second, search latency, expert/random scores.

docs/webshop.md. Start-up with the BM25 index built and from the disk cache, the first reward
(loads the noun extractor), steps/s of random and expert play, uncached search latency on the
bundled catalog and on the 1,000 real products of ``<realdata>/webshop`` (``--realdata`` or
``MVPO_REALDATA``; ``--no-realdata`` leaves that row out), mean scores on the test split.

``python benchmarks/webshop_env.py`` writes ``benchmarks/results/webshop_env.md`` and the
page's figures as the ``.json`` beside it; ``--quick`` plays fewer episodes; ``--analyze-only``
only rebuilds the page from that JSON. The measurements and the page are :mod:`mvpo_envs.bench.webshop_speed`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mvpo_envs.bench.webshop_speed import measure_all, page, this_machine
from mvpo_envs.realdata import add_realdata_argument, require_realdata
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).resolve().parent / "results" / "webshop_env.md"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--analyze-only", action="store_true", help="only rebuild --out from its JSON")
    add_realdata_argument(p)
    args = p.parse_args(argv)
    figures = None
    if not args.analyze_only:
        real_dir = (
            None if args.no_realdata else require_realdata(args.realdata, "webshop", "webshop_env")
        )
        episodes = 100 if args.quick else 500
        figures = {"quick": args.quick, "episodes": episodes, "machine": this_machine()}
        figures["measurements"] = measure_all(episodes, real_dir)
        args.out.parent.mkdir(parents=True, exist_ok=True)
    write_figures_page("webshop_env", args.out, report, figures)


def report(f: dict) -> str:
    """The page of the figures a run wrote (its flags, machine and measurements)."""
    return "\n".join(page(f["measurements"], f["quick"], f["episodes"], f["machine"]))


if __name__ == "__main__":
    main()
