"""Gymnasium registrations of the mvpo environments (docs/environments.md).

The ids come from the env declarations (:mod:`mvpo_envs.declaration`): each env package
declares its id, entry point and horizon once in its ``spec.py``; nothing here lists them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from mvpo_envs.declaration import declarations, register_gym

__all__ = ["ENV_SPECS", "register_envs"]


class _EnvSpecs(Mapping[str, tuple[str, int]]):
    """env id -> ``(entry point, max_episode_steps)``, read from the declarations."""

    def __getitem__(self, env_id: str) -> tuple[str, int]:
        d = declarations()[env_id]
        return d.entry_point, d.max_episode_steps

    def __iter__(self) -> Iterator[str]:
        return iter(declarations())

    def __len__(self) -> int:
        return len(declarations())


#: env id -> (entry point, max_episode_steps): the benchmarks' horizons
ENV_SPECS: Mapping[str, tuple[str, int]] = _EnvSpecs()


def register_envs() -> None:
    """Register every declared env id once (idempotent)."""
    for declaration in declarations().values():
        register_gym(declaration)
