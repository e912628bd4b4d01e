"""The ``mvpo_env`` verl agent loop, run by verl's own AgentLoopWorker on CPU.

The only stand-in is the LLM server: :class:`HFServer` answers verl's ``generate(...) ->
TokenOutput`` contract with Hugging Face ``generate`` on a micro Qwen2 model (vLLM cannot run
here). Everything else is verl's: the trainer config, ``AgentLoopWorker.generate_sequences``
(agent-loop registry, continuous-token builder, padding, ``_postprocess`` into a DataProto) and
``compute_advantage`` with the mvpo bridge installed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

verl = pytest.importorskip("verl")

from omegaconf import OmegaConf  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from mvpo_train import StepBatch, get_estimator  # noqa: E402
from mvpo_train.integrations import verl as bridge  # noqa: E402
from mvpo_train.integrations.verl_agent_loop import AGENT_NAME, episode_spec  # noqa: E402

ENV_ID = "mvpo/ALFWorld-v0"
PROMPT_LEN, RESPONSE_LEN, NEW_TOKENS = 2048, 1200, 12


class HFServer:
    """verl's server-manager ``generate`` contract on HF ``generate`` (seeded sampling)."""

    def __init__(self, path: Path, seed: int = 0):
        self.model = AutoModelForCausalLM.from_pretrained(path).eval()
        self.seed = seed
        self.calls = 0

    async def generate(self, *, request_id, prompt_ids, sampling_params, **_) -> TokenOutput:
        self.calls += 1
        torch.manual_seed(self.seed + self.calls)
        ids = torch.tensor([prompt_ids])
        with torch.no_grad():
            out = self.model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=NEW_TOKENS,
                do_sample=float(sampling_params.get("temperature", 1.0)) > 0,
                top_k=0,
            )
        return TokenOutput(token_ids=out[0, ids.shape[1] :].tolist(), stop_reason="completed")


def _worker(micro: Path, server: HFServer, agent_loop_config_path: str = "") -> AgentLoopWorker:
    cfg = OmegaConf.load(Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml")
    cfg.actor_rollout_ref.model.path = str(micro)
    rollout = cfg.actor_rollout_ref.rollout
    rollout.name = "vllm"  # only names the (unused) engine; the server is HFServer
    rollout.prompt_length, rollout.response_length = PROMPT_LEN, RESPONSE_LEN
    rollout.agent.default_agent_loop = AGENT_NAME
    if agent_loop_config_path:
        rollout.agent.agent_loop_config_path = agent_loop_config_path
    return AgentLoopWorker(cfg, llm_client=server)


def _batch(seeds: list[int], group_size: int) -> DataProto:
    rows = [s for s in seeds for _ in range(group_size)]
    raw_prompt = np.empty(len(rows), dtype=object)
    for k in range(len(rows)):
        raw_prompt[k] = []  # the loop builds its prompt from the env
    nt = {
        "raw_prompt": raw_prompt,
        "mvpo_env": np.array(
            [
                {
                    "env_id": ENV_ID,
                    "seed": s,
                    "env_kwargs": {"split": "train"},
                    "template": "compact",
                }
                for s in rows
            ],
            dtype=object,
        ),
        "uid": np.array([f"task-{s}" for s in rows], dtype=object),
    }
    return DataProto.from_dict(non_tensors=nt)


@pytest.fixture(scope="module")
def rollout(micro):
    server = HFServer(micro)
    worker = _worker(micro, server)
    batch = _batch([3, 5], group_size=2)
    out = asyncio.run(worker.generate_sequences(batch))
    return out, server


def test_spans_cover_exactly_the_assistant_tokens(rollout):
    out, server = rollout
    mask = out.batch["response_mask"]
    assert mask.shape == (4, RESPONSE_LEN)
    total_turns = 0
    for r in range(4):
        spans = out.non_tensor_batch[bridge.SPANS_COLUMN][r]
        steps = out.non_tensor_batch[bridge.STEPS_COLUMN][r]
        assert len(spans) == len(steps) >= 2  # several turns with observations between
        total_turns += len(steps)
        covered = torch.zeros(RESPONSE_LEN, dtype=torch.bool)
        prev = 0
        for s, e in spans:
            assert prev <= s < e <= RESPONSE_LEN
            assert torch.all(mask[r, s:e] == 1)
            covered[s:e] = True
            prev = e
        assert torch.all(mask[r, ~covered] == 0)  # observations and padding: 0
        assert int(mask[r, spans[1][0] - 1]) == 0  # an observation sits between turns
    assert server.calls == total_turns  # one generate per turn, nothing else


def test_reward_score_is_the_episode_return(rollout):
    out, _ = rollout
    for r in range(4):
        steps = out.non_tensor_batch[bridge.STEPS_COLUMN][r]
        assert float(out.batch["rm_scores"][r].sum()) == pytest.approx(
            sum(s["reward"] for s in steps)
        )


def test_episode_equals_a_direct_gym_run_with_the_same_actions(rollout):
    out, _ = rollout
    for r, seed in enumerate([3, 3, 5, 5]):
        env = gym.make(ENV_ID, split="train")
        _, info = env.reset(seed=seed)
        for step in out.non_tensor_batch[bridge.STEPS_COLUMN][r]:
            assert step["anchor"] == info["anchor"]
            assert step["signature"] == info["signature"]
            _, reward, terminated, truncated, info = env.step(step["action"])
            penalty = 0.0 if step["format_ok"] and not info.get("invalid_action") else 0.1
            assert step["reward"] == pytest.approx(float(reward) - penalty)
            assert step["terminated"] == bool(terminated)
            assert tuple(step["milestones"]) == tuple(info.get("milestones", ()))
        env.close()
    # the response budget, not the env, ended these episodes: the last step says truncated
    last = [out.non_tensor_batch[bridge.STEPS_COLUMN][r][-1] for r in range(4)]
    assert all(s["truncated"] or s["terminated"] for s in last)


@pytest.mark.parametrize("name", ["grpo", "mvpo"])
def test_bridge_computes_advantages_on_the_loops_output(rollout, name):
    bridge._instances.clear()
    bridge.install()
    import verl.trainer.ppo.ray_trainer as ray_trainer

    out, _ = rollout
    data = DataProto.from_dict(
        tensors={
            "token_level_rewards": out.batch["rm_scores"].clone(),
            "response_mask": out.batch["response_mask"].clone(),
        },
        non_tensors={k: out.non_tensor_batch[k] for k in ("uid", *bridge_columns())},
    )
    adv = ray_trainer.compute_advantage(data, adv_estimator=f"mvpo_{name}").batch["advantages"]
    rows = []
    for r in range(4):
        for t, s in enumerate(out.non_tensor_batch[bridge.STEPS_COLUMN][r]):
            rows.append({**{k: s[k] for k in bridge._REQUIRED}, "group": r // 2, "traj": r, "t": t})
    expected, _ = get_estimator(name)(StepBatch.from_steps(rows))
    k = 0
    for r in range(4):
        for s, e in out.non_tensor_batch[bridge.SPANS_COLUMN][r]:
            np.testing.assert_allclose(adv[r, s:e].numpy(), expected[k], rtol=1e-6, atol=1e-6)
            k += 1
    assert torch.all(adv[out.batch["response_mask"] == 0] == 0)


def bridge_columns() -> tuple[str, str]:
    return bridge.STEPS_COLUMN, bridge.SPANS_COLUMN


def test_a_row_without_an_episode_spec_is_a_clear_error():
    with pytest.raises(ValueError, match="mvpo_env"):
        episode_spec({"raw_prompt": [], "extra_info": {}})
    with pytest.raises(ValueError, match="seed"):
        episode_spec({"mvpo_env": {"env_id": ENV_ID}})


def test_loop_from_verls_agent_loop_config_file_with_max_turns(micro, tmp_path):
    """The way a verl run selects it: ``rollout.agent.agent_loop_config_path`` (a YAML list)."""
    (tmp_path / "loops.yaml").write_text(
        "- name: mvpo_env_2turns\n"
        "  _target_: mvpo_train.integrations.verl_agent_loop.MvpoEnvAgentLoop\n"
        "  max_turns: 2\n"
    )
    server = HFServer(micro, seed=11)
    worker = _worker(micro, server, agent_loop_config_path=str(tmp_path / "loops.yaml"))
    batch = _batch([2], group_size=2)
    batch.non_tensor_batch["agent_name"] = np.array(["mvpo_env_2turns"] * 2, dtype=object)
    out = asyncio.run(worker.generate_sequences(batch))
    for r in range(2):
        steps = out.non_tensor_batch[bridge.STEPS_COLUMN][r]
        assert len(steps) == 2 and server.calls == 4
        assert steps[-1]["truncated"] or steps[-1]["terminated"]
        assert not steps[0]["truncated"]


def test_ray_setup_hook_installs_the_estimators_in_ray_workers():
    """The docs' launch line: Ray's ``worker_process_setup_hook`` runs ``install()`` in every
    worker (verl's trainer runs in a Ray actor), so ``mvpo_*`` resolve there."""
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=1,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        runtime_env={"worker_process_setup_hook": "mvpo_train.integrations.verl.install"},
    )
    try:

        @ray.remote
        def probe() -> tuple[str, bool]:
            from verl.trainer.ppo import core_algos, ray_trainer

            from mvpo_train.integrations import verl as b

            fn = core_algos.get_adv_estimator_fn("mvpo_mvpo")
            return fn.__name__, ray_trainer.compute_advantage is b._wrapper

        assert ray.get(probe.remote()) == ("compute_mvpo_mvpo_advantage", True)
    finally:
        ray.shutdown()
