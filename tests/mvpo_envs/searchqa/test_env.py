"""``mvpo/SearchQA-v0``: Gymnasium API, the info contract, Search-R1's protocol, bad input."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.base import INFO_KEYS
from mvpo_envs.searchqa.env import SearchQAEnv
from mvpo_envs.searchqa.protocol import ACTION_TEMPLATES, INVALID_FEEDBACK
from mvpo_envs.searchqa.retrievers import clear_shared


@pytest.fixture()
def env(bm25):
    env = gym.make("mvpo/SearchQA-v0", split="test", retriever=bm25)
    yield env
    env.close()


@pytest.mark.filterwarnings("ignore:.*alternative render modes")
def test_check_env(bm25) -> None:
    check_env(SearchQAEnv(split="test", retriever=bm25))
    check_env(gym.make("mvpo/SearchQA-v0", retriever=bm25).unwrapped)


def test_make_with_defaults_offline(tmp_path, monkeypatch) -> None:
    clear_shared()  # an earlier test's shared retriever would skip the index build checked here
    monkeypatch.setenv("MVPO_CACHE_DIR", str(tmp_path))
    env = gym.make("mvpo/SearchQA-v0")
    base = env.unwrapped
    assert (base.max_turns, base.max_obs_tokens, base.parse_mode) == (4, 500, "search-r1")
    obs, info = env.reset(seed=0)
    assert set(INFO_KEYS) <= set(info) and obs.endswith(f"Question: {info['task']}\n")
    assert env.unwrapped.retriever.name == "bm25" and env.unwrapped.split == "train"
    assert len(env.unwrapped.items) == 800
    assert any(tmp_path.iterdir())  # the index went to the cache folder


def test_reset_info_contract(env) -> None:
    obs, info = env.reset(seed=7)
    assert set(INFO_KEYS) <= set(info)
    assert info["admissible_actions"] == list(ACTION_TEMPLATES)
    assert info["anchor"] == obs and info["milestones"] == [] and info["signature"] == "s0|none"
    assert set(info["progress"]) == {
        "first_search",
        "answer_retrieved",
        "bridge_retrieved",
        "followup_search",
        "answered",
    }
    assert not any(info["progress"].values())
    assert (
        info["task_id"] == env.unwrapped.items[7].id
        and info["task"] == env.unwrapped.items[7].question
    )
    assert {"em", "f1", "substring_em"} <= set(info) and info["em"] == 0.0
    assert obs.startswith("Answer the given question.")


def test_same_seed_same_question_across_instances_and_retrievers(env, bm25, tmp_path) -> None:
    other = gym.make(
        "mvpo/SearchQA-v0",
        split="test",
        retriever="bm25",
        retriever_kwargs={"cache_dir": str(tmp_path), "k1": 1.2},
    )
    for seed in (0, 3, 199, 12345):
        assert env.reset(seed=seed)[1]["task_id"] == other.reset(seed=seed)[1]["task_id"]
    assert env.reset(options={"task_id": "test_0042"})[1]["task_id"] == "test_0042"


def test_search_then_correct_answer(env) -> None:
    obs, info = env.reset(options={"task_index": 0})
    item = env.unwrapped.items[0]
    obs, reward, terminated, truncated, info = env.step(
        f"<think>let me look</think>\n<search> {item.question} </search>"
    )
    assert obs.startswith("\n\n<information>Doc 1(Title: ") and obs.endswith("</information>\n\n")
    assert (
        obs.count("Doc ") == 3 and reward == 0.0 and not terminated and not info["invalid_action"]
    )
    assert info["state"]["num_searches"] == 1 and info["state"]["queries"] == [item.question]
    assert "first_search" in info["milestones"]
    answer = item.golden_answers[0].upper() + "."  # EM normalises case and punctuation
    obs, reward, terminated, truncated, info = env.step(f"<answer> {answer} </answer>")
    assert (obs, reward, terminated, truncated) == ("", 1.0, True, False)
    assert info["won"] and info["em"] == 1.0 and info["f1"] == 1.0 and info["substring_em"] == 1.0
    assert info["answer"] == answer and info["admissible_actions"] == []
    assert "answered" in info["milestones"]


def test_wrong_answer_scores(env) -> None:
    env.reset(options={"task_index": 1})
    *_, info = env.step("<answer>Nowhere in particular</answer>")
    assert info["em"] == 0.0 and not info["won"]
    env.reset(options={"task_index": 1})
    gold = env.unwrapped.items[1].golden_answers[0]
    obs, reward, terminated, _, info = env.step(f"<answer>I think {gold} maybe</answer>")
    assert reward == 0.0 and terminated and info["substring_em"] == 1.0 and 0.0 < info["f1"] < 1.0


STRICT_INVALID = [
    "",
    "hello",
    "<search></search>",
    "<answer> </answer>",
    "<search>a</search><answer>b</answer>",
    "<search><search>x</search></search>",
    "<search>no end",
    "search[foo]",
    "<Answer>x</Answer>",
    "\x00\x01 <search",
    "x" * 20_000,
]
#: invalid under Search-R1's rule too (the others above are searches or answers there)
SEARCH_R1_INVALID = [
    "",
    "hello",
    "<search>no end",
    "search[foo]",
    "<Answer>x</Answer>",
    "\x00\x01 <search",
    "<answer>a</search>",
    "x" * 20_000,
]


@pytest.mark.parametrize(
    "parse_mode,action",
    [("strict", a) for a in STRICT_INVALID] + [("search-r1", a) for a in SEARCH_R1_INVALID],
)
def test_malformed_output_is_an_invalid_action(bm25, parse_mode: str, action: str) -> None:
    env = gym.make("mvpo/SearchQA-v0", split="test", retriever=bm25, parse_mode=parse_mode)
    _, before = env.reset(seed=2)
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs == INVALID_FEEDBACK and reward == 0.0 and not terminated and not truncated
    assert info["invalid_action"] and info["state"]["num_invalid"] == 1
    assert info["signature"] == before["signature"] and info["milestones"] == []
    assert info["admissible_actions"] == list(ACTION_TEMPLATES)


@pytest.mark.parametrize(
    "action,kind,content",
    [
        ("<search></search>", "search", ""),  # an empty query is a search in Search-R1
        ("<answer>a</answer><search>q</search>", "answer", "a"),  # first pair after the cut
        ("<search>a</search><answer>b</answer>", "search", "a"),
        ("<search><search>x</search></search>", "search", "<search>x"),
    ],
)
def test_default_parse_is_search_r1s(env, action: str, kind: str, content: str) -> None:
    env.reset(seed=2)
    *_, info = env.step(action)
    assert not info["invalid_action"] and info["state"]["last_action_type"] == kind
    if kind == "search":
        assert info["state"]["queries"] == [content]
    else:
        assert info["state"]["answer"] == content and info["state"]["queries"] == []


def test_non_string_action_raises(env) -> None:
    env.reset(seed=0)
    with pytest.raises(TypeError, match="text action"):
        env.step(3)


def test_search_r1_turn_budget_four_search_turns_then_an_answer_only_turn(bm25) -> None:
    # Search-R1's run_llm_loop: max_turns=4 turns that search, then one turn with do_search=False
    for env in (
        SearchQAEnv(split="test", retriever=bm25),
        gym.make("mvpo/SearchQA-v0", split="test", retriever=bm25, max_episode_steps=5),
    ):
        _, info = env.reset(seed=4)
        for _ in range(4):
            obs, _, terminated, truncated, info = env.step(f"<search>{info['task']}</search>")
            assert obs.count("Doc ") == 3 and not terminated and not truncated
        assert info["admissible_actions"] == ["<answer> text </answer>"]
        obs, reward, terminated, truncated, info = env.step("<search>one more</search>")
        assert obs == "\n\n<information></information>\n\n" and reward == 0.0
        assert truncated and not terminated and not info["invalid_action"]
        assert info["state"]["num_searches"] == 5 and info["admissible_actions"] == []
        assert info["state"]["last_hits"] == [] and info["state"]["turn"] == 5


def test_final_turn_answer_scores_and_invalid_output_ends_the_episode(bm25) -> None:
    env = SearchQAEnv(split="test", retriever=bm25)
    gold = env.items[3].golden_answers[0]
    env.reset(options={"task_index": 3})
    for _ in range(4):
        env.step("<search>x</search>")
    assert env.step(f"<answer>{gold}</answer>")[1:4] == (1.0, True, False)
    env.reset(options={"task_index": 3})
    for _ in range(4):
        env.step("hello")
    obs, reward, terminated, truncated, info = env.step("still no tag")
    assert obs == INVALID_FEEDBACK and (reward, terminated, truncated) == (0.0, False, True)
    assert info["invalid_action"] and info["state"]["num_invalid"] == 5


def test_legacy_turns_every_step_searches_until_the_time_limit(bm25) -> None:
    env = gym.make(
        "mvpo/SearchQA-v0", split="test", retriever=bm25, max_turns=None, max_episode_steps=4
    )
    _, info = env.reset(seed=4)
    for turn in range(4):
        obs, _, terminated, truncated, info = env.step(f"<search>{info['task']}</search>")
        assert obs.count("Doc ") == 3 and not terminated and truncated == (turn == 3)
        assert info["admissible_actions"] == list(ACTION_TEMPLATES)
    assert truncated and info["state"]["num_searches"] == 4


def test_observation_cut_to_its_token_budget(bm25) -> None:
    from mvpo_envs.searchqa.budget import resolve_tokenizer

    tok = resolve_tokenizer("tiny-qwen2")
    full_env = SearchQAEnv(split="test", retriever=bm25, topk=40, max_obs_tokens=None)
    cut_env = SearchQAEnv(split="test", retriever=bm25, topk=40)  # default budget: 500
    full_env.reset(seed=1)
    cut_env.reset(seed=1)
    action = "<search> town river population founded region </search>"
    full, *_, full_info = full_env.step(action)
    cut, *_, info = cut_env.step(action)
    n_full = len(tok.encode(full, add_special_tokens=False).ids)
    n_cut = len(tok.encode(cut, add_special_tokens=False).ids)
    assert n_full > 500 and 495 <= n_cut <= 500  # a re-tokenised prefix may merge at the end
    assert full.startswith(cut) and not cut.endswith("</information>\n\n")
    assert info["state"]["observation_cut"] and not full_info["state"]["observation_cut"]
    # the retriever's hits are recorded whole either way
    assert info["state"]["retrieved_ids"] == full_info["state"]["retrieved_ids"]
    with pytest.raises(FileNotFoundError, match="tokenizer"):
        SearchQAEnv(split="test", retriever=bm25, tokenizer="/nonexistent/model")
    with pytest.raises(ValueError, match="max_obs_tokens"):
        SearchQAEnv(split="test", retriever=bm25, max_obs_tokens=0)


def test_steps_after_the_answer_are_invalid(bm25) -> None:
    env = SearchQAEnv(split="test", retriever=bm25)
    env.reset(seed=0)
    env.step("<answer>x</answer>")
    obs, reward, terminated, _, info = env.step("<search>more</search>")
    assert obs == INVALID_FEEDBACK and info["invalid_action"] and reward == 0.0
    assert info["state"]["num_searches"] == 0 and info["admissible_actions"] == []


def test_raw_action_text_is_kept(env) -> None:
    env.reset(seed=0)
    *_, info = env.step("<search>Motra   River\nLake</search>")
    assert info["state"]["queries"] == ["Motra   River\nLake"]
    assert info["state"]["transcript"][-1]["action"] == "<search>Motra   River\nLake</search>"


def test_options_topk_prompt_and_parse_mode(bm25) -> None:
    env = gym.make(
        "mvpo/SearchQA-v0",
        split="test",
        retriever=bm25,
        topk=5,
        prompt="question",
        parse_mode="strict",
    )
    obs, info = env.reset(seed=0)
    assert obs == info["task"]
    obs, *_, info = env.step("<search>Gilholm</search><answer>too early</answer>")
    assert obs == INVALID_FEEDBACK and info["invalid_action"]
    obs, *_ = env.step("<search>Gilholm</search>")
    assert obs.count("Doc ") == 5
    with pytest.raises(ValueError):
        SearchQAEnv(split="test", retriever=bm25, prompt="chat")
    with pytest.raises(ValueError):
        SearchQAEnv(split="test", retriever=bm25, parse_mode="loose")
    with pytest.raises(ValueError, match="splits"):
        SearchQAEnv(split="valid", retriever=bm25)


def test_eval_is_test(bm25) -> None:
    assert (
        SearchQAEnv(split="eval", retriever=bm25).task_ids
        == SearchQAEnv(split="test", retriever=bm25).task_ids
    )


def test_real_flashrag_data(realdata: Path, tmp_path: Path) -> None:
    folder = realdata / "searchqa"
    env = gym.make(
        "mvpo/SearchQA-v0",
        corpus_path=folder / "wiki18_sample_1000.jsonl",
        qa_path=folder / "nq_test_17.jsonl",
        retriever_kwargs={"cache_dir": str(tmp_path)},
    )
    obs, info = env.reset(seed=0)
    assert (
        info["task_id"] == "test_0" and info["task"] == "who got the first nobel prize in physics"
    )
    assert obs.endswith("Question: who got the first nobel prize in physics?\n")
    obs, *_, info = env.step("<search>Evan Morris lobbyist</search>")
    assert 'Doc 1(Title: "Evan Morris")' in obs
    assert not info["state"]["bridge_seen"] and info["state"]["question_type"] == ""
    *_, info = env.step("<answer>Wilhelm Conrad Röntgen</answer>")
    assert info["won"] and info["em"] == 1.0
    with pytest.raises(ValueError, match="corpus_path"):
        SearchQAEnv(qa_path=folder / "nq_test_17.jsonl")


def test_render(bm25) -> None:
    env = SearchQAEnv(split="test", retriever=bm25, render_mode="ansi")
    env.reset(seed=0)
    assert "[signature] s0|none" in env.render()


def test_query_cache_size_is_a_retriever_keyword(tmp_path) -> None:
    env = gym.make(
        "mvpo/SearchQA-v0",
        split="test",
        retriever_kwargs={"cache_dir": str(tmp_path), "query_cache_size": 0},
    )
    retriever = env.unwrapped.retriever
    assert retriever.query_cache_size == 0
    env.reset(seed=0)
    obs, *_ = env.step("<search>Gilholm</search>")
    assert obs.count("Doc ") == 3 and "_qcache" not in retriever.__dict__  # nothing cached
    cached = SearchQAEnv(
        split="test", retriever_kwargs={"cache_dir": str(tmp_path), "query_cache_size": 2}
    )
    cached.reset(seed=0)
    for query in ("a town", "a river", "a book"):
        cached.step(f"<search>{query}</search>")
    assert len(cached.retriever.__dict__["_qcache"]) == 2  # LRU bound honoured
    with pytest.raises(ValueError, match="query_cache_size"):
        SearchQAEnv(split="test", retriever_kwargs={"query_cache_size": -1})


def test_tokenizer_can_be_a_folder_an_object_or_a_cached_hub_id(bm25) -> None:
    from transformers import AutoTokenizer

    from mvpo_envs.searchqa.budget import resolve_tokenizer
    from mvpo_envs.searchqa.data import project_data_dir

    folder = project_data_dir() / "models" / "tiny-qwen2"
    outputs = []
    for tok in (folder, str(folder / "tokenizer.json"), AutoTokenizer.from_pretrained(folder)):
        env = SearchQAEnv(split="test", retriever=bm25, max_obs_tokens=30, tokenizer=tok)
        env.reset(seed=1)
        outputs.append(env.step("<search> Gilholm </search>")[0])
    assert outputs[0] == outputs[1] == outputs[2] and outputs[0].startswith("\n\n<information>")
    assert len(resolve_tokenizer(folder).encode(outputs[0], add_special_tokens=False).ids) <= 30
    with pytest.raises(FileNotFoundError, match="local Hugging Face cache"):
        resolve_tokenizer("Nobody/not-a-cached-model")
    with pytest.raises(TypeError, match="tokenizer"):
        resolve_tokenizer(3)
