"""The learning study's definition: its envs (ALFWorld, WebShop), arms, shared flags, held-out
splits and what each study setting means (``benchmarks/learning.py``; docs/learning_study.md)."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import NamedTuple

from mvpo_train.study import curves

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


class StudyEnv(NamedTuple):
    """What one env's study sets (``--env``): the env, the flags every run shares, the
    held-out splits, the default arms and pairs, where runs and results go, and how the
    results file names them. ``child``: a script that runs ``train_main`` / ``eval_main`` with
    the study's env and estimators registered (``None``: ``mvpo_train.cli`` itself)."""

    name: str
    env_id: str  # the env the warm start clones and the held-out split counts come from
    title: str
    flags: tuple[str, ...]
    final_evals: tuple[tuple[str, int], ...]
    arms: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    warm: str
    base: str
    out: str
    env_kwargs: str = "{}"
    warm_args: str = ""
    iterations: int = 30
    num_groups: int = 8
    eval_every: int = 10
    eval_episodes: int = 4
    eval_env_id: str | None = None  # mvpo-eval --env-id (None: the run's own)
    child: Path | None = None
    scores: bool = False  # the eval files hold WebShop's ``score`` (reported beside success)
    arm_flags: dict[str, list[str]] = {}  # arms only this env has (never mutated)
    demos: str = "the train walkthroughs"
    steps: int = 50
    setting: str = ""  # the markdown's sentence on the env, after the warm start
    extra_settings: dict = {}  # added to learning.json's settings (never mutated)

    def arm(self, name: str) -> list[str]:
        """The mvpo-train flags of arm ``name``."""
        return list(self.arm_flags.get(name) or ARMS[name])

    def arm_names(self) -> list[str]:
        return sorted({*ARMS, *self.arm_flags})


ALFWORLD = StudyEnv(
    name="alfworld", env_id="mvpo/ALFWorld-v0",
    title="Learning study: GRPO vs GiGPO vs MVPO on ALFWorld-scale rooms",
    flags=tuple(STUDY_FLAGS), final_evals=FINAL_EVALS, arms=DEFAULT_ARMS, pairs=DEFAULT_PAIRS,
    warm=WARM, base=str(ROOT / "runs" / "learning-study"), out=str(RESULTS / "learning.md"),
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
)  # fmt: skip
ENVS = {e.name: e for e in (ALFWORLD, WEBSHOP)}


def study_env(args: argparse.Namespace) -> StudyEnv:
    """The study's env (``--env``; ALFWorld when the namespace has none)."""
    return getattr(args, "study_env", None) or ALFWORLD


def final_evals(args: argparse.Namespace) -> tuple[tuple[str, int], ...]:
    """The final held-out evaluations: ``--final-episodes`` per task of each split."""
    spec = study_env(args).final_evals
    eps = getattr(args, "final_episodes", None) or [e for _, e in spec]
    return tuple((split, int(e)) for (split, _), e in zip(spec, eps, strict=True))


def arm_flags(args: argparse.Namespace) -> dict[str, list[str]]:
    """``--arm-flags ARM='FLAGS'``: mvpo-train flags of one arm's runs only, after every other
    flag (so ``--lr``/``--kl-coef`` there win): the tuning grid's choice per arm."""
    out: dict[str, list[str]] = {}
    for item in getattr(args, "arm_flags", None) or []:
        arm, sep, flags = item.partition("=")
        if not sep or arm not in args.arms:
            raise SystemExit(f"--arm-flags: expected ARM='FLAGS' with ARM one of --arms "
                             f"{list(args.arms)}, got {item!r}")  # fmt: skip
        out[arm] = out.get(arm, []) + shlex.split(flags)
    return out


def embedding_cache(args: argparse.Namespace) -> str:
    """The embedding cache file shared by every run of the sweep (docs/policies.md)."""
    return str(getattr(args, "embedding_cache", None) or Path(args.base) / "embeddings.npz")


def count_tasks(env_kwargs: str, split: str, env_id: str = ALFWORLD.env_id) -> int | None:
    """Tasks of ``split`` of ``env_id`` with the study's env kwargs (None if the split cannot
    be built here)."""
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the envs)

    try:
        env = gym.make(env_id, **{**json.loads(env_kwargs or "{}"), "split": split})
    except Exception:  # a split this data does not have
        return None
    try:
        return len(env.unwrapped.task_ids)
    finally:
        env.close()


def heldout_keys(env: StudyEnv) -> list[str]:
    """The per-seed held-out values of ``env``'s study (:func:`mvpo_train.study.curves.heldout_keys`)."""
    return curves.heldout_keys([s for s, _ in env.final_evals], env.scores)
