"""``mvpo_envs.bench.vector_backends``: a timed play is a function of its seed, so two
backends' traces can be compared."""

from __future__ import annotations

from mvpo_envs.bench.vector_backends import play
from mvpo_envs.vector import GroupedVectorEnv


def test_play_is_a_function_of_its_seed() -> None:
    venv = GroupedVectorEnv("mvpo/MilestoneChain-v0", 2, 2, vectorization_mode="sync")
    try:
        seconds, trace = play(venv, 5, seed=3)
        assert seconds > 0 and len(trace) == 1 + 5  # the reset, then each step
        assert play(venv, 5, seed=3)[1] == trace
        assert play(venv, 5, seed=4)[1] != trace
    finally:
        venv.close()
