"""``mvpo_envs.bench.scale_table``: the cells of a cached env load and the growth per million
items of the scale pages."""

from __future__ import annotations

from mvpo_envs.bench import scale_table as table


def _cached(n: int, rss: float) -> dict:
    mem = {str(k): {"rss": rss + k, "uss": 1.0, "pss": 2.0} for k in (1, 8, 128)}
    ms = {"p50": 1.0, "p99": 2.0}
    return {"n": n, "first_s": 0.5, "mem": mem, "search_ms": ms, "search_first_ms": ms,
            "mem_after_search": {"rss": rss}}  # fmt: skip


def test_scale_table_cells_and_growth() -> None:
    assert table.fmt(None) == "n/a" and table.fmt(1234.5) == "1,234"
    cells = table.env_cells(_cached(10, 100.0))
    assert cells == "0.50 | 101 | 108 | 228 | 1 | 2 | 1.00 | 1.00 | 2.00 | 1.00 / 2.00 | 100"
    assert len(cells.split("|")) == len(table.ENV_COLUMNS.split("|"))
    small = {"cached": {"n": 1_000}}
    assert table.env_cells({**_cached(1, 5.0), "mem": {"1": {"rss": 5.0}}}).count("n/a") == 4
    lo, hi = small, {"cached": {"n": 501_000}}
    size = lambda r: r["cached"]["n"]  # noqa: E731
    assert table.slope(lo, hi, size, lambda r: r["cached"]["n"] / 1000) == 1000.0
    assert table.slope(lo, hi, size, lambda r: r["missing"]) is None
    lo = {"cold": {"first_s": 1.0, "peak_rss": 100.0}, "cached": _cached(1_000, 100.0)}
    hi = {"cold": {"first_s": 3.0, "peak_rss": 300.0}, "cached": _cached(1_001_000, 300.0)}
    grown = table.growth(lo, hi, "n", lambda r: r["cached"]["n"] / 1e4)
    assert grown["from"] == 1_000 and grown["cold_first_s"] == 2.0
    line = table.growth_line(grown, "passages")
    assert line.startswith("Growth per million passages (1,000 to 1,001,000): cold first env 2.0 s")
    assert "RSS of 128 envs 200.0 MiB" in line and line.endswith("disk 100.0 MiB")
    assert "search p50 n/a ms" in table.growth_line({**grown, "search_p50_ms": None}, "passages")


def test_size_figures_are_filled_in_only_where_absent() -> None:
    """The per-env RSS and the growth a page prints come from its figures dict when it holds
    them (a committed page's JSON), else from the measurements."""
    lo = {"cold": {"first_s": 1.0, "peak_rss": 100.0}, "cached": _cached(1_000, 100.0)}
    hi = {"cold": {"first_s": 3.0, "peak_rss": 300.0}, "cached": _cached(1_001_000, 300.0)}
    figures = {"1": lo, "1001": hi, "other": [1]}
    table.fill_size_figures(figures, "n", lambda r: 0.0)
    assert figures["1"]["cached"]["per_env_rss"] == 1.0 and figures["growth"]["to"] == 1_001_000
    kept = {"1": {"cached": {**_cached(1, 5.0), "per_env_rss": 0.45}}}
    table.fill_size_figures(kept, "n", lambda r: 0.0)
    assert "growth" not in kept and "| 0.45 |" in table.env_cells(kept["1"]["cached"])
