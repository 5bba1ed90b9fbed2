"""Model calls of the shadow tooling (drafting checkers, the adapter fallback).

Outside a project there is no stage attempt and no gateway, so this is a small counterpart of
``fyan.agents.session.StageSession``: the same provider interface (``fyan.agents.providers``:
replay/record/Anthropic/OpenAI/OpenAI-compatible), prompts from ``prompts/`` files
(``fyan.agents.prompts.render``), replies validated with pydantic (``parse_json_reply``) and a
bounded number of form repairs quoting the errors, after which ``ModelOutputError`` is raised
(never a silent default). Every request and reply is written to ``log_dir`` when given, and
usage (tokens in/out, USD) is summed in ``usage``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from fyan.agents.pricing import cost_usd
from fyan.agents.prompts import render
from fyan.agents.providers.base import Message, ModelRequest, Provider
from fyan.agents.providers.replay import RecordingProvider, ReplayProvider
from fyan.agents.session import parse_json_reply
from fyan.config import StageAgent
from fyan.errors import ConfigError, ModelOutputError

T = TypeVar("T", bound=BaseModel)


def build_provider(agent: StageAgent, cassette: Path | None) -> Provider:
    """The provider ``agent`` names; the same choices as a project's ``[agents]`` section.

    Raises ``ConfigError`` when replay/record has no cassette, record has no ``record_provider``,
    or an OpenAI-compatible endpoint has no ``base_url``. API keys come from the environment.
    """

    def live(kind: str) -> Provider:
        from fyan.agents.providers.sdk import AnthropicProvider, OpenAIProvider

        if kind == "anthropic":
            return AnthropicProvider()
        if kind == "openai":
            return OpenAIProvider()
        if not agent.base_url:
            raise ConfigError("provider openai-compatible needs --base-url (e.g. http://localhost:8000/v1)")
        return OpenAIProvider(base_url=agent.base_url)

    if agent.provider in ("replay", "record") and cassette is None:
        raise ConfigError(f"provider {agent.provider} needs --cassette FILE")
    if agent.provider == "replay":
        return ReplayProvider(cassette)
    if agent.provider == "record":
        if agent.record_provider is None:
            raise ConfigError("provider record needs --record-provider anthropic|openai|openai-compatible")
        return RecordingProvider(live(agent.record_provider), cassette)
    return live(agent.provider)


class ModelCaller:
    """Ask one prompt (``prompts/<name>.system.md`` + ``.user.md``) for a validated JSON reply."""

    def __init__(self, provider: Provider, agent: StageAgent, *, stage: str, form_repairs: int = 2,
                 log_dir: Path | None = None) -> None:
        self.provider = provider
        self.agent = agent
        self.stage = stage
        self.form_repairs = form_repairs
        self.log_dir = log_dir
        self.calls = 0
        self.usage = {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
        self._lock = threading.Lock()

    def request(self, name: str, values: dict[str, str], *, unit: str | None = None,
                history: list[Message] | None = None) -> ModelRequest:
        messages = [Message(role="system", content=render(f"{name}.system", values)),
                    Message(role="user", content=render(f"{name}.user", values))] + (history or [])
        return ModelRequest(stage=self.stage, unit=unit, model=self.agent.model, messages=messages,
                            max_tokens=self.agent.max_tokens, temperature=self.agent.temperature, json_output=True)

    def ask_json(self, name: str, values: dict[str, str], schema: type[T], *, unit: str | None = None,
                 check: Callable[[T], list[str]] | None = None) -> T:
        """A reply validated into ``schema`` (and by ``check``, which returns form errors).

        Raises ``ModelOutputError`` after ``form_repairs`` repair turns; provider errors propagate.
        """
        history: list[Message] = []
        errors: list[str] = []
        for _ in range(self.form_repairs + 1):
            request = self.request(name, values, unit=unit, history=history)
            response = self.provider.complete(request)
            self._log(name, request, response.text)
            with self._lock:
                self.usage["calls"] += 1
                self.usage["tokens_in"] += response.usage.tokens_in
                self.usage["tokens_out"] += response.usage.tokens_out
                self.usage["cost_usd"] = round(self.usage["cost_usd"] + cost_usd(response), 6)
            obj, errors = parse_json_reply(response.text, schema)
            if obj is not None and check is not None:
                errors = check(obj)
            if obj is not None and not errors:
                return obj
            repair = render("form_repair.user", {"errors": "\n".join(f"- {e}" for e in errors)})
            history += [Message(role="assistant", content=response.text), Message(role="user", content=repair)]
        raise ModelOutputError(
            f"{self.stage} reply did not validate after {self.form_repairs} form repair(s): " + "; ".join(errors[:3]))

    def _log(self, name: str, request: ModelRequest, reply: str) -> None:
        if self.log_dir is None:
            return
        with self._lock:
            self.calls += 1
            n = self.calls
        self.log_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{n:02d}-{name}"
        (self.log_dir / f"{stem}.request.json").write_text(
            json.dumps({"key": request.key(), **request.model_dump()}, indent=2, ensure_ascii=False), encoding="utf-8")
        (self.log_dir / f"{stem}.response.md").write_text(reply, encoding="utf-8")
