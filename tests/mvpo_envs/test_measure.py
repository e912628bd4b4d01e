"""``mvpo_envs.measure``: the memory, latency and child-process measurements of the scale and
load benchmarks compute what they say, on real processes and real envs."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mvpo_envs import measure
from mvpo_envs.milestone_chain.env import MilestoneChainEnv


def test_percentiles_and_call_timing() -> None:
    assert measure.percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    assert measure.percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.99) == 5.0  # nearest rank
    assert measure.p50_p99([1.0, 2.0, 3.0]) == {"p50": 2.0, "p99": pytest.approx(2.98)}
    seen: list[int] = []
    times = measure.time_calls(seen.append, range(4))
    assert seen == [0, 1, 2, 3] and len(times) == 4 and all(t >= 0 for t in times)
    passes = measure.search_passes(seen.append, [7, 8])
    assert set(passes) == {"search_first_ms", "search_ms"} and seen[-4:] == [7, 8, 7, 8]


def test_memory_of_this_process_and_a_child() -> None:
    rss, hwm = measure.rss_hwm(os.getpid())
    assert 0 < rss <= hwm
    mem = measure.memory()
    assert 0 < mem["uss"] <= mem["rss"] and 0 < mem["pss"] <= mem["rss"]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert measure.memory(child.pid)["rss"] > 0
        both = measure.workers_memory([os.getpid(), child.pid])
        assert both["per_worker"]["rss"] == pytest.approx(mem["rss"], rel=0.5)
        assert both["total"]["rss"] > both["per_worker"]["rss"]
    finally:
        child.kill()
        child.wait()


def test_envs_grow_up_to_the_largest_count_asked_for() -> None:
    made: list[MilestoneChainEnv] = []

    def make() -> MilestoneChainEnv:
        made.append(MilestoneChainEnv())
        return made[-1]

    first, out = measure.load_envs(make, (1, 3, 128), 3)
    assert first is made[0] and len(made) == 3  # 128 > most: never made
    assert sorted(out["mem"]) == ["1", "3"] and out["first_s"] <= out["envs_s"]
    grown = measure.grow_envs(lambda k: MilestoneChainEnv(), (2, 4), 4)
    assert len(grown["envs"]) == 4 and sorted(grown["mem"]) == ["2", "4"]


def test_async_workers_step_and_report_their_memory() -> None:
    out = measure.async_workers(functools.partial(MilestoneChainEnv), 2, ["look", "look"])
    assert out["workers"] == 2 and len(out["step_s"]) == 2
    assert out["total"]["rss"] > out["per_worker"]["rss"] > 0


def test_run_child_returns_its_last_json_line_and_peak_rss(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(
        textwrap.dedent("""
        import json, sys
        assert sys.argv[1] == "--child"
        block = bytearray(64 * 2**20)  # 64 MiB touched
        print("noise")
        print(json.dumps({"args": sys.argv[2:], "n": len(block)}))
    """)
    )
    out, peak = measure.run_child(script, ["a", "b"])
    assert out == {"args": ["a", "b"], "n": 64 * 2**20} and peak > 64
    script.write_text("raise SystemExit('broken child')")
    with pytest.raises(RuntimeError, match="broken child"):
        measure.run_child(script, [])


def test_a_generator_runs_once_into_its_folder(tmp_path: Path) -> None:
    out = tmp_path / "d5"
    took = measure.generate_once("mvpo_envs.searchqa.generate", ["--distractors", "5"], out)
    assert (out / "corpus.jsonl").is_file() and took > 0
    (out / "corpus.jsonl").unlink()  # not run again: .done holds the seconds
    assert measure.generate_once("mvpo_envs.searchqa.generate", [], out) == pytest.approx(took)
    assert not (out / "corpus.jsonl").exists()


def test_random_play_is_seeded_and_times_the_reset_and_the_steps() -> None:
    from mvpo_envs.vector import GroupedVectorEnv

    venv = GroupedVectorEnv("mvpo/MilestoneChain-v0", 2, 2, vectorization_mode="sync")
    try:
        one = measure.play_random(venv, [0, 1], 5, seed=3, trace=True)
        two = measure.play_random(venv, [0, 1], 5, seed=3, trace=True)
        other = measure.play_random(venv, [0, 1], 5, seed=4, trace=True)
        bare = measure.play_random(venv, [0, 1], 2, seed=3)
    finally:
        venv.close()
    assert one["trace"] == two["trace"] and one["trace"] != other["trace"]
    assert len(one["trace"]) == 6 and len(one["trace"][0]) == 4  # reset + 5 steps, 4 envs
    assert one["reset_s"] > 0 and one["step_s"] > 0 and "trace" not in bare
