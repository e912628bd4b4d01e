"""``mvpo_train.cli`` after its split into :mod:`mvpo_train.commands`: every name it gave before
(the entry points ``pyproject.toml`` names, the helpers ``mvpo_train.showcase`` and scripts
import, the exit codes) is still there, and is the one object the command modules use, so a
command run through ``mvpo_train.cli`` and one run through its module behave the same."""

from __future__ import annotations

import mvpo_train.cli as cli
from mvpo_train.commands import checks, guard, mvpo_build_tiny_model, mvpo_eval, mvpo_plot


def test_cli_names_are_the_command_modules_objects():
    assert cli.eval_main is mvpo_eval.eval_main
    assert cli.plot_main is mvpo_plot.plot_main
    assert cli.build_model_main is mvpo_build_tiny_model.build_model_main
    assert cli.MAX_TINY_PARAMETERS == mvpo_build_tiny_model.MAX_TINY_PARAMETERS
    assert cli._guard is guard.guard and cli._add_debug is checks.add_debug
    assert cli._intact_checkpoint is mvpo_eval.intact_checkpoint
    assert cli.check_device is checks.check_device
    assert cli.on_interrupt is guard.on_interrupt and cli.resume_command is guard.resume_command
    assert (cli.EXIT_USER_ERROR, cli.EXIT_INTERRUPTED) == (2, 130)
    assert [n for n in cli.__all__ if not hasattr(cli, n)] == []


def test_every_command_runs_through_the_one_guard(capsys):
    """A bad flag of each moved command is one ``<prog>: error:`` line and exit code 2."""
    for main, prog in (
        (cli.eval_main, "mvpo-eval"),
        (cli.plot_main, "mvpo-plot"),
        (cli.build_model_main, "mvpo-build-tiny-model"),
    ):
        assert main(["--no-such-flag"]) == cli.EXIT_USER_ERROR
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"{prog}: error:"), err
