"""``mvpo_envs.bench.alfworld_stats_table``: the side-by-side table of game sets, and the ReAct
column's numbers derived from a copy of ReAct's prompt file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvpo_envs.bench.alfworld_game_stats import GameStats, SetStats
from mvpo_envs.bench.alfworld_stats_table import REACT, react_numbers, table


def _game(task: str, receptacles: int, wins: int) -> GameStats:
    return GameStats(task, receptacles, 20, 4, 1.5, receptacles + 3, 8, wins, 5)


def test_table_has_a_column_per_set_and_the_react_column() -> None:
    games = [_game("pick_and_place_simple", 10, 1), _game("pick_two_obj_and_place", 30, 0)]
    text = table([SetStats("mini", games), SetStats("none", [])], REACT, 5, 50)
    header = text.splitlines()[0]
    assert "mini (2 games)" in header and "none (0 games)" in header
    assert "ReAct prompts (18 rooms)" in header
    assert "| receptacles per room | 10–30 (median 20) | – | 10–39 (median 21) |" in text
    assert "| walkthrough length: pick | 8 | – | 6–16 (median 12) (ReAct's runs) |" in text
    assert "| random policy wins in 50 steps | 10.0% (1/10) | – | – |" in text


def test_react_numbers_are_derived_from_the_act_prompts(tmp_path: Path) -> None:
    text = (
        "You are in the middle of a room. Looking quickly around you, you see a bed 1, a desk 1."
        "\nYour task is to: put a pen on the desk.\n> go to desk 1\n"
        "On the desk 1, you see a pen 1, and a lamp 2.\n> take pen 1 from desk 1\n"
    )
    path = tmp_path / "prompts.json"
    path.write_text(json.dumps({"act_put_1": text, "react_put_1": text}))
    assert react_numbers(path) == {  # the react_ prompt is not counted
        "receptacles": [2],
        "seen_per_receptacle": [2],
        "commands": {"pick_and_place_simple": [2]},
    }
    path.write_text(json.dumps({"act_put_1": "no observation"}))
    with pytest.raises(ValueError, match="act_put_1 has no initial observation"):
        react_numbers(path)
