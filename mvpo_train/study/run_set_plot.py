"""The figure of a run set's training diagnostics (:mod:`mvpo_train.study.run_sets`): zero-advantage
and zero-credit ratios, MVPO's kappa and EMA success, grouping ratios, the prefix potential
of successful and failed trajectories, the AMP weights, the non-circular potential check and
the step-level alignment, each a mean over seeds with the min..max band."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mvpo_train.study.figures import pyplot
from mvpo_train.study.run_sets import PHI_SPLIT, STEP_GROUPING, RunSet, curve, has_key, milestones

__all__ = ["plot"]


def plot(
    rs: RunSet, out: Path, early: int, alignment: Sequence[dict[str, Any]] = (), where: str = ""
) -> bool:
    """Eight panels for one run set (the last: the step-level alignment files matched to it;
    ``where``: the runs' folder as the title names it, default ``rs.base``), written to ``out``
    as a 256-colour PNG; False (nothing drawn) when no run was found."""
    if not rs.found():
        return False
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, 4, figsize=(16.5, 6.8))
    colors = {a: f"C{i}" for i, a in enumerate(rs.arms)}

    def band(
        ax: Any, arm: str, key: str, label: str, style: str = "-", color: str | None = None
    ) -> None:
        by_seed = rs.rows(arm)
        if not by_seed or not has_key(by_seed, key):
            return
        c = curve(by_seed, key)
        col = color or colors[arm]
        ax.plot(c["x"], c["mean"], style, color=col, marker="o", ms=2.5,
                label=f"{label} (n={len(by_seed)})")  # fmt: skip
        ax.fill_between(c["x"], c["lo"], c["hi"], color=col, alpha=0.15, lw=0)

    for arm in rs.arms:
        band(axes[0, 0], arm, "adv/zero_adv_ratio", arm)
        band(axes[0, 1], arm, "adv/zero_credit_ratio", arm)
        band(axes[1, 0], arm, STEP_GROUPING, f"{arm} step groups", "--")
        band(axes[1, 0], arm, "adv/grouping_ratio", f"{arm} regions")
    mv = [a for a in rs.arms if a.startswith("mvpo") and rs.rows(a)]
    for arm in mv:
        band(axes[0, 2], arm, "adv/kappa", f"{arm} kappa")
        band(axes[0, 2], arm, "adv/ema_success", f"{arm} EMA success", "--")
        band(axes[1, 1], arm, "adv/phi_success_mean", f"{arm} successful", "-")
        band(axes[1, 1], arm, "adv/phi_failure_mean", f"{arm} failed", ":")
        band(axes[0, 3], arm, PHI_SPLIT, arm)
    if axes[0, 3].lines:
        axes[0, 3].axhline(0.0, color="grey", lw=0.8)
    for j, al in enumerate(alignment):
        for k, (v, d) in enumerate(al["variants"].items()):
            c = d["curve"]
            axes[1, 3].plot(c["iterations"], c["auc"], marker="o", ms=2.5, color=f"C{j}",
                            ls=("-", "--", ":", "-.")[k % 4], label=f"{al['name']} {v}")  # fmt: skip
    if axes[1, 3].lines:
        axes[1, 3].axhline(0.5, color="grey", lw=0.8)
    if "mvpo" in mv:
        by_seed = rs.rows("mvpo")
        for j, m in enumerate(milestones(by_seed)):
            band(axes[1, 2], "mvpo", f"adv/amp_weights/{m}", m, color=f"C{j}")
    titles = {
        (0, 0): ("zero-advantage ratio", "share of rows"),
        (0, 1): ("zero-credit ratio", "share of rows"),
        (0, 2): ("MVPO kappa (solid) and EMA success (dashed)", ""),
        (1, 0): ("grouping ratio: step groups (dashed), MVPO regions (solid)", "share of rows"),
        (1, 1): ("MVPO mean prefix potential Phi per trajectory", "Phi"),
        (1, 2): ("MVPO AMP weights per milestone (arm mvpo)", "weight"),
        (0, 3): ("MVPO phi_split_spearman_failed (non-circular)", "Spearman rho"),
        (1, 3): ("step-level alignment: oracle AUC of the repair", "AUC"),
    }
    for (i, j), (title, ylab) in titles.items():
        ax = axes[i, j]
        ax.set(title=title, xlabel="iteration", ylabel=ylab)
        ax.title.set_fontsize(10)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
        else:
            empty = "not measured yet" if (i, j) == (1, 3) else "no data"
            ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
    for ax in (axes[0, 0], axes[0, 1]):
        ax.axvspan(0.5, early + 0.5, color="grey", alpha=0.08)
    fig.suptitle(f"{rs.env}: mean over seeds, band = min..max over seeds ({where or rs.base})")
    fig.tight_layout()
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, dpi=100)
    plt.close(fig)
    # a 256-colour palette: the same picture at a third of the bytes (the PNGs are committed)
    Image.open(buf).convert("RGB").quantize(256).save(out, optimize=True)
    return True
