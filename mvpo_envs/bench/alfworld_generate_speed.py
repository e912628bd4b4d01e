"""Timing ``mvpo-alfworld-generate`` and checking what it writes: CPU of a process and its
workers, one hash of a generated tree, one timed generation of a slice of a split.

:func:`timed_run` generates train games ``first .. first + n - 1`` of the ``alfworld`` preset
into a temporary folder with ``workers`` processes and the ``engine`` verifier, and returns
wall and CPU seconds and :func:`tree_digest` of what it wrote, so that runs with other worker
counts or verifiers can be checked byte-identical; :func:`measure_all` and :func:`page`
(:func:`page_figures`, the figures a run keeps, and :func:`report`, the page of them): the
runs and the page of ``benchmarks/alfworld_generate.py`` (docs/alfworld_generator.md,
"Verification and speed"). A measuring tool, so it sits
beside the layered ``mvpo_envs.alfworld`` package (docs/architecture.md), not in it.
"""

from __future__ import annotations

import hashlib
import os
import platform
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from mvpo_envs.alfworld import generate as gen
from mvpo_envs.alfworld.fast import engine as fast_engine
from mvpo_envs.alfworld.gen_alfworld import ALFWORLD_SPLIT_SIZES

__all__ = [
    "FULL_TRAIN",
    "cpu_seconds",
    "measure_all",
    "page",
    "page_figures",
    "report",
    "timed_run",
    "tree_digest",
]

FULL_TRAIN = ALFWORLD_SPLIT_SIZES["train"]


def cpu_seconds() -> float:
    """User + sys CPU of this process and of its waited-for children (the worker pools)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def tree_digest(root: Path) -> str:
    """One hash of every game file under ``root`` (paths and bytes; the manifest left out)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != gen.MANIFEST_FILE:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def timed_run(n: int, first: int, workers: int, engine: str) -> dict[str, Any]:
    """Generate the sample once; wall, CPU, and the hash of what was written.

    The fast engine's per-process caches of parsed games are emptied first: every run parses
    its games anew, as a generator run does (each game is new to it).
    """
    fast_engine._GAMES.clear()
    fast_engine._LOGICS.clear()
    with tempfile.TemporaryDirectory() as tmp:
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        gen.generate(
            tmp,
            {"train": n},
            preset="alfworld",
            first_index=first,
            show_progress=False,
            workers=workers,
            verify_engine=engine,
        )
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        digest = tree_digest(Path(tmp))
    return {"n": n, "workers": workers, "engine": engine, "wall": wall, "cpu": cpu, "hash": digest}


def measure_all(
    sample: int, pddl_sample: int, first: int, workers: list[int], full: bool
) -> dict[str, Any]:
    """Every measurement of ``benchmarks/alfworld_generate.py``'s page (:func:`page`): a
    ``sample`` of train games from ``first`` per worker count (``fast`` verifier), the
    ``pddl`` verifier against ``fast`` on ``pddl_sample`` games in one process, with ``full``
    the whole train split on 2 workers, and the load average before and after."""
    load_before = os.getloadavg()

    gen.generate(tempfile.mkdtemp(), {"train": 1}, preset="alfworld", show_progress=False)
    rows = [timed_run(sample, first, w, "fast") for w in workers]
    # old vs new verifier: same process, same sample, one worker (warm: the imports are done)
    old = timed_run(pddl_sample, first, 1, "pddl")
    new = timed_run(pddl_sample, first, 1, "fast")
    full_run = timed_run(FULL_TRAIN, 0, 2, "fast") if full else None
    load_after = os.getloadavg()
    return {
        **{"rows": rows, "old": old, "new": new, "full": full_run},
        **{"load_before": load_before, "load_after": load_after},
        "same_workers": len({r["hash"] for r in rows}) == 1,
        "same_engines": old["hash"] == new["hash"],
    }


def page_figures(m: dict[str, Any], args: Any) -> dict[str, Any]:
    """What the page prints, from :func:`measure_all`'s measurements ``m`` and the command's
    ``args`` (``sample``, ``pddl_sample``, ``first``, ``workers``, ``full``): the runs with
    their rates, the old/new ratio and the extrapolation, and this machine; JSON-able."""
    rows, old, new, full = m["rows"], m["old"], m["new"], m["full"]
    # the larger sample's per-game CPU is the honest rate (start-up shared by more games)
    rate = rows[0]["cpu"] / rows[0]["n"]

    def run(r: dict[str, Any]) -> dict[str, Any]:
        per_s = r["n"] / r["wall"]
        ms = 1000 * r["cpu"] / r["n"]
        return {**{k: r[k] for k in ("workers", "n", "wall", "cpu")}, "per_s": per_s, "ms": ms}

    return {
        "command": f"python benchmarks/alfworld_generate.py --sample {args.sample} "
        f"--pddl-sample {args.pddl_sample} --first {args.first} --workers {args.workers}"
        + (" --full" if args.full else ""),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "load": [m["load_before"][0], m["load_after"][0]],
        "first": args.first,
        "sample": args.sample,
        "pddl_sample": args.pddl_sample,
        "rows": [run(r) for r in rows],
        "old": run(old),
        "new": run(new),
        "ratio": (old["cpu"] / old["n"]) / (new["cpu"] / new["n"]),
        "same_workers": m["same_workers"],
        "same_engines": m["same_engines"],
        "full_train": FULL_TRAIN,
        "rate_ms": 1000 * rate,
        "extrapolated_cpu_s": FULL_TRAIN * rate,
        "extrapolated_wall_s": FULL_TRAIN * rate / 2,  # on 2 free cores
        "full": None
        if full is None
        else {"wall": full["wall"], "cpu": full["cpu"], "ms": 1000 * full["cpu"] / FULL_TRAIN},
    }


def report(f: dict[str, Any]) -> str:
    """The page of :func:`page_figures`' figures ``f``."""
    first, yes = f["first"], {True: "yes", False: "NO"}
    lines = [
        "# ALFWorld generator speed (`benchmarks/alfworld_generate.py`)",
        "",
        f"Command: `{f['command']}`; {f['machine']}, load average "
        f"{f['load'][0]:.1f} before / {f['load'][1]:.1f} after (a machine shared with other "
        "jobs: the wall clock counts their time too, the CPU time does not). CPU = user + sys "
        "of this process and its worker processes, start-up included.",
        "",
        f"## Games/s per worker count (train games {first}..{first + f['sample'] - 1}, "
        "`fast` verifier)",
        "",
        "| workers | games | wall s | games/s (wall) | CPU s | CPU ms/game |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in f["rows"]:
        lines.append(
            f"| {r['workers']} | {r['n']} | {r['wall']:.1f} | {r['per_s']:.1f} | "
            f"{r['cpu']:.1f} | {r['ms']:.1f} |"
        )
    lines += [
        "",
        f"Files identical for every worker count: **{yes[f['same_workers']]}**.",
        "",
        f"## Old verifier vs new (same process, train games {first}.."
        f"{first + f['pddl_sample'] - 1}, 1 worker)",
        "",
        "| verifier | games | CPU s | CPU ms/game | wall s |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, r in (
        ("`pddl` (TextWorld + Fast Downward, before)", f["old"]),
        ("`fast`", f["new"]),
    ):
        lines.append(f"| {label} | {r['n']} | {r['cpu']:.2f} | {r['ms']:.1f} | {r['wall']:.2f} |")
    n, full = f["full_train"], f["full"]
    lines += [
        "",
        f"CPU per game, `pddl` / `fast`: **{f['ratio']:.0f}x**. Files identical on both "
        f"verifiers: **{yes[f['same_engines']]}**.",
        "",
        "## Extrapolation to the full train split",
        "",
        f"{n} games x {f['rate_ms']:.1f} CPU ms/game (the 1-worker row, imports "
        f"already done) = {f['extrapolated_cpu_s']:.0f} CPU s: about "
        f"{f['extrapolated_wall_s']:.0f} s of "
        "wall time on 2 free cores, plus ~2 s of imports per worker process.",
        "",
    ]
    if full is not None:
        lines += [
            f"Measured (`--full`): the whole train split ({n} games, 2 workers) in "
            f"{full['wall']:.0f} s of wall time and {full['cpu']:.0f} s of CPU "
            f"({full['ms']:.1f} CPU ms/game, start-up included).",
            "",
        ]
    return "\n".join(lines)


def page(m: dict[str, Any], args: Any) -> str:
    """The page from :func:`measure_all`'s measurements ``m`` and the command's ``args``
    (:func:`page_figures`, :func:`report`)."""
    return report(page_figures(m, args))
