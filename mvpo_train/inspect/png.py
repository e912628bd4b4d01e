"""A static PNG of the inspect grid, for papers (docs/inspect.md, ``--png``).

One panel per rollout group: rows = trajectories (won first), columns = steps, colour = the
estimator's advantage (or a difference of two) on a symmetric diverging scale; exact zeros are
grey, steps past an episode's end are blank, milestone hits are black diamonds and loop steps
have an orange bar underneath.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from mvpo_train.inspect.data import InspectData

__all__ = ["grid_matrix", "write_png"]


def grid_matrix(
    data: InspectData, group: int, values: np.ndarray
) -> tuple[np.ndarray, list[dict], np.ndarray]:
    """``(n_traj, T_max)`` matrix of ``values`` for one group (NaN past each episode's end),
    the trajectories in row order and the record row of each cell (-1 where blank)."""
    trajs = data.traj_rows()[group]
    t_max = max(len(tr["rows"]) for tr in trajs)
    mat = np.full((len(trajs), t_max), np.nan)
    rows = np.full((len(trajs), t_max), -1, dtype=np.int64)
    for i, tr in enumerate(trajs):
        mat[i, : len(tr["rows"])] = values[tr["rows"]]
        rows[i, : len(tr["rows"])] = tr["rows"]
    return mat, trajs, rows


def write_png(
    data: InspectData,
    path: str | os.PathLike,
    estimator: str | None = None,
    minus: str | None = None,
    dpi: int = 150,
) -> Path:
    """Draw the grid of every shown group for ``estimator`` (default: the trained one, else the
    first) minus ``minus`` (optional); returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    name = estimator or (data.trained if data.trained in data.adv else data.estimators[0])
    for n in (name, minus):
        if n is not None and n not in data.adv:
            raise ValueError(f"--png: estimator {n!r} is not on the page ({data.estimators})")
    values = data.adv[name] - (data.adv[minus] if minus else 0.0)
    shown = np.isin(data.batch.group, data.groups)
    vmax = float(np.max(np.abs(values[shown]))) if shown.any() else 1.0
    vmax = vmax or 1.0
    mats = [grid_matrix(data, g, values) for g in data.groups]
    heights = [len(m[1]) + 1.2 for m in mats]
    t_max = max(m[0].shape[1] for m in mats)
    fig_h = 0.9 + 0.16 * sum(heights)
    fig, axes = plt.subplots(
        len(mats),
        1,
        figsize=(min(2.5 + 0.16 * t_max, 14), fig_h),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    grey = ListedColormap(["#dddddd"])
    image = None
    for ax, g, (mat, trajs, rows) in zip(axes[:, 0], data.groups, mats, strict=True):
        image = ax.imshow(
            np.where(mat == 0.0, np.nan, mat),
            cmap="RdBu",
            vmin=-vmax,
            vmax=vmax,
            aspect="auto",
            interpolation="nearest",
        )
        zero = np.where(mat == 0.0, 1.0, np.nan)
        ax.imshow(zero, cmap=grey, aspect="auto", interpolation="nearest")
        ms_y, ms_x, lp_y, lp_x = [], [], [], []
        for i in range(rows.shape[0]):
            for t in range(rows.shape[1]):
                r = rows[i, t]
                if r < 0:
                    continue
                if len(data.batch.milestones[r]):
                    ms_y.append(i)
                    ms_x.append(t)
                if data.loop[r]:
                    lp_y.append(i + 0.38)
                    lp_x.append(t)
        if lp_x:
            ax.scatter(lp_x, lp_y, marker="_", s=30, c="#ff6d00", linewidths=2)
        if ms_x:
            ax.scatter(ms_x, ms_y, marker="D", s=10, c="black")
        ax.set_yticks(range(len(trajs)))
        ax.set_yticklabels(
            [("won " if tr["success"] else "lost ") + f"#{tr['traj']}" for tr in trajs],
            fontsize=6,
        )
        for lab, tr in zip(ax.get_yticklabels(), trajs, strict=True):
            lab.set_color("#1b5e20" if tr["success"] else "#b71c1c")
        ax.set_xlim(-0.5, t_max - 0.5)
        ax.tick_params(axis="x", labelsize=6)
        ax.set_title(f"rollout group {g}", fontsize=8, loc="left")
    axes[-1, 0].set_xlabel("step", fontsize=7)
    label = f"{name} − {minus}" if minus else f"{name} advantage"
    fig.suptitle(f"iteration {data.iteration}: {label} (grey = exactly 0, ◆ milestone)", fontsize=9)
    if image is not None:
        cb = fig.colorbar(image, ax=axes[:, 0].tolist(), shrink=0.6, pad=0.02)
        cb.ax.tick_params(labelsize=6)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return p
