"""The tasks of a before/after CPU benchmark, each measured with every variant side by side
(``benchmarks/cpu_cost.py``; docs/training.md).

A measurement is one process per variant, started ``jobs`` at a time so that the variants of a
measurement meet the same load on a shared machine. Per task, a cold measurement (the
variants' embedding caches deleted first) and, where the task's policy embeds texts, a warm
one (the caches the cold one wrote); ``showcase`` is measured cold only. The page is rewritten
after every task, so an interrupted benchmark keeps what it measured.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mvpo_train.study.phase_tables import sections

__all__ = ["measure_tasks"]

#: ``measure(task, variant, embedding cache)`` -> the measured process's JSON
Measure = Callable[[str, str, Path], dict[str, Any]]


def measure_tasks(
    tasks: Sequence[str],
    variants: Sequence[str],
    measure: Measure,
    base: Path,
    jobs: int,
    cached: Collection[str],
    showcase_iterations: int,
    md: list[str],
    out: Path,
) -> dict[str, Any]:
    """Every task of ``tasks`` measured (module docstring), the variants' caches under
    ``base`` (``<task>-<variant>-emb.npz``); ``md`` (the page's head) and the sections of the
    tasks done (:func:`~mvpo_train.study.phase_tables.sections`) are written to ``out`` after
    each task. The results: ``showcase`` -> variant -> JSON,
    and ``<task>/<variant>/<cold|warm>`` -> JSON."""
    results: dict[str, Any] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:

        def pair(task: str, kind: str) -> dict[str, dict[str, Any]]:
            caches = {v: base / f"{task}-{v}-emb.npz" for v in variants}
            if kind == "cold":
                for c in caches.values():
                    c.unlink(missing_ok=True)
            futs = {v: pool.submit(measure, task, v, caches[v]) for v in variants}
            return {v: f.result() for v, f in futs.items()}

        for task in tasks:
            if task == "showcase":
                results["showcase"] = pair(task, "cold")
            else:
                kinds = ("cold", "warm") if task in cached else ("cold",)
                for kind in kinds:
                    res = pair(task, kind)
                    results.update({f"{task}/{v}/{kind}": r for v, r in res.items()})
            # what is done so far
            out.write_text("\n".join([*md, *sections(results, showcase_iterations)]) + "\n")
    return results
