"""``mvpo_train.study.page_command``: a bare ``--analyze-only`` takes the arguments of the
command its page names; any other command line is left as given."""

from __future__ import annotations

from pathlib import Path

from mvpo_train.study.page_command import bare_analyze_only, page_argv, with_page_command

SCRIPT = "benchmarks/x.py"


def _page(tmp_path: Path, header: str) -> Path:
    page = tmp_path / "x.md"
    page.write_text(f"# X\n\n{header}\n\nLater: `python {SCRIPT} --cost 40`.\n")
    return page


def test_bare_means_analyze_only_with_at_most_an_out() -> None:
    assert bare_analyze_only(["--analyze-only"])
    assert bare_analyze_only(["--out", "p.md", "--analyze-only"])
    assert bare_analyze_only(["--analyze-only", "--out=p.md"])
    assert not bare_analyze_only([])
    assert not bare_analyze_only(["--out", "p.md"])
    assert not bare_analyze_only(["--analyze-only", "--jobs", "2"])
    assert not bare_analyze_only(["--analyze-only", "--", "--lr", "1"])


def test_the_pages_first_command_is_read_with_its_quoting(tmp_path: Path) -> None:
    page = _page(tmp_path, f"Command: `python {SCRIPT} --arm a --train-flags '--h 2'` (x).")
    assert page_argv(page, SCRIPT) == ["--arm", "a", "--train-flags", "--h 2"]
    assert page_argv(_page(tmp_path, f"Built by `python {SCRIPT}`."), SCRIPT) == []
    assert page_argv(_page(tmp_path, "No command."), "benchmarks/y.py") is None
    assert page_argv(tmp_path / "absent.md", SCRIPT) is None


def test_a_bare_analyze_only_takes_the_pages_command(tmp_path: Path, capsys) -> None:
    page = _page(tmp_path, f"Command: `python {SCRIPT} --jobs 2 --out o.md -- --warm w`.")
    got = with_page_command(["--analyze-only"], page, SCRIPT, "x")
    # before the "--": after it everything is a positional of the script
    assert got == ["--jobs", "2", "--out", "o.md", "--analyze-only", "--", "--warm", "w"]
    assert "its own command" in capsys.readouterr().out
    got = with_page_command(["--out", "t.md", "--analyze-only"], page, SCRIPT, "x")
    given = ["--analyze-only", "--out", "t.md"]  # the given --out after the page's: it wins
    assert got == ["--jobs", "2", "--out", "o.md", *given, "--", "--warm", "w"]
    page = _page(tmp_path, f"Built by `python {SCRIPT} --analyze-only --base b`.")
    assert with_page_command(["--analyze-only"], page, SCRIPT, "x") == [
        "--analyze-only",
        "--base",
        "b",
    ]  # where the command has it: the rebuilt page names the same command


def test_any_other_command_line_is_left_as_given(tmp_path: Path) -> None:
    page = _page(tmp_path, f"Command: `python {SCRIPT} --jobs 2`.")
    for argv in (["--analyze-only", "--jobs", "1"], [], ["--lr", "1"]):
        assert with_page_command(argv, page, SCRIPT, "x") == argv
    other = "benchmarks/y.py"  # a page that names no command of this script
    assert with_page_command(["--analyze-only"], page, other, "y") == ["--analyze-only"]
