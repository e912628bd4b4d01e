"""``mvpo-inspect`` on a run folder and on a record file; one-line errors (docs/inspect.md)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from mvpo_train.credit import available_estimators, get_estimator
from mvpo_train.inspect.cli import main
from mvpo_train.inspect.sample import main as sample_main
from mvpo_train.inspect.sample import random_batch
from mvpo_train.records import read_batch_record


def _page(path) -> dict:
    html = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'id="mvpo-data">(.*?)</script>', html, re.S).group(1))


def test_run_folder_newest_iteration_png_and_groups(tmp_path, recorded, capsys):
    run = recorded.parent.parent
    assert main([str(run), "--png", "--group", "1", "--estimators", "all"]) == 0
    out = capsys.readouterr().out
    html, png = run / "inspect" / "iter-000003.html", run / "inspect" / "iter-000003.png"
    assert f"wrote {html}" in out and f"wrote {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = _page(html)
    assert page["estimators"] == available_estimators()
    assert {g["group"] for g in page["groups"]} == {1}
    assert page["meta"]["env_id"] == "synthetic"


def test_record_file_and_bad_input(tmp_path, recorded, capsys):
    assert main([str(recorded), "-e", "grpo,gigpo", "-o", str(tmp_path / "x")]) == 0
    assert (tmp_path / "x.html").is_file()
    cases = [
        ([str(tmp_path / "nothing")], "no such run folder or record file"),
        ([str(tmp_path)], "no batch records"),
        ([str(recorded.parent.parent), "--iteration", "7"], "no record of iteration 7"),
        ([str(recorded), "--iteration", "7"], "holds iteration 3, not 7"),
        ([str(recorded), "-e", "grpo,bogus"], "unknown estimator 'bogus'"),
        ([str(recorded), "--group", "42"], "no rollout group 42"),
        ([str(recorded), "--png", "--png-estimator", "rloo"], "not on the page"),
    ]
    for argv, msg in cases:
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("mvpo-inspect: ") and msg in err and "\n" not in err, err


@pytest.mark.parametrize(
    "env_id, groups, steps",
    [("mvpo/ALFWorld-v0", 1, 6), ("mvpo/WebShop-v0", 2, 6), ("mvpo/SearchQA-v0", 2, 4)],
)
def test_every_env_gives_a_page_with_the_estimators_numbers(
    tmp_path, env_id, groups, steps, capsys
):
    run = tmp_path / "run"
    argv = ["--env", env_id, "--out", str(run), "--groups", str(groups), "--group-size", "3"]
    assert sample_main([*argv, "--max-steps", str(steps), "--iterations", "2", "--seed", "1"]) == 0
    assert "MiB" in capsys.readouterr().out
    assert main([str(run), "--iteration", "2", "--png"]) == 0
    rec = read_batch_record(run / "records" / "iter-000002.npz")
    rec.verify()
    assert rec.meta["env_id"] == env_id and rec.estimator_state["iteration"] == 1
    page = _page(run / "inspect" / "iter-000002.html")
    rows = np.asarray(page["row_ids"])
    assert len(rows) == len(rec.batch) and len(page["tables"]["sig"]) >= 2
    for name in ("grpo", "gigpo"):
        np.testing.assert_array_equal(
            np.asarray(page["adv"][name]), get_estimator(name)(rec.batch)[0][rows]
        )
    np.testing.assert_array_equal(np.asarray(page["adv"]["mvpo"]), rec.advantages[rows])
    # same seed, same play: random_batch is deterministic
    a = random_batch(env_id, 1, 2, steps, np.random.default_rng(5))
    b = random_batch(env_id, 1, 2, steps, np.random.default_rng(5))
    assert a.action.tolist() == b.action.tolist() and a.signature.tolist() == b.signature.tolist()


def test_random_batch_fills_search_templates_with_the_task():
    """Random play sends a query template filled with the task text (mvpo_envs.play
    .fill_template): WebShop searches its instruction (as over ``search_query="instruction"``'s
    list), SearchQA its question; never the literal template."""
    web = random_batch("mvpo/WebShop-v0", 2, 2, 4, np.random.default_rng(0))
    listed = random_batch(
        "mvpo/WebShop-v0", 2, 2, 4, np.random.default_rng(0),
        env_kwargs={"search_query": "instruction"},
    )  # fmt: skip
    assert web.action.tolist() == listed.action.tolist()
    searches = [a for a in web.action.tolist() if a.startswith("search[")]
    assert searches and "search[<query>]" not in searches
    qa = random_batch("mvpo/SearchQA-v0", 3, 2, 3, np.random.default_rng(0))
    actions = qa.action.tolist()
    assert any(a.startswith("<search> ") for a in actions)
    assert "<search> query </search>" not in actions


def test_png_flags_are_checked_before_any_file_is_written(tmp_path, recorded, capsys):
    out = tmp_path / "page.html"
    for argv, msg in [
        (["--png", "--png-estimator", "rloo"], "--png-estimator: estimator 'rloo' is not"),
        (["--png", "--png-minus", "bogus"], "--png-minus: estimator 'bogus' is not"),
        (["--png-estimator", "grpo"], "add --png"),  # was silently ignored
    ]:
        assert main([str(recorded), "-e", "grpo", "-o", str(out), *argv]) == 2
        assert msg in capsys.readouterr().err
        assert not out.exists()  # the HTML was written before the PNG error
