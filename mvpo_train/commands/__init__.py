"""The console commands' parts (docs/architecture.md, "Who owns what").

:mod:`mvpo_train.cli` holds ``mvpo-train`` and is the entry point ``pyproject.toml`` names for
``mvpo-eval``, ``mvpo-plot`` and ``mvpo-build-tiny-model`` too (``mvpo_train.cli:eval_main`` ...);
those commands' code and what they share live here, one job per module:

* :mod:`~mvpo_train.commands.guard`: a command's run: one error line and exit code 2 for a user
  error, one line naming the resume command after Ctrl-C;
* :mod:`~mvpo_train.commands.checks`: flag types and checks every command uses (finite floats,
  non-empty names, output files, input paths, the device);
* :mod:`~mvpo_train.commands.mvpo_eval`, :mod:`~mvpo_train.commands.mvpo_plot`,
  :mod:`~mvpo_train.commands.mvpo_build_tiny_model`: one command each.
"""
