"""Data-parallel training: 2 gloo processes == 1 process on the same global batch.

Each run is a minimal training iteration built from the trainer's pieces (policy, grouped
vector env, rollout collector, estimator, the one PPO update of :mod:`mvpo_train.update`, the
:class:`~mvpo_train.train_state.TrainState` checkpoint) and :mod:`mvpo_train.distributed`:
group-sharded rollouts (each rank plays its block of groups with its own vector env and its
rank generator), gather of the step batch, estimator on the global batch, synchronised update,
rank-0 checkpoint. The 1-process run plays the same shards with the same generators one after
the other, so both see the same global batch. The update uses the estimator's advantages plus
a seeded per-row term (the micro model rarely wins, so GRPO alone would give all-zero
advantages and a vacuous comparison). Processes: ``torch.multiprocessing.spawn`` on loopback.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from mvpo_train import distributed as D

ITERATION = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cfg(micro: str):
    from mvpo_train.config import preset

    return preset(
        "cpu-tiny", model=micro, device="cpu", num_groups=2, group_size=2, max_steps=3,
        estimator="grpo", minibatch_size=5, micro_batch_size=3, ppo_epochs=2, threads=1,
    )  # fmt: skip


def _iteration(ctx, micro: str, out: Path, parallelism: str = "ddp") -> None:
    """One training iteration on ``ctx``'s ranks (``ctx.world_size`` 1 or 2); ``"fsdp"``
    shards the model with FSDP2 (rollouts and updates on gathered weights)."""
    from contextlib import nullcontext

    from mvpo_train.config import build_estimator
    from mvpo_train.evaluation import batch_metrics
    from mvpo_train.factories import load_policy, make_venv, rollout_config
    from mvpo_train.prompts import get_template
    from mvpo_train.rollout import RolloutCollector
    from mvpo_train.train_state import TrainState
    from mvpo_train.update import ppo_update

    torch.set_num_threads(1)
    cfg = _cfg(micro)
    torch.manual_seed(cfg.seed)
    policy = load_policy(cfg)
    fsdp = parallelism == "fsdp" and ctx.enabled
    if fsdp:
        D.shard_policy(policy, ctx)
    global_tasks = [4, 9]  # drawn by the trainer's task generator, the same on every rank
    shards = range(2) if not ctx.enabled else [ctx.rank]  # 1 process plays both shards
    parts = []
    for r in shards:
        tasks = D.shard_tasks(global_tasks, D.DistContext(rank=r, world_size=2))
        venv = make_venv(cfg, cfg.split, len(tasks), cfg.group_size)
        gen = D.rank_generator(cfg.seed, ITERATION, r)
        collector = RolloutCollector(
            venv, policy, get_template(cfg.env_id, cfg.prompt_style), rollout_config(cfg),
            None, gen,
        )  # fmt: skip
        with D.gathered(policy.model) if fsdp else nullcontext():
            parts.append(collector.collect(tasks))
        venv.close()
    if ctx.enabled:
        batch, local_rows = D.gather_batch(parts[0], ctx)
    else:
        batch, _ = D.concat_batches(parts)
        local_rows = np.arange(len(batch))
    estimator = build_estimator(cfg)
    adv, diag = estimator(batch)
    adv = adv + np.random.default_rng(7).standard_normal(len(batch))
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr)
    old_logp = list(batch.extras["old_logp"])
    stats = ppo_update(
        policy, optimizer, batch, adv, old_logp, None, cfg,
        torch.Generator().manual_seed(cfg.seed + 1), local_rows, ctx,
    )  # fmt: skip
    D.check_same_weights(policy.model, ctx)
    state = TrainState(
        policy, optimizer, estimator, {"tasks": np.random.default_rng(0)},
        iteration=1, env_steps=len(batch), metrics_rows=1,
    )  # fmt: skip
    ckpt = state.save(out / "run", ctx=ctx)
    weights = D.full_state_dict(policy.model)  # a collective under FSDP
    if fsdp:  # the checkpoint loads back into a fresh sharded model on every rank
        from mvpo_train.checkpoint import load_checkpoint

        torch.manual_seed(123)
        fresh = load_policy(cfg)
        D.shard_policy(fresh, ctx)
        opt2 = torch.optim.AdamW(fresh.model.parameters(), lr=cfg.lr)
        saved = load_checkpoint(ckpt if ctx.is_main else out / "run/checkpoints/iter-000001")
        from safetensors.torch import load_file

        D.load_full_state_dict(
            fresh.model, load_file(out / "run/checkpoints/iter-000001/model.safetensors")
        )
        D.load_full_optimizer_state_dict(fresh.model, opt2, saved["optimizer"])
        back, back_opt = (
            D.full_state_dict(fresh.model),
            D.full_optimizer_state_dict(fresh.model, opt2),
        )
        if ctx.is_main:
            torch.save({"model": back, "optimizer": back_opt}, out / "reloaded.pt")
    if ctx.is_main:
        torch.save({k: v.clone() for k, v in weights.items()}, out / "w.pt")
        row = {**batch_metrics(batch, adv), **{f"adv/{k}": v for k, v in diag.items()}}
        row.update({f"loss/{k}": v for k, v in stats.items()})
        row["actions"] = batch.action.tolist()
        row["group"] = batch.group.tolist()
        row["ckpt"] = str(ckpt)
        (out / "metrics.json").write_text(json.dumps(row, default=float))
    else:
        (out / f"rank{ctx.rank}-ckpt.txt").write_text(str(ckpt))


def _worker(rank: int, world: int, port: int, micro: str, out: str, par: str = "ddp") -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world)
    )
    ctx = D.init_distributed("gloo", timeout_s=300)  # a stuck collective fails the test
    try:
        _iteration(ctx, micro, Path(out), par)
    finally:
        D.shutdown(ctx)
    D.exit_rank(0)  # reached only on success: an error above reaches mp.spawn as itself


@pytest.fixture(scope="module")
def runs(micro, tmp_path_factory):
    out = {}
    for world in (2, 1):
        d = tmp_path_factory.mktemp(f"dp{world}")
        if world == 1:
            _iteration(D.DistContext(), str(micro), d)
        else:
            mp.spawn(_worker, args=(world, _free_port(), str(micro), str(d)), nprocs=world)
        out[world] = d
    return out


def test_two_ranks_give_the_weights_and_metrics_of_one_process(runs, micro):
    m1 = json.loads((runs[1] / "metrics.json").read_text())
    m2 = json.loads((runs[2] / "metrics.json").read_text())
    assert m1["actions"] == m2["actions"] and m1["group"] == m2["group"]  # same global batch
    assert m1["episodes"] == 4 and set(m1["group"]) == {0, 1}
    for key in m1:
        if key in ("actions", "group", "ckpt"):
            continue
        # float32 forward passes batch rows differently on 1 and 2 ranks: last bits differ
        assert m2[key] == pytest.approx(m1[key], rel=1e-4, abs=1e-7), key
    w1, w2 = torch.load(runs[1] / "w.pt"), torch.load(runs[2] / "w.pt")
    from transformers import AutoModelForCausalLM

    w0 = AutoModelForCausalLM.from_pretrained(micro).state_dict()
    moved = max(float((w1[k] - w0[k].to(w1[k].dtype)).abs().max()) for k in w1)
    assert moved > 1e-3  # the update did something, far beyond the tolerance below
    for k in w1:
        torch.testing.assert_close(w2[k], w1[k], rtol=1e-4, atol=1e-5)


def test_only_rank_zero_writes_and_the_checkpoint_resumes_on_one_rank(runs, micro):
    from mvpo_train.checkpoint import load_checkpoint, load_model_weights
    from mvpo_train.factories import load_policy

    ckpts = sorted((runs[2] / "run" / "checkpoints").glob("iter-*"))
    assert [c.name for c in ckpts] == ["iter-000001"]
    assert (runs[2] / "rank1-ckpt.txt").read_text() == "None"  # rank 1 wrote nothing
    saved = load_checkpoint(ckpts[0])
    assert (
        saved["state"]["env_steps"] == json.loads((runs[2] / "metrics.json").read_text())["steps"]
    )
    policy = load_policy(_cfg(str(micro)))
    load_model_weights(policy.model, ckpts[0])
    w2 = torch.load(runs[2] / "w.pt")
    for k, v in policy.model.state_dict().items():
        assert torch.equal(v, w2[k])


def test_groups_are_never_split_and_bad_layouts_are_errors():
    tasks = [5, 6, 7, 8]
    got = [D.shard_tasks(tasks, D.DistContext(rank=r, world_size=2)) for r in range(2)]
    assert got == [[5, 6], [7, 8]]
    with pytest.raises(ValueError, match="not a multiple of the 3 ranks"):
        D.shard_tasks(tasks, D.DistContext(rank=0, world_size=3))
    a, b = D.rank_generator(0, 3, 0), D.rank_generator(0, 3, 1)
    assert not torch.equal(torch.rand(4, generator=a), torch.rand(4, generator=b))
    assert torch.equal(
        torch.rand(4, generator=D.rank_generator(0, 3, 1)),
        torch.rand(4, generator=D.rank_generator(0, 3, 1)),
    )


def test_every_rank_draws_the_global_task_list_then_takes_its_shard(micro):
    """One task draw for one process and for every rank: distinct tasks of the split (or of the
    ``tasks`` pool, with repeats only when it is smaller than ``num_groups``), the same list
    from the same generator; rank ``r`` plays block ``r`` of it."""
    from mvpo_train.factories import sample_tasks

    cfg = _cfg(str(micro))
    for tasks, num_groups, distinct in (([], 4, True), ([3, 5, 8], 2, True), ([3, 5], 4, False)):
        c = cfg.__class__(**{**cfg.to_dict(), "tasks": tasks, "num_groups": num_groups})
        draws = [sample_tasks(c, 20, np.random.default_rng(seed)) for seed in (0, 0, 1)]
        assert draws[0] == draws[1] and len(draws[0]) == num_groups
        assert set(draws[0]) <= set(tasks or range(20))
        assert (len(set(draws[0])) == num_groups) == distinct
        shards = [D.shard_tasks(draws[0], D.DistContext(rank=r, world_size=2)) for r in (0, 1)]
        assert shards[0] + shards[1] == draws[0]
        if not tasks:  # another seed, another draw of the split's 20 tasks
            assert draws[2] != draws[0]


def test_torchrun_command():
    cmd = D.torchrun_command(2, ["--iterations", "1"], port=29999)
    assert cmd[1:4] == ["-m", "torch.distributed.run", "--nproc-per-node=2"]
    assert "--master-addr=127.0.0.1" in cmd and cmd[-4:] == [
        "-m",
        "mvpo_train.cli",
        "--iterations",
        "1",
    ]
    with pytest.raises(ValueError, match="nproc"):
        D.torchrun_command(0, [])


def _train_argv(micro: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        "--model", str(micro), "--run-dir", str(run_dir), "--device", "cpu", "--threads", "1",
        "--no-progress", "--no-tensorboard", "--num-groups", "2", "--group-size", "2",
        "--max-steps", "3", "--estimator", "mvpo", "--minibatch-size", "8",
        "--micro-batch-size", "4", "--ppo-epochs", "1", "--seed", "3",
        "--env-kwargs", '{"preset": "mini"}', *extra,
    ]  # fmt: skip


def test_mvpo_train_nproc_2_writes_one_run_and_resumes_on_one_rank(micro, tmp_path):
    """``mvpo-train --nproc 2``: one metrics file, one set of checkpoints (rank 0), then
    ``--resume`` on one process continues it; groups that cannot be split evenly are refused."""
    import subprocess
    import sys

    from mvpo_train.checkpoint import complete_checkpoints
    from mvpo_train.metrics import read_metrics

    code = "import sys; from mvpo_train.cli import train_main; sys.exit(train_main())"
    run = tmp_path / "run"
    first = subprocess.run(
        [sys.executable, "-c", code, "--nproc", "2", "--iterations", "2", *_train_argv(micro, run)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    assert [r["iteration"] for r in read_metrics(run)] == [1, 2]
    assert [it for it, _ in complete_checkpoints(run)] == [1, 2]
    second = subprocess.run(
        [sys.executable, "-c", code, "--iterations", "3", "--resume", *_train_argv(micro, run)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr[-3000:]
    assert [r["iteration"] for r in read_metrics(run)] == [1, 2, 3]
    odd = subprocess.run(
        [sys.executable, "-c", code, "--nproc", "2", "--iterations", "1",
         *_train_argv(micro, tmp_path / "odd"), "--num-groups", "3"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert odd.returncode != 0 and "cannot be shared by 2 ranks" in odd.stderr


@pytest.fixture(scope="module")
def fsdp_run(micro, tmp_path_factory):
    d = tmp_path_factory.mktemp("fsdp2")
    mp.spawn(_worker, args=(2, _free_port(), str(micro), str(d), "fsdp"), nprocs=2)
    return d


def test_fsdp_two_ranks_give_the_weights_and_metrics_of_one_process(runs, fsdp_run, micro):
    """FSDP2 on 2 gloo ranks == 1 process: same global batch, metrics and updated weights."""
    m1 = json.loads((runs[1] / "metrics.json").read_text())
    mf = json.loads((fsdp_run / "metrics.json").read_text())
    assert m1["actions"] == mf["actions"] and m1["group"] == mf["group"]
    for key in m1:
        if key not in ("actions", "group", "ckpt"):
            assert mf[key] == pytest.approx(m1[key], rel=1e-4, abs=1e-7), key
    w1, wf = torch.load(runs[1] / "w.pt"), torch.load(fsdp_run / "w.pt")
    assert set(wf) == set(w1)
    from transformers import AutoModelForCausalLM

    w0 = AutoModelForCausalLM.from_pretrained(micro).state_dict()
    assert max(float((wf[k] - w0[k].to(wf[k].dtype)).abs().max()) for k in wf) > 1e-3
    for k in w1:
        torch.testing.assert_close(wf[k], w1[k], rtol=1e-4, atol=1e-5)


def test_fsdp_checkpoint_is_one_full_copy_loadable_without_fsdp_and_on_ranks(fsdp_run, micro):
    """Rank 0 writes full state dicts; they load into a plain model and optimizer, and back
    into a freshly sharded model on 2 ranks (same weights and optimizer state)."""
    from mvpo_train.checkpoint import load_checkpoint, load_model_weights
    from mvpo_train.factories import load_policy

    ckpts = sorted((fsdp_run / "run" / "checkpoints").glob("iter-*"))
    assert [c.name for c in ckpts] == ["iter-000001"]
    assert (fsdp_run / "rank1-ckpt.txt").read_text() == "None"
    wf = torch.load(fsdp_run / "w.pt")
    cfg = _cfg(str(micro))
    policy = load_policy(cfg)
    load_model_weights(policy.model, ckpts[0])
    for k, v in policy.model.state_dict().items():
        assert torch.equal(v, wf[k]), k
    saved = load_checkpoint(ckpts[0])
    opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr)
    opt.load_state_dict(saved["optimizer"])  # numbered like an unsharded run's
    n_params = len(list(policy.model.parameters()))
    assert sorted(opt.state_dict()["state"]) == list(range(n_params))
    back = torch.load(fsdp_run / "reloaded.pt")
    for k, v in wf.items():
        assert torch.equal(back["model"][k], v), k
    for i, st in saved["optimizer"]["state"].items():
        for name in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(back["optimizer"]["state"][int(i)][name], st[name])
    assert float(saved["optimizer"]["state"][0]["exp_avg_sq"].abs().sum()) > 0


def test_fsdp_on_one_process_is_a_no_op_and_layers_are_required(micro):
    from mvpo_train.factories import load_policy

    policy = load_policy(_cfg(str(micro)))
    D.shard_policy(policy, D.DistContext())
    assert not D.is_fsdp(policy.model)
    with D.gathered(policy.model):  # no units: nothing to gather
        pass
    assert D.PARALLELISMS == ("ddp", "fsdp")


def test_mvpo_train_fsdp_2_ranks_then_resume_without_fsdp(micro, tmp_path):
    """``mvpo-train --nproc 2 --parallelism fsdp``: rank 0 writes one run whose checkpoint
    resumes on one process (no FSDP) and again on 2 FSDP ranks; vLLM with FSDP is refused."""
    import subprocess
    import sys

    from mvpo_train.checkpoint import complete_checkpoints
    from mvpo_train.metrics import read_metrics

    code = "import sys; from mvpo_train.cli import train_main; sys.exit(train_main())"
    run = tmp_path / "run"

    def train(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", code, *extra, *_train_argv(micro, run)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    first = train("--nproc", "2", "--parallelism", "fsdp", "--iterations", "1")
    assert first.returncode == 0, first.stderr[:6000]
    assert [it for it, _ in complete_checkpoints(run)] == [1]
    second = train("--iterations", "2", "--resume")
    assert second.returncode == 0, second.stderr[-3000:]
    third = train("--nproc", "2", "--parallelism", "fsdp", "--iterations", "3", "--resume")
    assert third.returncode == 0, third.stderr[-9000:]
    rows = read_metrics(run)
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    assert all(r["loss/optimizer_steps"] > 0 for r in rows)
    assert [it for it, _ in complete_checkpoints(run)] == [2, 3]
    from mvpo_train.config import ConfigError, preset

    cfg = preset("cpu-tiny", policy="lm", action_mode="generate", backend="vllm")
    assert "vllm" in D.fsdp_unsupported(cfg)
    assert D.fsdp_unsupported(preset("cpu-tiny")) is None
    assert ConfigError  # the trainer raises it with the reason above


def _forwards_worker(rank: int, world: int, port: int, micro: str, out: str) -> None:
    """Every forward the policy does, sharded vs the same policy unsharded on this rank."""
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world)
    )
    from mvpo_train.factories import load_policy

    torch.set_num_threads(1)
    ctx = D.init_distributed("gloo", timeout_s=300)
    try:
        policy = load_policy(_cfg(micro))
        prompts = [policy.encode(f"Task {rank}: go to the fridge {k}.") for k in range(3)]
        cands = [[policy.encode(f" go to drawer {j}") for j in range(k + 2)] for k in range(3)]
        resp = [policy.encode(" open drawer 1"), policy.encode(" look"), policy.encode(" go")]

        def run() -> dict:
            with torch.no_grad():
                lp, ent = policy.token_logprobs(prompts, resp, entropy=True)
                kv = policy.score_candidates(prompts, cands)
                policy.score_impl = "concat"
                cat = policy.score_candidates(prompts, cands)
                policy.score_impl = "kv"
            torch.manual_seed(5)
            gen = policy.generate(prompts[:2], max_new_tokens=4 + rank)  # ranks differ
            return {"lp": lp, "ent": ent, "kv": kv, "cat": cat, "gen": gen}

        plain = run()
        D.shard_policy(policy, ctx)
        assert D.is_fsdp(policy.model)
        with D.gathered(policy.model):
            sharded = run()
        with torch.no_grad():  # outside gathered: FSDP's own all-gather per forward
            lp_ag, _ = policy.token_logprobs(prompts, resp)
        torch.save({"plain": plain, "sharded": sharded, "lp_ag": lp_ag}, Path(out) / f"{rank}.pt")
    finally:
        D.shutdown(ctx)
    D.exit_rank(0)  # reached only on success


def test_fsdp_every_policy_forward_matches_unsharded(micro, tmp_path):
    """Token log-probs, KV-cache and concat candidate scoring, and HF ``generate`` (with a
    different number of forwards per rank) give the unsharded results under FSDP2."""
    mp.spawn(_forwards_worker, args=(2, _free_port(), str(micro), str(tmp_path)), nprocs=2)
    for rank in range(2):
        got = torch.load(tmp_path / f"{rank}.pt", weights_only=False)
        a, b = got["plain"], got["sharded"]
        assert a["gen"] == b["gen"] and len(a["gen"]) == 2
        for key in ("lp", "ent"):
            for x, y in zip(a[key], b[key], strict=True):
                torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-6)
        for x, y in zip(a["lp"], got["lp_ag"], strict=True):
            torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-6)
        for key in ("kv", "cat"):
            assert [len(x) for x in a[key].scores] == [2, 3, 4]
            for x, y in zip(a[key].scores, b[key].scores, strict=True):
                torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-6)
