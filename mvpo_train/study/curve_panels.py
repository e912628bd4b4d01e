"""The learning-curve figure of the oracle-gain studies: panels of arms' batch-success curves.

Each arm of a results table carries ``curve = {"mean", "lo", "hi"}`` (the mean over seeds and
its pointwise bootstrap band, :func:`mvpo_train.stats.curve_band`) and its ``seeds``; a panel
draws the named arms that the table has (an arm without runs is left out), each labelled with
its number of seeds. A partial study (``progress["partial"]``) says so in the title.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.study.figures import pyplot, save
from mvpo_train.study.paired import SEEDS

__all__ = ["plot_panels"]


def plot_panels(
    arms: Mapping[str, Mapping[str, Any]],
    groups: Sequence[tuple[str, Sequence[str]]],
    progress: Mapping[str, Any],
    path: Path,
    figsize: tuple[float, float],
) -> None:
    """One panel per ``(title, arm names)`` of ``groups``, side by side, to ``path`` (80 dpi)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(groups), figsize=figsize, sharey=True, squeeze=False)
    for ax, (title, names) in zip(axes[0], groups, strict=True):
        for n in names:
            a = arms.get(n)
            if a is None:
                continue
            c = a["curve"]
            x = np.arange(1, len(c["mean"]) + 1)
            (line,) = ax.plot(x, c["mean"], label=f"{n} ({len(a[SEEDS])})", lw=1.2)
            ax.fill_between(x, c["lo"], c["hi"], alpha=0.15, color=line.get_color())
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("iteration")
        if ax.lines:  # a panel whose arms have no runs yet stays empty
            ax.legend(fontsize=7)
    axes[0][0].set_ylabel("batch success (mean over seeds, 95% band)")
    if progress["partial"]:
        fig.suptitle(
            f"partial: {progress['runs_done']} of {progress['runs_planned']} runs", fontsize=10
        )
    save(fig, path, dpi=80)
