"""Learning study: GRPO vs GiGPO vs MVPO (and MVPO with a learned abstraction) on ALFWorld-scale rooms.

docs/learning_study.md. Every arm trains the same policy on the same data with the same
hyper-parameters and the same seeds; only the credit estimator (and, for ``mvpo-learned``, the
abstraction) differs:

* policy: the ``encoder`` policy (docs/policies.md), warm-started by behaviour cloning on the
  expert walkthroughs of the *train* split (``python -m mvpo_train.encoder_policy --out
  runs/encoder-warm``, cached; this script runs it first);
* data: ``mvpo/ALFWorld-v0`` defaults (the bundled ALFWorld-scale ``alfworld`` preset), all
  train tasks, 50-step episodes; held-out: ``valid_unseen`` (scenes never seen in train);
* batch: ``--num-groups`` tasks x ``--group-size`` rollouts per iteration, ``--iterations``
  iterations (sized so that the whole study fits about 2 hours on 2 cores; docs/learning_study.md
  says how).

Reported per arm, over seeds (bootstrap 95% CIs over seeds, seeded): training success per
iteration (curve with a band), its area (mean success over all iterations), iterations until
the 5-iteration moving average of batch success reaches ``--threshold`` (per seed), final
training success (last 5 iterations), held-out success (sampled, ``valid_unseen`` and
``valid_seen``, on the final checkpoint; and of the warm start), early zero-advantage ratio;
and paired differences between arms (same seed = same warm start, same first task draw).

Run from the repository root::

    python benchmarks/learning.py                  # the study: table + plots in benchmarks/results/
    python benchmarks/learning.py --analyze-only   # rebuild the table and plots from runs/
    python benchmarks/learning.py --quick          # smoke test: 1 seed, 3 iterations

``--env webshop`` is the MVPO paper's WebShop ablation (their Table 2; docs/learning_study.md,
"WebShop study"): arms ``gigpo``, ``mvpo``, ``mvpo-no-anchor`` ("w/o GiGPO anchor") and
``mvpo-no-kappa-decay`` ("w/o kappa decay"), the MVPO paper's success reward, 15-step episodes,
16 x 8 x 60 iterations, warm start cloned from the train goals' expert plans, held-out on the
``test`` split (the original's 500 test goals) with WebShop's score beside success; every run
goes through ``benchmarks/learning_webshop.py``. ``--warm-candidates STEPS...`` measures warm
starts on the train split only (how the study's BC steps were chosen)::

    python benchmarks/learning.py --env webshop                       # the WebShop study
    python benchmarks/learning.py --env webshop --warm-candidates 0 50 --candidate-tasks 100

Runs go to ``runs/learning-study/<arm>-seed<k>/`` (``runs/learning-webshop/`` for WebShop). The sweep is resumable: a finished run (and
its evaluation) is skipped, an interrupted one continues from its checkpoint (``--resume``), so
rerunning the same command after a kill continues the study. Runs are queued seed by seed, so
an interrupted study still has every arm on the first seeds. ``--ray [ADDRESS]`` runs each run
as a Ray task (docs/scaling.md, "Sweeps on Ray").
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mvpo_train.stats import SMOOTH, bootstrap_ci, censored, curve_band, first_reach, moving_average
from mvpo_train.study.runs import (
    RUN_ENV,
    eval_file,
    load_runs,
    n_metrics,
    python_entry,
    read_eval,
    read_eval_types,
    resume_flag,
    run_dir,
    run_local,
    run_ray,
)
from mvpo_train.study.tables import command_line as _command_line
from mvpo_train.study.tables import fmt_ci as _fmt
from mvpo_train.study.tables import machine_line, n_seeds, save_results

#: the repository root: every path of a study is relative to it (run the scripts from there)
ROOT = Path(".")
RESULTS = ROOT / "benchmarks" / "results"
WARM = "runs/encoder-warm"

#: arm name -> the mvpo-train flags that make it (everything else is shared)
ARMS: dict[str, list[str]] = {
    "grpo": ["--estimator", "grpo"],
    "gigpo": ["--estimator", "gigpo"],
    "mvpo": ["--estimator", "mvpo"],
    "mvpo-learned": [
        "--estimator",
        "mvpo",
        "--abstraction",
        "learned",
        "--abstraction-refit-every",
        "10",
    ],  # fmt: skip
    # the two MVPO forms pinned, whatever the default (docs/estimators.md §3.8, §3.10)
    "mvpo-v1": ["--estimator", "mvpo", "--estimator-kwargs", '{"form": "v1"}'],
    "mvpo-paper": ["--estimator", "mvpo", "--estimator-kwargs", '{"form": "paper"}'],
    "ecpo": ["--estimator", "ecpo"],
    "progpo": ["--estimator", "progpo"],
    "beacon": ["--estimator", "beacon"],
    "rloo": ["--estimator", "rloo"],
}
DEFAULT_ARMS = ("grpo", "gigpo", "mvpo", "mvpo-learned")
#: the paired differences reported (when both arms ran)
DEFAULT_PAIRS = (
    ("mvpo", "grpo"), ("mvpo", "gigpo"), ("gigpo", "grpo"), ("mvpo-learned", "mvpo"),
    ("mvpo-paper", "mvpo-v1"), ("mvpo-paper", "gigpo"), ("mvpo-paper", "grpo"),
    ("mvpo-v1", "gigpo"),
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


def train_cmd(path: Path, arm: str, seed: int, args: argparse.Namespace) -> list[str]:
    env = study_env(args)
    cmd = [
        *python_entry("train_main", env.child), "--preset", "cpu-tiny", *env.arm(arm), "--seed", str(seed),
        "--iterations", str(args.iterations), "--run-dir", str(path), "--threads", "1",
        "--no-progress", "--no-tensorboard", "--save-every", "5",
    ]  # fmt: skip
    if args.study:
        cmd += [*env.flags, "--num-groups", str(args.num_groups), "--group-size",
                str(args.group_size), "--lr", str(args.lr), "--eval-every", str(args.eval_every),
                "--eval-episodes", str(args.eval_episodes), "--env-kwargs", args.env_kwargs,
                "--embedding-cache", embedding_cache(args), "--model", args.warm]  # fmt: skip
    # an interrupted run resumes from its checkpoint; a run folder without one starts over
    return cmd + resume_flag(path) + list(args.extra) + arm_flags(args).get(arm, [])


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


def eval_cmd(
    path: Path, split: str, episodes: int, model: str | None = None, env: StudyEnv = ALFWORLD
) -> list[str]:
    cmd = [*python_entry("eval_main", env.child), "--run-dir", str(path), "--split", split, "--episodes",
           str(episodes), "--sampled", "--seed", "0", "--out", str(eval_file(path, split))]  # fmt: skip
    cmd += ["--env-id", env.eval_env_id] if env.eval_env_id else []
    return cmd + (["--model", model] if model else [])


def run_all(args: argparse.Namespace, base: Path) -> None:
    """Train (and evaluate) every (arm, seed) pair not finished yet, seed by seed."""
    pending = []
    for seed in args.seeds:
        for arm in args.arms:
            path = run_dir(base, arm, seed)
            if args.fresh and path.exists():
                shutil.rmtree(path)
            evals = final_evals(args) if args.eval else ()
            cmds = []
            if n_metrics(path) < args.iterations:
                cmds.append(train_cmd(path, arm, seed, args))
            cmds += [eval_cmd(path, s, e, env=study_env(args)) for s, e in evals
                     if not eval_file(path, s).is_file()]  # fmt: skip
            if cmds:
                script = " && ".join(shlex.join(c) for c in cmds)
                pending.append((f"{arm}-seed{seed}", path, script))
    if args.ray is not None:
        run_ray(pending, args.ray, args.jobs, ROOT)
    else:
        run_local(pending, args.jobs, ROOT)


def warm_cmd(args: argparse.Namespace, out: str, *extra: str) -> list[str]:
    """``python -m mvpo_train.encoder_policy`` for the study's warm start into ``out``: behaviour
    cloning on the expert plans of the *train* split of the study's env (``extra`` last)."""
    cmd = [sys.executable, "-m", "mvpo_train.encoder_policy", "--out", out,
           *shlex.split(args.warm_args)]  # fmt: skip
    if study_env(args) is not ALFWORLD:
        cmd += ["--env-id", study_env(args).env_id]
    if args.env_kwargs.strip() not in ("", "{}"):  # the walkthroughs of the study's games
        cmd += ["--env-kwargs", args.env_kwargs]
    return cmd + list(extra)


def ensure_warm(args: argparse.Namespace, head: str, *extra: str) -> None:
    """Make or check the warm start in ``head`` (``warm_cmd``: replays every expert plan of
    the split, minutes on the full ALFWorld split). With ``--warm-checked`` and a warm start
    already there, only its saved settings are compared with the study's ``--warm-args``
    (``--settings-only``: seconds): another warm start in the folder stops the study in one
    line instead of being used."""
    cmd = warm_cmd(args, head, *extra)
    quick = args.warm_checked and (Path(head) / "warm_start.json").is_file()
    run = subprocess.run(cmd + ["--settings-only"] if quick else cmd, cwd=ROOT,
                         env={**os.environ, **RUN_ENV})  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"warm start {head}: `{shlex.join(cmd)}` failed "
                         f"(exit {run.returncode}; its message is above)")  # fmt: skip


def warm_candidates(args: argparse.Namespace, base: Path) -> list[dict]:
    """Train-split success of the warm start after each ``--warm-candidates`` BC step count
    (0 = a fresh head): the split's first ``--candidate-tasks`` tasks x 1 sampled episode,
    seed 0, with the runs' env, step limit and policy. Nothing here reads a held-out split.
    Cached per candidate in ``BASE/warm-candidates/``; the rows are also written to its
    ``candidates.json`` (the results file shows them)."""
    env, work = study_env(args), base / "warm-candidates"
    work.mkdir(parents=True, exist_ok=True)
    config = work / "config.json"  # mvpo-eval --config: JSON is YAML
    fields = {"env_id": env.eval_env_id or env.env_id, "env_kwargs": json.loads(args.env_kwargs),
              "policy": "encoder", "max_steps": env.steps, "tasks": [], "threads": 1,
              "embedding_cache": embedding_cache(args)}  # fmt: skip
    config.write_text(json.dumps(fields, indent=1) + "\n")
    run_env = {**os.environ, **RUN_ENV}
    rows = []
    for steps in args.warm_candidates:
        head = f"{args.warm}-steps{steps}" if steps else "fresh"
        if steps:
            ensure_warm(args, head, "--steps", str(steps))
        out = work / f"train-steps{steps}-tasks{args.candidate_tasks}.json"
        if not out.is_file():
            cmd = [*python_entry("eval_main", env.child), "--config", str(config), "--model", head,
                   "--split", "train", "--max-tasks", str(args.candidate_tasks), "--episodes",
                   "1", "--sampled", "--seed", "0", "--out", str(out)]  # fmt: skip
            subprocess.run(cmd, cwd=ROOT, env=run_env, check=True)
        ev = json.loads(out.read_text())
        rows.append({"steps": steps, "head": head, "episodes": ev["episodes"],
                     "success": ev["success"], "score": ev.get("score"),
                     "seconds": ev.get("time/seconds")})  # fmt: skip
    (work / "candidates.json").write_text(json.dumps(rows, indent=1) + "\n")
    return rows


def candidates_markdown(rows: list[dict]) -> str:
    """The warm-start candidates as a markdown table (train split only)."""
    lines = ["| BC steps | train episodes | train success | train score | eval seconds |",
             "|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        score = "-" if r.get("score") is None else f"{r['score']:.3f}"
        secs = "-" if r.get("seconds") is None else f"{r['seconds']:.0f}"
        lines.append(f"| {r['steps'] or '0 (fresh head)'} | {r['episodes']} | "
                     f"{r['success']:.3f} | {score} | {secs} |")  # fmt: skip
    return "\n".join(lines)


def warm_start_and_eval(args: argparse.Namespace, base: Path, build: bool = True) -> None:
    """The cached warm start (``build``: made or checked, which replays every expert plan of
    the split, minutes on the full ALFWorld split; skipped with ``--warm-checked`` when the
    folder holds one), and the held-out success of the warm start itself (once: it is the
    same for every arm and seed), evaluated through the first seed's first run folder. When
    the study runs as one process per arm on the same ``--base``, only one of them evaluates
    it (a lock in ``BASE/warm-start``); the others go on with their runs."""
    env = {**os.environ, **RUN_ENV}
    if build:
        ensure_warm(args, args.warm)
    if not args.eval:
        return
    first = run_dir(base, args.arms[0], args.seeds[0])
    start = base / "warm-start"
    start.mkdir(parents=True, exist_ok=True)
    with open(start / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"[warm start] another process of this study is evaluating it ({start})")
            return
        for split, episodes in final_evals(args):
            out = start / f"eval-{split}.json"
            if out.is_file() or not (first / "config.yaml").is_file():
                continue
            cmd = eval_cmd(first, split, episodes, model=str(ROOT / args.warm),
                           env=study_env(args))  # fmt: skip
            cmd[cmd.index("--out") + 1] = str(out)
            subprocess.run(cmd, cwd=ROOT, env=env, check=True)


# ------------------------------------------------------------------ analysis


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
    """The per-seed held-out values: success per split, then WebShop's score per split
    (``<split>_score``) where the env reports one."""
    splits = [s for s, _ in env.final_evals]
    return splits + ([f"{s}_score" for s in splits] if env.scores else [])


def threshold_key(threshold: float) -> str:
    """The key of a further threshold in ``learning.json``'s ``reach_at`` (``"0.25"``)."""
    return f"{threshold:g}"


def per_seed_values(
    rows: list[dict],
    path: Path,
    threshold: float,
    env: StudyEnv = ALFWORLD,
    more_thresholds: tuple[float, ...] = (),
) -> dict[str, float | None]:
    succ = np.array([r["success"] for r in rows])
    za = np.array([r.get("adv/zero_adv_ratio", np.nan) for r in rows])
    held = [r["eval/success"] for r in rows if "eval/success" in r]
    first = env.final_evals[0][0]
    out: dict = {
        "auc": float(succ.mean()),
        "first": float(succ[:SMOOTH].mean()),
        "final": float(succ[-SMOOTH:].mean()),
        "reach": first_reach(succ, threshold),
        "reach_at": {threshold_key(t): first_reach(succ, t) for t in more_thresholds},
        "zero_adv_early": float(np.nanmean(za[:SMOOTH])),
    }
    for key in heldout_keys(env):
        split = key.removesuffix("_score")
        out[key] = read_eval(path, split, "score" if key != split else "success")
    out[f"{first}_types"] = read_eval_types(path, first)
    out["last_inline_eval"] = held[-1] if held else None
    out["inline_eval"] = {
        str(r["iteration"]): r["eval/success"] for r in rows if "eval/success" in r
    }
    out["minutes"] = sum(r.get("time/total", 0.0) + r.get("time/eval", 0.0) for r in rows) / 60
    return out


def summarize(
    runs,
    base: Path,
    threshold: float,
    iterations: int,
    pairs=None,
    env: StudyEnv = ALFWORLD,
    more_thresholds: tuple[float, ...] = (),
) -> dict:
    """Per arm: bootstrap CIs over seeds of every per-seed value; per pair: of the per-seed
    differences. Iterations to a threshold count a run that never reaches it as
    ``iterations + 1`` (``threshold`` and each of ``more_thresholds``, docs/learning_study.md)."""
    pairs = env.pairs if pairs is None else pairs
    first = env.final_evals[0][0]
    table: dict = {"arms": {}, "pairs": {}, "warm_start": {}}
    for key in heldout_keys(env):
        split = key.removesuffix("_score")
        value = read_eval(base / "warm-start", split, "score" if key != split else "success")
        if value is not None:
            table["warm_start"][key] = value
    for arm, per_seed in runs.items():
        if not per_seed:
            continue
        seeds = sorted(per_seed)
        vals = {
            s: per_seed_values(per_seed[s], run_dir(base, arm, s), threshold, env, more_thresholds)
            for s in seeds
        }
        succ = np.array([[r["success"] for r in per_seed[s]] for s in seeds])
        mean, lo, hi = curve_band(moving_average(succ))
        inline = {s: vals[s]["inline_eval"] for s in seeds}  # iteration (str) -> success
        ev_iters = sorted({int(k) for s in seeds for k in inline[s]})
        ev = np.array([[inline[s].get(str(it), np.nan) for it in ev_iters] for s in seeds])
        row = {
            "seeds": seeds,
            "per_seed": {str(s): vals[s] for s in seeds},
            "curve": mean.tolist(), "curve_lo": lo.tolist(), "curve_hi": hi.tolist(),
            "zero_adv_curve": np.nanmean(
                [[r.get("adv/zero_adv_ratio", np.nan) for r in per_seed[s]] for s in seeds], 0
            ).tolist(),
            "inline_eval_iterations": ev_iters,
            "inline_eval": np.nanmean(ev, 0).tolist() if ev.size else [],
            "inline_eval_ci": {
                str(it): bootstrap_ci([inline[s][str(it)] for s in seeds if str(it) in inline[s]])
                for it in ev_iters
            },
            "reached": sum(vals[s]["reach"] is not None for s in seeds),
        }  # fmt: skip
        for key in ("auc", "first", "final", "zero_adv_early", *heldout_keys(env), "minutes"):
            xs = [vals[s][key] for s in seeds if vals[s][key] is not None]
            row[key] = bootstrap_ci(xs) if xs else None
        # censored at the run length + 1 when not reached (reported as such)
        reach = [censored(vals[s]["reach"], iterations) for s in seeds]
        row["reach"] = bootstrap_ci(reach)
        row["reach_median"] = float(np.median(reach))
        row["reach_at"] = {}
        for t in map(threshold_key, more_thresholds):
            at = [vals[s]["reach_at"][t] for s in seeds]
            row["reach_at"][t] = {
                "ci": bootstrap_ci([censored(r, iterations) for r in at]),
                "reached": sum(r is not None for r in at),
            }
        tk = f"{first}_types"
        types = sorted({t for s in seeds for t in vals[s][tk]})
        row[tk] = {
            t: bootstrap_ci([vals[s][tk][t] for s in seeds if t in vals[s][tk]]) for t in types
        }
        table["arms"][arm] = row
    for a, b in pairs:
        if a not in table["arms"] or b not in table["arms"]:
            continue
        common = [s for s in table["arms"][a]["seeds"] if s in table["arms"][b]["seeds"]]
        pa, pb = table["arms"][a]["per_seed"], table["arms"][b]["per_seed"]
        entry = {"seeds": common}
        for key in ("auc", "final", first, "reach", *([f"{first}_score"] if env.scores else [])):
            d = []
            for s in common:
                x, y = pa[str(s)][key], pb[str(s)][key]
                if key == "reach":
                    x, y = censored(x, iterations), censored(y, iterations)
                if x is not None and y is not None:
                    d.append(x - y)
            entry[key] = bootstrap_ci(d) if d else None
        entry["inline_eval"] = {}  # held-out during training, paired per evaluated iteration
        for it in sorted({int(k) for s in common for k in pa[str(s)]["inline_eval"]}):
            d = [
                pa[str(s)]["inline_eval"][str(it)] - pb[str(s)]["inline_eval"][str(it)]
                for s in common
                if str(it) in pa[str(s)]["inline_eval"] and str(it) in pb[str(s)]["inline_eval"]
            ]
            if d:
                entry["inline_eval"][str(it)] = bootstrap_ci(d)
        entry["reach_at"] = {
            t: bootstrap_ci([
                censored(pa[str(s)]["reach_at"][t], iterations)
                - censored(pb[str(s)]["reach_at"][t], iterations)
                for s in common
            ]) if common else None
            for t in map(threshold_key, more_thresholds)
        }  # fmt: skip
        table["pairs"][f"{a} - {b}"] = entry
    return table


def plot(table: dict, out: Path, threshold: float, env: StudyEnv = ALFWORLD) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = env.final_evals[0][0]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    for arm, row in table["arms"].items():
        y, lo, hi = (np.array(row[k]) for k in ("curve", "curve_lo", "curve_hi"))
        x = np.arange(1, len(y) + 1)
        (line,) = axes[0].plot(x, y, label=f"{arm} (n={n_seeds(row)})")
        axes[0].fill_between(x, lo, hi, alpha=0.15, color=line.get_color())
        its = [0, *row["inline_eval_iterations"]]
        held = [table["warm_start"].get(first, np.nan), *row["inline_eval"]]
        axes[1].plot(its, held, marker="o", label=arm, color=line.get_color())
        axes[2].plot(x, row["zero_adv_curve"], label=arm, color=line.get_color())
    axes[0].axhline(threshold, color="grey", lw=0.8, ls="--")
    axes[0].set(title=f"training success ({SMOOTH}-it. moving average, 95% bootstrap band)",
                xlabel="iteration", ylabel="batch success rate")  # fmt: skip
    axes[1].set(title=f"held-out {first} success during training (sampled)",
                xlabel="iteration (0 = warm start)", ylabel="success rate")  # fmt: skip
    axes[2].set(title="zero-advantage ratio (steps with exactly 0 advantage)",
                xlabel="iteration", ylabel="ratio")  # fmt: skip
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def command_line(args: argparse.Namespace) -> str:
    return _command_line("benchmarks/learning.py", args.argv)


def env_sentence(args: argparse.Namespace) -> str:
    """The markdown's words for the env of the runs (after the warm start)."""
    env = study_env(args)
    if env is ALFWORLD:
        if args.env_kwargs.strip() in ("", "{}"):
            return "`mvpo/ALFWorld-v0` defaults (bundled `alfworld` preset, all train tasks)"
        return f"`mvpo/ALFWorld-v0` with `--env-kwargs '{args.env_kwargs}'`"
    return f"`{env.env_id}` with `--env-kwargs '{args.env_kwargs}'`, all train tasks, {env.setting}"


def more_thresholds_lines(table: dict, args: argparse.Namespace) -> list[str]:
    """The table of iterations to each of ``--more-thresholds`` (per arm, then per pair)."""
    more = [threshold_key(t) for t in getattr(args, "more_thresholds", [])]
    if not more:
        return []
    it = args.iterations
    lines = [
        "",
        "Iterations to further thresholds of training success (`--more-thresholds`; the same "
        f"rule, a run that never reaches one counts as {it + 1}; per seed in brackets):",
        "",
        "| arm | seeds | " + " | ".join(f"to {float(t):.0%}" for t in more) + " |",
        "|---|---|" + "---|" * len(more),
    ]
    for arm, r in table["arms"].items():
        cells = []
        for t in more:
            per = ", ".join(
                str(v["reach_at"][t]) if v["reach_at"][t] is not None else f">{it}"
                for v in r["per_seed"].values()
            )
            at = r["reach_at"][t]
            cells.append(f"{_fmt(at['ci'], 1)} ({per}; {at['reached']}/{n_seeds(r)} reached)")
        lines.append(f"| {arm} | {n_seeds(r)} | " + " | ".join(cells) + " |")
    for name, p in table["pairs"].items():
        cells = [_fmt(p["reach_at"][t], 1) for t in more]
        lines.append(f"| {name} (paired) | {n_seeds(p)} | " + " | ".join(cells) + " |")
    return lines


def inline_eval_lines(table: dict, split: str, args: argparse.Namespace) -> list[str]:
    """Held-out success during training (every ``--eval-every`` iterations) per arm and paired
    per iteration: the shape of the MVPO paper's comparison at iterations 20, 30, 50, 60."""
    its = sorted({int(k) for r in table["arms"].values() for k in r.get("inline_eval_ci", {})})
    if not its:
        return []
    lines = [
        "",
        f"Held-out `{split}` success during training (every {args.eval_every} iterations, "
        f"every task x {args.eval_episodes} sampled episode(s), the run's own evaluation "
        "stream; less precise than the final evaluation above), then paired per iteration:",
        "",
        "| arm | seeds | " + " | ".join(f"it. {i}" for i in its) + " |",
        "|---|---|" + "---|" * len(its),
    ]
    for arm, r in table["arms"].items():
        ci = r.get("inline_eval_ci", {})
        lines.append(f"| {arm} | {n_seeds(r)} | "
                     + " | ".join(_fmt(ci.get(str(i))) for i in its) + " |")  # fmt: skip
    for name, p in table["pairs"].items():
        ci = p.get("inline_eval", {})
        lines.append(f"| {name} (paired) | {n_seeds(p)} | "
                     + " | ".join(_fmt(ci.get(str(i))) for i in its) + " |")  # fmt: skip
    return lines


def write_markdown(table: dict, args: argparse.Namespace, out: Path, png: Path) -> None:
    it = args.iterations
    env = study_env(args)
    first = env.final_evals[0][0]
    held_cols = [s for s, _ in env.final_evals] + (
        [f"{s} score" for s, _ in env.final_evals] if env.scores else []
    )
    lines = [
        f"# {env.title}",
        "",
        f"Command: `{command_line(args).strip()}` (table and plots only: add `--analyze-only`).",
        machine_line(
            out,
            getattr(args, "analyze_only", False),
            f", {args.jobs} runs at a time, 1 torch thread each",
        ),
        "",
        "Settings: "
        + (
            f"encoder policy warm-started on {env.demos} (`{args.warm}`"
            + (f", `{args.warm_args}`" if args.warm_args else "")
            + "), "
            + env_sentence(args)
            + f", {env.steps}-step episodes, {args.num_groups} tasks x {args.group_size} rollouts per "
            f"iteration, {it} iterations, lr {args.lr}, 2 PPO epochs"
            + (f", then `{' '.join(args.extra)}`" if args.extra else "")
            + f", seeds {list(args.seeds)}; "
            + (
                "arms differ only in "
                if not arm_flags(args)
                else "arms differ in (their flags come last, so an arm's `--lr` or `--kl-coef` wins) "
            )
            + ", ".join(
                f"`{a}`: `{' '.join(env.arm(a) + arm_flags(args).get(a, []))}`" for a in args.arms
            )
            if args.study
            else f"`cpu-tiny` + `{' '.join(args.extra)}`, {it} iterations"
        )
        + ".",
        "",
        f"![learning curves]({png.name})",
        "",
        "Means over seeds with percentile-bootstrap 95% CIs over seeds (10,000 resamples, seed 0).",
        f"Training success = the rollout batch's (sampled actions, random task draw); area = mean "
        f"over all {it} iterations; final = last {SMOOTH} iterations. Iterations to "
        f"{args.threshold:.0%}: first iteration whose {SMOOTH}-iteration moving average reaches it "
        f"(a run that never does counts as {it + 1}). Held-out: the final checkpoint, sampled, "
        "seed 0, every task of the split x "
        + " / ".join(f"{e} episodes ({s})" for s, e in final_evals(args))
        + "."
        + (
            " Score: WebShop's score of the purchase (0 without one), mean over the held-out "
            "episodes; success = a score of 1.0."
            if env.scores
            else ""
        ),
        "",
    ]
    ws = table["warm_start"]
    if ws:
        lines += ["Warm start (iteration 0, same for every arm): " + ", ".join(
            f"{s} {v:.3f}" for s, v in ws.items()) + ".", ""]  # fmt: skip
    lines += [
        f"| arm | seeds | training success: area | final | iterations to {args.threshold:.0%} "
        f"(per seed) | held-out {' | '.join(held_cols)} | zero-adv. ratio, first 5 it. "
        "| minutes / run |",
        "|---|---|---|---|---|" + "---|" * len(held_cols) + "---|---|",
    ]
    for arm, r in table["arms"].items():
        per = ", ".join(
            str(v["reach"]) if v["reach"] is not None else f">{it}" for v in r["per_seed"].values()
        )
        mins = r["minutes"][0] if r["minutes"] else float("nan")
        lines.append(
            f"| {arm} | {n_seeds(r)} | {_fmt(r['auc'])} | {_fmt(r['final'])} | "
            f"{_fmt(r['reach'], 1)} ({per}; {r['reached']}/{n_seeds(r)} reached) | "
            + "".join(f"{_fmt(r[k])} | " for k in heldout_keys(env))
            + f"{_fmt(r['zero_adv_early'])} "
            f"| {mins:.1f} |"
        )
    if table["pairs"]:
        lines += [
            "",
            "Paired differences (same seeds; mean [95% bootstrap CI] of the per-seed differences; "
            "a CI that excludes 0 is a difference at this sample size):",
            "",
            f"| pair | seeds | area | final | iterations to {args.threshold:.0%} | {first} |"
            + (f" {first} score |" if env.scores else ""),
            "|---|---|---|---|---|---|" + ("---|" if env.scores else ""),
        ]
        for name, p in table["pairs"].items():
            lines.append(
                f"| {name} | {n_seeds(p)} | {_fmt(p['auc'])} | {_fmt(p['final'])} | "
                f"{_fmt(p['reach'], 1)} | {_fmt(p[first])} |"
                + (f" {_fmt(p[f'{first}_score'])} |" if env.scores else "")
            )
    lines += more_thresholds_lines(table, args)
    lines += inline_eval_lines(table, first, args)
    types = sorted({t for r in table["arms"].values() for t in r.get(f"{first}_types", {})})
    if types and env is ALFWORLD:  # WebShop's goals have no task types
        lines += [
            "",
            "Held-out `valid_unseen` success per task type (the MVPO paper's Table 1 columns; mean over "
            "seeds [95% bootstrap CI]):",
            "",
            "| arm | " + " | ".join(types) + " |",
            "|---|" + "---|" * len(types),
        ]
        for arm, r in table["arms"].items():
            cells = [_fmt(r["valid_unseen_types"].get(t)) for t in types]
            lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    cand = Path(args.base) / "warm-candidates" / "candidates.json"
    if env is not ALFWORLD and cand.is_file():
        lines += ["", "Warm-start candidates (train split only; `--warm-candidates`, "
                  "docs/learning_study.md, \"WebShop study\"):", "",
                  candidates_markdown(json.loads(cand.read_text()))]  # fmt: skip
    missing = [
        a for a in args.arms if len(table["arms"].get(a, {}).get("seeds", [])) < len(args.seeds)
    ]
    if missing:
        lines += ["", f"Partial: fewer than {len(args.seeds)} finished seeds for {missing}; rerun "
                  "the command to continue the study."]  # fmt: skip
    out.write_text("\n".join(lines) + "\n")


def study_settings(args: argparse.Namespace) -> dict:
    """What ``learning.json`` records of the study's regime (its settings, for the reader)."""
    env = study_env(args)
    held = (
        {s: count_tasks(args.env_kwargs, s, env.env_id) for s, _ in final_evals(args)}
        if args.study
        else {}
    )
    return {
        "num_groups": args.num_groups,
        "group_size": args.group_size,
        "iterations": args.iterations,
        "seeds": list(args.seeds),
        "lr": args.lr,
        "env_kwargs": json.loads(args.env_kwargs or "{}"),
        "extra_flags": list(args.extra),
        "arm_flags": arm_flags(args),
        "train_games": count_tasks(args.env_kwargs, "train", env.env_id) if args.study else None,
        "heldout_games": held,
        "final_episodes": {s: e for s, e in final_evals(args)},
        "eval_every": args.eval_every,
        "eval_episodes": args.eval_episodes,
        "thresholds": [args.threshold, *getattr(args, "more_thresholds", [])],
        **env.extra_settings,
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The study's arguments; ``--env`` picks the defaults (``args.study_env``)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--env", choices=sorted(ENVS), default=ALFWORLD.name)
    env = ENVS[pre.parse_known_args(argv)[0].env]
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--env", choices=sorted(ENVS), default=ALFWORLD.name,
                   help="the study: alfworld (docs/learning_study.md) or webshop (its section "
                   "'WebShop study'); sets the defaults below")  # fmt: skip
    p.add_argument("--arms", "--estimators", nargs="+", default=list(env.arms),
                   choices=env.arm_names(), help="what to compare (an estimator, or mvpo-learned)")  # fmt: skip
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--iterations", type=int, default=env.iterations)
    p.add_argument("--num-groups", type=int, default=env.num_groups, help="tasks per iteration")
    p.add_argument("--group-size", type=int, default=8, help="rollouts per task")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eval-every", type=int, default=env.eval_every,
                   help="held-out evaluation during training")  # fmt: skip
    splits = [s for s, _ in env.final_evals]
    p.add_argument("--eval-episodes", type=int, default=env.eval_episodes,
                   help=f"episodes per {splits[0]} task of each evaluation during training")  # fmt: skip
    p.add_argument("--final-episodes", type=int, nargs=len(splits),
                   metavar=tuple(s.upper() for s in splits), default=[e for _, e in env.final_evals],
                   help=f"episodes per task of the final {' / '.join(splits)} evaluations")  # fmt: skip
    p.add_argument("--warm", default=env.warm, help="the warm start's folder (made if missing)")
    p.add_argument("--warm-checked", action="store_true",
                   help="the caller has just made or checked --warm (e.g. tuning_grid.py, once "
                   "for all its points): only compare its saved settings with --warm-args "
                   "(seconds), without replaying the expert plans")  # fmt: skip
    p.add_argument("--warm-args", default=env.warm_args,
                   help="flags of `python -m mvpo_train.encoder_policy` for the warm start")  # fmt: skip
    p.add_argument("--warm-candidates", type=int, nargs="+", default=None, metavar="STEPS",
                   help="only measure warm starts of these BC step counts (0 = a fresh head) on "
                   "the train split (--candidate-tasks tasks x 1 sampled episode, seed 0)")  # fmt: skip
    p.add_argument("--candidate-tasks", type=int, default=200,
                   help="train tasks of --warm-candidates (the split's first N)")  # fmt: skip
    p.add_argument("--env-kwargs", default=env.env_kwargs,
                   help=f"{env.env_id} keywords of every run, as JSON (e.g. the full split)")  # fmt: skip
    p.add_argument("--threshold", type=float, default=0.2, help="success threshold")
    p.add_argument("--more-thresholds", type=float, nargs="+", default=[], metavar="T",
                   help="further success thresholds: iterations to each in their own table and "
                   "in learning.json (reach_at); analysis only, the runs are the same")  # fmt: skip
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel (1 thread each)")
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="run each run as a Ray task: on a cluster (ADDRESS, e.g. 'auto' or "
        "ray://head:10001) or, without ADDRESS, on a local instance of --jobs CPUs",
    )
    p.add_argument("--base", default=env.base)
    p.add_argument("--arm-flags", action="append", default=[], metavar="ARM='FLAGS'",
                   help="mvpo-train flags of one arm only (repeatable), e.g. the tuning grid's "
                   "choice: --arm-flags \"grpo=--lr 0.001 --kl-coef 0.05\"")  # fmt: skip
    p.add_argument("--embedding-cache", default=None,
                   help="embedding cache file of every run (default: BASE/embeddings.npz); "
                   "sweeps over the same games can share one")  # fmt: skip
    p.add_argument("--fresh", action="store_true", help="retrain even if runs exist")
    p.add_argument("--no-eval", dest="eval", action="store_false",
                   help="skip the final held-out evaluations")  # fmt: skip
    p.add_argument("--no-study", dest="study", action="store_false",
                   help="plain cpu-tiny runs (+ the extra flags): no warm start, no study flags")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="1 seed, 3 iterations, own --base")
    p.add_argument("--analyze-only", action="store_true", help="only rebuild the table and plot")
    p.add_argument("--out", default=env.out)
    p.add_argument(
        "extra", nargs="*", help="extra mvpo-train flags after --, e.g. -- --max-steps 20"
    )
    args = p.parse_args(argv)
    args.study_env = env
    args.argv = [a for a in argv if a != "--analyze-only"]
    if args.quick:
        quick = "learning-quick" if env is ALFWORLD else f"learning-{env.name}-quick"
        args.seeds, args.iterations, args.eval_every = [0], 3, 3
        args.base = str(ROOT / "runs" / quick)
        args.out = str(ROOT / "runs" / quick / Path(env.out).name)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    env = args.study_env
    base = Path(args.base)
    if args.warm_candidates is not None:
        print(candidates_markdown(warm_candidates(args, base)))
        return 0
    if not args.analyze_only:
        if args.study:
            warm_start_and_eval(args, base)
        run_all(args, base)
        if args.study:
            warm_start_and_eval(args, base, build=False)  # the eval needs a run's config
    runs = load_runs(base, args.arms, args.seeds, args.iterations)
    table = summarize(
        runs, base, args.threshold, args.iterations, env=env,
        more_thresholds=tuple(args.more_thresholds),
    )  # fmt: skip
    table["settings"] = study_settings(args)
    save_results(
        table,
        Path(args.out),
        lambda t, png: plot(t, png, args.threshold, env),
        lambda t, out, png: write_markdown(t, args, out, png),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
