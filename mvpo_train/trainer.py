"""The training loop: rollout -> log-probs -> advantages -> clipped PPO update.

docs/architecture.md (the data flow) and docs/estimators.md §0 (the batch). One iteration, in the order
and with the phase names of the seeds' Table 3:

1. ``rollout``   (Gen.): B groups x G episodes -> :class:`~mvpo_train.batch.StepBatch`;
2. ``logp_ref``  (Logp+Ref): old log-probs (generate mode; score mode gets them from the
   rollout) and the frozen reference's log-probs when ``kl_coef > 0``;
3. ``advantage`` (Adv.): ``estimator(batch) -> advantages, diagnostics`` (any registered name);
4. ``update``    (Actor): ``ppo_epochs`` x mini-batches of clipped PPO (:mod:`mvpo_train.loss`)
   with gradient accumulation over micro-batches, grad clipping, then the generation backend
   picks up the new weights.

Then metrics go to ``metrics.jsonl`` and a checkpoint is written (atomically); ``--resume``
continues from it bit for bit. The loop is written out in :func:`train` in one piece, in the
spirit of CleanRL; helpers below it do the per-row tensor bookkeeping.
"""

from __future__ import annotations

import copy
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.vector import GroupedVectorEnv
from mvpo_train import distributed as D
from mvpo_train.abstraction_refit import AbstractionRefit, RefitConfig
from mvpo_train.alignment import alignment_metrics
from mvpo_train.backends import make_backend
from mvpo_train.batch import StepBatch
from mvpo_train.checkpoint import (
    CheckpointError,
    StorageFullError,
    capture_rng,
    find_intact_checkpoint,
    keep_aside,
    latest_checkpoint,
    load_checkpoint,
    remove_stale_temporaries,
    restore_rng,
    storage_full_reason,
)
from mvpo_train.config import ConfigError, TrainConfig, build_estimator, changed_fields
from mvpo_train.loss import LossConfig, ppo_loss
from mvpo_train.metrics import MetricsLogger, PhaseTimer, check_metrics_rows
from mvpo_train.policy import Policy
from mvpo_train.prompts import get_template
from mvpo_train.records import write_batch_record
from mvpo_train.rollout import RolloutCollector, RolloutConfig, check_score_candidates
from mvpo_train.run_lock import LOCK_NAME, RunLock, hold_run_lock
from mvpo_train.tiny_model import resolve_model_path

#: mvpo_train.distributed may start several ranks of this trainer
SUPPORTS_DISTRIBUTED = True

__all__ = [
    "RUN_ARTIFACTS",
    "RunPlan",
    "build_estimator",
    "check_runtime",
    "evaluate",
    "load_policy",
    "plan_run",
    "row_logprobs",
    "train",
]


# ================================================================== the loop


def train(cfg: TrainConfig) -> list[dict[str, Any]]:
    """Run (or resume) training; returns the metrics rows written by this process.

    Bad settings, a run folder that may not be reused and an unusable checkpoint raise
    :class:`ConfigError` / :class:`CheckpointError` before anything is written
    (docs/training.md, "Reliability"). The main process holds the run folder's lock
    (:mod:`mvpo_train.run_lock`) from before it reads the folder until it returns: a second
    writer is refused with :class:`~mvpo_train.run_lock.RunLockedError`.
    """
    _quiet_transformers()
    torch.set_num_threads(cfg.threads)
    ctx = D.init_distributed()  # torchrun's ranks; one process without torchrun
    _check_run_dir_name(Path(cfg.run_dir), cfg.overwrite)
    lock = hold_run_lock(cfg.run_dir, create=not cfg.resume) if ctx.is_main else None
    try:
        return _train(cfg, ctx, lock)
    except OSError as err:  # any other file of the run (records, TensorBoard) on a full disk
        if storage_full_reason(err) is None:
            raise
        newest = latest_checkpoint(cfg.run_dir)
        intact = (
            f"checkpoint {newest.name} intact; free space and rerun with --resume"
            if newest is not None
            else "no checkpoint yet; free space and rerun with --overwrite"
        )
        raise _write_error(err, Path(cfg.run_dir), intact) from None
    finally:
        if lock is not None:
            lock.release()


def _train(cfg: TrainConfig, ctx: D.DistContext, lock: RunLock | None) -> list[dict[str, Any]]:
    """:func:`train` once the run folder is locked (``lock``: None on ranks other than 0)."""
    plan = plan_run(cfg)  # the run folder's rules; reads, never writes
    plan.lock = lock
    ctx.barrier()  # every rank has read the folder before rank 0 writes it
    if cfg.num_groups % ctx.world_size:  # a group is never split across ranks
        raise ConfigError(
            f"num_groups: {cfg.num_groups} groups cannot be shared by {ctx.world_size} ranks "
            "(use a multiple of the number of processes)"
        )
    check_runtime(cfg)
    _seed_everything(cfg.seed)

    # -- setup: policy, reference, optimizer, estimator, envs, RNGs ---------------------------
    policy = load_policy(cfg)
    ref_policy = _frozen_copy(policy) if cfg.kl_coef > 0 else None
    if cfg.parallelism == "fsdp" and ctx.enabled:  # before the optimizer (sharded params)
        if (why := D.fsdp_unsupported(cfg)) is not None:
            raise ConfigError(f"parallelism: {why}")
        D.shard_policy(policy, ctx)
    optimizer = torch.optim.AdamW(
        policy.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, eps=cfg.adam_eps
    )
    estimator = build_estimator(cfg)
    venv = make_venv(cfg, cfg.split, cfg.num_groups // ctx.world_size, cfg.group_size)
    refit = (  # a learned abstraction fitted from this run's rollouts (docs/abstractions.md)
        AbstractionRefit(
            RefitConfig(
                **{
                    "refit_every": cfg.abstraction_refit_every,
                    "seed": cfg.seed,
                    **cfg.abstraction_kwargs,
                }
            )
        )
        if cfg.abstraction == "learned"
        else None
    )
    if cfg.tasks and max(cfg.tasks) >= venv.num_tasks:  # never a silently wrapped task
        venv.close()
        raise ConfigError(
            f"tasks: {[t for t in cfg.tasks if t >= venv.num_tasks]} out of range; split "
            f"{cfg.split!r} of {cfg.env_id} has {venv.num_tasks} tasks (0..{venv.num_tasks - 1})"
        )
    gens = {
        "tasks": np.random.default_rng(cfg.seed),
        "actions": torch.Generator().manual_seed(cfg.seed),
        "minibatch": torch.Generator().manual_seed(cfg.seed + 1),
    }
    backend = _make_backend(cfg, policy)
    collector = RolloutCollector(
        venv,
        policy,
        get_template(cfg.env_id, cfg.prompt_style),
        rollout_config(cfg),
        backend,
        gens["actions"],
    )
    loss_cfg = LossConfig(
        clip_low=cfg.clip_ratio,
        clip_high=cfg.clip_ratio_high or cfg.clip_ratio,
        ratio_level=cfg.ratio_level,
        loss_agg=cfg.loss_agg,
        kl_coef=cfg.kl_coef,
        entropy_coef=cfg.entropy_coef,
    )

    # -- the run folder (setup succeeded: now write) and resume --------------------------------
    run_dir = plan.open(cfg) if ctx.is_main else Path(cfg.run_dir)
    ctx.barrier()
    start, env_steps, metrics_rows = 0, 0, 0
    if plan.checkpoint is not None:
        saved = plan.saved
        D.load_checkpoint_into(policy.model, optimizer, plan.checkpoint, saved["optimizer"])
        estimator.load_state_dict(saved["state"]["estimator"])
        if refit is not None and "abstraction_refit" in saved["state"]:
            refit.load_state_dict(saved["state"]["abstraction_refit"])
            if refit.abstraction is not None:
                refit.install(venv)
        restore_rng(saved["rng"], gens)
        start = saved["state"]["iteration"]
        env_steps = saved["state"]["env_steps"]
        metrics_rows = saved["state"]["metrics_rows"]
        if backend is not None:
            backend.sync_weights(policy.model)
        if start >= cfg.iterations:
            _say(f"nothing to do: the run is complete at iteration {start} (raise --iterations)")
    D.check_same_weights(policy.model, ctx)
    logger = (
        MetricsLogger(run_dir, tensorboard=cfg.tensorboard, keep_rows=metrics_rows)
        if ctx.is_main
        else None
    )
    eval_state: dict[str, Any] = {}

    written: list[dict[str, Any]] = []
    bar = _progress(cfg, start) if ctx.is_main else None
    for iteration in range(start, cfg.iterations):
        timer = PhaseTimer()
        policy.model.eval()

        # 1. rollout (Gen.)
        with timer("rollout"), D.gathered(policy.model):  # FSDP: no collective per forward
            if ctx.enabled:
                collector.generator = D.rank_generator(cfg.seed, iteration, ctx.rank)
                tasks = D.sample_global_tasks(cfg, venv.num_tasks, gens["tasks"])
                batch, local_rows = D.gather_batch(
                    collector.collect(D.shard_tasks(tasks, ctx)), ctx
                )
            else:
                tasks = sample_tasks(cfg, venv, gens["tasks"])
                batch = collector.collect(tasks)
            if refit is not None and refit.step(iteration, batch) is not None:
                refit.install(venv)  # labels the next iteration's episodes

        # 2. old and reference log-probs (Logp+Ref)
        with timer("logp_ref"), D.gathered(policy.model):
            old_logp = batch.extras["old_logp"]
            if any(x is None for x in old_logp):
                old_logp = [x.cpu().numpy() for x in _no_grad_logprobs(policy, batch, cfg)]
            ref_logp = None
            if ref_policy is not None:
                ref_logp = [x.cpu().numpy() for x in _no_grad_logprobs(ref_policy, batch, cfg)]

        # 3. advantages (Adv.); a batch record (docs/inspect.md) keeps the pre-call state
        record = ctx.is_main and cfg.record_every > 0 and (iteration + 1) % cfg.record_every == 0
        state_before = estimator.state_dict() if record else None
        with timer("advantage"):
            adv, diag = estimator(batch)
        if record:
            write_batch_record(
                run_dir, iteration + 1, batch, estimator=estimator, estimator_state=state_before,
                advantages=adv, diagnostics=diag,
                meta={"env_id": cfg.env_id, "estimator": cfg.estimator, "seed": cfg.seed},
            )  # fmt: skip

        # 4. policy update (Actor)
        with timer("update"):
            policy.model.train()
            if ctx.enabled:
                stats = D.ppo_update_dp(
                    policy, optimizer, batch, adv, old_logp, ref_logp, cfg, loss_cfg,
                    gens["minibatch"], local_rows, ctx,
                )  # fmt: skip
            else:
                stats = ppo_update(
                    policy,
                    optimizer,
                    batch,
                    adv,
                    old_logp,
                    ref_logp,
                    cfg,
                    loss_cfg,
                    gens["minibatch"],
                )
            policy.model.eval()
            if backend is not None:
                backend.sync_weights(policy.model)

        # evaluation (not part of the timed iteration)
        eval_metrics: dict[str, Any] = {}
        if cfg.eval_every and (iteration + 1) % cfg.eval_every == 0:
            with timer("eval"), D.gathered(policy.model):  # FSDP: every rank gathers
                if ctx.is_main:
                    eval_metrics = evaluate(
                        policy, cfg, backend=backend, seed=cfg.seed + iteration, cache=eval_state
                    )

        # metrics
        env_steps += len(batch)
        row = batch_metrics(batch, adv)
        row.update(iteration=iteration + 1, env_steps=env_steps)
        row.update({f"adv/{k}": v for k, v in diag.items()})
        row.update(alignment_metrics(batch, adv, estimator))  # align/*: MVPO + oracle labels
        row.update({f"loss/{k}": v for k, v in stats.items()})
        row.update({f"eval/{k}": v for k, v in eval_metrics.items()})
        row.update(timer.as_metrics())
        row["time/total"] -= timer.seconds.get("eval", 0.0)  # the iteration's own time
        if logger is not None:
            logger.log(row, iteration + 1)
        written.append(row)
        metrics_rows += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix(
                success=f"{row['success']:.2f}",
                zero_credit=f"{diag.get('zero_credit_ratio', 0.0):.2f}",
                sec=f"{row['time/total']:.0f}",
            )

        # checkpoint
        last = iteration + 1 == cfg.iterations
        if (cfg.save_every and (iteration + 1) % cfg.save_every == 0) or last:
            D.save_checkpoint_main(
                ctx,
                run_dir,
                iteration + 1,
                policy.model,
                optimizer,
                capture_rng(gens),
                {
                    "estimator": estimator.state_dict(),
                    **({"abstraction_refit": refit.state_dict()} if refit is not None else {}),
                    "env_steps": env_steps,
                    "metrics_rows": metrics_rows,
                    "config": cfg.to_dict(),
                },
                keep=cfg.keep_checkpoints,
                tokenizer=policy.tokenizer,
            )
            if ctx.is_main and hasattr(policy, "persist_cache"):
                policy.persist_cache()  # encoder policy: the shared embedding cache
        if cfg.stop_after and iteration + 1 - start >= cfg.stop_after:
            break

    if bar is not None:
        bar.close()
    if logger is not None:
        logger.close()
    venv.close()
    D.shutdown(ctx)
    if backend is not None:
        backend.close()
    for ev in eval_state.values():
        if hasattr(ev, "close"):
            ev.close()
    return written


# ================================================================== setup helpers


#: what makes a folder hold a run (other files, e.g. a user's log, do not count)
RUN_ARTIFACTS = ("config.yaml", "metrics.jsonl", "checkpoints", "tensorboard", "records")


def _say(message: str) -> None:
    print(f"mvpo-train: {message}", file=sys.stderr, flush=True)


def _short(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass
class RunPlan:
    """What :func:`train` will do with ``run_dir`` (decided by :func:`plan_run` before any
    write; carried out by :meth:`open` once the setup has succeeded)."""

    run_dir: Path
    checkpoint: Path | None = None  #: the intact checkpoint a resumed run starts from
    saved: dict[str, Any] = field(default_factory=dict)  #: its loaded contents
    corrupt: list[tuple[Path, str]] = field(default_factory=list)  #: newer, failed checks
    move_aside: bool = False  #: --overwrite of a folder that holds a run
    lock: RunLock | None = None  #: the run folder's lock (rank 0), moved along by --overwrite

    def open(self, cfg: TrainConfig) -> Path:
        """Move an old run aside or set corrupt checkpoints aside, then write config.yaml.

        Nothing is deleted: a corrupt checkpoint becomes the first free ``iter-K.corrupt``,
        ``iter-K.corrupt-2``, ... (an older one of that name is evidence, kept as it is).
        A failed write (full disk, a name the file system refuses) is one line naming it.
        """
        run_dir = self.run_dir
        try:
            if self.move_aside:
                n = 1
                while os.path.lexists(run_dir.with_name(f"{run_dir.name}.old-{n}")):
                    n += 1
                target = run_dir.with_name(f"{run_dir.name}.old-{n}")
                os.rename(run_dir, target)
                if self.lock is not None:  # its file moved along with the old run
                    self.lock.move_to(run_dir)
                (target / LOCK_NAME).unlink(missing_ok=True)
                _say(f"--overwrite: moved the previous run in {run_dir} to {target}")
            for path, reason in self.corrupt:
                target = keep_aside(path, ".corrupt")
                _say(f"skipped a corrupt checkpoint ({reason}); kept as {target.name}")
            if self.checkpoint is not None:
                remove_stale_temporaries(run_dir)
                if self.corrupt:
                    _say(f"resuming from the newest intact checkpoint, {self.checkpoint.name}")
            run_dir.mkdir(parents=True, exist_ok=True)
            _write_atomic(run_dir / "config.yaml", yaml.safe_dump(cfg.to_dict(), sort_keys=True))
        except OSError as err:
            raise _write_error(err, run_dir) from None
        return run_dir


def _write_atomic(path: Path, text: str) -> None:
    """``path`` replaced by ``text`` whole (temporary file, fsync, ``os.replace``)."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def _write_error(
    err: OSError, run_dir: Path, intact: str = "the run folder is as it was; free space and rerun"
) -> Exception:
    """One line for a failed write into the run folder (nothing before it was lost)."""
    reason = storage_full_reason(err)
    where = err.filename or run_dir
    if reason is not None:
        return StorageFullError(f"no space left writing {_trim(where)} ({reason}); {intact}")
    return ConfigError(f"run_dir: cannot write {_trim(where)}: {err.strerror or err}")


def _trim(path: Any, width: int = 120) -> str:
    text = str(path)
    return text if len(text) <= width else text[: width // 2 - 2] + "..." + text[-width // 2 :]


def _check_run_dir_name(run_dir: Path, overwrite: bool) -> None:
    """A run folder name the file system can hold, with room for the names the trainer
    derives from it (``<run_dir>.old-N``); one line otherwise (it was ``File name too
    long`` as a traceback)."""
    try:
        limit = os.pathconf(_existing_parent(run_dir), "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    room = len(".old-99") if overwrite else 0
    for part in run_dir.parts:
        if len(part.encode()) + (room if part == run_dir.name else 0) > limit:
            raise ConfigError(
                f"run_dir: the folder name {_short(part, 40)} has {len(part.encode())} bytes; "
                f"this file system allows {limit}"
                + (f" (less {room} for the .old-N name of --overwrite)" if room else "")
                + "; choose a shorter --run-dir"
            )
    try:
        run_dir.exists()
    except OSError as err:
        raise ConfigError(
            f"run_dir: {_trim(run_dir)} cannot be used ({err.strerror or err})"
        ) from None


def _existing_parent(path: Path) -> Path:
    for p in (path, *path.parents):
        try:
            if p.is_dir():
                return p
        except OSError:
            continue
    return Path(".")


def plan_run(cfg: TrainConfig) -> RunPlan:
    """Apply the run folder's rules (docs/training.md, "Reliability") without writing:

    * a fresh run refuses a folder that holds a run unless ``overwrite`` (then the old run
      is moved to ``<run_dir>.old-N``, never mixed with the new one);
    * ``resume`` needs an intact checkpoint (checksums verified; newer corrupt ones are
      reported and set aside) and the same config apart from the resume-safe fields.
    """
    run_dir = Path(cfg.run_dir)
    plan = RunPlan(run_dir)
    if cfg.resume and cfg.overwrite:
        raise ConfigError("resume: --resume and --overwrite exclude each other")
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"run_dir: {run_dir} exists and is not a folder")
    if not cfg.resume:
        found = [name for name in RUN_ARTIFACTS if (run_dir / name).exists()]
        if found and not cfg.overwrite:
            raise ConfigError(
                f"run_dir: {run_dir} already holds a run ({', '.join(found)}); pass --resume "
                "to continue it or --overwrite to move it aside and start afresh"
            )
        plan.move_aside = bool(found)
        return plan
    if not run_dir.is_dir():
        raise ConfigError(f"run_dir: {run_dir} does not exist, so there is nothing to resume")
    ckpt, corrupt = find_intact_checkpoint(run_dir)
    if ckpt is None:
        if corrupt:
            raise CheckpointError(f"no intact checkpoint to resume from: {corrupt[-1][1]}")
        raise ConfigError(
            f"run_dir: {run_dir} has no complete checkpoint to resume from; run without "
            "--resume (with --overwrite if the folder holds a run) to start afresh"
        )
    saved = load_checkpoint(ckpt, verify=False)  # just verified
    check_metrics_rows(run_dir, int(saved["state"].get("metrics_rows", 0)), ckpt.name)
    changed = changed_fields(saved["state"].get("config", {}), cfg)
    if changed:
        diff = ", ".join(f"{k}: {_short(a)} -> {_short(b)}" for k, (a, b) in changed.items())
        raise ConfigError(
            f"resume: the config differs from the run's in {diff}; a resumed run may change "
            "only iterations, checkpointing, logging and evaluation fields"
        )
    done = int(saved["state"]["iteration"])
    if cfg.iterations < done:
        raise ConfigError(
            f"iterations: the run is already at iteration {done}; expected >= {done}, "
            f"got {cfg.iterations}"
        )
    plan.checkpoint, plan.saved, plan.corrupt = ckpt, saved, corrupt
    return plan


def check_runtime(cfg: TrainConfig) -> None:
    """The env id is registered and the model exists (before anything heavy loads)."""
    import gymnasium as gym

    if cfg.env_id not in gym.registry:
        ours = sorted(k for k in gym.registry if k.startswith("mvpo/"))
        raise ConfigError(
            f"env_id: unknown env id {cfg.env_id!r}; registered: {', '.join(ours)} "
            "(or any other registered Gymnasium id)"
        )
    if cfg.policy == "lm":  # the encoder policy checks its head folder when it loads
        _model_path(cfg.model)


def _model_path(name: str) -> str:
    """``resolve_model_path`` with one-line errors: a local path must be a model folder."""
    try:
        path = resolve_model_path(name)
    except FileNotFoundError as err:
        raise ConfigError(f"model: {err}") from None
    looks_local = path.startswith(("/", ".", "~")) or path.count("/") > 1 or "\\" in path
    local = Path(path).expanduser()
    if local.exists() or looks_local:
        if not local.is_dir():
            raise ConfigError(f"model: {path} is not a model folder (it does not exist)")
        if not (local / "config.json").is_file():
            raise ConfigError(f"model: {path} is not a model folder (no config.json in it)")
    elif not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", path):
        raise ConfigError(f"model: {path!r} is neither a model folder nor a hub id (org/name)")
    return path


def _quiet_transformers() -> None:
    """No per-call progress bars from transformers (loading / saving weights)."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except Exception:  # pragma: no cover
        pass


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_policy(cfg: TrainConfig, model: str | None = None) -> Policy:
    """The policy of ``cfg`` (``model`` overrides ``cfg.model``, e.g. a checkpoint folder)."""
    if cfg.policy == "encoder":  # docs/policies.md
        from mvpo_train.encoder_policy import load_encoder_policy

        return load_encoder_policy(cfg, model)  # type: ignore[return-value]
    path = _model_path(model or cfg.model)
    try:
        policy = Policy.from_pretrained(
            path,
            device=cfg.device,
            dtype=cfg.dtype,
            temperature=cfg.temperature,
            max_tokens_per_forward=cfg.max_tokens_per_forward,
            score_impl=cfg.score_impl,
            attn_implementation=(
                None if cfg.attn_implementation == "auto" else cfg.attn_implementation
            ),
        )
    except OSError as err:  # transformers: not a model folder, not in the offline cache
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"model: cannot load {path!r}: {first}") from None
    if getattr(policy.model, "generation_config", None) is not None:
        policy.model.generation_config.do_sample = True
    return policy


def _frozen_copy(policy: Policy) -> Policy:
    if hasattr(policy, "frozen_copy"):  # the encoder policy
        return policy.frozen_copy()
    model = copy.deepcopy(policy.model).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return Policy(
        model,
        policy.tokenizer,
        temperature=policy.temperature,
        max_tokens_per_forward=policy.max_tokens_per_forward,
        score_impl=policy.score_impl,
    )


def _make_backend(cfg: TrainConfig, policy: Policy) -> Any:
    if cfg.action_mode != "generate":
        return None
    kwargs: dict[str, Any] = {"top_p": cfg.top_p, "seed": cfg.seed}
    if cfg.backend == "vllm":
        kwargs["gpu_memory_utilization"] = cfg.vllm_gpu_memory_utilization
    return make_backend(cfg.backend, policy, **kwargs)


def make_venv(cfg: TrainConfig, split: str, num_groups: int, group_size: int) -> GroupedVectorEnv:
    """The grouped vector env of ``cfg``; an env that refuses its split or keywords is a
    :class:`ConfigError` carrying the env's message, and so is, in score mode, a first page
    that lists an admissible template such as ``search[<query>]`` or SearchQA's
    ``<search> query </search>`` (:func:`~mvpo_train.rollout.check_score_candidates`)."""
    kwargs = dict(cfg.env_kwargs)
    if cfg.abstraction and cfg.abstraction != "learned":
        kwargs.setdefault("abstraction", cfg.abstraction)
    kwargs.setdefault("split", split)
    if split != cfg.split:
        kwargs["split"] = split
    if cfg.max_steps:
        kwargs["max_episode_steps"] = cfg.max_steps
    try:
        # another env's abstraction fails only at reset, and score mode needs the first page's
        # admissible actions: probe once (its own env: the venv's episodes are untouched)
        if "abstraction" in kwargs or cfg.action_mode == "score":
            import gymnasium as gym

            probe = gym.make(cfg.env_id, **kwargs)
            try:
                _, probe_info = probe.reset(seed=0)
            finally:
                probe.close()
            if cfg.action_mode == "score":  # the encoder policy cannot generate: no hint
                check_score_candidates(
                    probe_info.get("admissible_actions") or [],
                    cfg.env_id,
                    generate_hint=cfg.policy == "lm",
                )
        return GroupedVectorEnv(
            cfg.env_id, num_groups, group_size, vectorization_mode=cfg.vectorization, **kwargs
        )
    except ConfigError:
        raise
    except (TypeError, ValueError, FileNotFoundError) as err:  # the env's own message
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(
            f"split / env_kwargs: {cfg.env_id} refused split={kwargs['split']!r}, "
            f"env_kwargs={cfg.env_kwargs}: {first}"
        ) from err


def rollout_config(cfg: TrainConfig) -> RolloutConfig:
    return RolloutConfig(
        action_mode=cfg.action_mode,
        score_norm=cfg.score_norm,
        score_logprob=cfg.score_logprob,
        history_length=cfg.history_length,
        max_new_tokens=cfg.max_new_tokens,
        invalid_penalty=cfg.invalid_penalty,
        require_think=cfg.require_think,
    )


def sample_tasks(cfg: TrainConfig, venv: GroupedVectorEnv, rng: np.random.Generator) -> list[int]:
    """Task index per group: from ``cfg.tasks`` if given, else distinct tasks of the split."""
    if cfg.tasks:
        pool = [int(x) for x in cfg.tasks]
        replace = cfg.num_groups > len(pool)
        return [pool[int(i)] for i in rng.choice(len(pool), size=cfg.num_groups, replace=replace)]
    return venv.sample_tasks(rng)


def _progress(cfg: TrainConfig, start: int):
    if not cfg.progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=cfg.iterations, initial=start, desc=f"mvpo-train [{cfg.estimator}]", unit="it"
    )


# ================================================================== per-row log-probs


def row_logprobs(
    policy: Policy,
    batch: StepBatch,
    cfg: TrainConfig,
    rows: list[int] | None = None,
    *,
    entropy: bool = False,
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """The policy log-prob of each row's action (per action token), as PPO uses it.

    * ``generate`` mode, or ``score`` mode with ``score_logprob="tokens"``: log-probs of the
      action tokens given the prompt;
    * ``score`` mode with ``score_logprob="choice"``: one value per row,
      ``log_softmax(candidate scores)[chosen]`` (entropy = that distribution's entropy).

    Gradients flow unless called under ``torch.no_grad()``. The same function produces the
    rollout's old log-probs (through :meth:`Policy.score_candidates`) and the trainer's.
    """
    rows = list(range(len(batch))) if rows is None else list(rows)
    ex = batch.extras
    prompts = [ex["prompt_ids"][r] for r in rows]
    if cfg.action_mode == "score" and cfg.score_logprob == "choice":
        cands = [ex["cand_ids"][r] for r in rows]
        res = policy.score_candidates(prompts, cands, norm=cfg.score_norm)
        out, ents = [], []
        for k, r in enumerate(rows):
            logp = torch.log_softmax(res.scores[k].double(), dim=-1)
            out.append(logp[int(ex["choice"][r])].reshape(1))
            if entropy:
                ents.append(-(logp.exp() * logp).sum().reshape(1))
        return out, (ents if entropy else None)
    actions = [ex["action_ids"][r] for r in rows]
    lp, ent = policy.token_logprobs(prompts, actions, entropy=entropy)
    return [x.double() for x in lp], ([x.double() for x in ent] if ent is not None else None)


@torch.no_grad()
def _no_grad_logprobs(policy: Policy, batch: StepBatch, cfg: TrainConfig) -> list[torch.Tensor]:
    return row_logprobs(policy, batch, cfg)[0]


# ================================================================== the update


def micro_batch_backward(
    policy: Policy,
    batch: StepBatch,
    cfg: TrainConfig,
    loss_cfg: LossConfig,
    micro: list[int],
    adv: np.ndarray,
    old_logp: list,
    ref_logp: list | None,
    denom: float,
) -> dict[str, float]:
    """The clipped PPO loss of the rows ``micro`` (normalised by the mini-batch's ``denom``),
    back-propagated; its statistics (``pg_loss``, ``tokens``, ...). Shared by
    :func:`ppo_update` and the data-parallel update (docs/scaling.md)."""
    logp, ent = row_logprobs(policy, batch, cfg, micro, entropy=True)
    seq_index = torch.cat(
        [torch.full((len(x),), k, dtype=torch.long) for k, x in enumerate(logp)]
    ).to(logp[0].device)
    flat = torch.cat(logp)
    old = torch.from_numpy(np.concatenate([old_logp[r] for r in micro])).to(flat.device)
    ref = (
        torch.from_numpy(np.concatenate([ref_logp[r] for r in micro])).to(flat.device)
        if ref_logp is not None
        else None
    )
    a = torch.tensor(adv[micro], dtype=torch.float64, device=flat.device)
    loss, st = ppo_loss(
        flat, old, a, seq_index, len(micro), loss_cfg, ref_logp=ref,
        entropy=torch.cat(ent) if ent is not None else None, denom=denom,
    )  # fmt: skip
    loss.backward()
    return st


def ppo_update(
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    batch: StepBatch,
    adv: np.ndarray,
    old_logp: list[np.ndarray],
    ref_logp: list[np.ndarray] | None,
    cfg: TrainConfig,
    loss_cfg: LossConfig,
    generator: torch.Generator,
) -> dict[str, float]:
    """``ppo_epochs`` passes of shuffled mini-batches; returns statistics (``pg_loss`` and
    ``grad_norm``: means over optimizer steps; the others: means over trained tokens).

    Rows with advantage exactly 0 contribute no gradient when ``kl_coef`` and
    ``entropy_coef`` are 0; with ``skip_zero_adv`` they are not forwarded at all, but still
    count in the loss normaliser, so the update is the same as without skipping.
    """
    n = len(batch)
    n_tok = np.array([len(x) for x in old_logp], dtype=np.int64)
    skip = cfg.skip_zero_adv and cfg.kl_coef == 0 and cfg.entropy_coef == 0
    mb_size = cfg.minibatch_size or n
    sums: dict[str, float] = {}  # token-weighted sums of the per-token statistics
    tokens = 0.0
    pg_loss, grad_norms, trained = [], [], 0
    params = [p for p in policy.model.parameters() if p.requires_grad]
    for p in params:  # zero (not None) grads: a mini-batch with nothing to train still steps
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    for _epoch in range(cfg.ppo_epochs):
        perm = torch.randperm(n, generator=generator).numpy()
        for start in range(0, n, mb_size):
            mb = perm[start : start + mb_size]
            denom = float(n_tok[mb].sum()) if loss_cfg.loss_agg == "token-mean" else float(len(mb))
            train_rows = [int(r) for r in mb if not (skip and adv[r] == 0.0)]
            optimizer.zero_grad(set_to_none=False)
            mb_pg = 0.0
            for m0 in range(0, len(train_rows), cfg.micro_batch_size):
                micro = train_rows[m0 : m0 + cfg.micro_batch_size]
                st = micro_batch_backward(
                    policy, batch, cfg, loss_cfg, micro, adv, old_logp, ref_logp, denom
                )
                mb_pg += st.pop("pg_loss")
                n_tok_micro = st.pop("tokens")
                tokens += n_tok_micro
                for k, v in st.items():
                    sums[k] = sums.get(k, 0.0) + v * n_tok_micro
            grad_norm = (
                float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
                if cfg.max_grad_norm > 0
                else float(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params)))
            )
            optimizer.step()
            pg_loss.append(mb_pg)
            grad_norms.append(grad_norm)
            trained += len(train_rows)
    out = {k: v / tokens for k, v in sums.items()} if tokens else {}
    out["pg_loss"] = float(np.mean(pg_loss)) if pg_loss else 0.0
    out["grad_norm"] = float(np.mean(grad_norms)) if grad_norms else 0.0
    out["trained_rows"] = float(trained)
    out["optimizer_steps"] = float(len(grad_norms))
    return out


# ================================================================== metrics and evaluation


def batch_metrics(batch: StepBatch, adv: np.ndarray | None = None) -> dict[str, Any]:
    """Success, returns, lengths, format/invalid ratios and per-task-type success."""
    ex = batch.extras
    ti = batch.traj_index
    env_ret = np.bincount(
        ti, weights=np.asarray(ex["env_reward"], dtype=np.float64), minlength=batch.n_traj
    )
    out: dict[str, Any] = {
        "episodes": int(batch.n_traj),
        "steps": int(len(batch)),
        "success": float(batch.traj_success.mean()),
        "return_mean": float(env_ret.mean()),
        "shaped_return_mean": float(batch.traj_return.mean()),
        "episode_length": float(batch.traj_length.mean()),
        "invalid_action_ratio": float(np.mean(ex["invalid_action"])),
        "format_error_ratio": float(1.0 - np.mean(ex["format_ok"])),
    }
    types = np.asarray(ex["task_type"], dtype=object)[batch.traj_rows]
    for tt in sorted(set(types.tolist())):
        out[f"success/{tt}"] = float(batch.traj_success[types == tt].mean())
    if adv is not None:
        out["adv/mean"] = float(np.mean(adv))
        out["adv/std"] = float(np.std(adv))
    return out


def evaluate(
    policy: Policy,
    cfg: TrainConfig,
    *,
    split: str | None = None,
    episodes: int | None = None,
    greedy: bool | None = None,
    max_tasks: int | None = None,
    tasks: list[int] | None = None,
    backend: Any = None,
    seed: int = 0,
    cache: dict[str, Any] | None = None,
    report_time: bool = False,
) -> dict[str, Any]:
    """Success rate (overall and per task type) on every task of an eval split (or on the
    task indices ``tasks``, or the first ``max_tasks``), ``episodes`` episodes each.

    Runs under ``torch.random.fork_rng`` with its own generator, so evaluating during
    training does not change the training run's random stream.
    """
    split = split or cfg.eval_split
    episodes = episodes or cfg.eval_episodes
    greedy = cfg.eval_greedy if greedy is None else greedy
    max_tasks = cfg.eval_max_tasks if max_tasks is None else max_tasks
    chunk = 8
    cache = {} if cache is None else cache
    key = f"venv:{split}:{episodes}"
    if key not in cache:
        cache[key] = make_venv(cfg, split, chunk, episodes)
    venv = cache[key]
    n_all = venv.num_tasks if not max_tasks else min(max_tasks, venv.num_tasks)
    task_list = [int(t) for t in tasks] if tasks else list(range(n_all))
    if any(not 0 <= t < venv.num_tasks for t in task_list):
        raise ConfigError(
            f"tasks: {[t for t in task_list if not 0 <= t < venv.num_tasks]} out of range; "
            f"split {split!r} of {cfg.env_id} has {venv.num_tasks} tasks (0..{venv.num_tasks - 1})"
        )
    n_tasks = len(task_list)
    if backend is None and cfg.action_mode == "generate":
        backend = make_backend("hf", policy, top_p=cfg.top_p)
    gen = torch.Generator().manual_seed(seed)
    collector = RolloutCollector(
        venv, policy, get_template(cfg.env_id, cfg.prompt_style), rollout_config(cfg), backend, gen
    )
    succ: list[bool] = []
    types: list[str] = []
    lengths: list[float] = []
    start = time.perf_counter()
    was_training = policy.model.training
    policy.model.eval()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for first in range(0, n_tasks, chunk):
            part = [task_list[min(first + k, n_tasks - 1)] for k in range(chunk)]
            batch = collector.collect(part, greedy=greedy)
            tt = np.asarray(batch.extras["task_type"], dtype=object)[batch.traj_rows]
            keep = batch.traj_group < (n_tasks - first)  # drop padding groups
            succ += batch.traj_success[keep].tolist()
            types += tt[keep].tolist()
            lengths += batch.traj_length[keep].tolist()
    if was_training:
        policy.model.train()
    out: dict[str, Any] = {
        "success": float(np.mean(succ)) if succ else 0.0,
        "episodes": len(succ),
        "episode_length": float(np.mean(lengths)) if lengths else 0.0,
    }
    if report_time:
        out["time/seconds"] = time.perf_counter() - start
    arr_s, arr_t = np.asarray(succ), np.asarray(types, dtype=object)
    for tt in sorted(set(types)):
        out[f"success/{tt}"] = float(arr_s[arr_t == tt].mean())
    return out
