"""What the study figures share (:mod:`mvpo_train.study.figures`)."""

from __future__ import annotations

import numpy as np

from mvpo_train.study.figures import band_line, pyplot, save


def test_a_row_is_drawn_with_its_band_and_saved(tmp_path):
    plt = pyplot()
    fig, ax = plt.subplots()
    row = {"curve": [0.1, 0.2, 0.4], "curve_lo": [0.0, 0.1, 0.3], "curve_hi": [0.2, 0.3, 0.5],
           "seeds": [0, 1]}  # fmt: skip
    x, color = band_line(ax, "mvpo", row, alpha=0.12)
    assert x.tolist() == [1, 2, 3] and ax.lines[0].get_label() == "mvpo (n=2)"
    assert ax.lines[0].get_color() == color and np.allclose(ax.lines[0].get_ydata(), row["curve"])
    assert ax.collections[0].get_alpha() == 0.12  # the band
    save(fig, tmp_path / "f.png", dpi=50)
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert not plt.fignum_exists(fig.number)  # closed
