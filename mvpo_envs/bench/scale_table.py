"""The cells of a scale table: an env's cached load (its memory after 1 / 8 / 128 envs, its
searches) and the growth per million items from the smallest size to the largest (the pages
of :mod:`mvpo_envs.bench.searchqa_scale_page` and :mod:`mvpo_envs.bench.webshop_scale_page`).

* :func:`fmt`: a value formatted, ``n/a`` when missing;
* :data:`ENV_COLUMNS`, :func:`env_cells`: the header and cells of a cached-load measurement
  (:func:`per_env_rss` its one derived cell);
* :func:`slope`, :func:`growth`, :func:`growth_line`: the growth per million items;
* :func:`fill_size_figures`: both derived figures filled into a page's figures dict.

A page prints derived figures (the per-env RSS, the growth) from the fields its figures dict
holds, filled in from the measurements only where absent, so that a page's committed JSON
(its figures, derived ones included) rebuilds it exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "ENV_COLUMNS",
    "env_cells",
    "fill_size_figures",
    "fmt",
    "growth",
    "growth_line",
    "per_env_rss",
    "slope",
]


def fmt(value: Any, spec: str = ",.0f") -> str:
    """``value`` formatted, ``n/a`` when missing."""
    return "n/a" if value is None else format(value, spec)


def slope(
    lo: dict, hi: dict, size: Callable[[dict], float], get: Callable[[dict], float]
) -> float | None:
    """``(get(hi) - get(lo))`` per million of ``size``; ``None`` when missing."""
    try:
        return (get(hi) - get(lo)) / (size(hi) - size(lo)) * 1e6
    except (KeyError, TypeError, ZeroDivisionError):
        return None


#: the header cells of :func:`env_cells` (11 columns)
ENV_COLUMNS = (
    "cached first env s | RSS 1 | RSS 8 | RSS 128 | USS 128 | PSS 128 | per extra env (RSS) | "
    "search p50 ms | p99 ms | first pass p50 / p99 ms | RSS after search"
)


def per_env_rss(cached: dict[str, Any]) -> float:
    """RSS (MiB) each env after the first adds: from 1 env to the most measured."""
    mem = cached["mem"]
    last = max(mem, key=int)
    return (mem[last]["rss"] - mem["1"]["rss"]) / max(1, int(last) - 1)


def env_cells(cached: dict[str, Any]) -> str:
    """The :data:`ENV_COLUMNS` cells of a cached-load measurement: ``first_s``, ``mem``
    (:func:`mvpo_envs.measure.grow_envs`), ``search_ms`` and ``search_first_ms``
    (:func:`mvpo_envs.measure.search_passes`), ``mem_after_search``, ``per_env_rss`` (else
    :func:`per_env_rss`); missing ones ``n/a``."""
    c, mem = cached, cached["mem"]
    per_env = c["per_env_rss"] if "per_env_rss" in c else per_env_rss(c)
    big = mem.get("128", {})
    first = c.get("search_first_ms", {})
    return (
        f"{c['first_s']:.2f} | {mem['1']['rss']:,.0f} | {fmt(mem.get('8', {}).get('rss'))} | "
        f"{fmt(big.get('rss'))} | {fmt(big.get('uss'))} | {fmt(big.get('pss'))} | "
        f"{per_env:.2f} | {c['search_ms']['p50']:.2f} | {c['search_ms']['p99']:.2f} | "
        f"{fmt(first.get('p50'), '.2f')} / {fmt(first.get('p99'), '.2f')} | "
        f"{fmt(c.get('mem_after_search', {}).get('rss'))}"
    )


#: the figures of a growth line, in its order: key -> (what, unit)
GROWTH = {
    "cold_first_s": ("cold first env", "s"),
    "cold_peak_rss": ("cold peak RSS", "MiB"),
    "cached_first_s": ("cached first env", "s"),
    "rss_128": ("RSS of 128 envs", "MiB"),
    "search_p50_ms": ("search p50", "ms"),
    "disk_mib": ("disk", "MiB"),
}


def growth(lo: dict, hi: dict, size: str, disk: Callable[[dict], float]) -> dict[str, Any]:
    """The growth per million items from the smallest size's results ``lo`` to the largest's
    ``hi`` (each with ``cold`` and ``cached`` measurements; ``size`` the key of the size in
    ``cached``): ``from``, ``to`` and one :func:`slope` per :data:`GROWTH` key."""
    gets: dict[str, Callable[[dict], float]] = {
        "cold_first_s": lambda r: r["cold"]["first_s"],
        "cold_peak_rss": lambda r: r["cold"]["peak_rss"],
        "cached_first_s": lambda r: r["cached"]["first_s"],
        "rss_128": lambda r: r["cached"]["mem"]["128"]["rss"],
        "search_p50_ms": lambda r: r["cached"]["search_ms"]["p50"],
        "disk_mib": disk,
    }
    out: dict[str, Any] = {"from": lo["cached"][size], "to": hi["cached"][size]}
    out.update({key: slope(lo, hi, lambda r: r["cached"][size], get) for key, get in gets.items()})
    return out


def growth_line(figures: dict[str, Any], unit: str) -> str:
    """``Growth per million <unit>`` from a :func:`growth` dict."""
    cells = ", ".join(
        f"{what} {fmt(figures[key], ',.1f')} {u}" for key, (what, u) in GROWTH.items()
    )
    return f"Growth per million {unit} ({figures['from']:,} to {figures['to']:,}): {cells}"


def fill_size_figures(figures: dict[str, Any], size: str, disk: Callable[[dict], float]) -> None:
    """Fill in, where absent, each size's (digit key's) ``cached.per_env_rss`` and the top-level
    ``growth`` from the smallest size to the largest (with two or more sizes)."""
    sizes = {k: v for k, v in figures.items() if k.isdigit()}
    for r in sizes.values():
        r["cached"].setdefault("per_env_rss", per_env_rss(r["cached"]))
    keys = sorted(sizes, key=int)
    if len(keys) >= 2 and "growth" not in figures:
        figures["growth"] = growth(sizes[keys[0]], sizes[keys[-1]], size, disk)
