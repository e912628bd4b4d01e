"""The default mode (``score``) trains on ALFWorld and WebShop, ``generate`` on SearchQA (whose
free-text answers score mode refuses, docs/searchqa.md "Training"): mixed pages merge in the
vector env.

docs/environments.md, "Info contract". Two iterations on the micro model, two groups of two,
enough steps to leave the first page (WebShop: search -> results -> item) so the sub-envs of
one batch report infos from different states. WebShop lists its search template filled with
the instruction (``search_query="instruction"``, docs/webshop.md "Score mode"): score mode
refuses the bare template (tests/mvpo_train/test_score_templates.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mvpo_train.config import TrainConfig
from mvpo_train.metrics import read_metrics
from mvpo_train.trainer import train

pytestmark = pytest.mark.usefixtures("forget_shared_retrievers")


#: SearchQA's answers are free text: score mode is refused there (test_score_templates.py)
GENERATE = {"action_mode": "generate", "prompt_style": "seed", "max_new_tokens": 8}


@pytest.mark.parametrize(
    ("env_id", "max_steps", "env_kwargs", "mode"),
    [
        ("mvpo/ALFWorld-v0", 4, {}, {"action_mode": "score"}),
        ("mvpo/WebShop-v0", 6, {"search_query": "instruction"}, {"action_mode": "score"}),
        ("mvpo/SearchQA-v0", 4, {}, GENERATE),
        ("mvpo/MilestoneChain-v0", 6, {}, {"action_mode": "score"}),
    ],
)
def test_each_env_trains_two_iterations(
    micro: Path, tmp_path: Path, env_id: str, max_steps: int, env_kwargs: dict, mode: dict
):
    cfg = TrainConfig(
        run_dir=str(tmp_path), model=str(micro), device="cpu", threads=1, progress=False,
        tensorboard=False, env_id=env_id, num_groups=2, group_size=2,
        max_steps=max_steps, iterations=2, micro_batch_size=16, save_every=0, seed=3,
        env_kwargs=env_kwargs, **mode,
    )  # fmt: skip
    rows = train(cfg)
    assert [r["iteration"] for r in read_metrics(tmp_path)] == [1, 2]
    for row in rows:
        assert row["steps"] >= 4  # every one of the 4 envs took at least one step
        assert math.isfinite(row["loss/grad_norm"]) and 0.0 <= row["success"] <= 1.0


def _weights(run_dir: Path) -> dict:
    from safetensors.torch import load_file

    latest = (run_dir / "checkpoints" / "LATEST").read_text().strip()
    return load_file(run_dir / "checkpoints" / latest / "model.safetensors")


def _untimed(run_dir: Path) -> list[dict]:
    return [
        {k: v for k, v in row.items() if not k.startswith("time/")} for row in read_metrics(run_dir)
    ]


def test_async_trains_the_same_weights_as_sync_across_batches_and_a_resume(micro, tmp_path):
    """Every episode is cut at ``max_steps`` on the batch's last step: the case in which an
    async worker used to carry its autoreset into the next batch (another, unseeded task)."""
    base = dict(
        model=str(micro), device="cpu", threads=1, progress=False, tensorboard=False,
        num_groups=2, group_size=2, max_steps=3, micro_batch_size=16, save_every=1, seed=5,
        estimator="mvpo",
    )  # fmt: skip
    sync_dir, async_dir, resumed_dir = tmp_path / "sync", tmp_path / "async", tmp_path / "resumed"
    train(TrainConfig(run_dir=str(sync_dir), iterations=3, vectorization="sync", **base))
    train(TrainConfig(run_dir=str(async_dir), iterations=3, vectorization="async", **base))
    train(TrainConfig(run_dir=str(resumed_dir), iterations=2, vectorization="async", **base))
    train(
        TrainConfig(
            run_dir=str(resumed_dir), iterations=3, vectorization="async", resume=True, **base
        )
    )
    expected = _weights(sync_dir)
    for run_dir in (async_dir, resumed_dir):
        got = _weights(run_dir)
        assert got.keys() == expected.keys()
        assert all(bool((got[k] == expected[k]).all()) for k in expected), run_dir.name
        assert _untimed(run_dir) == _untimed(sync_dir), run_dir.name
