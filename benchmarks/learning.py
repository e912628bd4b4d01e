"""Learning study: GRPO vs GiGPO vs MVPO on ALFWorld-scale rooms, and the WebShop study
(``--env webshop``); the study itself is :mod:`mvpo_train.study.learning` (docs/learning_study.md).

    python benchmarks/learning.py                  # the study: table + plots in benchmarks/results/
    python benchmarks/learning.py --analyze-only   # rebuild the table and plots from runs/
    python benchmarks/learning.py --help           # every option
"""

import argparse  # noqa: F401  (the names below are what tests/benchmarks/test_study_archive.py reads)
import sys

from mvpo_train.study.learning import main, train_cmd  # noqa: F401
from mvpo_train.study.runs import eval_file, n_metrics  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
