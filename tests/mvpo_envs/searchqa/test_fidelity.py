"""Differential test: whole episodes against a re-implementation of Search-R1's rollout loop.

docs/fidelity.md ("mvpo/SearchQA-v0") and docs/searchqa.md ("Turns and observation budget").
The reference below is written from Search-R1's rules (``LLMGenerationManager.run_llm_loop``,
``_postprocess_responses``, ``postprocess_predictions``, ``execute_predictions``; the reward
``qa_em.compute_score_em`` over the decoded prompt + responses, with ``extract_solution`` taking
the last ``<answer>`` when there are at least two): it plays the same model outputs as the env
and must give the same observations, the same number of turns and the same reward.
"""

from __future__ import annotations

import random
import re
import string

from mvpo_envs.searchqa.env import SearchQAEnv
from mvpo_envs.searchqa.protocol import INVALID_FEEDBACK, format_information, make_prompt

MAX_TURNS = 4


def _normalize(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def _extract_solution(text: str) -> str | None:
    matches = list(re.finditer(r"<answer>(.*?)</answer>", text, re.DOTALL))
    return matches[-1].group(1).strip() if len(matches) > 1 else None


def _cut(response: str) -> str:
    if "</search>" in response:
        return response.split("</search>")[0] + "</search>"
    if "</answer>" in response:
        return response.split("</answer>")[0] + "</answer>"
    return response


def _action(response: str) -> tuple[str | None, str]:
    m = re.search(r"<(search|answer)>(.*?)</\1>", response, re.DOTALL)
    return (m.group(1), m.group(2).strip()) if m else (None, "")


def search_r1_episode(question, golden, outputs, search):
    """Search-R1's loop for one trajectory: ``(observations, turns, reward)``."""
    context, observations, turns, done = make_prompt(question), [], 0, False
    for turn in range(MAX_TURNS + 1):
        final = turn == MAX_TURNS  # the last generation runs with do_search=False
        response = _cut(outputs[turn])
        kind, content = _action(response)
        turns += 1
        if kind == "answer":
            obs, done = "", True
        elif kind == "search":
            obs = "\n\n<information></information>\n\n" if final else search(content)
        else:
            obs = INVALID_FEEDBACK
        observations.append(obs)
        context += response + ("" if final else obs)  # the final observation is never appended
        if done:
            break
    answer = _extract_solution(context)
    ok = answer is not None and any(_normalize(answer) == _normalize(g) for g in golden)
    return observations, turns, float(ok)


def _outputs(rng: random.Random, item) -> list[str]:
    gold, words = item.golden_answers[0], item.question.rstrip("?").split()
    pool = [
        f"<think>look it up</think>\n<search> {item.question} </search>",
        f"<search>{' '.join(rng.sample(words, min(3, len(words))))}</search>",
        f"<answer> {gold} </answer>",
        f"<think>sure</think><answer>{gold.upper()}.</answer>",
        "<answer> a wrong guess </answer>",
        f"<answer>{gold}</answer><search>more</search>",  # cut after </search>: an answer
        f"<search>{words[-1]}</search><answer>{gold}</answer>",  # a search
        "<search></search>",  # empty query: a search
        "<answer></answer>",  # empty answer
        "I am not sure.",
        "<search>unclosed",
        "<Answer>case</Answer>",
        f"<answer>{gold}</search>",  # cut at </search>, no pair: invalid
    ]
    return [rng.choice(pool) for _ in range(MAX_TURNS + 1)]


def test_episodes_match_search_r1s_loop(bm25) -> None:
    env = SearchQAEnv(split="test", retriever=bm25, max_obs_tokens=None)

    def search(query: str) -> str:
        return format_information(bm25.search([query], 3)[0])

    rng = random.Random(0)
    outcomes = set()
    for episode in range(120):
        index = rng.randrange(len(env.items))
        item = env.items[index]
        outputs = _outputs(rng, item)
        ref_obs, ref_turns, ref_reward = search_r1_episode(
            item.question, item.golden_answers, outputs, search
        )
        env.reset(options={"task_index": index})
        observations, total, turns = [], 0.0, 0
        for output in outputs:
            obs, reward, terminated, truncated, _ = env.step(output)
            observations.append(obs)
            total += reward
            turns += 1
            if terminated or truncated:
                break
        assert (observations, turns, total) == (ref_obs, ref_turns, ref_reward), (
            episode,
            outputs,
        )
        outcomes.add((turns, total))
    # the sample covers early answers, right and wrong, and the full five-turn budget
    assert {t for t, _ in outcomes} >= {1, 2, 5} and {r for _, r in outcomes} == {0.0, 1.0}
