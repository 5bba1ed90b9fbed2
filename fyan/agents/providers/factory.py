"""Build the provider a stage is configured to use (``[agents]`` in ``fyan.toml``).

``provider`` is one of ``replay`` (serve the cassette), ``record`` (call ``record_provider``
and append to the cassette), ``anthropic``, ``openai``, ``openai-compatible`` (``base_url``)
or ``command`` (a CLI run in the unit workspace). Raises ``ConfigError`` for an incomplete
configuration and ``ProviderError`` (not retryable) when an API key is missing.
"""

from __future__ import annotations

import threading
from pathlib import Path

from fyan.agents.providers.base import Provider
from fyan.agents.providers.replay import RecordingProvider, ReplayProvider
from fyan.config import StageAgent
from fyan.errors import ConfigError
from fyan.project import Project


def live_provider(kind: str, agent: StageAgent, project: Project | None = None) -> Provider:
    """A provider that calls a model (or a command): ``kind`` with ``agent``'s settings. A
    command agent is confined per ``project``'s ``[lean] sandbox`` (``require`` without a
    project), hiding the project folder."""
    from fyan.agents.providers.command import CommandAgentProvider
    from fyan.agents.providers.sdk import AnthropicProvider, OpenAIProvider

    common = dict(structured_output=agent.structured_output, request_timeout=agent.timeout)
    if kind == "anthropic":
        return AnthropicProvider(**common)
    if kind == "openai":
        return OpenAIProvider(**common)
    if kind == "openai-compatible":
        if not agent.base_url:
            raise ConfigError("provider openai-compatible needs base_url (e.g. http://localhost:8000/v1)")
        return OpenAIProvider(base_url=agent.base_url, **common)
    if kind == "command":
        lean = project.config.lean if project is not None else None
        return CommandAgentProvider(
            agent.command, timeout_s=agent.timeout, sandbox=lean.sandbox if lean else "require",
            project_root=project.paths.root if project is not None else None, network=agent.network,
            readable=agent.sandbox_readable, writable=agent.sandbox_writable,
            lake=Path(lean.lake).expanduser() if lean and lean.lake else None)
    raise ConfigError(f"unknown provider {kind!r}")


def build_provider(agent: StageAgent, cassette: Path | None, project: Project | None = None) -> Provider:
    """The provider ``agent`` names (module docstring); ``cassette`` is the record/replay file;
    ``project`` confines a command agent (``live_provider``).

    Raises ``ConfigError`` when replay/record has no cassette or record no ``record_provider``.
    """
    if agent.provider in ("replay", "record") and cassette is None:
        raise ConfigError(f"provider {agent.provider} needs a cassette file")
    if agent.provider == "replay":
        return ReplayProvider(cassette)
    if agent.provider == "record":
        if agent.record_provider is None:
            raise ConfigError('provider = "record" needs record_provider = "anthropic" | "openai" | "openai-compatible"')
        return RecordingProvider(live_provider(agent.record_provider, agent, project), cassette)
    return live_provider(agent.provider, agent, project)


class ProviderFactory:
    """One provider instance per (stage configuration); thread-safe, created lazily."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._cache: dict[str, Provider] = {}
        self._lock = threading.Lock()

    def for_stage(self, stage: str) -> Provider:
        agent = self.project.config.agents.for_stage(stage)
        key = agent.model_dump_json()
        with self._lock:
            if key not in self._cache:
                self._cache[key] = build_provider(agent, self.project.paths.root / self.project.config.agents.replay_file,
                                                  self.project)
            return self._cache[key]
