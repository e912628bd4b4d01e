"""The run sets of the diagnostics page drawn (:mod:`mvpo_train.study.run_set_draw`): the
page's order, the figures of sets not shown removed, an alignment file no set holds refused.
Sets with real runs: tests/benchmarks/test_diagnostics.py."""

from __future__ import annotations

import pytest

from mvpo_train.study.run_set_draw import SetSpec, draw_sets
from mvpo_train.study.run_sets import load_runset


def _sets(tmp_path):
    specs = {n: SetSpec(n, tmp_path / n, ("grpo",), (0,), f"make {n}") for n in ("old", "new")}
    loaded = {n: load_runset(n, sp.base, sp.arms, sp.seeds, sp.plan) for n, sp in specs.items()}
    return specs, loaded


def test_headline_sets_not_run_yet_come_last_and_no_figure_is_left(tmp_path):
    specs, loaded = _sets(tmp_path)
    out = tmp_path / "page.md"
    stale = tmp_path / "page_gone.png"
    stale.write_bytes(b"old")
    order, pngs = draw_sets(loaded, specs, set(), {}, tmp_path / "prev.json", [], out, 5,
                            tmp_path, headline=["new"], gone=["gone"])  # fmt: skip
    assert [s["env"] for s in order] == ["old", "new"]
    assert pngs == {"old": None, "new": None} and not stale.exists()
    assert order[1]["alignment"] == [] and "alignment" not in order[0]  # headline: a section
    assert order[0]["command"] == "make old" and order[0]["base_rel"] == "old"


def test_an_alignment_file_no_set_holds_is_refused(tmp_path):
    specs, loaded = _sets(tmp_path)
    al = {"file": "a.json", "run": "/elsewhere/mvpo-seed0", "name": "mvpo-seed0", "arm": "mvpo"}
    with pytest.raises(ValueError, match="no run set shown holds the run of a.json"):
        draw_sets(loaded, specs, set(), {}, tmp_path / "p.json", [al], tmp_path / "page.md", 5,
                  tmp_path, headline=[])  # fmt: skip
