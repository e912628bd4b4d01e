"""Ablations of MVPO in the learning study (train split only).

The study is :mod:`mvpo_train.study.ablations` (its ``--help`` says every option); run from the
repository root.
"""

import sys

from mvpo_train.study.ablations import main

if __name__ == "__main__":
    sys.exit(main())
