"""The learning study's definition: its envs (ALFWorld, WebShop), arms, shared flags, held-out
splits and what each study setting means (``benchmarks/learning.py``; docs/learning_study.md),
as :class:`mvpo_train.study.study_env.StudyEnv` data."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mvpo_train.study import study_env as study_env_mod
from mvpo_train.study.study_env import StudyEnv, arm_flags, count_tasks, embedding_cache

__all__ = ["ALFWORLD", "ARMS", "ENVS", "POTENTIAL", "WEBSHOP", "StudyEnv", "arm_flags",
           "count_tasks", "embedding_cache", "final_evals", "study_env"]  # fmt: skip

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
WARM = "runs/encoder-warm"
#: MVPO's potential options together: pooled, cross-fitted region statistics valued by TD over
#: the pooled chain, regions split at milestones (docs/estimators.md §3.13)
POTENTIAL = {"potential_estimate": "td", "potential_split": "milestones", "region_stats": "pooled"}
#: arm name -> the mvpo-train flags that make it (everything else is shared)
ARMS: dict[str, list[str]] = {
    **{e: ["--estimator", e] for e in ("grpo", "gigpo", "mvpo")},
    "mvpo-learned": "--estimator mvpo --abstraction learned --abstraction-refit-every 10".split(),
    # the two MVPO forms pinned, whatever the default (docs/estimators.md §3.8, §3.10)
    "mvpo-v1": ["--estimator", "mvpo", "--estimator-kwargs", '{"form": "v1"}'],
    "mvpo-paper": ["--estimator", "mvpo", "--estimator-kwargs", '{"form": "paper"}'],
    # the potential options together (docs/estimators.md §3.11-§3.13), and their repair
    # shuffled among the routed rows (the negative control): the matched study's new arms
    "mvpo-potential": ["--estimator", "mvpo", "--estimator-kwargs", json.dumps(POTENTIAL)],
    "mvpo-potential-shuffled": [
        "--estimator",
        "mvpo",
        "--estimator-kwargs",
        json.dumps({**POTENTIAL, "repair_source": "shuffled"}),
    ],  # fmt: skip
    **{e: ["--estimator", e] for e in ("ecpo", "progpo", "beacon", "rloo")},
}
DEFAULT_ARMS = ("grpo", "gigpo", "mvpo", "mvpo-learned")
#: the paired differences reported (when both arms ran)
DEFAULT_PAIRS = (
    ("mvpo", "grpo"), ("mvpo", "gigpo"), ("gigpo", "grpo"), ("mvpo-learned", "mvpo"),
    ("mvpo-paper", "mvpo-v1"), ("mvpo-paper", "gigpo"), ("mvpo-paper", "grpo"),
    ("mvpo-v1", "gigpo"),
    ("mvpo-potential", "gigpo"), ("mvpo-potential", "mvpo-paper"), ("mvpo-potential", "grpo"),
    ("mvpo-potential-shuffled", "gigpo"), ("mvpo-potential", "mvpo-potential-shuffled"),
)  # fmt: skip
#: the shared mvpo-train flags of the study (docs/learning_study.md, "Settings")
STUDY_FLAGS = [
    "--policy", "encoder", "--tasks", "[]",
    "--max-steps", "50", "--ppo-epochs", "2",
    "--eval-split", "valid_unseen", "--no-eval-greedy",
]  # fmt: skip
#: final evaluation of each run: (split, episodes per task), sampled actions, seed 0
FINAL_EVALS = (("valid_unseen", 8), ("valid_seen", 4))


ALFWORLD = StudyEnv(
    name="alfworld", env_id="mvpo/ALFWorld-v0",
    title="Learning study: GRPO vs GiGPO vs MVPO on ALFWorld-scale rooms",
    flags=tuple(STUDY_FLAGS), final_evals=FINAL_EVALS, arms=DEFAULT_ARMS, pairs=DEFAULT_PAIRS,
    warm=WARM, base=str(ROOT / "runs" / "learning-study"), out=str(RESULTS / "learning.md"),
    base_arms=ARMS, task_types=True,
    defaults_sentence="`mvpo/ALFWorld-v0` defaults (bundled `alfworld` preset, all train tasks)",
)  # fmt: skip
#: ``benchmarks/learning_webshop.py``: the success-reward WebShop id
WEBSHOP_CHILD = ROOT / "benchmarks" / "learning_webshop.py"
WEBSHOP_SUCCESS_ID = "mvpo-study/WebShop-SuccessReward-v0"
#: the MVPO paper's WebShop ablation (their Table 2; docs/learning_study.md, "WebShop study")
WEBSHOP_ARMS: dict[str, list[str]] = {
    "mvpo-no-anchor": [  # "w/o GiGPO anchor": no A^S on informative step groups (§3.6)
        "--estimator", "mvpo", "--estimator-kwargs", '{"anchor_credit": false}',
    ],
    "mvpo-no-kappa-decay": [  # "w/o kappa decay": kappa = 1 throughout (§3.5)
        "--estimator", "mvpo", "--estimator-kwargs", '{"kappa_schedule": "none"}',
    ],
}  # fmt: skip
#: the MVPO paper's WebShop warm start: BC steps chosen on train success (docs/learning_study.md)
WEBSHOP_WARM_STEPS = 50
WEBSHOP = StudyEnv(
    name="webshop", env_id="mvpo/WebShop-v0",
    title="Learning study: GiGPO vs MVPO and its ablations on WebShop",
    flags=(
        "--env-id", WEBSHOP_SUCCESS_ID, "--policy", "encoder", "--tasks", "[]",
        "--max-steps", "15", "--ppo-epochs", "2",
        "--eval-split", "test", "--no-eval-greedy",
    ),
    final_evals=(("test", 2),),
    arms=("gigpo", "mvpo", "mvpo-no-anchor", "mvpo-no-kappa-decay"),
    pairs=(("mvpo", "gigpo"), ("mvpo", "mvpo-no-anchor"), ("mvpo", "mvpo-no-kappa-decay"),
           ("mvpo-no-anchor", "gigpo"), ("mvpo-no-kappa-decay", "gigpo")),
    warm="runs/encoder-warm-webshop", base=str(ROOT / "runs" / "learning-webshop"),
    out=str(RESULTS / "learning_webshop.md"), env_kwargs='{"search_query": "instruction"}',
    warm_args=f"--steps {WEBSHOP_WARM_STEPS}",
    iterations=60, num_groups=16, eval_every=20, eval_episodes=1,
    eval_env_id="mvpo/WebShop-v0", child=WEBSHOP_CHILD,
    scores=True, arm_flags=WEBSHOP_ARMS, demos="the train goals' expert plans", steps=15,
    setting=(
        "the MVPO paper's success reward (1.0 for a won episode, else 0: "
        f"`{WEBSHOP_SUCCESS_ID}`, `benchmarks/learning_webshop.py`); held-out = the "
        "`test` split (the original's first 500 goals after its shuffle), played on "
        "`mvpo/WebShop-v0` itself, whose return is WebShop's score"
    ),
    extra_settings={"train_env_id": WEBSHOP_SUCCESS_ID, "reward": "success",
                    "heldout_split": "test", "eval_env_id": "mvpo/WebShop-v0"},
    base_arms=ARMS, candidates='docs/learning_study.md, "WebShop study"',
    warm_flags=("--env-id", "mvpo/WebShop-v0"),
    score_note=" Score: WebShop's score of the purchase (0 without one), mean over the held-out "
    "episodes; success = a score of 1.0.",
)  # fmt: skip
ENVS = {e.name: e for e in (ALFWORLD, WEBSHOP)}


def study_env(args: argparse.Namespace) -> StudyEnv:
    """The study's env (``--env``; ALFWorld when the namespace has none)."""
    return getattr(args, "study_env", None) or ALFWORLD


def final_evals(args: argparse.Namespace) -> tuple[tuple[str, int], ...]:
    """The final held-out evaluations: ``--final-episodes`` per task of each split."""
    return study_env_mod.final_evals(study_env(args), getattr(args, "final_episodes", None))
