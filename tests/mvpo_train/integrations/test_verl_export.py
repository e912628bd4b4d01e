"""``mvpo-export --format verl`` rows load in verl's own dataset class (``RLHFDataset``), batch
with verl's ``collate_fn`` into a ``DataProto``, and each row names the episode the ``mvpo_env``
agent loop plays: its prompt is that episode's first observation as the loop renders it."""

from __future__ import annotations

import gymnasium as gym
import pytest

verl = pytest.importorskip("verl")

from omegaconf import OmegaConf  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn  # noqa: E402

from mvpo_train.export import main  # noqa: E402
from mvpo_train.integrations.verl_agent_loop import AGENT_NAME, episode_spec  # noqa: E402
from mvpo_train.prompts import get_template  # noqa: E402

ENV_ID = "mvpo/ALFWorld-v0"


def test_exported_rows_load_in_verls_dataset_and_name_their_episode(micro, tmp_path):
    out = tmp_path / "verl"
    argv = ["--format", "verl", "--env-id", ENV_ID, "--split", "eval", "--out", str(out)]
    argv += ["--env-kwargs", '{"preset": "mini"}', "--max-tasks", "3", "--no-progress"]
    assert main(argv) == 0
    path = out / "eval.parquet"
    config = OmegaConf.create(
        {"max_prompt_length": 4096, "filter_overlong_prompts": True, "cache_dir": str(tmp_path)}
    )
    dataset = RLHFDataset([str(path)], AutoTokenizer.from_pretrained(micro), config)
    assert len(dataset) == 3  # none dropped as overlong
    rows = [dataset[i] for i in range(3)]
    template = get_template(ENV_ID, "seed")
    for i, row in enumerate(rows):
        assert row["agent_name"] == AGENT_NAME and row["index"] == i
        spec = episode_spec(row)  # what the agent loop reads
        assert spec["seed"] == i and spec["env_kwargs"] == {"preset": "mini", "split": "eval"}
        env = gym.make(spec["env_id"], **spec["env_kwargs"])
        try:
            obs, info = env.reset(seed=spec["seed"])
        finally:
            env.close()
        first = template.render(
            str(info["task"]), obs, list(info["admissible_actions"]), [], 0
        )  # the loop's first user message
        assert row["raw_prompt"] == [{"role": "user", "content": first}]
        assert row["extra_info"]["task_id"] == info["task_id"]
    batch = DataProto.from_single_dict(collate_fn(rows))
    assert list(batch.non_tensor_batch["agent_name"]) == [AGENT_NAME] * 3
    specs = [episode_spec({"extra_info": e}) for e in batch.non_tensor_batch["extra_info"]]
    assert [s["seed"] for s in specs] == [0, 1, 2]
