"""An external training loop that reaches an mvpo env only through ``mvpo-serve``.

docs/integrations.md ("OpenEnv", "An external loop"). Nothing here imports an mvpo env or the
mvpo trainer: the loop talks OpenEnv's protocol to a server with ``MvpoEnvClient`` and trains a
tiny torch policy with REINFORCE over the admissible actions the server sends in ``info``.

The policy scores each admissible action ``a`` in context ``c`` (the task and the current
observation) as ``<E_c(words of c), E_a(words of a)>`` with two hashed-word embedding bags;
an episode's return is its reward sum, the baseline the mean return of the iteration's
episodes. Every random choice is seeded (``--seed``): task seeds, action sampling and the
initial weights, so a run against the same server settings repeats.

Run::

    mvpo-serve mvpo/ALFWorld-v0 --port 8000 --env-kwargs '{"preset": "mini"}' &
    python examples/openenv_loop.py --url http://127.0.0.1:8000 --iterations 20

It prints one JSON line per iteration (``iteration``, ``episodes``, ``success``,
``mean_return``, ``mean_steps``, ``loss``).
"""

from __future__ import annotations

import argparse
import json
import re
import zlib
from collections.abc import Sequence

import torch
from torch import nn

from mvpo_envs.serve import MvpoEnvClient

BUCKETS = 4096
WORD = re.compile(r"[a-z0-9]+")


def word_ids(text: str) -> list[int]:
    """Hashed word ids (``crc32``, the same on every machine and run)."""
    ids = [zlib.crc32(w.encode()) % BUCKETS for w in WORD.findall(text.lower())]
    return ids or [0]


class ActionScorer(nn.Module):
    """Logits over the admissible actions of one state."""

    def __init__(self, dim: int = 32):
        super().__init__()
        self.context = nn.EmbeddingBag(BUCKETS, dim, mode="mean")
        self.action = nn.EmbeddingBag(BUCKETS, dim, mode="mean")

    def forward(self, context: str, actions: Sequence[str]) -> torch.Tensor:
        ctx = self.context(torch.tensor([word_ids(context)]))  # (1, dim)
        ids = [word_ids(a) for a in actions]
        offsets = torch.tensor([0] + [len(x) for x in ids[:-1]]).cumsum(0)
        acts = self.action(torch.tensor([i for x in ids for i in x]), offsets)  # (n, dim)
        return (acts @ ctx.T).squeeze(1)


def play(
    client: MvpoEnvClient, policy: ActionScorer, seed: int, gen: torch.Generator, max_steps: int
) -> tuple[torch.Tensor, float, int, bool]:
    """One episode: the sum of the chosen actions' log-probs, the return, steps and success."""
    result = client.reset(seed=seed)
    logps, ret, steps = [], 0.0, 0
    while not result.done and steps < max_steps:
        info = result.observation.info
        actions = info["admissible_actions"]
        logits = policy(info["task"] + " " + result.observation.text, actions)
        dist = torch.distributions.Categorical(logits=logits)
        choice = int(torch.multinomial(dist.probs.detach(), 1, generator=gen))
        logps.append(dist.log_prob(torch.tensor(choice)))
        result = client.step(actions[choice])
        ret += float(result.reward or 0.0)
        steps += 1
    won = bool(result.observation.info["won"])
    return torch.stack(logps).sum() if logps else torch.zeros(()), ret, steps, won


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the mvpo-serve server")
    p.add_argument("--transport", choices=["http", "ws"], default="http")
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--episodes", type=int, default=8, help="episodes per iteration")
    p.add_argument("--max-steps", type=int, default=30, help="steps per episode at most")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.set_num_threads(1)  # a tiny model: more threads only contend
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    policy = ActionScorer()
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
    with MvpoEnvClient(args.url, transport=args.transport) as client:
        for it in range(args.iterations):
            seeds = [args.seed * 100_003 + it * args.episodes + k for k in range(args.episodes)]
            episodes = [play(client, policy, s, gen, args.max_steps) for s in seeds]
            returns = torch.tensor([e[1] for e in episodes])
            advantages = returns - returns.mean()
            loss = -sum(a * e[0] for a, e in zip(advantages.tolist(), episodes, strict=True)) / len(
                episodes
            )
            opt.zero_grad()
            if isinstance(loss, torch.Tensor) and loss.requires_grad:
                loss.backward()
                opt.step()
            print(
                json.dumps(
                    {
                        "iteration": it,
                        "episodes": len(episodes),
                        "success": sum(e[3] for e in episodes) / len(episodes),
                        "mean_return": float(returns.mean()),
                        "mean_steps": sum(e[2] for e in episodes) / len(episodes),
                        "loss": float(loss.detach() if isinstance(loss, torch.Tensor) else loss),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
