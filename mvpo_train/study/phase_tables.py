"""The tables of ``benchmarks/cpu_cost.py``: process CPU seconds per phase of a training
iteration, a column per measurement (docs/training.md, "CPU cost").

A measurement is the JSON its measured process writes: ``setup`` (from the trainer's start to
its first iteration), ``iterations`` (per iteration, the exclusive seconds of each phase),
``eval`` and ``total``. The measured processes run another commit's packages, so nothing here
is imported by them: only the driver that writes the page reads this module.

* :func:`header_lines`: the page's title and what it measured;
* :func:`row_of`, :func:`iteration_cpu`: the first iteration's phases with the setup, and an
  iteration's total (setup and evaluation left out);
* :func:`table`: one line per phase that took time, a column per measurement;
* :func:`task_lines`: a task's table of its cold (and warm) measurements, before and after,
  and the change of its iteration and setup;
* :func:`showcase_lines`: ``mvpo-showcase``'s totals before and after, and the estimate of
  ``make run`` (10 iterations) from its last measured iteration;
* :func:`sections`, :func:`page`: every task's section from the results JSON, and the whole
  page (what ``--analyze-only`` rebuilds, the sections added by hand after the run kept).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "PHASES",
    "header_lines",
    "iteration_cpu",
    "page",
    "row_of",
    "sections",
    "showcase_lines",
    "table",
    "task_lines",
]

#: display order of the phases
PHASES = [
    "setup", "minilm", "head forward", "lm score", "backward", "optimizer", "env",
    "rollout", "logp_ref", "advantage", "update", "eval",
]  # fmt: skip


def header_lines(command: str, shas: Mapping[str, str], jobs: int, export_cpu: float) -> list[str]:
    """The page's title and what it measured: ``command``, the two commits, the jobs at a
    time and the one-off CPU seconds of the ONNX export."""
    return [
        "# CPU cost per iteration, before and after the fast paths",
        "",
        f"Command: `nice -n 10 {command.strip()}` (benchmarks/cpu_cost.py, module docstring); "
        f"`before` = commit {shas['before']} (the code before the CPU-cost work, its "
        f"defaults), `after` = commit {shas['after']} with `--embedding-runtime auto`; "
        "process CPU seconds, one torch thread, the first iteration of a fresh process; the "
        f"two variants of a measurement ran at the same time (`--jobs {jobs}`). "
        f"Building the ONNX export once (not in the tables): {export_cpu:.1f} CPU s.",
        "",
    ]


def row_of(result: Mapping[str, Any]) -> dict[str, float]:
    """The first iteration's seconds per phase, with the run's setup."""
    it = dict(result["iterations"][0])
    it["setup"] = result["setup"]
    return it


def iteration_cpu(row: Mapping[str, float]) -> float:
    """An iteration's CPU seconds: every phase but ``setup`` and ``eval``."""
    return sum(v for k, v in row.items() if k not in ("setup", "eval"))


def table(title: str, rows: Mapping[str, Mapping[str, float]]) -> list[str]:
    """Markdown: one line per phase, a column per measurement; the iteration's total leaves
    out setup and eval."""
    cols = list(rows)
    lines = [
        f"### {title}",
        "",
        "| phase | " + " | ".join(cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    names = [p for p in PHASES if any(rows[c].get(p, 0.0) > 0.005 for c in cols)]
    for p in names:
        lines.append(f"| {p} | " + " | ".join(f"{rows[c].get(p, 0.0):.2f}" for c in cols) + " |")
    tot = {c: iteration_cpu(rows[c]) for c in cols}
    lines.append("| **iteration** | " + " | ".join(f"**{tot[c]:.2f}**" for c in cols) + " |")
    return lines


def task_lines(task: str, measured: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[str]:
    """The section of one task: ``measured`` holds per kind (``cold``, ``warm``) the
    measurement of each variant (``before``, ``after``); the table of their first iterations
    (:func:`table`, kinds then variants), then per kind the change of the iteration's CPU
    seconds and of the setup."""
    rows = {f"{v} {k}": row_of(r) for k, pair in measured.items() for v, r in pair.items()}
    lines = [*table(task, rows), ""]
    for kind in measured:
        b, a = rows[f"before {kind}"], rows[f"after {kind}"]
        tb, ta = iteration_cpu(b), iteration_cpu(a)
        lines.append(
            f"- {task}, {kind}: iteration {tb:.1f} -> {ta:.1f} CPU s "
            f"(x{ta / tb:.2f}); setup {b['setup']:.1f} -> {a['setup']:.1f} s"
        )
    return [*lines, ""]


def showcase_lines(res: Mapping[str, Mapping[str, Any]], n: int) -> list[str]:
    """The showcase's section: its totals, before and after, and the 10-iteration estimate
    (``n``: the iterations measured)."""
    lines = [
        f"### showcase (`mvpo-showcase --iterations {n}`, cold embedding cache)",
        "",
        "| | before | after | after / before |",
        "|---|---:|---:|---:|",
    ]
    vals: dict[str, dict[str, float]] = {}
    for v in ("before", "after"):
        r = res[v]
        its = [iteration_cpu(it) for it in r["iterations"]]
        later = its[-1] if len(its) > 1 else its[0]
        vals[v] = {
            "setup": r["setup"],
            "eval": r["eval"],
            **{f"iteration {k + 1}": x for k, x in enumerate(its)},
            "total": r["total"],
            "make run estimate": r["total"] + (10 - len(its)) * later,
        }
    for key in vals["before"]:
        b, a = vals["before"][key], vals["after"][key]
        lines.append(f"| {key} | {b:.1f} | {a:.1f} | x{a / b:.2f} |")
    lines += [
        "",
        f"`make run` estimate: the measured total of `mvpo-showcase --iterations {n}` "
        f"plus {10 - n} more iterations at the cost of its last measured one (later "
        "iterations hit the embedding cache more often, so this overstates them, the "
        "`before` more: it spends more on MiniLM).",
    ]
    return lines


def sections(results: Mapping[str, Any], showcase_iterations: int) -> list[str]:
    """Every task's section, in the order measured, from ``results`` (``<task>/<variant>/<kind>``
    -> a measurement, ``showcase`` -> variant -> one; other keys are not measurements)."""
    tasks: dict[str, dict[str, Any]] = {}
    for key, res in results.items():
        if key == "showcase":
            tasks[key] = res
        elif key.count("/") == 2:
            task, variant, kind = key.split("/")
            tasks.setdefault(task, {}).setdefault(kind, {})[variant] = res
    lines: list[str] = []
    for task, measured in tasks.items():
        if task == "showcase":
            lines += [*showcase_lines(measured, showcase_iterations), ""]
        else:
            lines += task_lines(task, measured)
    return lines


def page(results: Mapping[str, Any], old: str | None = None) -> str:
    """The page of a results JSON (``benchmarks/cpu_cost.py``: its command, the two commits,
    the jobs at a time, the export's CPU seconds, the showcase's iterations and the
    measurements), then the sections of ``old`` (the page as it was) added by hand after the
    run: from its first ``## `` heading on (the writer makes only ``#`` and ``###`` ones)."""
    head = header_lines(
        results["command"], results["commits"], results["jobs"], results["onnx_export_cpu_s"]
    )
    text = "\n".join([*head, *sections(results, results["showcase_iterations"])]) + "\n"
    at = (old or "").find("\n## ")
    return text + (old[at + 1 :] if old and at >= 0 else "")
