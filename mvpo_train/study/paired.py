"""Per-arm and paired statistics of a study's runs, their cells and JSON, and the settings record
of a study's run folder (the oracle-gain studies, docs/alignment.md).

* :func:`interval`: the mean of per-seed values with a Student-t 95% interval and the
  percentile-bootstrap one beside it (:mod:`mvpo_train.stats`), non-finite values dropped;
* :func:`fmt_interval`: the table cell of an :func:`interval` (``mean [lo, hi]``, t-based);
* :func:`json_clean`: a results dict as JSON keeps it (floats to 6 digits, NaN and inf as
  ``null``);
* :data:`SEEDS`: the results key of those random seeds;
* :func:`check_settings`: record a study's settings and fingerprint in ``<base>/settings.json``
  on first use and refuse, in one line, a later call with other settings.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from mvpo_train.stats import bootstrap_ci, t_interval

__all__ = ["SEEDS", "check_settings", "fmt_interval", "interval", "json_clean"]

#: the results key listing the random seeds a row or pair averages
SEEDS = "seeds"


def interval(values: list[float]) -> dict[str, Any]:
    """``{"mean", "t95": [lo, hi], "boot95": [lo, hi], "n"}`` of the finite ``values``
    (``t95`` None with one value; everything None with none)."""
    v = [x for x in values if math.isfinite(x)]
    if not v:
        return {"mean": None, "t95": None, "boot95": None, "n": 0}
    m, lo, hi = t_interval(v)
    _, blo, bhi = bootstrap_ci(v)
    return {
        "mean": m,
        "t95": None if math.isnan(lo) else [lo, hi],
        "boot95": [blo, bhi],
        "n": len(v),
    }


def fmt_interval(c: dict[str, Any], digits: int = 3) -> str:
    """``mean [lo, hi]`` of an :func:`interval` (t-based; ``mean`` alone without one, ``-``
    without a mean)."""
    if c["mean"] is None:
        return "-"
    t = c["t95"]
    s = f"{c['mean']:.{digits}f}"
    if t:
        s += f" [{t[0]:.{digits}f}, {t[1]:.{digits}f}]"
    return s


def json_clean(x: Any) -> Any:
    """``x`` with every float rounded to 6 digits and every non-finite one ``None``."""
    if isinstance(x, float):
        return None if not math.isfinite(x) else round(x, 6)
    if isinstance(x, dict):
        return {k: json_clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_clean(v) for v in x]
    return x


def check_settings(base: Path, settings: dict[str, Any], fingerprint: str, who: str) -> None:
    """Record ``settings`` and ``fingerprint`` in ``<base>/settings.json`` on first use; after
    that, exit with one line (``who``: the study's name, the changed keys) when the recorded
    fingerprint differs."""
    path = Path(base) / "settings.json"
    if path.is_file():
        saved = json.loads(path.read_text())
        if saved.get("fingerprint") != fingerprint:
            changed = sorted(k for k in settings if saved.get("settings", {}).get(k) != settings[k])
            sys.exit(
                f"{who}: {base} holds runs made with other settings (changed: {changed}); "
                "pass the same flags, or another --base"
            )
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"fingerprint": fingerprint, "settings": settings}, indent=1) + "\n")
