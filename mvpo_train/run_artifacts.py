"""What makes a folder hold a run: the names a run writes into its folder (other files, e.g. a
user's log, do not count). Read by the run-folder rules (:mod:`mvpo_train.run_folder`) and by
the default run folder's numbering (:func:`mvpo_train.config.numbered_run_dir`)."""

from __future__ import annotations

__all__ = ["RUN_ARTIFACTS"]

RUN_ARTIFACTS = ("config.yaml", "metrics.jsonl", "checkpoints", "tensorboard", "wandb", "trackio",
                 "records")  # fmt: skip
