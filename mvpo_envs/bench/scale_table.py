"""The cells of a scale table: an env's cached load (its memory after 1 / 8 / 128 envs, its
searches) and the growth per million items from the smallest size to the largest (the pages
of :mod:`mvpo_envs.bench.searchqa_scale_page` and :mod:`mvpo_envs.bench.webshop_scale_page`).

* :func:`fmt`: a value formatted, ``n/a`` when missing;
* :data:`ENV_COLUMNS`, :func:`env_cells`: the header and cells of a cached-load measurement;
* :func:`slope`, :func:`growth_line`: the growth per million items.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ENV_COLUMNS", "env_cells", "fmt", "growth_line", "slope"]


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
