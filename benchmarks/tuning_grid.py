"""Tuning grid of the learning study: lr x PPO epochs x KL on the train split.

The study is :mod:`mvpo_train.study.tuning_grid` (its ``--help`` says every option); run from the
repository root.
"""

import sys

from mvpo_train.study.tuning_grid import main

if __name__ == "__main__":
    sys.exit(main())
