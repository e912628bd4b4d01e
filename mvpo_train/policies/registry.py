"""Policy registry: name -> how to load, check and describe a policy (docs/architecture.md,
"A new policy, backend or tracker").

``TrainConfig.policy`` names an entry; :func:`mvpo_train.factories.load_policy` builds it with
:func:`make_policy` and :func:`mvpo_train.factories.check_runtime` runs its check. The built-in
entries (``lm``, the Hugging Face causal LM; ``encoder``, the sentence-encoder action scorer)
are registered by :mod:`mvpo_train.policies.builtin`, which the package imports with this
module. Register your own with :func:`register_policy` (a decorator or a call) before the
config is built, or expose it as an entry point of the group ``mvpo.policies`` (a loader
registered with the defaults, or a module that registers it); nothing else changes.

This module imports nothing heavy and nothing of the package but its table
(:mod:`mvpo_train.plugin_table`):
:mod:`mvpo_train.config` reads its names to check the ``policy`` field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mvpo_train.plugin_table import PluginTable

__all__ = [
    "POLICIES",
    "PolicyKind",
    "available_policies",
    "get_policy_kind",
    "make_policy",
    "register_policy",
]

#: ``load(cfg, model)``: the policy of a ``TrainConfig``; ``model`` (a checkpoint folder, a
#: warm start) overrides ``cfg.model`` when given
Loader = Callable[[Any, "str | None"], Any]


def _same(model: str) -> str:
    return model


@dataclass(frozen=True)
class PolicyKind:
    """One registered policy.

    * ``load(cfg, model)`` builds it (``model`` overrides ``cfg.model``); bad settings are one
      :class:`~mvpo_train.errors.ConfigError` line.
    * ``check(cfg)`` runs before anything heavy loads (``check_runtime``: e.g. the model folder
      exists); ``None``: nothing to check early.
    * ``action_modes``: the ``TrainConfig.action_mode`` values it plays (``check_runtime``
      refuses another in one line); a score-mode error on a free-text env suggests
      ``--action-mode generate`` only for a policy that generates.
    * ``resolve_model(name)``: ``cfg.model`` as the folder it loads (a bundled name -> its
      folder); identity by default.
    """

    name: str
    load: Loader
    check: Callable[[Any], None] | None = None
    action_modes: tuple[str, ...] = ("score",)
    resolve_model: Callable[[str], str] = _same

    @property
    def generates(self) -> bool:
        """Whether it plays the ``generate`` action mode."""
        return "generate" in self.action_modes


#: the registered policies (built-in: ``lm``, ``encoder``)
POLICIES: PluginTable[PolicyKind] = PluginTable("policy", "policy", "mvpo.policies", PolicyKind)


def register_policy(
    name: str,
    load: Loader | None = None,
    *,
    check: Callable[[Any], None] | None = None,
    action_modes: tuple[str, ...] = ("score",),
    resolve_model: Callable[[str], str] | None = None,
    overwrite: bool = False,
) -> Any:
    """Register ``load(cfg, model) -> policy`` under ``name`` (:class:`PolicyKind` says what
    each keyword means). Usable as ``register_policy("x", load)`` or as the decorator
    ``@register_policy("x")``; a taken name needs ``overwrite=True``. The policy it returns
    satisfies :class:`mvpo_train.policies.Policy`."""
    modes = tuple(action_modes)
    if not modes or any(m not in ("score", "generate") for m in modes):
        raise ValueError(
            f"register_policy({name!r}): action_modes must name score and/or generate, "
            f"got {action_modes!r}"
        )
    return POLICIES.register(
        name,
        load,
        lambda f: PolicyKind(name, f, check, modes, resolve_model or _same),
        overwrite=overwrite,
    )


def available_policies() -> list[str]:
    """Registered policy names, in registration order (the built-in ``lm``, ``encoder`` first),
    then those of the ``mvpo.policies`` entry points not loaded yet."""
    return POLICIES.names()


def get_policy_kind(name: str) -> PolicyKind:
    """The entry of ``name``; an unknown name is one :class:`ConfigError` line listing the
    registered ones."""
    return POLICIES.get(name)


def make_policy(name: str, cfg: Any, model: str | None = None) -> Any:
    """The policy ``name`` for the ``TrainConfig`` ``cfg`` (``model`` overrides ``cfg.model``)."""
    return get_policy_kind(name).load(cfg, model)
