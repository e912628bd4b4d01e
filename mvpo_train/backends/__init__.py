"""Generation backends for the ``generate`` action mode, behind one protocol and one registry.

docs/architecture.md, "A new policy, backend or tracker". A backend turns prompt token ids into
response token ids; the trainer's policy always recomputes the log-probs (the "Logp+Ref" phase
of the MVPO paper's Table 3), so a backend never has to return them.

Built-in names (``TrainConfig.backend``):

* ``hf`` (default): :class:`mvpo_train.backends.hf.HFBackend`, HF ``generate`` on the training
  model itself; nothing to sync.
* ``vllm`` (optional extra ``mvpo[vllm]``, imported lazily):
  :class:`mvpo_train.backends.vllm.VLLMBackend`, a vLLM engine on the same GPU whose weights
  are reloaded from the training model after every update (:meth:`Backend.sync_weights`).

Register your own with :func:`register_backend` (a decorator or a call), or as an entry point of the
group ``mvpo.backends``: ``factory(policy, **keywords) -> Backend``.
:func:`mvpo_train.factories.make_generation_backend` passes ``top_p`` and ``seed`` and, for each
``config_fields`` entry ``keyword -> field``, the ``TrainConfig`` field's value (vLLM:
``gpu_memory_utilization`` from ``vllm_gpu_memory_utilization``). This module imports nothing heavy:
the config reads its names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from mvpo_train.plugin_table import PluginTable

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendKind",
    "available_backends",
    "get_backend_kind",
    "make_backend",
    "register_backend",
]


@runtime_checkable
class Backend(Protocol):
    """What the rollout needs from a generator."""

    name: str

    def generate(
        self, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, greedy: bool = False
    ) -> list[list[int]]:
        """One response (token ids, ending with EOS when one was produced) per prompt."""
        ...

    def sync_weights(self, model: Any) -> None:
        """Make the generator use ``model``'s current weights."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class BackendKind:
    """One registered backend: ``factory(policy, **keywords)`` and the ``TrainConfig`` fields
    it reads (``config_fields``: keyword -> field name)."""

    name: str
    factory: Callable[..., Backend]
    config_fields: Mapping[str, str] = field(default_factory=dict)


#: the registered backends (built-in: ``hf``, ``vllm``)
BACKENDS: PluginTable[BackendKind] = PluginTable("backend", "backend", "mvpo.backends", BackendKind)


def register_backend(
    name: str,
    factory: Callable[..., Backend] | None = None,
    *,
    config_fields: Mapping[str, str] | None = None,
    overwrite: bool = False,
) -> Any:
    """Register ``factory(policy, **keywords) -> Backend`` under ``name``; usable as a call or
    as the decorator ``@register_backend("x")``. A taken name needs ``overwrite=True``."""
    fields = MappingProxyType(dict(config_fields or {}))
    return BACKENDS.register(
        name, factory, lambda f: BackendKind(name, f, fields), overwrite=overwrite
    )


def available_backends() -> list[str]:
    """Registered backend names, in registration order (the built-in ``hf``, ``vllm`` first),
    then those of the ``mvpo.backends`` entry points not loaded yet."""
    return BACKENDS.names()


def get_backend_kind(name: str) -> BackendKind:
    """The entry of ``name``; an unknown name is one :class:`ConfigError` line listing the
    registered ones."""
    return BACKENDS.get(name)


def make_backend(name: str, policy: Any, **kwargs: Any) -> Backend:
    """The backend ``name`` on ``policy`` (``hf``, ``vllm`` or a registered one)."""
    return get_backend_kind(name).factory(policy, **kwargs)


@register_backend("hf")
def _hf(policy: Any, **kwargs: Any) -> Backend:
    from mvpo_train.backends.hf import HFBackend

    return HFBackend(policy, **kwargs)


@register_backend("vllm", config_fields={"gpu_memory_utilization": "vllm_gpu_memory_utilization"})
def _vllm(policy: Any, **kwargs: Any) -> Backend:
    from mvpo_train.backends.vllm import VLLMBackend  # pip install 'mvpo[vllm]'

    return VLLMBackend(policy, **kwargs)
