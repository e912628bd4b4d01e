"""TRL's GRPO trains a causal LM on ``mvpo/ALFWorld-v0`` through ``mvpo-serve``.

docs/integrations.md ("TRL"). TRL's ``GRPOTrainer(environment_factory=...)`` (TRL >= 1.0,
transformers >= 5.2) makes one environment object per rollout, calls its ``reset(**row)``
with the dataset row and appends the returned text to the prompt, exposes its public methods
as tools the model calls (``<tool_call>`` JSON, parsed by the chat template's response
parser), and scores the rollout with its ``get_reward()``. :class:`ServedTextGame` is that
object for any mvpo env behind ``mvpo-serve``: ``reset`` starts the row's seeded episode on
the server, the one tool ``step(action)`` plays an action and returns the next observation
with the admissible actions, and ``get_reward`` is the episode's return so far. The env is
reached only through :class:`mvpo_envs.serve.MvpoEnvClient` (no mvpo env runs in this process),
and nothing of mvpo's trainer is used: TRL generates, calls the tool and updates the model.

The model defaults to the project's bundled tiny random Qwen2 (``data/models/tiny-qwen2``,
``mvpo-build-tiny-model``), so the run needs no network; ``--model`` takes any local folder or
hub id of a chat model (``Qwen/Qwen2.5-1.5B-Instruct`` on a GPU). A tokenizer whose chat
template cannot render tool calls (the tiny model's plain ChatML) gets TRL's Qwen2.5 template,
whose ``<tool_call>`` format TRL knows how to parse. A random model seldom writes a valid tool
call, so its rollouts end after one turn with the episode's return 0 (every group's rewards
are equal, GRPO's advantages and loss are 0): the run shows the plumbing, not learning.

Run (starts ``mvpo-serve`` on a free loopback port, or use ``--url`` for a running one)::

    python examples/trl_grpo_alfworld.py --max-steps 2 --output-dir runs/trl-grpo

It prints one JSON line per optimizer step (``step``, ``loss``, ``reward``, ``tool_calls``,
the env calls made so far) and a last line with the totals, and saves the trained model and
its tokenizer to ``--output-dir`` (``from_pretrained`` loads it). Flags keep TRL's words:
``--max-steps`` is ``GRPOConfig.max_steps``, the optimizer steps (``mvpo-train`` calls those
``--iterations``; its ``--max-steps`` is an episode's length, here ``--max-turns``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from typing import Any

from mvpo_envs.serve import MvpoEnvClient, StepResult
from mvpo_envs.serve.server import served

ENV_ID = "mvpo/ALFWorld-v0"
INSTRUCTION = (
    "You are playing a text game. Each turn, call the `step` tool with exactly one of the "
    "admissible actions listed, until the task is done.\n\n"
)


def render(result: StepResult) -> str:
    """The text the model reads: the task, the observation and the admissible actions."""
    info = result.observation.info
    lines = [f"Task: {info['task']}", f"Observation: {result.observation.text}"]
    if result.done:
        lines.append(f"The episode is over (won: {bool(info['won'])}).")
    else:
        lines.append("Admissible actions: " + "; ".join(info["admissible_actions"]))
    return "\n".join(lines)


class ServedTextGame:
    """One rollout's environment for TRL: a session of ``mvpo-serve``.

    TRL keeps a pool of these (one per concurrent rollout) and reuses them across batches, so
    each holds one client (one server session) and starts a new episode at every ``reset``.
    Only ``step`` is public besides ``reset`` and ``get_reward``: TRL turns every public method
    into a tool. ``seeds`` and ``steps`` record what was played (the example's log lines).
    """

    def __init__(self, url: str, transport: str = "http", max_turns: int = 30):
        self._client = MvpoEnvClient(url, transport=transport)
        self._max_turns = max_turns
        self._return = 0.0
        self._turns = 0
        self._done = True
        self.seeds: list[int] = []  # the episodes reset, in order
        self.steps = 0  # actions played, all episodes

    def reset(self, seed: int, **row: Any) -> str:
        """Start the episode of the dataset row's ``seed``; the text is appended to the prompt."""
        result = self._client.reset(seed=int(seed))
        self.seeds.append(int(seed))
        self._return, self._turns, self._done = 0.0, 0, result.done
        return render(result)

    def step(self, action: str) -> str:
        """Take one action in the text game.

        Args:
            action: One of the admissible actions listed in the last observation, e.g. "go to drawer 1".

        Returns:
            The next observation, followed by the admissible actions or the end of the episode.
        """
        if self._done:
            raise ValueError("the episode is over: no more actions")
        if self._turns >= self._max_turns:
            raise ValueError(f"the turn limit ({self._max_turns}) is reached")
        result = self._client.step(str(action))
        self.steps += 1
        self._turns += 1
        self._return += float(result.reward or 0.0)
        self._done = result.done
        return render(result)

    def get_reward(self) -> float:
        """The episode's return so far (ALFWorld: 1.0 when the task is done, else 0.0)."""
        return self._return

    def _close(self) -> None:
        """End the server session (private: not a tool)."""
        self._client.close()


class GameFactory:
    """What ``GRPOTrainer(environment_factory=...)`` takes: a no-argument constructor.

    It keeps the games it made, to count what they played and to close their sessions.
    """

    def __init__(self, url: str, transport: str = "http", max_turns: int = 30):
        self.url, self.transport, self.max_turns = url, transport, max_turns
        self.games: list[ServedTextGame] = []

    def __call__(self) -> ServedTextGame:
        self.games.append(ServedTextGame(self.url, self.transport, self.max_turns))
        return self.games[-1]

    def counts(self) -> dict[str, int]:
        """Sessions made, episodes reset and actions played so far, over all games."""
        return {
            "env_sessions": len(self.games),
            "env_resets": sum(len(g.seeds) for g in self.games),
            "env_steps": sum(g.steps for g in self.games),
        }

    def close(self) -> None:
        for game in self.games:
            game._close()


def load_model(name: str) -> tuple[Any, Any]:
    """The policy and its tokenizer; a template without tool calls gets TRL's Qwen2.5 one."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

    from mvpo_train.tiny_model import resolve_model_path

    path = resolve_model_path(name)  # "tiny-qwen2": the bundled folder
    tokenizer = AutoTokenizer.from_pretrained(path)
    if not supports_tool_calling(tokenizer):
        tokenizer.chat_template = qwen2_5_chat_template  # ChatML + <tool_call> JSON
    model = AutoModelForCausalLM.from_pretrained(path)
    return model, tokenizer


def build_trainer(
    args: argparse.Namespace, factory: GameFactory, model: Any, tokenizer: Any, output_dir: str
) -> Any:
    """A ``GRPOTrainer`` on ``--episodes`` seeded episodes, ``--generations`` rollouts each."""
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    seeds = [args.seed * 100_003 + k for k in range(args.episodes)]
    rows = {"prompt": [[{"role": "user", "content": INSTRUCTION}]] * len(seeds), "seed": seeds}
    config = GRPOConfig(
        output_dir=output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.generations,
        num_generations=args.generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_turns,
        learning_rate=args.lr,
        temperature=1.0,
        beta=0.0,  # TRL's default: no KL term, no reference model
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=args.cpu,
        bf16=False,
        seed=args.seed,
        data_seed=args.seed,
        disable_tqdm=True,
    )

    class PrintLogs(TrainerCallback):
        def on_log(self, _args, state, _control, logs=None, **_kw):
            if logs and "loss" in logs:
                line = {"step": state.global_step, "loss": logs["loss"]}
                line["reward"] = logs.get("reward")
                line["tool_calls"] = logs.get("tools/call_frequency")
                line.update(factory.counts())
                print(json.dumps(line), flush=True)

    trainer = GRPOTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_dict(rows),
        processing_class=tokenizer,
        environment_factory=factory,
        callbacks=[PrintLogs()],
    )
    trainer.remove_callback(PrinterCallback)  # our JSON lines instead of its dicts
    return trainer


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="a running mvpo-serve (default: start one on loopback)")
    p.add_argument("--env-id", default=ENV_ID, help="the env mvpo-serve serves (without --url)")
    p.add_argument("--env-kwargs", default='{"preset": "mini"}', help="JSON, for mvpo-serve")
    p.add_argument("--transport", choices=["http", "ws"], default="http")
    p.add_argument("--model", default="tiny-qwen2", help="a folder or hub id (default: bundled)")
    p.add_argument(
        "--output-dir",
        default="runs/trl-grpo-alfworld",
        help="TRL's output_dir: the trained model and tokenizer are saved here",
    )
    p.add_argument(
        "--max-steps",
        type=int,
        default=4,
        help="TRL's max_steps: GRPO optimizer steps (an episode's length is --max-turns)",
    )
    p.add_argument("--episodes", type=int, default=16, help="distinct seeded episodes (rows)")
    p.add_argument("--generations", type=int, default=4, help="rollouts per episode (group)")
    p.add_argument("--max-completion-length", type=int, default=256, help="tokens per rollout")
    p.add_argument(
        "--max-turns", type=int, default=8, help="tool calls (env steps) per rollout at most"
    )
    p.add_argument("--lr", type=float, default=1e-5, help="GRPO's learning rate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpu", action=argparse.BooleanOptionalAction, default=True)
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental
    server = (
        contextlib.nullcontext(args.url)
        if args.url
        else served(args.env_id, "--env-kwargs", args.env_kwargs)
    )
    with server as url:
        factory = GameFactory(url, args.transport, args.max_turns)
        model, tokenizer = load_model(args.model)
        try:
            trainer = build_trainer(args, factory, model, tokenizer, args.output_dir)
            result = trainer.train()
        finally:
            factory.close()
    trainer.save_model(args.output_dir)  # the model and its tokenizer (processing_class)
    summary = {"steps": result.global_step, "train_loss": result.training_loss,
               "output_dir": args.output_dir}  # fmt: skip
    print(json.dumps(summary | factory.counts()), flush=True)


if __name__ == "__main__":
    main()
