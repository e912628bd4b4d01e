"""Policies behind one protocol and one name -> loader registry (docs/architecture.md, "A new
policy, backend or tracker").

* :class:`Policy` (:mod:`mvpo_train.policies.protocol`): what the loop calls on a policy;
* :func:`register_policy`, :func:`make_policy`, :func:`available_policies`,
  :func:`get_policy_kind` (:mod:`mvpo_train.policies.registry`): ``TrainConfig.policy`` names
  an entry;
* the built-in entries ``lm`` and ``encoder`` (:mod:`mvpo_train.policies.builtin`), registered
  when this package is imported.

The policy classes keep their modules: :class:`mvpo_train.policy.Policy` (the Hugging Face LM)
and :mod:`mvpo_train.encoder_policy`.
"""

from __future__ import annotations

from mvpo_train.policies import builtin as _builtin  # noqa: F401  (registers lm, encoder)
from mvpo_train.policies.protocol import Generates, Policy
from mvpo_train.policies.registry import (
    PolicyKind,
    available_policies,
    get_policy_kind,
    make_policy,
    register_policy,
)

__all__ = [
    "Generates",
    "Policy",
    "PolicyKind",
    "available_policies",
    "get_policy_kind",
    "make_policy",
    "register_policy",
]
