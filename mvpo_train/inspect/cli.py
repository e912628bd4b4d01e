"""``mvpo-inspect RUN_DIR [--iteration K] [--group G] [--estimators grpo,gigpo,mvpo] [--png]
[--screenshot]`` (docs/inspect.md).

``RUN_DIR`` is a run folder (its ``records/iter-K.npz`` is read; without ``--iteration`` the
newest) or a record file. Writes ``<out>.html`` (default ``RUN_DIR/inspect/iter-K.html``, next
to the file for a record file), with ``--png`` ``<out>.png`` (matplotlib) and with
``--screenshot`` ``<out>.screenshot.png`` (headless Chromium). Bad input gets one line on
stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mvpo_envs.cli_args import FlagSpellingParser
from mvpo_train.inspect.browser import BrowserError
from mvpo_train.records import RecordError, find_records, read_batch_record

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    ap = FlagSpellingParser(
        prog="mvpo-inspect",
        description="One self-contained HTML page (and optionally a PNG) showing a batch "
        "record's credit: every estimator's advantage per step (docs/inspect.md).",
    )
    ap.add_argument("source", help="run folder (with records/) or a record file (.npz)")
    ap.add_argument("--iteration", "-k", type=int, help="recorded iteration (default: newest)")
    ap.add_argument(
        "--group", "-g", type=int, action="append", help="rollout group id to show (repeatable)"
    )
    ap.add_argument(
        "--estimators",
        "-e",
        help="comma-separated estimator names or 'all' (default: grpo,gigpo,mvpo + the trained one)",
    )
    ap.add_argument("--png", action="store_true", help="also write a static PNG of the grid")
    ap.add_argument(
        "--png-estimator", help="estimator coloured in the PNG (default: the trained one)"
    )
    ap.add_argument("--png-minus", help="draw the PNG as --png-estimator minus this estimator")
    ap.add_argument(
        "--screenshot",
        nargs="?",
        const="",
        metavar="FRAGMENT",
        help="also write <out>.screenshot.png with headless Chromium; optional view, e.g. "
        "'est=mvpo&minus=gigpo'",
    )
    ap.add_argument("--out", "-o", help="output path without or with .html")
    return ap


def _resolve(source: Path, iteration: int | None) -> Path:
    if source.is_file():
        return source
    if not source.is_dir():
        raise RecordError(f"{source}: no such run folder or record file")
    records = find_records(source)
    if not records:
        raise RecordError(
            f"{source}: no batch records (records/iter-K.npz); train with record_every > 0 "
            "or write some with python -m mvpo_train.inspect.sample"
        )
    if iteration is None:
        return records[max(records)]
    if iteration not in records:
        have = list(records)
        raise RecordError(
            f"{source}: no record of iteration {iteration}; recorded: "
            f"{', '.join(map(str, have[:20]))}{' ...' if len(have) > 20 else ''}"
        )
    return records[iteration]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``mvpo-inspect``."""
    from mvpo_train.inspect.data import build_inspect_data, parse_estimators
    from mvpo_train.inspect.html import write_html

    args = _parser().parse_args(argv)
    try:
        source = Path(args.source)
        path = _resolve(source, args.iteration)
        record = read_batch_record(path)
        if args.iteration is not None and source.is_file() and record.iteration != args.iteration:
            raise RecordError(f"{path}: holds iteration {record.iteration}, not {args.iteration}")
        names = parse_estimators(args.estimators, record.estimator_name)
        data = build_inspect_data(record, names, args.group)
        if (args.png_estimator or args.png_minus) and not args.png:
            raise ValueError("--png-estimator/--png-minus draw the PNG: add --png")
        for flag, name in (
            ("--png-estimator", args.png_estimator),
            ("--png-minus", args.png_minus),
        ):
            if name is not None and name not in data.adv:  # before any file is written
                raise ValueError(
                    f"{flag}: estimator {name!r} is not on the page ({data.estimators})"
                )
        if args.out:
            out = Path(args.out)
            out = out.with_suffix(".html") if out.suffix.lower() != ".html" else out
        elif source.is_dir():
            out = source / "inspect" / f"iter-{record.iteration:06d}.html"
        else:
            out = path.with_suffix(".html")
        html_path = write_html(data, out)
        print(f"wrote {html_path}")
        if args.png:
            from mvpo_train.inspect.png import write_png

            png = write_png(data, out.with_suffix(".png"), args.png_estimator, args.png_minus)
            print(f"wrote {png}")
        if args.screenshot is not None:
            from mvpo_train.inspect.browser import screenshot

            shot = screenshot(html_path, out.with_suffix(".screenshot.png"), args.screenshot)
            print(f"wrote {shot}")
    except (RecordError, ValueError, KeyError, BrowserError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"mvpo-inspect: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
