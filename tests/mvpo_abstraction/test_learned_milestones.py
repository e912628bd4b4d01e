"""The milestone learner on cluster sequences: proposal, scoring, selection, names, seeds."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mvpo_abstraction.learned_milestones import (
    Event,
    MilestoneLearner,
    cluster_label,
    unique_labels,
)

NAMES = [cluster_label(f"room {c} text") for c in range(6)]


def _episodes(seed: int = 0, n: int = 40):
    """Cluster 3 is reached in successful episodes only; cluster 1 in every episode."""
    rng = np.random.default_rng(seed)
    eps, outs = [], []
    for i in range(n):
        win = i % 2 == 0
        path = [0, 1, *rng.integers(1, 3, size=3).tolist()]
        if win:
            path += [3, 4]
        eps.append(path)
        outs.append(1.0 if win else 0.0)
    return eps, outs


def test_predictive_event_is_selected_and_uninformative_ones_are_not():
    eps, outs = _episodes()
    events = MilestoneLearner(top_k=3, min_support=3).fit(eps, outs, NAMES)
    names = [e.name for e in events]
    assert names[0] in {f"visit:{NAMES[3]}", f"visit:{NAMES[4]}", f"move:{NAMES[3]}>{NAMES[4]}"}
    assert events[0].score > 0.5 and events[0].support == 20
    assert f"visit:{NAMES[1]}" not in names  # occurs in every episode: predicts nothing
    # visit 3, visit 4 and move 3>4 occur in exactly the same episodes: only one is kept
    same = {f"visit:{NAMES[3]}", f"visit:{NAMES[4]}", f"move:{NAMES[3]}>{NAMES[4]}"}
    assert len(same & set(names)) == 1
    assert all(e.score > 0 for e in events) and len(events) <= 3
    # no chosen event occurs only where another chosen one does (e.g. move 2>3 after visit 3)
    occ = MilestoneLearner().candidates(eps)
    sets = [occ[(e.kind, e.src, e.dst)] for e in events]
    assert not any(
        i != j and not (sets[i] & ~sets[j]).any()
        for i in range(len(sets))
        for j in range(len(sets))
    )
    assert not any(n.startswith("move:") and n.endswith(NAMES[3]) for n in names)


def test_tracker_semantics_start_cluster_never_counts():
    learner = MilestoneLearner(min_support=1)
    occ = learner.candidates([[2, 2, 5], [5, 2]])
    assert occ[("visit", -1, 5)].tolist() == [True, False]  # episode 2 starts in 5
    assert occ[("visit", -1, 2)].tolist() == [False, True]
    assert occ[("move", 2, 5)].tolist() == [True, False]
    assert ("move", 2, 2) not in occ


def test_deterministic_under_seed_and_independent_of_episode_order():
    eps, outs = _episodes(seed=1)
    a = MilestoneLearner(top_k=4, seed=7).fit(eps, outs, NAMES)
    b = MilestoneLearner(top_k=4, seed=7).fit(eps, outs, NAMES)
    assert a == b
    perm = np.random.default_rng(0).permutation(len(eps))
    c = MilestoneLearner(top_k=4, seed=7).fit(
        [eps[i] for i in perm], [outs[i] for i in perm], NAMES
    )
    assert [e.name for e in c] == [e.name for e in a]


def test_names_follow_the_cluster_content_not_the_cluster_id():
    eps, outs = _episodes()
    relabel = {0: 5, 1: 2, 2: 1, 3: 0, 4: 3, 5: 4}  # a refit that numbers clusters differently
    names2 = [""] * 6
    for old, new in relabel.items():
        names2[new] = NAMES[old]
    eps2 = [[relabel[c] for c in ep] for ep in eps]
    a = MilestoneLearner(top_k=3).fit(eps, outs, NAMES)
    b = MilestoneLearner(top_k=3).fit(eps2, outs, names2)
    assert [e.name for e in a] == [e.name for e in b]
    assert [e.dst for e in a] != [e.dst for e in b]


def test_min_support_and_bad_inputs():
    eps, outs = _episodes(n=10)
    assert MilestoneLearner(min_support=5).fit(eps, outs, NAMES)  # 5 wins: enough
    rare = [[0, 1, 2]] * 18 + [[0, 1, 5]] * 2  # cluster 5: two episodes, both won
    rare_out = [0.0] * 9 + [1.0] * 9 + [1.0, 1.0]
    two = {e.name for e in MilestoneLearner(min_support=2).fit(rare, rare_out, NAMES)}
    three = {e.name for e in MilestoneLearner(min_support=3).fit(rare, rare_out, NAMES)}
    assert any(n.endswith(NAMES[5]) for n in two)
    assert not any(n.endswith(NAMES[5]) for n in three)
    with pytest.raises(ValueError, match="2\\*min_support"):
        MilestoneLearner(min_support=6).fit(eps, outs, NAMES)
    with pytest.raises(ValueError, match="same outcome"):
        MilestoneLearner().fit(eps, [0.0] * len(eps), NAMES)
    with pytest.raises(ValueError, match="outcomes"):
        MilestoneLearner().fit(eps, outs[:-1], NAMES)
    with pytest.raises(ValueError, match="kinds"):
        MilestoneLearner(kinds=("teleport",))


def test_event_fires():
    visit, move = Event("v", "visit", dst=3), Event("m", "move", dst=3, src=1)
    assert visit.fires(None, 3) and not visit.fires(3, 2)
    assert move.fires(1, 3) and not move.fires(None, 3) and not move.fires(2, 3)
    assert cluster_label("You arrive at Countertop 1.") == "arrive-countertop-1"
    assert cluster_label("a") != cluster_label("b")


HELP = (
    "Available commands:\n  look:                             look around your current location\n"
    "  go to (receptacle):               move to a receptacle\n"
    "  examine (something):              examine something more closely. Then act.\n"
)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("You open the fridge 1. The fridge 1 is open. In it, you see an egg 2.", "open-fridge-1"),
        ("You pick up the apple 1 from the countertop 1.", "pick-up-apple"),
        ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking "
         "quickly around you, you see a drawer 1.\n\nYour task is to: put a cd in a safe.",
         "middle-room"),
        (HELP, "help"),  # never a name taken from the help text
        ("WebShop [SEP] Instruction: [SEP] Find me yoga pants [SEP] Search", "search"),
        ("Instruction: [SEP] Find me a mug [SEP] Back to Search [SEP] Page 1 (Total results: "
         "24) [SEP] Next >", "back-search"),
        ("Thank you for shopping with us! [SEP] Your code: [SEP] None", "thank-shopping"),
        ("", "empty"),
    ],
)  # fmt: skip
def test_cluster_labels_are_short_readable_content_words(text, label):
    assert cluster_label(text) == label


def test_shared_labels_get_a_short_hash_of_their_text():
    texts = ["You arrive at shelf 1. It is empty.", "You arrive at shelf 1. You see a cd."]
    labels = unique_labels([cluster_label(t) for t in texts] + ["help"], [*texts, HELP])
    assert labels[2] == "help" and labels[0] != labels[1]
    assert all(re.fullmatch(r"arrive-shelf-1~[0-9a-f]{4}", x) for x in labels[:2])
