"""The MVPO paper's training diagnostics (zero-advantage and zero-credit ratios, kappa, potentials,
alignment, grouping, AMP weights, phases) drawn from the runs on disk.

The study is :mod:`mvpo_train.study.diagnostics` (its ``--help`` says every option); run from the
repository root.
"""

import sys

from mvpo_train.study.diagnostics import main

if __name__ == "__main__":
    sys.exit(main())
