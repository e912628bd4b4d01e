"""Control-task study: does MVPO learn on ``mvpo/MilestoneChain-v0`` where GRPO and GiGPO do not?.

The study is :mod:`mvpo_train.study.control_study` (its ``--help`` says every option); run from the
repository root.
"""

import sys

from mvpo_train.study.control_study import main

if __name__ == "__main__":
    sys.exit(main())
