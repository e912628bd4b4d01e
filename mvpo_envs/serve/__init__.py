"""Serving mvpo envs over OpenEnv's protocol: ``mvpo-serve``, its client and a remote env.

docs/integrations.md ("OpenEnv"). One concept per module: :mod:`.wire` (request parsing and
payloads), :mod:`.sessions` (bounded, reaped sessions), :mod:`.server` (the HTTP/WebSocket app
and the command), :mod:`.client` (``MvpoEnvClient``), :mod:`.remote_env` (``RemoteTextEnv``).
Importing this package needs no web framework; :mod:`.server` needs the ``serve`` extra.
"""

from mvpo_envs.serve.client import MvpoEnvClient, MvpoObservation, ServeError, StepResult
from mvpo_envs.serve.remote_env import RemoteTextEnv

__all__ = ["MvpoEnvClient", "MvpoObservation", "RemoteTextEnv", "ServeError", "StepResult"]
