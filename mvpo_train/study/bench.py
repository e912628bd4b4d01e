"""The results of the speed and scale benchmarks of ``benchmarks/``: where they are kept and
how their pages are written (what they measure with is :mod:`mvpo_envs.measure`).

* :class:`ResultStore`: a resumable ``results.json`` (one key per finished measurement, kept
  on disk after each, so a rerun skips what is done and ``--report`` rewrites the page alone);
* :func:`write_page`, :func:`replace_section`, :func:`keep_sections`: a results page, one
  ``## title`` section of it, or one marked section per setting with the others kept;
* :func:`fmt`, :func:`slope`, :data:`ENV_COLUMNS`, :func:`env_cells`, :func:`growth_line`: the
  cells of a scale table (a cached load's memory after 1 / 8 / 128 envs, its searches) and the
  growth per million items from the smallest size to the largest.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_COLUMNS",
    "ResultStore",
    "env_cells",
    "fmt",
    "growth_line",
    "keep_sections",
    "replace_section",
    "slope",
    "write_page",
]


class ResultStore:
    """A dict of finished measurements kept in a JSON file (``indent=1``), read at start."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}

    def save(self, key: str, value: Any, what: str = "", started: float | None = None) -> None:
        """Keep ``value`` under ``key`` and write the file; with ``what``, print that it is
        done (and the seconds since ``started``, a ``time.time()``)."""
        self.data[key] = value
        self.path.write_text(json.dumps(self.data, indent=1))
        if what:
            took = f" in {time.time() - started:.0f}s" if started is not None else ""
            print(f"{what} done{took}", flush=True)


def write_page(path: Path, lines: Sequence[str]) -> None:
    """Write a results page (its folder made first; lines joined by newlines) and say so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    print(f"wrote {path}")


def replace_section(doc: str, title: str, section: str) -> str:
    """``doc`` with its ``## title`` section (up to the next ``## ``) replaced by
    ``section``, or with ``section`` appended."""
    head = f"## {title}\n"
    if head not in doc:
        return doc.rstrip("\n") + "\n\n" + section
    a = doc.index(head)
    b = doc.find("\n## ", a + len(head))
    rest = doc[b + 1 :] if b >= 0 else ""
    return doc[:a] + section + ("\n" + rest if rest else "")


_MARKED = re.compile(r"<!-- section: (\S+) -->\n.*?<!-- end: \1 -->\n", re.S)


def keep_sections(old: str, key: str, lines: Sequence[str], first: str) -> str:
    """The sections of a page after writing the one of ``key``: ``old``'s sections marked
    ``<!-- section: KEY -->`` ... ``<!-- end: KEY -->`` (each ending in a newline), that of
    ``key`` replaced by ``lines`` wrapped in those marks; ``first`` first, then the others
    sorted by key, joined by newlines."""
    sections = {m.group(1): m.group(0) for m in _MARKED.finditer(old)}
    sections[key] = "\n".join([f"<!-- section: {key} -->", *lines, f"<!-- end: {key} -->", ""])
    order = [first] + sorted(k for k in sections if k != first)
    return "\n".join(sections[k] for k in order if k in sections)


def fmt(value: Any, spec: str = ",.0f") -> str:
    """``value`` formatted, ``n/a`` when missing."""
    return "n/a" if value is None else format(value, spec)


def slope(lo: dict, hi: dict, size: Callable[[dict], float], get: Callable[[dict], float]) -> str:
    """``(get(hi) - get(lo))`` per million of ``size``, formatted; ``n/a`` when missing."""
    try:
        return f"{(get(hi) - get(lo)) / (size(hi) - size(lo)) * 1e6:,.1f}"
    except (KeyError, TypeError, ZeroDivisionError):
        return "n/a"


#: the header cells of :func:`env_cells` (11 columns)
ENV_COLUMNS = (
    "cached first env s | RSS 1 | RSS 8 | RSS 128 | USS 128 | PSS 128 | per extra env (RSS) | "
    "search p50 ms | p99 ms | first pass p50 / p99 ms | RSS after search"
)


def env_cells(cached: dict[str, Any]) -> str:
    """The :data:`ENV_COLUMNS` cells of a cached-load measurement: ``first_s``, ``mem``
    (:func:`mvpo_envs.measure.grow_envs`), ``search_ms`` and ``search_first_ms``
    (:func:`mvpo_envs.measure.search_passes`), ``mem_after_search``; missing ones ``n/a``."""
    c, mem = cached, cached["mem"]
    last = max(mem, key=int)
    per_env = (mem[last]["rss"] - mem["1"]["rss"]) / max(1, int(last) - 1)
    big = mem.get("128", {})
    first = c.get("search_first_ms", {})
    return (
        f"{c['first_s']:.2f} | {mem['1']['rss']:,.0f} | {fmt(mem.get('8', {}).get('rss'))} | "
        f"{fmt(big.get('rss'))} | {fmt(big.get('uss'))} | {fmt(big.get('pss'))} | "
        f"{per_env:.2f} | {c['search_ms']['p50']:.2f} | {c['search_ms']['p99']:.2f} | "
        f"{fmt(first.get('p50'), '.2f')} / {fmt(first.get('p99'), '.2f')} | "
        f"{fmt(c.get('mem_after_search', {}).get('rss'))}"
    )


def growth_line(lo: dict, hi: dict, unit: str, size: str, disk: Callable[[dict], float]) -> str:
    """``Growth per million <unit>`` from the smallest to the largest size's results (each
    with ``cold`` and ``cached`` measurements; ``size`` the key of the size in ``cached``)."""

    def per_million(get: Callable[[dict], float]) -> str:
        return slope(lo, hi, lambda r: r["cached"][size], get)

    return (
        f"Growth per million {unit} ({lo['cached'][size]:,} to {hi['cached'][size]:,}): cold "
        f"first env {per_million(lambda r: r['cold']['first_s'])} s, cold peak RSS "
        f"{per_million(lambda r: r['cold']['peak_rss'])} MiB, cached first env "
        f"{per_million(lambda r: r['cached']['first_s'])} s, RSS of 128 envs "
        f"{per_million(lambda r: r['cached']['mem']['128']['rss'])} MiB, search p50 "
        f"{per_million(lambda r: r['cached']['search_ms']['p50'])} ms, disk "
        f"{per_million(disk)} MiB"
    )
