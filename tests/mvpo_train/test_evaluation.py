"""``evaluate``'s ``on_batch`` hook sees every collected batch (padding included) and changes
nothing; in generate mode the evaluation plays with the ``hf`` backend whatever ``cfg.backend``
names (it never starts a second engine)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.config import TrainConfig, with_preset_env_kwargs
from mvpo_train.evaluation import evaluate
from mvpo_train.factories import load_policy


def _cfg(micro: Path, tmp_path: Path, **kw: object) -> TrainConfig:
    values = dict(model=str(micro), run_dir=str(tmp_path / "run"), max_steps=2, threads=1,
                  progress=False, tensorboard=False, report_to=[], **kw)  # fmt: skip
    return TrainConfig(**with_preset_env_kwargs("cpu-tiny", values))


def test_the_hook_sees_every_batch_and_changes_nothing(micro, tmp_path):
    cfg = _cfg(micro, tmp_path)
    policy = load_policy(cfg)
    tasks = [13, 1, 2, 3, 4, 5, 6, 7, 8]  # two chunks of 8: the second padded with 7 copies
    seen: list[StepBatch] = []
    kw = dict(split="train", tasks=tasks, episodes=2, seed=3, per_episode=True)
    hooked = evaluate(policy, cfg, on_batch=seen.append, **kw)
    plain = evaluate(policy, cfg, **kw)
    assert hooked == plain
    assert len(seen) == 2 and [b.n_traj for b in seen] == [16, 16]  # 8 groups x 2 episodes
    # the real groups of each chunk (9 tasks: 8, then 1) give exactly the reported outcomes
    kept = [b.traj_group < n for b, n in zip(seen, (8, 1), strict=True)]
    wins = np.concatenate([b.traj_success[k] for b, k in zip(seen, kept, strict=True)])
    assert len(wins) == hooked["episodes"] == 18
    assert sorted(wins.tolist()) == sorted(hooked["episode_success"])
    assert np.isclose(wins.mean(), hooked["success"])


def test_generate_mode_plays_with_the_hf_backend_whatever_the_config_names(micro, tmp_path):
    """``backend: vllm`` is the training run's engine; the evaluation does not build it (vLLM is
    not installed here: building it would fail)."""
    cfg = _cfg(micro, tmp_path, action_mode="generate", backend="vllm", max_new_tokens=4)
    seen: list[StepBatch] = []
    out = evaluate(load_policy(cfg), cfg, split="train", tasks=[13], on_batch=seen.append)
    assert out["episodes"] == 1 and len(seen) == 1 and len(seen[0]) >= 1
