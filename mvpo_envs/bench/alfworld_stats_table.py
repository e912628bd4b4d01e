"""The side-by-side table of ``benchmarks/alfworld_stats.py`` (docs/alfworld_generator.md,
"Statistics"): sets of games measured by :func:`~mvpo_envs.bench.alfworld_game_stats.measure_set`
in columns, and a last column of the numbers of ReAct's 18 few-shot ALFWorld prompts.

* :data:`REACT`: those numbers, stored (derived from ysymyth/ReAct's
  ``prompts/alfworld_3prompts.json``); :func:`react_numbers` derives them again from a copy;
* :func:`table`: the markdown table, one row per statistic: :func:`table_cells` (the cells as
  printed, what the results JSON keeps) rendered by :func:`render_table`.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

from mvpo_envs.alfworld.data import TASK_TYPES
from mvpo_envs.bench.alfworld_game_stats import SetStats

__all__ = ["REACT", "react_numbers", "render_table", "table", "table_cells"]

SHORT = {
    "pick_and_place_simple": "pick",
    "look_at_obj_in_light": "look",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "pick_two_obj_and_place": "pick_two",
}
REACT_KIND = {
    "put": "pick_and_place_simple",
    "examine": "look_at_obj_in_light",
    "clean": "pick_clean_then_place_in_recep",
    "heat": "pick_heat_then_place_in_recep",
    "cool": "pick_cool_then_place_in_recep",
    "puttwo": "pick_two_obj_and_place",
}
_SEEN = (  # objects seen per receptacle looked at, prompt after prompt
    "3 2 1 4 0 1 4 5 3 4 2 5 0 0 0 1 0 0 1 1 2 0 4 16 4 15 4 0 1 4 5 3 4 2 4 5 2 0 1 3 3 0 7 11 "
    "2 16 2 0 11 8 0 1 1 0 4 8 14 0 0 0 1 0 0 1 4 4 15 14 3 0 7 2 6 3 3 4 5 5 0 1 3 7 11 8 1 2 "
    "0 0 2 0 0 0 7 3 0 1 7 3 3 0 0 0 3 9 4 0 3"
)
#: derived from ysymyth/ReAct prompts/alfworld_3prompts.json (act_* entries) with
#: ``--react-prompts``: receptacles listed at reset per room; objects seen on each receptacle
#: the agent looked at; commands of each successful run per task type
REACT = {
    "receptacles": [13, 20, 18, 29, 20, 10, 30, 29, 27, 35, 34, 28, 11, 11, 39, 14, 22, 11],
    "seen_per_receptacle": [int(n) for n in _SEEN.split()],
    "commands": {
        "pick_and_place_simple": [6, 12, 16],
        "pick_clean_then_place_in_recep": [8, 14, 6],
        "pick_heat_then_place_in_recep": [9, 8, 9],
        "pick_cool_then_place_in_recep": [5, 20, 8],
        "pick_two_obj_and_place": [12, 8, 24],
        "look_at_obj_in_light": [14, 11, 5],
    },
}

_SEEN_LINE = re.compile(
    r"(?:On the \S+ \d+|You open the \S+ \d+\. The \S+ \d+ is open\. In it), you see (.*)\.$"
)


def react_numbers(path: Path) -> dict:
    """Recompute :data:`REACT` from a copy of ReAct's ``alfworld_3prompts.json``."""
    prompts = json.loads(path.read_text(encoding="utf-8"))
    out: dict = {"receptacles": [], "seen_per_receptacle": [], "commands": defaultdict(list)}
    for key, text in prompts.items():
        if not key.startswith("act_"):
            continue
        intro = re.search(r"you see (.*?)\.\n", text)
        if intro is None:
            raise ValueError(f"{path}: {key} has no initial observation")
        out["receptacles"].append(len(intro.group(1).split(", ")))
        for line in text.split("\n"):
            seen = _SEEN_LINE.match(line)
            if seen:
                items = seen.group(1)
                out["seen_per_receptacle"].append(
                    0 if items == "nothing" else len(items.split(", "))
                )
        kind = REACT_KIND[key.split("_")[1]]
        out["commands"][kind].append(sum(1 for ln in text.split("\n") if ln.startswith("> ")))
    out["commands"] = dict(out["commands"])
    return out


def _dist(values: list[float], digits: int = 0) -> str:
    """``min–max (median m)`` of ``values`` (one value alone; ``–`` for none)."""
    if not values:
        return "–"
    fmt = f"{{:.{digits}f}}"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(min(values))}–{fmt.format(max(values))} (median {fmt.format(med)})"


def table(sets: list[SetStats], react: dict, episodes: int, steps: int) -> str:
    """The markdown table: a column per set, the ReAct column from ``react`` (:data:`REACT`
    or :func:`react_numbers`); ``steps``: the random policy's episode length
    (:func:`table_cells`, :func:`render_table`)."""
    return render_table(table_cells(sets, react, steps))


def render_table(cells: dict[str, list]) -> str:
    """The markdown table of :func:`table_cells`' ``header`` and ``rows``."""
    header, rows = cells["header"], cells["rows"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def table_cells(sets: list[SetStats], react: dict, steps: int) -> dict[str, list]:
    """The table's cells as printed (JSON-able: what a results JSON keeps): ``header`` and
    ``rows`` (a label, a cell per set, the ReAct cell)."""
    header = ["", *(f"{s.name} ({len(s.games)} games)" for s in sets), "ReAct prompts (18 rooms)"]
    rows = []

    def row(label: str, cells: list[str], react_cell: str) -> None:
        rows.append([label, *cells, react_cell])

    row(
        "receptacles per room",
        [_dist([g.receptacles for g in s.games]) for s in sets],
        _dist(react["receptacles"]),
    )
    row(
        "objects in receptacles per room",
        [_dist([g.objects for g in s.games]) for s in sets],
        "–",
    )
    row(
        "objects per receptacle (mean over a room)",
        [_dist([g.per_receptacle_mean for g in s.games], 1) for s in sets],
        f"{statistics.fmean(react['seen_per_receptacle']):.1f} (on receptacles looked at)",
    )
    row(
        "most objects on one receptacle",
        [_dist([g.per_receptacle_max for g in s.games]) for s in sets],
        f"{max(react['seen_per_receptacle'])} (most seen)",
    )
    row(
        "admissible commands at reset",
        [_dist([g.admissible for g in s.games]) for s in sets],
        _dist([n + 3 for n in react["receptacles"]]) + " (receptacles + look, inventory, help)",
    )
    for task in TASK_TYPES:
        row(
            f"walkthrough length: {SHORT[task]}",
            [_dist([g.walkthrough for g in s.games if g.task_type == task]) for s in sets],
            _dist(react["commands"].get(task, [])) + " (ReAct's runs)",
        )
    cells = []
    for s in sets:
        wins = sum(g.random_wins for g in s.games)
        eps = sum(g.random_episodes for g in s.games)
        cells.append(f"{100 * wins / eps:.1f}% ({wins}/{eps})" if eps else "–")
    row(f"random policy wins in {steps} steps", cells, "–")
    return {"header": header, "rows": rows}
