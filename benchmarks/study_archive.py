"""The compact archive of a long sweep: ``export`` and ``import`` (docs/learning_study.md,
"Budget"; what an archive keeps and how import checks it: :mod:`mvpo_train.study.archive`).

    python benchmarks/study_archive.py export --base runs/full/learning \\
        --to benchmarks/results/learning_full_runs [--checkpoints valid_unseen valid_seen] \\
        [--warm runs/full/encoder-warm] [--records DIR]
    python benchmarks/study_archive.py import --from benchmarks/results/learning_full_runs \\
        --base runs/full/learning [--warm runs/full/encoder-warm]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mvpo_train.study.archive import (
    CHECKPOINTS,
    ArchiveError,
    export,
    export_warm,
    import_,
    import_warm,
)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except ArchiveError as err:  # one line, exit 1
        print(f"study_archive: {err}", file=sys.stderr)
        return 1


def _main(argv: list[str] | None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="run folders -> compact archive")
    e.add_argument("--base", required=True, help="the sweep's --base")
    e.add_argument("--to", required=True, help="archive folder (committed)")
    e.add_argument(
        "--checkpoints",
        nargs="+",
        metavar="SPLIT",
        help="also archive the newest checkpoint of every run that lacks one of these final "
        "evaluations (eval-SPLIT.json), e.g. valid_unseen valid_seen",
    )
    e.add_argument(
        "--records",
        metavar="DIR",
        help="also copy the batch records up to each run's newest intact checkpoint, with its "
        "config.yaml, into DIR/<run>/ (a machine-local folder: never the archive or "
        "benchmarks/results; for benchmarks/alignment.py --run-dir DIR/RUN --relabel)",
    )
    e.add_argument("--warm", help="also archive this warm-start folder (the study's --warm)")
    i = sub.add_parser("import", help="compact archive -> run folders")
    i.add_argument("--from", dest="src", required=True, help="archive folder")
    i.add_argument("--base", required=True, help="the sweep's --base")
    i.add_argument("--warm", help="restore the archived warm start here (the study's --warm)")
    args = p.parse_args(argv)
    if args.cmd == "export":
        records = Path(args.records) if args.records else None
        n = export(Path(args.base), Path(args.to), args.checkpoints, records)
        if args.warm:
            export_warm(Path(args.warm), Path(args.to))
        held = sorted(p.parent.name for p in Path(args.to).glob(f"*/{CHECKPOINTS}"))
        print(
            f"exported {n} runs to {args.to}"
            + (f"; checkpoints of the unfinished: {', '.join(held)}" if held else "")
        )
    else:
        copied, kept = import_(Path(args.src), Path(args.base))
        print(f"imported {copied} runs into {args.base}")
        if args.warm and import_warm(Path(args.src), Path(args.warm)):
            print(f"restored the warm start into {args.warm}")
        if kept:
            print(
                f"kept {len(kept)} run folders that already have metrics (or other files): "
                f"{', '.join(kept)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
