"""Data-parallel training on ``torch.distributed`` (docs/scaling.md, "Data-parallel training").

The pieces the trainer calls when it runs under ``torchrun --nproc-per-node N``:

1. :func:`init_distributed` reads torchrun's ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK`` and
   opens the process group (``gloo`` on CPU, ``nccl`` on CUDA); without them it returns a
   single-process context and every function below is the identity.
2. **Group-sharded rollouts.** Every rank draws the *same* global task list (same seeded
   generator), and :func:`shard_tasks` gives rank ``r`` a contiguous block of whole groups
   (``num_groups`` must be a multiple of the world size): a group is never split across
   ranks, so each rank's vector env holds ``num_groups / N`` groups of ``group_size``.
   Actions are sampled with :func:`rank_generator` (a stream per rank and iteration), so a
   resumed run samples the same actions whatever happened before.
3. **Gather.** :func:`gather_batch` all-gathers the ranks' step batches into the global batch
   (group and trajectory ids renumbered in rank order, extras carried) and returns the rows
   each rank rolled out. Every rank runs the estimator on the global batch, so estimator state
   (MVPO's EMA success, AMP weights) stays identical on all ranks and nothing else needs an
   all-reduce.
4. **Synchronised update.** The one PPO update (:func:`mvpo_train.update.ppo_update`) takes
   a :class:`DistContext`: each rank forwards only its own rows of a mini-batch, normalises by
   the global mini-batch's token (or row) count, and :func:`sync_gradients` sums the gradients
   over ranks (one flat ``all_reduce``, the collective DDP issues) before clipping and the
   optimizer step; :func:`all_sum` sums its statistics. The policy computes logits only where
   a log-prob is needed (base model + LM head called apart), which
   ``DistributedDataParallel``'s forward hook would not see; hence the explicit all-reduce.
5. **Checkpoints** are written by rank 0 only (:meth:`mvpo_train.train_state.TrainState.save`,
   then a barrier).
   They hold nothing rank-specific (weights, optimizer, estimator state and the global
   generators are the same on every rank), so a run resumes on any number of ranks;
   :func:`check_same_weights` verifies after loading that every rank holds the same weights.
6. **One writer.** :func:`launch` (``mvpo-train --nproc N``) holds the run folder's lock and
   ties torchrun and the ranks to its life (docs/training.md, "One writer per run folder").
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from mvpo_train.batch import FIELDS, StepBatch

__all__ = [
    "PARALLELISMS",
    "DistContext",
    "all_sum",
    "check_same_weights",
    "exit_rank",
    "fsdp_sync_step",
    "full_tensor",
    "concat_batches",
    "fsdp_unsupported",
    "full_optimizer_state_dict",
    "full_state_dict",
    "gather_batch",
    "gathered",
    "is_fsdp",
    "load_full_optimizer_state_dict",
    "load_full_state_dict",
    "init_distributed",
    "launch",
    "rank_generator",
    "shard_policy",
    "shard_tasks",
    "shutdown",
    "sync_gradients",
    "torchrun_command",
]


@dataclass(frozen=True)
class DistContext:
    """Where this process stands: ``rank`` of ``world_size`` (1 = not distributed)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()


def init_distributed(backend: str | None = None, timeout_s: float = 1800.0) -> DistContext:
    """Open the process group torchrun describes (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
    ``MASTER_ADDR``, ``MASTER_PORT``); a single-process context when ``WORLD_SIZE`` is unset
    or 1. ``backend`` defaults to ``nccl`` when CUDA is available, else ``gloo``."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistContext()
    missing = [k for k in ("RANK", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise RuntimeError(f"WORLD_SIZE={world} but {missing} unset: launch with torchrun")
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(local)  # one device per rank: "cuda" means cuda:LOCAL_RANK
    if not dist.is_initialized():
        dist.init_process_group(
            backend, rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s)
        )
    return DistContext(rank=rank, world_size=world, local_rank=local)


def shutdown(ctx: DistContext) -> None:
    """Close the process group once every rank got here (a rank leaving early while a peer
    still talks to it aborts gloo)."""
    if ctx.enabled and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


# ------------------------------------------------------------------ rollouts


def shard_tasks(tasks: Sequence[int], ctx: DistContext) -> list[int]:
    """This rank's block of the global task list (one task per group; whole groups only)."""
    n = len(tasks)
    if n % ctx.world_size:
        raise ValueError(
            f"num_groups={n} is not a multiple of the {ctx.world_size} ranks: a group may not be "
            "split across ranks and every rank must hold the same number of groups"
        )
    per = n // ctx.world_size
    return [int(x) for x in tasks[ctx.rank * per : (ctx.rank + 1) * per]]


def rank_generator(seed: int, iteration: int, rank: int) -> torch.Generator:
    """The action-sampling generator of ``rank`` at ``iteration`` (independent of history)."""
    digest = hashlib.sha256(f"mvpo-actions/{seed}/{iteration}/{rank}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") >> 1)


def concat_batches(batches: Sequence[StepBatch]) -> tuple[StepBatch, list[np.ndarray]]:
    """One batch of several, group and traj ids renumbered (batch order); each part's rows."""
    cols: dict[str, list] = {f: [] for f in FIELDS}
    extras: dict[str, list] = {}
    keys = list(batches[0].extras) if batches else []
    rows, start, g_off, t_off = [], 0, 0, 0
    for k, b in enumerate(batches):
        if list(b.extras) != keys:
            raise ValueError(f"concat_batches: part {k} has extras {list(b.extras)}, not {keys}")
        for f in FIELDS:
            cols[f].extend(getattr(b, f).tolist() if f != "milestones" else list(b.milestones))
        g, g_n = b.group_index, b.n_groups
        i, i_n = b.traj_index, b.n_traj
        cols["group"][start:] = (g + g_off).tolist()
        cols["traj"][start:] = (i + t_off).tolist()
        for key in keys:
            extras.setdefault(key, []).extend(list(b.extras[key]))
        rows.append(np.arange(start, start + len(b)))
        start, g_off, t_off = start + len(b), g_off + g_n, t_off + i_n
    return StepBatch(**cols, extras=extras), rows


def gather_batch(local: StepBatch, ctx: DistContext) -> tuple[StepBatch, np.ndarray]:
    """All ranks' batches as one global batch (rank order) and this rank's rows in it."""
    if not ctx.enabled:
        return local, np.arange(len(local))
    parts: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(parts, local)
    merged, rows = concat_batches(parts)
    return merged, rows[ctx.rank]


# ------------------------------------------------------------------ the update


def sync_gradients(params: Sequence[torch.Tensor], ctx: DistContext) -> None:
    """Sum every gradient over ranks (one flat all-reduce)."""
    if not ctx.enabled:
        return
    grads = [p.grad for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


def all_sum(values: list[float], ctx: DistContext) -> list[float]:
    if not ctx.enabled:
        return values
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t.tolist()


# ------------------------------------------------------------------ FSDP2

#: ``parallelism`` values: ``"ddp"`` replicates the model on every rank (the default),
#: ``"fsdp"`` shards it with FSDP2 (docs/scaling.md, "FSDP2").
PARALLELISMS = ("ddp", "fsdp")


def _fsdp_units(model: torch.nn.Module) -> list[Any]:
    if not getattr(model, "_mvpo_fsdp", False):  # not sharded: no FSDP import at all
        return []
    from torch.distributed.fsdp import FSDPModule

    return [m for m in model.modules() if isinstance(m, FSDPModule)]


def is_fsdp(model: torch.nn.Module) -> bool:
    """Whether ``model`` was sharded by :func:`shard_policy`."""
    return bool(_fsdp_units(model))


def full_tensor(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor of a ``DTensor`` (a collective), else ``t``."""
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def shard_policy(policy: Any, ctx: DistContext) -> None:
    """Shard ``policy.model`` with FSDP2 over ``ctx``'s ranks (docs/scaling.md, "FSDP2").

    Units: every decoder layer (``<base>.layers[i]``), then the whole model, whose own unit
    holds the embeddings, the final norm and the LM head (tied or not: a tied weight must sit
    in one unit). Gradients are summed over ranks, as :func:`sync_gradients` does, because the
    loss is already normalised by the global token count (FSDP averages: the update
    multiplies back by the world size; gloo has no pre-multiplied sum). The policy calls
    its base model and its LM head apart, not the model's ``forward``; both calls become
    registered FSDP forward methods of the root unit (``mvpo_hidden``, ``mvpo_head``). Build
    the optimizer *after* this call (it must hold the sharded parameters). One process: no-op.
    """
    if not ctx.enabled:
        return
    import types

    from torch.distributed.fsdp import fully_shard, register_fsdp_forward_method

    model = policy.model
    if is_fsdp(model):
        raise RuntimeError("shard_policy: the model is already sharded")
    layers = getattr(policy._base, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList) or not len(layers):
        raise ValueError(
            f"parallelism='fsdp': {type(model).__name__} has no decoder layers at "
            f"{type(policy._base).__name__}.layers; only decoder-layer models are supported"
        )
    for layer in layers:
        fully_shard(layer)
    fully_shard(model)
    model._mvpo_fsdp = True
    base, head = policy._base, policy._head
    model.mvpo_hidden = types.MethodType(lambda _self, **kw: base(**kw), model)
    model.mvpo_head = types.MethodType(lambda _self, h: head(h), model)
    register_fsdp_forward_method(model, "mvpo_hidden")
    register_fsdp_forward_method(model, "mvpo_head")
    policy._base, policy._head = model.mvpo_hidden, model.mvpo_head


@contextmanager
def gathered(model: torch.nn.Module, *, sync_gradients: bool = True) -> Iterator[None]:
    """Every FSDP unit of ``model`` unsharded (all-gathered) until the block ends.

    Ranks run different numbers of forwards (their own envs end at different steps, their
    rows chunk differently), so no forward may issue a collective: rollouts, log-prob passes
    and each PPO mini-batch run inside this block, which gathers the weights once (the same
    collectives on every rank) and reshards at the end. ``sync_gradients=False`` also keeps
    gradients unsharded and local (no reduce-scatter) until :func:`fsdp_sync_step`. A model
    without FSDP units: nothing happens.
    """
    units = _fsdp_units(model)
    if not units:
        yield
        return
    root = model  # unsharded first: its lazy init must mark it the root
    for unit in [model, *(u for u in units if u is not model)]:
        unit.unshard()
    root.set_reshard_after_forward(False)
    root.set_reshard_after_backward(False)
    root.set_requires_gradient_sync(sync_gradients)
    try:
        yield
    finally:
        root.set_requires_gradient_sync(True)
        root.set_reshard_after_backward(True)
        root.set_reshard_after_forward(True)
        for unit in units:
            unit.reshard()


def fsdp_sync_step(policy: Any) -> None:
    """Reduce-scatter the gradients accumulated locally inside :func:`gathered`: one forward
    and backward of a one-token input through the whole model (loss x 0: it adds nothing),
    the same on every rank, with gradient sync on."""
    model = policy.model
    for unit in _fsdp_units(model):
        unit.set_requires_gradient_sync(True, recurse=False)
    ids = torch.full((1, 1), policy.pad_id, dtype=torch.long, device=policy.device)
    out = model(input_ids=ids, use_cache=False)
    (out.logits.float().sum() * 0.0).backward()


def full_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's full state dict on CPU (rank 0; ``{}`` on the other ranks under FSDP, where
    this is a collective every rank must call); ``model.state_dict()`` without FSDP."""
    if not is_fsdp(model):
        return model.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(model, options=opts)


def load_full_state_dict(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Load a full state dict into a sharded model (every rank passes the same dict)."""
    if not is_fsdp(model):
        model.load_state_dict(state)
        return
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True))


def _param_names(model: torch.nn.Module) -> list[str]:
    return [n for n, p in model.named_parameters() if p.requires_grad]


def full_optimizer_state_dict(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    """The optimizer state as an unsharded run saves it (parameters numbered in
    ``model.parameters()`` order), so a checkpoint resumes with or without FSDP. A collective
    under FSDP (rank 0 gets it, the others ``{}``)."""
    if not is_fsdp(model):
        return optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_optimizer_state_dict,
    )

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    osd = get_optimizer_state_dict(model, optimizer, options=opts)
    if not osd:
        return {}
    index = {n: i for i, n in enumerate(_param_names(model))}
    return {
        "state": {index[k]: v for k, v in osd["state"].items()},
        "param_groups": [
            {**g, "params": [index[n] for n in g["params"]]} for g in osd["param_groups"]
        ],
    }


def load_full_optimizer_state_dict(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, state: dict
) -> None:
    """Load an unsharded run's optimizer state (see :func:`full_optimizer_state_dict`)."""
    if not is_fsdp(model):
        optimizer.load_state_dict(state)
        return
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_optimizer_state_dict,
    )

    names = _param_names(model)
    osd = {
        "state": {names[int(k)]: v for k, v in state["state"].items()},
        "param_groups": [
            {**g, "params": [names[int(i)] for i in g["params"]]} for g in state["param_groups"]
        ],
    }
    opts = StateDictOptions(full_state_dict=True)
    set_optimizer_state_dict(model, optimizer, osd, options=opts)


def fsdp_unsupported(cfg: Any) -> str | None:
    """Why ``cfg`` cannot train with ``parallelism="fsdp"`` (``None``: it can)."""
    if cfg.policy != "lm":
        return f"policy={cfg.policy!r}: FSDP shards the decoder layers of an LM policy only"
    if cfg.action_mode == "generate" and cfg.backend == "vllm":
        return "backend='vllm': vLLM holds its own full copy of the weights; use backend='hf'"
    return None


def check_same_weights(model: torch.nn.Module, ctx: DistContext) -> None:
    """Raise unless every rank holds bit-identical weights (e.g. after loading a checkpoint)."""
    if not ctx.enabled or is_fsdp(model):  # FSDP: each rank holds its own shard
        return
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    digests: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(digests, h.hexdigest())
    if len(set(digests)) != 1:
        odd = [r for r, d in enumerate(digests) if d != digests[0]]
        raise RuntimeError(f"data-parallel: rank(s) {odd} hold different weights than rank 0")


# ------------------------------------------------------------------ launching


def torchrun_command(nproc: int, argv: Sequence[str], port: int | None = None) -> list[str]:
    """``torchrun`` (``python -m torch.distributed.run``) of ``mvpo-train argv`` with ``nproc``
    processes on this machine, rendezvous on loopback."""
    if nproc < 1:
        raise ValueError(f"nproc must be at least 1, got {nproc}")
    return [
        sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
        "--master-addr=127.0.0.1", f"--master-port={port or _free_port()}",
        "-m", "mvpo_train.cli", *argv,
    ]  # fmt: skip


#: set by :func:`launch` for torchrun and its ranks: the launcher's pid
LAUNCHER_ENV = "MVPO_LAUNCHER_PID"


def launch(
    nproc: int, argv: Sequence[str], run_dir: str | Path | None = None, resume: bool = False
) -> int:
    """What ``mvpo-train --nproc N`` runs: :func:`torchrun_command`, its exit code.

    The launcher holds ``run_dir``'s lock for the run's life (:mod:`mvpo_train.run_lock`; a
    second writer is refused in one line before torchrun starts) and takes its ranks with it:
    torchrun runs in its own process group and gets SIGKILL when the launcher dies (Linux
    ``PR_SET_PDEATHSIG``), each rank when torchrun dies (:func:`mvpo_train.cli.rank_main`); SIGINT, SIGTERM and
    SIGHUP sent to the launcher are passed on to torchrun, which stops its ranks.
    """
    from mvpo_train.run_lock import (
        OWNER_ENV,
        die_with_parent,
        hold_run_lock,
        prepare_die_with_parent,
    )

    cmd = torchrun_command(nproc, argv)
    lock = hold_run_lock(run_dir, create=not resume) if run_dir is not None else None
    try:
        me = os.getpid()
        env = {**os.environ, LAUNCHER_ENV: str(me)}
        env.pop(OWNER_ENV, None)
        if lock is not None and lock.held:
            env[OWNER_ENV] = str(me)
        prepare_die_with_parent()
        proc = subprocess.Popen(
            cmd, env=env, process_group=0, preexec_fn=lambda: die_with_parent(parent=me)
        )
        return _wait_passing_signals(proc)
    finally:
        if lock is not None:
            lock.release()


def _wait_passing_signals(proc: subprocess.Popen) -> int:
    """``proc.wait()``, passing SIGINT/SIGTERM/SIGHUP on to ``proc``'s process group; the exit
    code (``128 + signal`` when it was killed by one)."""
    import signal
    import threading

    def forward(signum: int, _frame: Any) -> None:
        try:
            os.killpg(proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, forward)
    try:
        while True:
            try:
                code = proc.wait()
                break
            except InterruptedError:  # pragma: no cover (PEP 475 retries)
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code if code >= 0 else 128 - code


def exit_rank(code: int = 0) -> None:
    """End a finished rank process without the interpreter's teardown, after flushing Python's
    streams: that teardown sometimes aborts a process that ran gloo collectives ("terminate
    called without an active exception"), which its launcher reports as a failure. Call it
    only once every file the rank writes is closed."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":  # pragma: no cover (the entry point moved; never a silent no-op)
    print(
        "python -m mvpo_train.distributed: torchrun's entry point is mvpo_train.cli: "
        "torchrun --nproc-per-node N -m mvpo_train.cli <mvpo-train flags>",
        file=sys.stderr,
    )
    sys.exit(2)
