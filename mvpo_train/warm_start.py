"""The encoder policy's warm start: behaviour cloning on the expert plans of a split.

docs/policies.md, "Warm start". :func:`collect_demonstrations` plays the expert plans
(:func:`expert_plan`: the env's ``expert_actions(task_index)`` hook, else ALFWorld's game-file
walkthrough) of the *train* split through the same prompt builder as a rollout;
:func:`warm_start` trains the head of an :class:`~mvpo_train.encoder_policy.EncoderPolicy` by
behaviour cloning (cross-entropy over the admissible list) for a fixed, small number of steps,
so the policy starts weak but not hopeless. ``python -m mvpo_train.warm_start --out DIR`` (the
command docs/policies.md gives, ``python -m mvpo_train.encoder_policy --out DIR``, runs this
one) writes the head folder, cached by its arguments and the expert data's digest
(:func:`demonstrations_sha256`); ``mvpo-train --policy encoder --model DIR`` loads it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from mvpo_envs.declaration import default_env_id
from mvpo_train.config import ConfigError, json_arg
from mvpo_train.encoder_head import DEFAULT_POOL, HEAD_FORMS, HISTORY_POOLS, LEGACY_POOL, ScorerHead
from mvpo_train.encoder_policy import EncoderPolicy
from mvpo_train.prompts import PromptBuilder, get_template
from mvpo_train.segment_embedder import SegmentEmbedder

__all__ = [
    "LEGACY_BATCHING",
    "WARM_HEAD_FORM",
    "Demonstration",
    "collect_demonstrations",
    "demonstrations_sha256",
    "expert_plan",
    "main",
    "warm_start",
]

#: one expert step: (prompt ids, candidate ids, index of the expert's action)
Demonstration = tuple[list[int], list[list[int]], int]
#: the embedding batching of warm starts that did not record theirs (8 rows, any length)
LEGACY_BATCHING = "rows8"
#: the head form of the warm start (``--head-form``): ``concat``, the form every warm start
#: was cloned with before the factored one existed (and the one a warm_start.json that
#: records none was made with), so cached and shipped warm starts stay valid
WARM_HEAD_FORM = "concat"


def expert_plan(env: Any, index: int, info: dict[str, Any]) -> list[str] | None:
    """The env's ``expert_actions(index)`` hook, else the game file's ``walkthrough``."""
    hook = getattr(env.unwrapped, "expert_actions", None)
    if hook is not None:
        plan = hook(index)
        return None if plan is None else list(plan)
    gamefile = info.get("gamefile")
    if gamefile:
        try:
            plan = json.loads(Path(gamefile).read_text()).get("walkthrough")
        except (OSError, json.JSONDecodeError, AttributeError):
            return None
        return None if plan is None else list(plan)
    return None


def collect_demonstrations(
    policy: EncoderPolicy,
    env_id: str,
    split: str = "train",
    env_kwargs: dict[str, Any] | None = None,
    history_length: int = 2,
    tasks: Sequence[int] | None = None,
) -> list[Demonstration]:
    """(prompt ids, candidate ids, expert choice) of every step of the expert plans of the
    split's tasks, rendered by the same prompt builder as a rollout. A plan step that is not
    admissible ends that task's demonstration (it is reported, never guessed); an admissible
    template such as ``search[<query>]`` is a ConfigError that names the fix."""
    import gymnasium as gym

    import mvpo_envs  # noqa: F401  (registers the env ids)
    from mvpo_train.rollout import check_score_candidates

    template = get_template(env_id, "compact")
    env = gym.make(env_id, split=split, **dict(env_kwargs or {}))
    out: list[Demonstration] = []
    try:
        n = len(env.unwrapped.task_ids)
        for index in tasks if tasks is not None else range(n):
            obs, info = env.reset(options={"task_index": int(index)})
            plan = expert_plan(env, int(index), info)
            if not plan:
                continue
            builder = PromptBuilder(template, 1, history_length)
            builder.reset(0, obs, str(info.get("task", "")))
            for action in plan:
                adm = list(info.get("admissible_actions", []))
                check_score_candidates(adm, env_id, generate_hint=False)
                if action not in adm:
                    print(f"task {index}: expert action {action!r} not admissible; demo cut",
                          file=sys.stderr)  # fmt: skip
                    break
                text = builder.prompt(0, adm)
                out.append(
                    (
                        policy.prompt_ids(text, template),
                        [policy.candidate_ids(a, template) for a in adm],
                        adm.index(action),
                    )
                )
                obs, _, term, trunc, info = env.step(action)
                builder.record(0, action, obs)
                if term or trunc:
                    break
    finally:
        env.close()
    return out


def demonstrations_sha256(demos: Sequence[Demonstration]) -> str:
    """A fingerprint of the expert data a warm start clones (its cache key with the
    arguments): it changes when the env's games or walkthroughs change."""
    return hashlib.sha256(json.dumps(list(demos), separators=(",", ":")).encode()).hexdigest()


def warm_start(
    policy: EncoderPolicy,
    demos: Sequence[Demonstration],
    *,
    steps: int,
    lr: float = 1e-3,
    batch_size: int = 32,
    seed: int = 0,
) -> list[float]:
    """``steps`` Adam steps of behaviour cloning (cross-entropy over the admissible list)
    on shuffled mini-batches of ``demos``; returns the loss of each step."""
    if not demos:
        raise ValueError("warm start: no expert demonstrations (does the env offer a plan?)")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(policy.model.parameters(), lr=lr)
    losses: list[float] = []
    policy.model.train()
    order = torch.randperm(len(demos), generator=gen).tolist()
    pos = 0
    for _ in range(steps):
        if pos + batch_size > len(order):
            order, pos = torch.randperm(len(demos), generator=gen).tolist(), 0
        mb = [demos[i] for i in order[pos : pos + batch_size]]
        pos += batch_size
        res = policy.score_candidates([d[0] for d in mb], [d[1] for d in mb])
        loss = torch.stack(
            [-torch.log_softmax(s, dim=-1)[d[2]] for s, d in zip(res.scores, mb, strict=True)]
        ).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    policy.model.eval()
    return losses


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mvpo_train.warm_start --out DIR`` (also ``python -m
    mvpo_train.encoder_policy``): the warm-start head (cached: an existing DIR written with the
    same arguments is kept)."""
    p = argparse.ArgumentParser(prog="python -m mvpo_train.warm_start", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--out", required=True, help="output head folder (use as --model DIR)")
    p.add_argument("--env-id", default=default_env_id(), help="gymnasium id (default: %(default)s)")
    p.add_argument("--split", default="train", help="split whose expert plans are cloned")
    p.add_argument("--env-kwargs", type=json_arg(dict), default={}, help="gym.make keywords (JSON)")
    p.add_argument("--steps", type=int, default=200, help="behaviour-cloning steps (early stop)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument(
        "--history-length",
        type=int,
        default=2,
        help="past (observation, action) pairs shown (as mvpo-train --history-length)",
    )
    p.add_argument(
        "--history-pool",
        choices=HISTORY_POOLS,
        default=DEFAULT_POOL,
        help="how the head reads them (docs/policies.md, 'Input layout')",
    )
    p.add_argument(
        "--head-form",
        choices=HEAD_FORMS,
        default=WARM_HEAD_FORM,
        help="how the head is computed while cloning (mvpo_train.encoder_head; default "
        "%(default)s: the form every shipped warm start was cloned with, so they reproduce)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--settings-only",
        action="store_true",
        help="only check that --out holds a warm start made with these arguments (exit 0) or "
        "not (exit 2), without replaying the expert plans (their digest is not re-checked)",
    )
    args = p.parse_args(argv)
    if args.history_length < 0:
        p.error(f"--history-length must be >= 0, not {args.history_length}")
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "threads", "settings_only")}
    # the embeddings it was cloned on: another batching's last bits differ (SegmentEmbedder)
    settings["embedding_batching"] = SegmentEmbedder.BATCHING
    out = Path(args.out)
    meta_path = out / "warm_start.json"
    saved = json.loads(meta_path.read_text()) if meta_path.is_file() else None
    if saved is not None:
        # a folder written before --history-pool existed holds a last_action head; one
        # written before the batching was recorded was cloned on 8-row forward passes only
        before = {"history_pool": LEGACY_POOL, "embedding_batching": LEGACY_BATCHING,
                  "head_form": WARM_HEAD_FORM, **dict(saved.get("settings") or {})}  # fmt: skip
        if before != settings:
            other = {k: v for k, v in before.items() if settings.get(k) != v}
            print(f"warm start: {out} holds another warm start ({other}); choose another --out",
                  file=sys.stderr)  # fmt: skip
            return 2
    if args.settings_only:
        if saved is None or not (out / "model.safetensors").is_file():
            print(f"warm start: {out} holds no warm start; make it without --settings-only",
                  file=sys.stderr)  # fmt: skip
            return 2
        print(f"warm start: {out} was made with these arguments (expert plans not replayed)")
        return 0
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    embedder = SegmentEmbedder()
    head = ScorerHead(embedder.dim, 256, embedder.fingerprint, history_length=args.history_length,
                      history_pool=args.history_pool, form=args.head_form)  # fmt: skip
    policy = EncoderPolicy(head, embedder)
    try:
        demos = collect_demonstrations(
            policy, args.env_id, args.split, args.env_kwargs, args.history_length
        )
    except ConfigError as err:  # e.g. a search[<query>] template: one line, the fix
        print(f"warm start: {err}", file=sys.stderr)
        return 2
    if not demos:
        print(f"warm start: no expert demonstrations on {args.env_id} split {args.split!r} "
              "(the env offers no expert_actions(task_index) plan, or every plan was cut)",
              file=sys.stderr)  # fmt: skip
        return 2
    digest = demonstrations_sha256(demos)
    if saved is not None:
        if saved.get("demonstrations_sha256") == digest:
            print(f"warm start: {out} is up to date (cached)")
            return 0
        # same arguments, other expert data (the env's games changed): the cache is stale
        print(f"warm start: {out} was cloned from other expert data; rebuilding it")
    losses = warm_start(
        policy, demos, steps=args.steps, lr=args.lr, batch_size=args.batch_size, seed=args.seed
    )
    policy.model.save_pretrained(out)
    meta = {
        "settings": settings,
        "demonstrations": len(demos),
        "demonstrations_sha256": digest,
        "final_loss": losses[-1],
    }
    meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    print(f"warm start: {len(demos)} expert steps, {args.steps} steps, loss {losses[-1]:.3f} "
          f"-> {out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
