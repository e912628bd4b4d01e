"""``mvpo-play``: play an mvpo environment yourself at the terminal.

Shows the observation, the task, the signature, the milestones fired so far and the
admissible actions. Type an action, a number (the n-th admissible action), ``reset`` or
``quit``. An admissible *template* such as WebShop's ``search[<query>]`` asks for the text
to put in its brackets; an empty line sends nothing.

Examples::

    mvpo-play mvpo/ALFWorld-v0 --preset mini --split eval --seed 3
    mvpo-play mvpo/WebShop-v0 --data-dir ~/webshop/data --goal-source human --split test
    mvpo-play mvpo/WebShop-v0 --kw protocol=strict --kw reward=fixed

A bad argument (unknown env id, split, preset, keyword, missing folder) prints one line and
exits with status 2 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import gymnasium as gym

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.action_templates import TAG_TEMPLATE, TASK_SLOTS, TEMPLATE, fill_template
from mvpo_envs.cli_args import FlagSpellingParser, int_at_least

__all__ = ["TAG_TEMPLATE", "TASK_SLOTS", "TEMPLATE", "fill_template", "main", "play"]

HELP_LINE = "type an action, its number, 'reset' or 'quit'"


class _Parser(FlagSpellingParser):
    """argparse, but a usage error is one line (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = _Parser(
        prog="mvpo-play", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("env_id", nargs="?", default="mvpo/ALFWorld-v0", help="environment id")
    p.add_argument(
        "--seed",
        type=int_at_least(0),
        default=0,
        help="task = seed mod number of tasks (an int >= 0)",
    )
    p.add_argument("--split", default=None, help="data split (env-specific; default: env default)")
    p.add_argument("--data-dir", default=None, help="the benchmark's own data folder")
    p.add_argument("--preset", default=None, help="ALFWorld: bundled game set (e.g. mini)")
    p.add_argument("--goal-source", default=None, help="WebShop: synthetic or human goals")
    p.add_argument("--abstraction", default=None, help="abstraction name or 'module:attr'")
    p.add_argument(
        "--kw",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other env keyword (VALUE read as JSON if it parses, else as text)",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p.parse_args(argv)


def env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The ``gym.make`` keywords the command line asks for (unset options are left out)."""
    kwargs: dict[str, Any] = {
        k: v
        for k, v in (
            ("split", args.split),
            ("data_dir", args.data_dir),
            ("preset", args.preset),
            ("goal_source", args.goal_source),
            ("abstraction", args.abstraction),
        )
        if v is not None
    }
    for item in args.kw:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--kw expects KEY=VALUE, got {item!r}")
        try:
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = value
    return kwargs


def resolve_action(line: str, admissible: list[str], read: Callable[[str], str]) -> str | None:
    """The action a typed line means, or ``None`` when nothing should be sent.

    A number picks an admissible action (one out of range raises :class:`IndexError` naming
    the range: nothing is sent, no step spent); an admissible template (``search[<query>]``, or
    SearchQA's ``<search> query </search>``) asks for its slot text (a typed ``search[<r>]`` is a query and goes as it is); an empty line, or an empty slot, sends nothing.
    """
    line = line.strip()
    if not line:
        return None
    if line.isdigit():
        if int(line) >= len(admissible):
            last = f"0..{len(admissible) - 1}" if admissible else "none listed"
            raise IndexError(f"no action number {line} (admissible: {last})")
        line = admissible[int(line)]
    m = TEMPLATE.match(line) if line in admissible else None
    tag = TAG_TEMPLATE.match(line) if line in admissible and m is None else None
    if m is not None or tag is not None:
        slot = m["slot"] if m is not None else tag["slot"]  # type: ignore[index]
        try:
            text = read(f"{slot}> ").strip()
        except EOFError:
            return None
        if not text:
            return None
        return f"{m['head']}[{text}]" if m is not None else f"<{tag['tag']}> {text} </{tag['tag']}>"  # type: ignore[index]
    return line


def play(env: gym.Env, seed: int, read: Callable[[str], str] | None = None, write=print) -> float:
    """Interactive loop; returns the total reward of the last episode (``read``: ``input``)."""
    read = read or input
    obs, info = env.reset(seed=seed)
    total, step = 0.0, 0
    write(_screen(obs, info, step, total))
    while True:
        try:
            line = read("> ").strip()
        except EOFError:
            return total
        if line in ("quit", "exit", "q"):
            return total
        if line == "reset":
            obs, info = env.reset()
            total, step = 0.0, 0
            write(_screen(obs, info, step, total))
            continue
        try:
            action = resolve_action(line, info["admissible_actions"], read)
        except IndexError as err:  # an out-of-range number: said, no step spent
            write(f"({err}; nothing sent)")
            continue
        if action is None:
            write(f"(nothing sent: {HELP_LINE})")
            continue
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        step += 1
        write(_screen(obs, info, step, total))
        if terminated or truncated:
            write("*** episode over: " + ("won" if info.get("won") else "time limit") + " ***")
            return total


def _screen(obs: str, info: dict, step: int, total: float) -> str:
    fired = [k for k, v in info.get("progress", {}).items() if v]
    actions = "  ".join(f"[{i}] {a}" for i, a in enumerate(info.get("admissible_actions", [])))
    return "\n".join(
        [
            "=" * 72,
            obs,
            "-" * 72,
            f"task: {info.get('task', '')}   step {step}   return {total:g}"
            + ("   (invalid action)" if info.get("invalid_action") else ""),
            f"signature: {info.get('signature', '')}",
            f"milestones: {', '.join(fired) or '-'}"
            + (f"   (new: {', '.join(info['milestones'])})" if info.get("milestones") else ""),
            f"actions: {actions}",
        ]
    )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        env = gym.make(args.env_id, **env_kwargs(args))
    except (gym.error.Error, ValueError, TypeError, KeyError, OSError) as exc:
        if args.debug:
            raise
        print(f"mvpo-play: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    try:
        play(env, args.seed)
    except (ValueError, KeyError, IndexError, OSError) as exc:
        if args.debug:
            raise
        print(f"mvpo-play: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
