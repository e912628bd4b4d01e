"""``examples/trl_grpo_alfworld.py``: TRL's ``GRPOTrainer`` trains through a real ``mvpo-serve``.

docs/integrations.md ("TRL"). The server is the command users start (``--port 0`` on
loopback), the model the bundled tiny Qwen2, TRL the installed release (the ``trl`` extra, in
``test``). Checked: the game is what TRL expects of an ``environment_factory`` object (one tool,
``step``; the reward from ``get_reward``), a tool call in the chat template's format is parsed
by TRL's own parser and played on the server as a local env plays it, and two GRPO steps run
with one server session per rollout, every rollout of a group on the same seeded episode.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("trl", reason="the trl extra is not installed: pip install -e '.[trl]'")

from trl.chat_template_utils import (  # noqa: E402
    add_response_schema,
    parse_response,
    qwen2_5_chat_template,
)

import mvpo_envs  # noqa: E402, F401  (registers the ids for the local reference env)
from mvpo_envs.serve import MvpoEnvClient  # noqa: E402
from mvpo_envs.serve.server import served  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ENV_KWARGS = {"preset": "mini"}


def _example():
    path = REPO / "examples/trl_grpo_alfworld.py"
    spec = importlib.util.spec_from_file_location("trl_grpo_alfworld", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ex():
    return _example()


@pytest.fixture(scope="module")
def served_url():
    with served("mvpo/ALFWorld-v0", "--env-kwargs", json.dumps(ENV_KWARGS)) as url:
        yield url


def _open_sessions(url: str) -> int:
    with MvpoEnvClient(url) as client:
        return client.get("/health")["sessions"]


def test_a_tool_call_parsed_by_trl_plays_the_served_episode_as_a_local_env(ex, served_url):
    _, tokenizer = ex.load_model("tiny-qwen2")
    assert tokenizer.chat_template == qwen2_5_chat_template  # its ChatML cannot render tools
    add_response_schema(tokenizer)  # what GRPOTrainer does with a known template
    factory = ex.GameFactory(served_url)
    game = factory()
    local = gym.make("mvpo/ALFWorld-v0", **ENV_KWARGS)
    seed = 5
    obs, info = local.reset(seed=seed)
    text = game.reset(seed=seed, prompt=[])  # TRL passes the whole dataset row
    assert f"Task: {info['task']}" in text and obs in text
    assert "; ".join(info["admissible_actions"]) in text

    messages = [{"role": "user", "content": ex.INSTRUCTION + text}]
    prompt_ids = tokenizer.apply_chat_template(
        messages, tools=[game.step], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    plan = local.unwrapped.expert_actions(seed % len(local.unwrapped.games))
    for k, action in enumerate(plan):
        call = json.dumps({"name": "step", "arguments": {"action": action}})
        ids = tokenizer(f"<tool_call>\n{call}\n</tool_call><|im_end|>", add_special_tokens=False)
        message = parse_response(tokenizer, ids["input_ids"], prefix=prompt_ids, tools=[game.step])
        (tool_call,) = message["tool_calls"]
        function = tool_call["function"]
        # TRL calls a tool as `tool_dict[name](**arguments)`
        reply = getattr(game, function["name"])(**function["arguments"])
        obs, reward, terminated, truncated, info = local.step(action)
        assert obs in reply and game.get_reward() == reward * (k == len(plan) - 1)
    assert terminated and info["won"] and game.get_reward() == 1.0
    assert "The episode is over (won: True)." in reply
    with pytest.raises(ValueError, match="episode is over"):
        game.step(action="look")  # TRL turns this into the tool's {"error": ...} message
    assert game.reset(seed=seed) == text and game.get_reward() == 0.0  # a new episode
    factory.close()


def test_two_grpo_steps_run_on_the_served_env(ex, served_url, tmp_path):
    argv = ["--url", served_url, "--max-steps", "2", "--generations", "2", "--episodes", "4"]
    args = ex.build_parser().parse_args(argv + ["--max-completion-length", "32"])
    factory = ex.GameFactory(served_url, max_turns=args.max_turns)
    model, tokenizer = ex.load_model(args.model)
    before = [p.detach().clone() for p in model.parameters()]
    trainer = ex.build_trainer(args, factory, model, tokenizer, str(tmp_path))
    assert [tool.__name__ for tool in trainer.tools] == ["step"]  # reset/get_reward/_close not
    assert "ServedTextGame" in trainer.reward_func_names  # get_reward is a reward source
    sessions_before = _open_sessions(served_url)
    result = trainer.train()
    assert result.global_step == 2
    # TRL's pool: one game (one server session) per rollout of a batch, reused at every step
    assert len(factory.games) == 2
    assert _open_sessions(served_url) == sessions_before + 2
    seeds = [game.seeds for game in factory.games]
    assert seeds[0] == seeds[1] and len(seeds[0]) == 2  # a group plays one episode, per step
    assert set(seeds[0]) <= {args.seed * 100_003 + k for k in range(args.episodes)}
    assert factory.counts()["env_resets"] == 4
    factory.close()
    assert _open_sessions(served_url) == sessions_before
    # GRPO: a group whose rewards are all equal has advantage 0, so only a step with a spread
    # of rewards in its group moves the weights (no KL term, no weight decay)
    logs = [log for log in trainer.state.log_history if "frac_reward_zero_std" in log]
    moved = any(not p.equal(b) for p, b in zip(model.parameters(), before, strict=True))
    assert len(logs) == 2 and moved == any(log["frac_reward_zero_std"] < 1 for log in logs)
    assert all(log["tools/call_frequency"] >= 0 for log in logs)


def test_the_example_saves_its_model_to_output_dir(ex, served_url, tmp_path, capsys):
    """``main`` keeps the trained model: ``--output-dir`` holds weights and tokenizer that
    ``from_pretrained`` loads; ``--max-steps`` is TRL's (optimizer steps)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "trained"
    ex.main(["--url", served_url, "--max-steps", "1", "--generations", "2", "--episodes", "2",
             "--max-completion-length", "16", "--output-dir", str(out)])  # fmt: skip
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 1 and summary["output_dir"] == str(out)
    model = AutoModelForCausalLM.from_pretrained(out)
    assert AutoTokenizer.from_pretrained(out).chat_template
    assert sum(p.numel() for p in model.parameters()) > 0
