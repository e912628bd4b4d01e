"""The data-parallel update benchmark's batch and section (mvpo_train/study/ddp_update.py)."""

from __future__ import annotations

import numpy as np

from mvpo_train.study import ddp_update
from mvpo_train.study.ddp_update import synthetic_batch, update_lines


class _Tokens:
    """A stand-in policy: a text's token ids are its characters' codes."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]


def test_the_batch_has_a_row_per_step_and_four_candidates_each() -> None:
    batch, old = synthetic_batch(_Tokens(), groups=2, group_size=3, steps=4)
    assert len(batch) == len(old) == 2 * 3 * 4
    assert all(len(c) == 4 for c in batch.extras["cand_ids"])
    assert batch.extras["choice"][:4] == [0, 0, 0, 0]
    assert np.allclose(np.concatenate(old), -np.log(4.0))
    # the last step of an odd rollout is its one rewarded, terminal step
    assert [float(r) for r in batch.reward[4:8]] == [0.0, 0.0, 0.0, 1.0]


def test_the_section_shows_both_process_counts() -> None:
    lines = update_lines(0.1234, 0.0567)
    assert lines[-2:] == ["| 1 | 0.123 |", "| 2 (gloo, loopback) | 0.057 |"]


def test_the_section_times_one_then_two_processes(monkeypatch, capsys) -> None:
    seen: list[tuple[int, int]] = []

    def fake(world_size: int, repeats: int) -> float:
        seen.append((world_size, repeats))
        return 0.1 * world_size

    monkeypatch.setattr(ddp_update, "time_update", fake)
    lines = ddp_update.update_section(5)
    assert seen == [(1, 5), (2, 5)] and lines[-1] == "| 2 (gloo, loopback) | 0.200 |"
    assert "2 gloo processes 0.200 s" in capsys.readouterr().out
