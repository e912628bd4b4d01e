"""The wire format of ``mvpo-serve``: request parsing, JSON values, payloads and the schema.

docs/integrations.md ("OpenEnv", "Wire format"). The payloads follow OpenEnv's conventions: a
reset or step answers ``{"observation": {...}, "reward": float | null, "done": bool}`` (the
shape of OpenEnv's ``StepResponse`` and of its WebSocket ``observation`` message), an action is
an object (``{"text": "go to countertop 1"}``), errors are one line. mvpo's observation object
carries everything ``gym.make(env_id).step`` returns::

    {"text": str, "info": {the whole info contract}, "terminated": bool, "truncated": bool}

``done`` is ``terminated or truncated``; ``reward`` is ``null`` at reset (as in OpenEnv).

Every request body is parsed here, strictly: UTF-8 JSON (nesting bounded by
:func:`mvpo_envs.data_files.check_depth`), no duplicated key, no ``NaN``/``Infinity``, an object
with only the documented fields, each of its documented type. Anything else is a
:class:`WireError` carrying the HTTP status and one line naming the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mvpo_envs.base import INFO_KEYS
from mvpo_envs.data_files import DataFileError, check_depth, decode_utf8

#: the largest request body (HTTP) or message (WebSocket) accepted, in bytes
MAX_BODY = 1 << 20
#: the longest action text accepted: the envs' action-space bound (``TextEnv.max_text_length``)
MAX_ACTION_CHARS = 16_384
#: the longest ``session_id`` / ``episode_id`` accepted
MAX_ID_CHARS = 255

RESET_FIELDS = ("seed", "options", "session_id", "episode_id")
STEP_FIELDS = ("action", "session_id")
CLOSE_FIELDS = ("session_id",)
ACTION_FIELDS = ("text",)


class WireError(ValueError):
    """A bad request: ``status`` is the HTTP status to answer, ``str(err)`` the one line."""

    def __init__(self, status: int, message: str, code: str = "BAD_REQUEST"):
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class ResetRequest:
    seed: int | None
    options: dict[str, Any] | None
    session_id: str | None
    episode_id: str | None


@dataclass(frozen=True)
class StepRequest:
    text: str
    session_id: str | None


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise WireError(400, f"duplicated key {key!r} in the request body")
        out[key] = value
    return out


def _refuse_constant(name: str) -> Any:
    raise WireError(400, f"{name} is not a JSON number; refusing the request body")


def parse_body(raw: bytes | str, what: str = "request body") -> dict[str, Any]:
    """Parse one request body (or WebSocket message) into a JSON object, or raise WireError."""
    if len(raw) > MAX_BODY:
        raise WireError(413, f"{what} is larger than {MAX_BODY} bytes", "TOO_LARGE")
    if isinstance(raw, bytes):
        if not raw.strip():
            return {}
        try:
            text = decode_utf8(raw, what)
        except DataFileError as err:
            raise WireError(400, str(err)) from None
    else:
        text = raw
    try:
        check_depth(text, what)
    except DataFileError as err:
        raise WireError(400, str(err)) from None
    try:
        value = json.loads(
            text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant
        )
    except WireError:
        raise
    except json.JSONDecodeError as err:
        raise WireError(
            400, f"{what}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}"
        ) from None
    except ValueError:  # Python refuses an integer literal of more than 4300 digits
        raise WireError(400, f"{what}: an integer of more than 4300 digits") from None
    if not isinstance(value, dict):
        raise WireError(400, f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check_fields(body: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(body) - set(known))
    if unknown:
        raise WireError(400, f"unknown field(s) {unknown} in {where}; known: {list(known)}")


def _optional_id(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise WireError(
            400,
            f"{key} must be a non-empty string of at most {MAX_ID_CHARS} characters "
            f"(or null), got {_type_name(value)}",
        )
    return value


def parse_reset(body: dict[str, Any], where: str = "reset request") -> ResetRequest:
    """``{"seed": int >= 0 | null, "options": object | null, "session_id", "episode_id"}``.

    ``options`` is passed to the env's ``reset`` as given: the env itself names a bad key or
    value (docs/environments.md, "Reset and step edges"), answered as ``400``.
    """
    _check_fields(body, RESET_FIELDS, where)
    seed = body.get("seed")
    if seed is not None and (type(seed) is not int or seed < 0):
        raise WireError(400, f"seed must be an int >= 0 or null, got {_type_name(seed)} {seed!r}")
    options = body.get("options")
    if options is not None and not isinstance(options, dict):
        raise WireError(400, f"options must be an object or null, got {_type_name(options)}")
    return ResetRequest(
        seed, options, _optional_id(body, "session_id"), _optional_id(body, "episode_id")
    )


def parse_action(action: Any, where: str = "action") -> str:
    """``{"text": str}`` -> the action text (at most :data:`MAX_ACTION_CHARS` characters)."""
    if not isinstance(action, dict):
        raise WireError(400, f'{where} must be an object {{"text": str}}, got {_type_name(action)}')
    _check_fields(action, ACTION_FIELDS, where)
    if "text" not in action:
        raise WireError(400, f"{where}.text is required")
    text = action["text"]
    if not isinstance(text, str):
        raise WireError(400, f"{where}.text must be a string, got {_type_name(text)} {text!r}")
    if len(text) > MAX_ACTION_CHARS:
        raise WireError(400, f"{where}.text is longer than {MAX_ACTION_CHARS} characters")
    return text


def parse_step(body: dict[str, Any], where: str = "step request") -> StepRequest:
    """``{"action": {"text": str}, "session_id": str}``."""
    _check_fields(body, STEP_FIELDS, where)
    if "action" not in body:
        raise WireError(400, f"action is required in the {where}")
    return StepRequest(parse_action(body["action"]), _optional_id(body, "session_id"))


def parse_close(body: dict[str, Any]) -> str:
    _check_fields(body, CLOSE_FIELDS, "close request")
    session_id = _optional_id(body, "session_id")
    if session_id is None:
        raise WireError(400, "session_id is required in the close request")
    return session_id


def to_jsonable(value: Any, where: str = "info") -> Any:
    """A value of an info dict as JSON data, types kept: ``bool`` stays ``bool``, ``int`` ``int``.

    NumPy scalars and arrays become their Python values, tuples lists. A value JSON cannot carry
    faithfully (a non-finite float, a non-string key, any other object) raises ``TypeError``
    naming its path: nothing is silently turned into a string.
    """
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{where} is {value}, which JSON cannot carry")
        return value
    if isinstance(value, np.generic):
        return to_jsonable(value.item(), where)
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist(), where)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has a non-string key {key!r}")
            out[key] = to_jsonable(item, f"{where}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"{where} is a {type(value).__name__}, which JSON cannot carry")


def step_payload(
    observation: str,
    reward: float | None,
    terminated: bool,
    truncated: bool,
    info: dict[str, Any],
) -> dict[str, Any]:
    """OpenEnv's ``{"observation", "reward", "done"}`` with mvpo's observation object."""
    if not isinstance(observation, str):
        raise TypeError(f"observation is a {type(observation).__name__}, not text")
    return {
        "observation": {
            "text": observation,
            "info": to_jsonable(info),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
        },
        "reward": None if reward is None else float(to_jsonable(reward, "reward")),
        "done": bool(terminated or truncated),
    }


def encode_reply(payload: dict[str, Any]) -> bytes:
    """A reply as UTF-8 JSON bytes (what the HTTP answer and the WebSocket message carry).

    Text that is not valid Unicode (a lone surrogate such as ``"\\ud800"`` in an env's data;
    the loaders refuse it, docs/environments.md) is a ``500`` :class:`WireError` naming where,
    never a half-sent reply.
    """
    text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise WireError(
            500,
            f"internal error: the reply holds a lone surrogate U+{ord(text[err.start]):04X} "
            f"(character {err.start}), which is not text; the env's data is damaged",
            "INTERNAL_ERROR",
        ) from None


def error_payload(message: str) -> dict[str, str]:
    """The body of every refused HTTP request: one line."""
    return {"error": " ".join(str(message).split())}


def schema(env_id: str) -> dict[str, Any]:
    """``GET /schema``: JSON schemas of the action, the observation and the state."""
    return {
        "action": {
            "title": "MvpoAction",
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "maxLength": MAX_ACTION_CHARS,
                    "description": "the command, e.g. one of info.admissible_actions",
                }
            },
            "required": ["text"],
            "additionalProperties": False,
        },
        "observation": {
            "title": "MvpoObservation",
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "the env's observation text"},
                "info": {
                    "type": "object",
                    "description": f"the info contract of {env_id} (docs/environments.md)",
                    "required": list(INFO_KEYS),
                },
                "terminated": {"type": "boolean"},
                "truncated": {"type": "boolean", "description": "time limit reached"},
            },
            "required": ["text", "info", "terminated", "truncated"],
        },
        "state": {
            "title": "MvpoState",
            "type": "object",
            "properties": {
                "session_id": {"type": "string"},
                "env_id": {"type": "string"},
                "episode_id": {"type": ["string", "null"]},
                "step_count": {"type": "integer"},
                "seed": {"type": ["integer", "null"]},
                "task_id": {"type": ["string", "null"]},
                "done": {"type": "boolean"},
            },
        },
    }
