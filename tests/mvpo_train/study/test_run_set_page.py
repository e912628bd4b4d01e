"""The diagnostics page (:mod:`mvpo_train.study.run_set_page`): the script's words in their
places, a set's introduction only when the set is found, and a set not run yet. The page of
real run sets: tests/benchmarks/test_diagnostics.py."""

from __future__ import annotations

from mvpo_train.study.run_set_page import PageText, write_markdown

TEXT = PageText(
    title="# Toy diagnostics", set_notes={"one": "The first set."}, form_note="(old form)",
    oracle_env="ToyEnv", paper_env="PaperEnv", paper_zero_adv={"grpo": ">0.9"},
    paper_zero_adv_sets=("one",), paper_kappa={}, names={"grpo": "GRPO"},
    headline_sets=("one", "two"), set_intros={"one": "About set one.", "two": "About two."},
)  # fmt: skip


def test_a_page_of_sets_not_run_yet(tmp_path):
    sets = [
        {"env": env, "found": False, "command": f"make {env}", "base_rel": f"runs/{env}"}
        for env in ("one", "two")
    ]
    out = tmp_path / "page.md"
    write_markdown(sets, "python diag.py", 5, out, {}, TEXT)
    text = out.read_text()
    assert text.startswith("# Toy diagnostics\n\nBuilt by `python diag.py` from the runs")
    assert "regime (`one`, `two`) have no runs here yet" in text
    assert "About set one." not in text  # an introduction only for a set found
    assert '"First k iterations" (k = 5' in text
    assert (
        "## one\n\nThe first set.\n\nRuns: `runs/one/<arm>-seed<k>/`, made by `make one`." in text
    )
    assert text.count("**Not run yet**") == 2
