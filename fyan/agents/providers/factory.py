"""Build the provider a stage is configured to use (``[agents]`` in ``fyan.toml``).

``provider`` is one of ``replay`` (serve the cassette), ``record`` (call ``record_provider``
and append to the cassette), ``anthropic``, ``openai``, ``openai-compatible`` (``base_url``),
``command`` (a CLI run in the unit workspace) or ``none`` (no model configured yet: building
it raises ``ConfigError`` saying how to choose one). Raises ``ConfigError`` for an incomplete
configuration and ``ProviderError`` (not retryable) when an API key is missing.

Providers behind the same endpoint share one circuit breaker (``breaker_name``;
``fyan.agents.providers.breaker``), whatever stage they serve.
"""

from __future__ import annotations

import threading
from pathlib import Path

from fyan.agents.providers.base import Provider
from fyan.agents.providers.breaker import Breakers
from fyan.agents.providers.replay import RecordingProvider, ReplayProvider
from fyan.config import AgentsSection, StageAgent
from fyan.errors import ConfigError
from fyan.project import Project

NO_MODEL_HINT = (
    'choose one in fyan.toml, [agents.default]: provider = "anthropic" and model = "claude-opus-4-1" '
    '(export ANTHROPIC_API_KEY=...), provider = "openai" and model = "gpt-5" (OPENAI_API_KEY), '
    'provider = "openai-compatible" with base_url and model, or provider = "command" with command = [...]; '
    "docs/your-document.md shows each in one line"
)


def breaker_name(kind: str, agent: StageAgent) -> str:
    """The name of the breaker shared by every provider of ``kind`` at ``agent``'s endpoint."""
    return f"openai-compatible {agent.base_url}" if kind == "openai-compatible" else kind


def live_provider(kind: str, agent: StageAgent, breakers: Breakers | None = None,
                  settings: AgentsSection | None = None, project: Project | None = None) -> Provider:
    """A provider that calls a model (or a command): ``kind`` with ``agent``'s settings;
    ``breakers`` gives the shared circuit breaker of its endpoint, ``settings`` the call retries.
    A command agent is confined per ``project``'s ``[lean] sandbox`` (``require`` without a
    project), hiding the project folder."""
    from fyan.agents.providers.command import CommandAgentProvider
    from fyan.agents.providers.sdk import AnthropicProvider, OpenAIProvider

    common: dict = dict(structured_output=agent.structured_output, request_timeout=agent.timeout)
    if breakers is not None and kind != "command":
        common["breaker"] = breakers.get(breaker_name(kind, agent))
    if settings is not None:
        common["attempts"] = settings.call_attempts
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
            readable=agent.sandbox_readable, writable=agent.sandbox_writable, pass_env=agent.pass_env,
            lake=Path(lean.lake).expanduser() if lean and lean.lake else None)
    if kind == "none":
        raise ConfigError("no model is configured (provider = \"none\")", hint=NO_MODEL_HINT)
    raise ConfigError(f"unknown provider {kind!r}")


def build_provider(agent: StageAgent, cassette: Path | None, breakers: Breakers | None = None,
                   settings: AgentsSection | None = None, project: Project | None = None) -> Provider:
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
        return RecordingProvider(live_provider(agent.record_provider, agent, breakers, settings, project), cassette)
    return live_provider(agent.provider, agent, breakers, settings, project)


class ProviderFactory:
    """One provider instance per (stage configuration); thread-safe, created lazily. Every
    provider it builds shares the circuit breakers in ``breakers`` (one per endpoint)."""

    def __init__(self, project: Project, breakers: Breakers | None = None) -> None:
        self.project = project
        agents = project.config.agents
        self.breakers = breakers or Breakers(agents.outage_wait_initial, agents.outage_wait_max)
        self._cache: dict[str, Provider] = {}
        self._lock = threading.Lock()

    def for_stage(self, stage: str) -> Provider:
        agent = self.project.config.agents.for_stage(stage)
        key = agent.model_dump_json()
        with self._lock:
            if key not in self._cache:
                self._cache[key] = build_provider(agent, self.project.paths.root / self.project.config.agents.replay_file,
                                                  self.breakers, self.project.config.agents, self.project)
            return self._cache[key]
