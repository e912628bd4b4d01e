"""What the study figures share: matplotlib with its file-only backend (imported when a figure
is drawn, so the tables need no matplotlib), a table row's curve with its band, and how a
figure is written (laid out, saved, closed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.study.paired import SEEDS

__all__ = ["band_line", "pyplot", "save"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the ``Agg`` backend (files only, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def band_line(ax: Any, name: str, row: dict, alpha: float = 0.15) -> tuple[np.ndarray, str]:
    """Row ``name`` of a table (an arm or a pair: ``curve``, ``curve_lo``, ``curve_hi`` per
    iteration, and its ``seeds``) on ``ax``: the curve labelled with its number of seeds, its
    band shaded; the iterations (from 1) and the line's colour."""
    y, lo, hi = (np.array(row[k]) for k in ("curve", "curve_lo", "curve_hi"))
    x = np.arange(1, len(y) + 1)
    (line,) = ax.plot(x, y, label=f"{name} (n={len(row[SEEDS])})")
    ax.fill_between(x, lo, hi, alpha=alpha, color=line.get_color())
    return x, line.get_color()


def save(fig: Any, out: Path, dpi: int = 100) -> None:
    """``fig`` laid out tight and written to ``out`` at ``dpi``, then closed."""
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    pyplot().close(fig)
