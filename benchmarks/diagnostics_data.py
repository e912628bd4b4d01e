"""The diagnostics' run sets (``benchmarks/diagnostics.py``): where each study's runs are, its
arms, and the MVPO paper's numbers shown beside ours. Reading the runs and their statistics:
:mod:`mvpo_train.study.run_sets`."""

from __future__ import annotations

from pathlib import Path

from mvpo_train.study.run_sets import rel_path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ALFWORLD_BASE = ROOT / "runs" / "learning-study"
WEBSHOP_BASE = ROOT / "runs" / "diagnostics-webshop"
ALFWORLD_ARMS = ("grpo", "gigpo", "mvpo", "mvpo-learned")
WEBSHOP_ARMS = ("grpo", "gigpo", "mvpo")
#: the two studies in the MVPO paper's regime (docs/learning_study.md, "The MVPO paper's regime" and
#: "WebShop study"): their run folders, arms, seeds and iterations as ``benchmarks/learning.py``
#: plans them; the headline of the md when found
ALFWORLD_FULL_BASE = ROOT / "runs" / "full" / "learning"
ALFWORLD_FULL_COPIES = RESULTS / "learning_full_runs"  # the committed compact copies
ALFWORLD_FULL_ARMS = ("grpo", "gigpo", "mvpo")
WEBSHOP_STUDY_BASE = ROOT / "runs" / "webshop" / "learning"
WEBSHOP_STUDY_ARMS = ("gigpo", "mvpo", "mvpo-no-anchor", "mvpo-no-kappa-decay")
STUDY_ITERATIONS = 60
#: the sets carried over from the previous json when their runs are not on disk (committed
#: history); the headline sets never are: they are drawn from their runs or "not run yet"
HISTORY_SETS = ("alfworld", "webshop", "webshop-score")
HEADLINE_SETS = ("alfworld-full", "webshop-study")
DIAG_WEBSHOP_ID = "mvpo-diag/WebShop-InstructionSearch-v0"  # the history sets' env id
#: the MVPO paper's numbers (issue text of the MVPO paper's diagnostics) shown next to ours
PAPER_ZERO_ADV_WEBSHOP = {"grpo": ">0.90", "gigpo": "~0.65"}
#: the sets with the MVPO paper's binary WebShop reward: their tables show the paper's numbers
PAPER_ZERO_ADV_SETS = ("webshop", "webshop-study")
NAMES = {"grpo": "GRPO", "gigpo": "GiGPO"}
PAPER_KAPPA = {
    "alfworld": "1 -> ~0.2 (EMA success 0.82)",
    "webshop": "1 -> ~0.4 (EMA success 0.61)",
}


def _rel(path: Path) -> str:
    """``path`` relative to the repository when inside it."""
    return rel_path(path, ROOT)
