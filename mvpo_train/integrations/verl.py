"""Every mvpo estimator inside verl's PPO trainer (docs/scaling.md, "MVPO inside verl").

verl computes advantages in ``verl.trainer.ppo.ray_trainer.compute_advantage`` and looks
estimators up in its own registry (``verl.trainer.ppo.core_algos.register_adv_est``).
:func:`register_estimators` puts every name of :func:`mvpo_train.available_estimators` there
as ``mvpo_<name>`` (``mvpo_mvpo``, ``mvpo_gigpo``, ``mvpo_grpo``, ...), so a verl user selects
one with ``algorithm.adv_estimator=mvpo_mvpo``.

The estimators need per-step facts that verl's token tensors do not carry: the anchor state,
the signature, the milestones, the trajectory and its group. They are read from the batch's
non-tensor columns, in one of two layouts:

* **step rows** (one row per environment step, as verl-agent lays out its GiGPO batches):
  column ``mvpo_step`` holds one dict per row; the row's advantage goes on every response
  token of the row.
* **trajectory rows** (one row per episode with all turns in one response, as verl's agent
  loops produce them; :mod:`mvpo_train.integrations.verl_agent_loop` writes this layout):
  column ``mvpo_steps`` holds a list of dicts per row, one per turn, and ``mvpo_turn_spans``
  the ``(start, end)`` response-token range of each turn; step ``k``'s advantage goes on the
  tokens of span ``k``.

A step dict has the StepBatch fields (docs/estimators.md §0): ``anchor``, ``signature``,
``milestones``, ``action``, ``reward``, ``terminated``, ``truncated``; optional ``success``
(derived when absent), ``group`` (default: the row's ``uid``, verl's prompt id), ``traj`` and
``t`` (required for step rows; for trajectory rows they default to the row and the turn).
Group and trajectory ids may be any hashable values: they are numbered in order of first
appearance, so the result never depends on how verl shuffles rows.

verl 0.9.1 hands the non-tensor columns only to its own GDPO estimator. :func:`install`
registers the estimators *and* wraps ``compute_advantage`` (in every verl module that imported
it) so that an ``mvpo_*`` estimator receives them; without it the registered function raises
a clear error instead of computing something else.

Nothing is silently wrong: the sum of each row's step rewards must equal the row's
``token_level_rewards`` (else ``ValueError``; ``check_rewards=False`` in :func:`configure` when a
reward model shapes verl's rewards on purpose), spans must lie inside the response and match
the number of steps.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Mapping, Sequence
from enum import Enum
from typing import Any

import numpy as np
import torch

from mvpo_train.batch import StepBatch
from mvpo_train.credit.registry import Estimator, available_estimators, get_estimator

__all__ = [
    "PREFIX",
    "STEP_COLUMN",
    "STEPS_COLUMN",
    "SPANS_COLUMN",
    "compute_token_advantages",
    "configure",
    "estimator_state",
    "install",
    "last_diagnostics",
    "register_estimators",
]

PREFIX = "mvpo_"
STEP_COLUMN = "mvpo_step"
STEPS_COLUMN = "mvpo_steps"
SPANS_COLUMN = "mvpo_turn_spans"
_REQUIRED = ("anchor", "signature", "milestones", "action", "reward", "terminated", "truncated")

_instances: dict[str, Estimator] = {}
_check_rewards: dict[str, bool] = {}
_diagnostics: dict[str, dict[str, Any]] = {}
_wrapper: Any = None


def _estimator(name: str) -> Estimator:
    if name not in _instances:
        _instances[name] = get_estimator(name)
    return _instances[name]


def configure(name: str, *, check_rewards: bool = True, **estimator_config: Any) -> Estimator:
    """(Re)build the estimator ``name`` used under ``mvpo_<name>`` with config fields.

    Estimators with state (MVPO's EMA success and AMP weights) keep it across verl iterations
    in this process; read it with :func:`estimator_state` to save it with verl's checkpoint.
    """
    est = get_estimator(name, **estimator_config)
    _instances[name] = est
    _check_rewards[name] = bool(check_rewards)
    return est


def estimator_state(name: str) -> dict:
    """``state_dict()`` of the estimator behind ``mvpo_<name>``."""
    return _estimator(name).state_dict()


def last_diagnostics(name: str) -> dict[str, Any]:
    """Diagnostics of the latest call of ``mvpo_<name>`` (zero-credit ratio, kappa, ...)."""
    return dict(_diagnostics.get(name, {}))


def _codes(values: Sequence[Hashable]) -> np.ndarray:
    """Number hashable ids in order of first appearance."""
    seen: dict[Hashable, int] = {}
    out = np.empty(len(values), dtype=np.int64)
    for k, v in enumerate(values):
        key = v.item() if isinstance(v, np.generic) else v
        out[k] = seen.setdefault(key, len(seen))
    return out


def _check_step(step: Any, where: str, extra: Sequence[str] = ()) -> Mapping[str, Any]:
    if not isinstance(step, Mapping):
        raise ValueError(f"verl batch: {where} must be a dict of step fields, got {type(step)}")
    missing = [f for f in (*_REQUIRED, *extra) if f not in step]
    if missing:
        raise ValueError(f"verl batch: {where} is missing field(s) {missing}")
    return step


def _collect_steps(
    non_tensor_batch: Mapping[str, Any], index: Sequence[Any] | None, n_rows: int
) -> tuple[list[dict[str, Any]], list[tuple[int, int, int]] | None]:
    """Step dicts with raw ids, and for trajectory rows (row, start, end) per step."""

    def group_of(row: int, step: Mapping[str, Any]) -> Any:
        if "group" in step:
            return step["group"]
        if index is None:
            raise ValueError(
                "verl batch: a step has no 'group' and the batch has no 'uid' column to use"
            )
        return index[row]

    steps: list[dict[str, Any]] = []
    if STEP_COLUMN in non_tensor_batch:
        column = non_tensor_batch[STEP_COLUMN]
        if len(column) != n_rows:
            raise ValueError(f"verl batch: '{STEP_COLUMN}' has {len(column)} rows, not {n_rows}")
        for row, step in enumerate(column):
            s = _check_step(step, f"{STEP_COLUMN}[{row}]", ("traj", "t"))
            steps.append({**s, "group": group_of(row, s)})
        return steps, None
    if STEPS_COLUMN not in non_tensor_batch:
        raise ValueError(
            f"verl batch has neither '{STEP_COLUMN}' (one step per row) nor '{STEPS_COLUMN}' + "
            f"'{SPANS_COLUMN}' (one episode per row) among its non-tensor columns "
            f"{sorted(non_tensor_batch)}: record them in the rollout (the mvpo agent loop does)"
        )
    if SPANS_COLUMN not in non_tensor_batch:
        raise ValueError(f"verl batch: '{STEPS_COLUMN}' needs '{SPANS_COLUMN}' beside it")
    lists, spans = non_tensor_batch[STEPS_COLUMN], non_tensor_batch[SPANS_COLUMN]
    if len(lists) != n_rows or len(spans) != n_rows:
        raise ValueError(
            f"verl batch: '{STEPS_COLUMN}'/'{SPANS_COLUMN}' have {len(lists)}/{len(spans)} rows, "
            f"not {n_rows}"
        )
    where: list[tuple[int, int, int]] = []
    for row in range(n_rows):
        row_steps, row_spans = list(lists[row]), list(spans[row])
        if len(row_steps) != len(row_spans):
            raise ValueError(
                f"verl batch: row {row} has {len(row_steps)} steps but {len(row_spans)} spans"
            )
        for t, (step, span) in enumerate(zip(row_steps, row_spans, strict=True)):
            s = _check_step(step, f"{STEPS_COLUMN}[{row}][{t}]")
            start, end = (int(x) for x in span)
            where.append((row, start, end))
            steps.append(
                {**s, "group": group_of(row, s), "traj": s.get("traj", row), "t": s.get("t", t)}
            )
    return steps, where


def compute_token_advantages(
    name: str,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    non_tensor_batch: Mapping[str, Any],
    index: Sequence[Any] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages of estimator ``name`` on verl's response tokens, and the returns (equal).

    Builds one :class:`StepBatch` from the non-tensor step records, calls
    ``get_estimator(name)`` on it, and scatters each step's advantage onto its tokens.
    """
    n_rows, length = response_mask.shape
    steps, where = _collect_steps(non_tensor_batch, index, n_rows)
    group_codes = _codes([s["group"] for s in steps])
    traj_codes = _codes([(s["group"], s["traj"]) for s in steps])
    rows = []
    for s, g, i in zip(steps, group_codes, traj_codes, strict=True):
        row = {f: s[f] for f in _REQUIRED}
        row.update(group=int(g), traj=int(i), t=int(s["t"]), milestones=tuple(s["milestones"]))
        if "success" in s:
            row["success"] = bool(s["success"])
        rows.append(row)
    batch = StepBatch.from_steps(rows)
    advantages, diagnostics = _estimator(name)(batch)
    _diagnostics[name] = diagnostics

    row_of_step = (
        np.arange(n_rows) if where is None else np.asarray([w[0] for w in where], dtype=np.int64)
    )
    if _check_rewards.get(name, True):
        step_sum = np.zeros(n_rows)
        np.add.at(step_sum, row_of_step, batch.reward)
        token_sum = token_level_rewards.detach().double().sum(-1).cpu().numpy()
        bad = np.flatnonzero(np.abs(step_sum - token_sum) > 1e-4 * (1.0 + np.abs(token_sum)))
        if bad.size:
            r = int(bad[0])
            raise ValueError(
                f"verl batch row {r}: the steps' rewards sum to {step_sum[r]:.6g} but "
                f"token_level_rewards sum to {token_sum[r]:.6g} ({bad.size} rows differ); "
                "pass check_rewards=False to configure() if verl shapes rewards on purpose"
            )

    out = torch.zeros((n_rows, length), dtype=torch.float32, device=response_mask.device)
    if where is None:
        out += torch.as_tensor(advantages, dtype=torch.float32, device=out.device)[:, None]
    else:
        previous_end = dict.fromkeys(range(n_rows), 0)
        for (row, start, end), a in zip(where, advantages, strict=True):
            if not previous_end[row] <= start <= end <= length:
                raise ValueError(
                    f"verl batch row {row}: turn span ({start}, {end}) overlaps the previous "
                    f"turn or lies outside the response (length {length})"
                )
            previous_end[row] = end
            out[row, start:end] = float(a)
    out = out * response_mask.to(out.dtype)
    return out, out.clone()


def _registered_fn(name: str) -> Any:
    def compute(
        token_level_rewards: torch.Tensor,
        response_mask: torch.Tensor,
        config: Any = None,
        index: Any = None,
        non_tensor_batch: Mapping[str, Any] | None = None,
        **_: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if non_tensor_batch is None:
            raise RuntimeError(
                f"verl called '{PREFIX}{name}' without the batch's non-tensor columns; call "
                "mvpo_train.integrations.verl.install() in the driver before training"
            )
        return compute_token_advantages(
            name, token_level_rewards, response_mask, non_tensor_batch, index
        )

    compute.__name__ = f"compute_{PREFIX}{name}_advantage"
    compute.__doc__ = f"mvpo estimator '{name}' for verl (see mvpo_train.integrations.verl)."
    return compute


_registered: dict[str, Any] = {}


def register_estimators() -> list[str]:
    """Register ``mvpo_<name>`` in verl's advantage-estimator registry; returns the names."""
    from verl.trainer.ppo import core_algos

    names = []
    for name in available_estimators():
        verl_name = PREFIX + name
        fn = _registered.setdefault(verl_name, _registered_fn(name))
        core_algos.register_adv_est(verl_name)(fn)
        names.append(verl_name)
    return names


def _estimator_name(adv_estimator: Any) -> str:
    return str(adv_estimator.value if isinstance(adv_estimator, Enum) else adv_estimator)


def install() -> list[str]:
    """Register the estimators and let verl's ``compute_advantage`` pass them the columns.

    Idempotent. Patches ``compute_advantage`` in every loaded ``verl.*`` module that imported
    it by name (``ray_trainer``, the v1 trainer's utilities, the experimental trainers); other
    estimators go through verl's original function unchanged.
    """
    global _wrapper
    names = register_estimators()
    if _wrapper is not None:
        return names
    import verl.trainer.ppo.ray_trainer as ray_trainer
    import verl.trainer.ppo.v1.utils  # noqa: F401  (imports compute_advantage by name)

    original = ray_trainer.compute_advantage

    def compute_advantage(data: Any, adv_estimator: Any, *args: Any, **kwargs: Any) -> Any:
        name = _estimator_name(adv_estimator)
        if not name.startswith(PREFIX) or name not in _registered:
            return original(data, adv_estimator, *args, **kwargs)
        if "response_mask" not in data.batch.keys():
            data.batch["response_mask"] = ray_trainer.compute_response_mask(data)
        advantages, returns = compute_token_advantages(
            name[len(PREFIX) :],
            data.batch["token_level_rewards"],
            data.batch["response_mask"],
            data.non_tensor_batch,
            data.non_tensor_batch.get("uid"),
        )
        data.batch["advantages"] = advantages
        data.batch["returns"] = returns
        return data

    compute_advantage.__wrapped__ = original  # type: ignore[attr-defined]
    for module_name, module in list(sys.modules.items()):
        if (
            module_name.startswith("verl.")
            and getattr(module, "compute_advantage", None) is original
        ):
            module.compute_advantage = compute_advantage
    _wrapper = compute_advantage
    return names
