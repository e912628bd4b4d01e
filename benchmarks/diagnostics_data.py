"""The diagnostics' run sets (``benchmarks/diagnostics.py``): where each study's runs are, its
arms, the MVPO paper's numbers shown beside ours and the page's words on each set (:data:`TEXT`). Reading the runs and their statistics:
:mod:`mvpo_train.study.run_sets`."""

from __future__ import annotations

from pathlib import Path

from mvpo_train.study.run_set_page import PageText
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


#: under the heading of a carried-over history set (its runs predate MVPO's paper form)
FORM_V1_NOTE = (
    '**MVPO form.** The `mvpo` runs of this set used `form="v1"`, MVPO\'s default until '
    "2026-12-01 (docs/estimators.md §3.10); the same commands now run the paper form."
)
#: one line under each run set's heading
SET_NOTES = {
    "alfworld": "ALFWorld: the learning sweep's runs (its settings are in "
    "`benchmarks/results/learning.md`).",
    "alfworld-quick": "ALFWorld: the learning sweep's smoke runs.",
    "alfworld-full": "ALFWorld, the MVPO paper's regime (docs/learning_study.md, \"The MVPO paper's "
    'regime"): the full train split (3,553 games), 16 tasks x 8 rollouts x 50 steps, 60 '
    "iterations, the history-aware encoder policy warm-started by 300 BC steps, the tuning "
    "grid's settings per arm (GRPO lr 3e-4, GiGPO lr 1e-3, MVPO lr 3e-4 with KL 0.05; "
    'MVPO\'s default `form="paper"`).',
    "webshop-study": "WebShop study, the MVPO paper's Table 2 (docs/learning_study.md, \"WebShop "
    "study\"): the MVPO paper's win-only reward (`mvpo-study/WebShop-SuccessReward-v0`), 16 goals "
    "x 8 rollouts x 15 steps, 60 iterations, the encoder policy warm-started by 50 BC steps; "
    "`mvpo-no-anchor` = MVPO without GiGPO's anchor credit, `mvpo-no-kappa-decay` = kappa 1 "
    "throughout.",
    "webshop": "WebShop, the MVPO paper's reward: 1.0 for a won episode, else 0 (verl-agent's WebShop "
    "rule, there 10 for a win), so a group without a win has zero advantage under GRPO.",
    "webshop-score": "WebShop, WebShop's own reward (the env default): the purchase's score "
    "in [0, 1] (partial credit), so a GRPO group has zero advantage only when its scores are "
    "all equal.",
}
#: the introduction's paragraph on the history sets' WebShop setting (shown when `webshop` is)
WEBSHOP_SETTING = (
    "WebShop setting of the sets `webshop` and `webshop-score` (every field in each "
    "set's settings line): "
    f"`{DIAG_WEBSHOP_ID}` was registered by this script when it made the runs (git "
    "history): `mvpo/WebShop-v0` with its bundled catalog, split, 15-step episodes, "
    "protocol and abstraction, except that the search template `search[<query>]` is "
    "filled with the task's instruction (a score-mode policy cannot write a query, and "
    'the literal template finds nothing; today `search_query="instruction"`) and the '
    "reward was chosen by `diag_reward` (`success` is today's `success_reward=True`); the "
    "encoder's tokenizer reads the observations' literal `[SEP]` as text (as the "
    "package's encoder policy does). Policy: the encoder scorer with a fresh "
    "head (`--policy encoder --model fresh`, no warm start: the runs predate WebShop's "
    "`expert_actions` hook, and a fresh head gives the near-uniform start of the MVPO paper's "
    "WebShop regime), one torch thread, only `--estimator` differing; a seed "
    "gives the three estimators the same first batch. Success = `won` (WebShop score "
    "1.0); its value at iteration 1 is the policy's initial success."
)
TEXT = PageText(
    title="# Training diagnostics: GRPO vs GiGPO vs MVPO (ALFWorld and WebShop)",
    set_notes=SET_NOTES,
    form_note=FORM_V1_NOTE,
    oracle_env="ALFWorld",
    paper_env="WebShop",
    paper_zero_adv=PAPER_ZERO_ADV_WEBSHOP,
    paper_zero_adv_sets=PAPER_ZERO_ADV_SETS,
    paper_kappa=PAPER_KAPPA,
    names=NAMES,
    headline_sets=HEADLINE_SETS,
    set_intros={"webshop": WEBSHOP_SETTING},
)
