"""The training loop: rollout -> log-probs -> advantages -> clipped PPO update.

docs/architecture.md (the data flow) and docs/training.md (the phases). One iteration, in the
order and with the phase names of the MVPO paper's Table 3:

1. ``rollout``   (Gen.): B groups x G episodes -> :class:`~mvpo_train.batch.StepBatch`;
2. ``logp_ref``  (Logp+Ref): old log-probs (generate mode; score mode gets them from the
   rollout) and the frozen reference's log-probs when ``kl_coef > 0``;
3. ``advantage`` (Adv.): ``estimator(batch) -> advantages, diagnostics`` (any registered name);
4. ``update``    (Actor): ``ppo_epochs`` x mini-batches of clipped PPO
   (:func:`mvpo_train.update.ppo_update`) with gradient accumulation over micro-batches, grad
   clipping, then the generation backend picks up the new weights.

Then metrics go to ``metrics.jsonl`` and a checkpoint is written (atomically,
:class:`~mvpo_train.train_state.TrainState`); ``--resume`` continues from it bit for bit.

The loop is written out in :func:`train` in one piece, in the spirit of CleanRL. One process
and ``torchrun``'s ranks run the same lines: a :class:`~mvpo_train.distributed.DistContext`
of one process makes sharding, gathering and all-reduces no-ops. The pieces live by job:
:mod:`mvpo_train.run_folder` (the run folder's rules), :mod:`mvpo_train.factories` (what is
built from the config), :mod:`mvpo_train.update` (the PPO update),
:mod:`mvpo_train.evaluation` (metrics and evaluation), :mod:`mvpo_train.train_state` (what a
checkpoint holds).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mvpo_train import distributed as D
from mvpo_train.checkpoint import latest_checkpoint, storage_full_reason
from mvpo_train.config import ConfigError, TrainConfig, build_estimator
from mvpo_train.credit.registry import ReportsAlignment
from mvpo_train.evaluation import batch_metrics, evaluate
from mvpo_train.factories import (
    check_runtime,
    frozen_copy,
    load_policy,
    make_collector,
    make_generation_backend,
    make_refit,
    make_venv,
    progress_bar,
    quiet_transformers,
    rollout_config,
    sample_tasks,
    seed_everything,
)
from mvpo_train.metrics import MetricsLogger, PhaseTimer
from mvpo_train.progress import episode_ticker, work_bar
from mvpo_train.records import write_batch_record
from mvpo_train.run_folder import check_run_dir_name, plan_run, say, write_error
from mvpo_train.run_lock import RunLock, hold_run_lock
from mvpo_train.segment_embedder import resumed_batching, resumed_runtime
from mvpo_train.threads import set_torch_threads
from mvpo_train.tracking import check_available, resolve_report_to
from mvpo_train.train_state import TrainState
from mvpo_train.update import no_grad_logprobs, ppo_update, row_logprobs

__all__ = [
    "batch_metrics",
    "build_estimator",
    "evaluate",
    "load_policy",
    "make_venv",
    "ppo_update",
    "rollout_config",
    "row_logprobs",
    "sample_tasks",
    "train",
]


def train(cfg: TrainConfig) -> list[dict[str, Any]]:
    """Run (or resume) training; returns the metrics rows written by this process.

    Bad settings, a run folder that may not be reused and an unusable checkpoint raise
    :class:`ConfigError` / :class:`CheckpointError` before anything is written
    (docs/training.md, "Reliability"). The main process holds the run folder's lock
    (:mod:`mvpo_train.run_lock`) from before it reads the folder until it returns: a second
    writer is refused with :class:`~mvpo_train.run_lock.RunLockedError`.
    """
    quiet_transformers()
    ctx = D.init_distributed()  # torchrun's ranks; one process without torchrun
    # threads=0 (auto): the free CPUs shared by this machine's ranks, or a resumed run's own
    # count; config.yaml records the count used
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    threads = set_torch_threads(cfg.threads, local_ranks, cfg.run_dir if cfg.resume else None)
    cfg = dataclasses.replace(cfg, threads=threads)
    if cfg.resume:  # embedding_* auto: the run's own MiniLM runtime and batching (policies.md)
        runtime = resumed_runtime(cfg.embedding_runtime, cfg.run_dir)
        batching = resumed_batching(cfg.embedding_batching, cfg.run_dir)
        cfg = dataclasses.replace(cfg, embedding_runtime=runtime, embedding_batching=batching)
    check_run_dir_name(Path(cfg.run_dir), cfg.overwrite)
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
        raise write_error(err, Path(cfg.run_dir), intact) from None
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
    trackers, strict = resolve_report_to(cfg.report_to, cfg.tensorboard)
    if strict and ctx.is_main:  # a tracker whose package is missing: before the model loads
        check_available(trackers)
    seed_everything(cfg.seed)

    # -- setup: policy, reference, optimizer, estimator, envs, RNGs ---------------------------
    policy = load_policy(cfg)
    if not cfg.resume:  # what the policy resolved from auto: config.yaml records it (policies.md)
        cfg = dataclasses.replace(cfg, **getattr(policy, "resolved_settings", {}))
    ref_policy = frozen_copy(policy) if cfg.kl_coef > 0 else None
    if cfg.parallelism == "fsdp" and ctx.enabled:  # before the optimizer (sharded params)
        if (why := D.fsdp_unsupported(cfg)) is not None:
            raise ConfigError(f"parallelism: {why}")
        D.shard_policy(policy, ctx)
    trainable = policy.model.parameters()
    if cfg.lora_rank:  # only the adapters train (docs/training.md, "LoRA")
        trainable = [p for p in policy.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        trainable, lr=cfg.lr, weight_decay=cfg.weight_decay, eps=cfg.adam_eps
    )
    estimator = build_estimator(cfg)
    refit = make_refit(cfg)  # a learned abstraction fitted from this run's rollouts
    venv = make_venv(cfg, cfg.split, cfg.num_groups // ctx.world_size, cfg.group_size)
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
    state = TrainState(policy, optimizer, estimator, gens, refit)  # what a checkpoint holds
    if plan.checkpoint is not None:  # e.g. LoRA adapters of another base: before any write
        state.check_compatible(plan.saved, plan.checkpoint)
    backend = make_generation_backend(cfg, policy)
    collector = make_collector(cfg, venv, policy, gens["actions"], backend)

    # -- the run folder (setup succeeded: now write) and resume --------------------------------
    run_dir = plan.open(cfg) if ctx.is_main else Path(cfg.run_dir)
    ctx.barrier()
    if plan.checkpoint is not None:
        state.restore(plan.checkpoint, plan.saved)
        if refit is not None and refit.abstraction is not None:
            refit.install(venv)
        if backend is not None:
            backend.sync_weights(policy.model)
        if state.iteration >= cfg.iterations:
            done = state.iteration
            say(f"nothing to do: the run is complete at iteration {done} (raise --iterations)")
    start = state.iteration
    D.check_same_weights(policy.model, ctx)
    logger = (
        MetricsLogger(
            run_dir,
            keep_rows=state.metrics_rows,
            report_to=trackers,
            strict=strict,
            config=cfg.to_dict(),
            resume_step=state.iteration,
        )
        if ctx.is_main
        else None
    )
    eval_state: dict[str, Any] = {}

    written: list[dict[str, Any]] = []
    bar = progress_bar(cfg, start) if ctx.is_main else None  # ETA: progress.iteration_bar
    for iteration in range(start, cfg.iterations):
        timer = PhaseTimer()
        policy.model.eval()

        # 1. rollout (Gen.): every rank draws the global task list and plays its shard
        with timer("rollout"), D.gathered(policy.model):  # FSDP: no collective per forward
            if ctx.enabled:  # a stream per rank and iteration; one process: gens["actions"]
                collector.generator = D.rank_generator(cfg.seed, iteration, ctx.rank)
            tasks = sample_tasks(cfg, venv.num_tasks, gens["tasks"])
            shown = cfg.progress and ctx.is_main
            with work_bar(shown, "rollout", venv.num_envs, "ep") as inner:
                local = collector.collect(D.shard_tasks(tasks, ctx), on_step=episode_ticker(inner))
            batch, local_rows = D.gather_batch(local, ctx)
            if refit is not None and refit.step(iteration, batch) is not None:
                refit.install(venv)  # labels the next iteration's episodes

        # 2. old and reference log-probs (Logp+Ref)
        with timer("logp_ref"), D.gathered(policy.model):
            old_logp = batch.extras["old_logp"]
            if any(x is None for x in old_logp):
                old_logp = no_grad_logprobs(policy, batch, cfg)
            ref_logp = None if ref_policy is None else no_grad_logprobs(ref_policy, batch, cfg)

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

        # 4. policy update (Actor): this rank's rows, gradients summed over the ranks
        with timer("update"):
            policy.model.train()
            steps = cfg.ppo_epochs * -(-len(batch) // (cfg.minibatch_size or len(batch)))
            with work_bar(shown, "update", steps, "mb") as inner:
                stats = ppo_update(
                    policy, optimizer, batch, adv, old_logp, ref_logp, cfg,
                    gens["minibatch"], local_rows, ctx, on_minibatch=inner.update,
                )  # fmt: skip
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
        state.iteration = iteration + 1
        state.env_steps += len(batch)
        row = batch_metrics(batch, adv)
        row.update(iteration=state.iteration, env_steps=state.env_steps)
        row.update({f"adv/{k}": v for k, v in diag.items()})
        if isinstance(estimator, ReportsAlignment):  # align/*: the estimator's own measure
            row.update(estimator.alignment_metrics(batch, adv))
        row.update({f"loss/{k}": v for k, v in stats.items()})
        row.update({f"eval/{k}": v for k, v in eval_metrics.items()})
        row.update(timer.as_metrics())
        row["time/total"] -= timer.seconds.get("eval", 0.0)  # the iteration's own time
        if logger is not None:
            logger.log(row, state.iteration)
        written.append(row)
        state.metrics_rows += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix(
                success=f"{row['success']:.2f}",
                zero_credit=f"{diag.get('zero_credit_ratio', 0.0):.2f}",
                sec=f"{row['time/total']:.0f}",
            )

        # checkpoint
        last = state.iteration == cfg.iterations
        if (cfg.save_every and state.iteration % cfg.save_every == 0) or last:
            state.save(run_dir, config=cfg.to_dict(), keep=cfg.keep_checkpoints, ctx=ctx)
        if cfg.stop_after and state.iteration - start >= cfg.stop_after:
            break

    if bar is not None:
        bar.close()
    if logger is not None:
        logger.close()
    venv.close()
    if cfg.lora_merge_to and ctx.is_main and state.iteration >= cfg.iterations:
        from mvpo_train.lora import merge_adapters

        say(f"merged model: {merge_adapters(run_dir, cfg.lora_merge_to)}")
    D.shutdown(ctx)
    if backend is not None:
        backend.close()
    for ev in eval_state.values():
        if hasattr(ev, "close"):
            ev.close()
    return written
