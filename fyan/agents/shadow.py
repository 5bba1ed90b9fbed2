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
from fyan.agents.session import ask_with_repairs
from fyan.config import StageAgent

T = TypeVar("T", bound=BaseModel)


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
        """The request ``ask_json`` sends for prompt ``name`` (``history``: the repair turns so far)."""
        messages = [Message(role="system", content=render(f"{name}.system", values)),
                    Message(role="user", content=render(f"{name}.user", values))] + (history or [])
        return self._request(messages, unit)

    def _request(self, messages: list[Message], unit: str | None) -> ModelRequest:
        return ModelRequest(stage=self.stage, unit=unit, model=self.agent.model, messages=messages,
                            max_tokens=self.agent.max_tokens, temperature=self.agent.temperature, json_output=True)

    def ask_json(self, name: str, values: dict[str, str], schema: type[T], *, unit: str | None = None,
                 check: Callable[[T], list[str]] | None = None) -> T:
        """A reply validated into ``schema`` (and by ``check``, which returns form errors).

        Raises ``ModelOutputError`` after ``form_repairs`` repair turns; provider errors propagate.
        """
        def send(messages: list[Message]) -> str:
            request = self._request(messages, unit)
            response = self.provider.complete(request)
            self._log(name, request, response.text)
            with self._lock:
                self.usage["calls"] += 1
                self.usage["tokens_in"] += response.usage.tokens_in
                self.usage["tokens_out"] += response.usage.tokens_out
                self.usage["cost_usd"] = round(self.usage["cost_usd"] + cost_usd(response), 6)
            return response.text

        return ask_with_repairs(send, self.request(name, values, unit=unit).messages, schema, check,
                                self.form_repairs, f"{self.stage} reply")

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
