"""One stage attempt's access to a model: render prompts, call, validate, account.

Every call's rendered prompt and reply are stored in the attempt folder
(``calls/NN-<prompt>.request.json`` / ``.response.md``, and ``.files.json`` for the file changes
of a command agent) and persisted through the gateway (``Gateway.record_model_call``: stage,
unit, provider, model, tokens in/out, cost in USD from ``config/pricing.toml``, latency in
seconds, cache and replay hits). Structured replies are validated with pydantic; an invalid
reply gets ``[agents] form_repairs`` repair turns that quote the errors, after which the
attempt fails with ``ModelOutputError`` (never a silent default).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from fyan.agents.pricing import cost_usd
from fyan.agents.prompts import render
from fyan.agents.providers.base import Message, ModelRequest, ModelResponse, Provider, ToolDef, ToolTurn
from fyan.config import StageAgent
from fyan.errors import ModelOutputError
from fyan.state.gateway import Gateway
from fyan.state.models import StageRun

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)


def parse_json_reply(text: str, schema: type[T]) -> tuple[T | None, list[str]]:
    """Parse one JSON object (optionally in a ```json fence) into ``schema``: (object, errors)."""
    m = _FENCE.match(text)
    body = m.group(1) if m else text.strip()
    start = body.find("{")
    if start < 0:
        return None, ["the reply contains no JSON object"]
    try:
        data, end = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError as e:
        return None, [f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"]
    if body[end:].strip():
        return None, ["text after the JSON object; reply with the object only"]
    try:
        return schema.model_validate(data), []
    except ValidationError as e:
        return None, [f"{'.'.join(str(x) for x in err['loc']) or '(root)'}: {err['msg']}" for err in e.errors()]


def ask_with_repairs(
    send: Callable[[list[Message]], str], messages: list[Message], schema: type[T],
    check: Callable[[T], list[str]] | None, repairs: int, what: str,
) -> T:
    """The form-repair loop shared by every structured model call: ``send(messages)`` returns
    the reply text; a reply that does not validate into ``schema`` (or that ``check``, a form
    check, finds errors in) is answered with ``prompts/form_repair.user.md`` quoting the errors,
    at most ``repairs`` times. Raises ``ModelOutputError`` naming ``what`` after that; provider
    errors propagate. Never resamples a valid reply."""
    errors: list[str] = []
    for _ in range(repairs + 1):
        text = send(messages)
        obj, errors = parse_json_reply(text, schema)
        if obj is not None and check is not None:
            errors = check(obj)
        if obj is not None and not errors:
            return obj
        repair = render("form_repair.user", {"errors": "\n".join(f"- {e}" for e in errors)})
        messages = messages + [Message(role="assistant", content=text), Message(role="user", content=repair)]
    raise ModelOutputError(f"{what} did not validate after {repairs} form repair(s): " + "; ".join(errors[:3]))


class StageSession:
    """Model access for one attempt. ``run`` is None for project-level work (the Specifier)
    and for the post-completion tasks, which are not stage runs; then ``stage`` and ``unit``
    say what the calls are for."""

    def __init__(
        self, *, gateway: Gateway, run: StageRun | None, provider: Provider, agent: StageAgent, form_repairs: int,
        attempt_dir: Path, stage: str | None = None, unit: str | None = None,
    ) -> None:
        self.gateway = gateway
        self.run = run
        self.provider = provider
        self.agent = agent
        self.form_repairs = form_repairs
        self.attempt_dir = attempt_dir
        self.stage = stage or (run.stage.value if run else "project")
        self.unit = unit if unit is not None else (run.unit if run else None)
        self.calls = 0
        self.last_response: ModelResponse | None = None

    @property
    def edits_files(self) -> bool:
        return self.provider.edits_files

    def _send(self, name: str, messages: list[Message], json_output: bool, schema: type[BaseModel] | None = None,
              workspace: Path | None = None, unit: str | None = None, tools: list[ToolDef] | None = None,
              turns: list[ToolTurn] | None = None, tool_choice: str = "auto") -> ModelResponse:
        request = ModelRequest(
            stage=self.stage, unit=unit or self.unit, prompt=name, model=self.agent.model, messages=messages,
            max_tokens=self.agent.max_tokens, temperature=self.agent.temperature, json_output=json_output,
            json_schema=schema.model_json_schema() if schema is not None else None,
            schema_name=schema.__name__ if schema is not None else "reply",
            workspace=str(workspace) if workspace is not None else None,
            tools=tools or [], turns=turns or [], tool_choice=tool_choice,
        )
        self.calls += 1
        calls = self.attempt_dir / "calls"
        calls.mkdir(parents=True, exist_ok=True)
        stem = f"{self.calls:02d}-{name}" + (f"-{unit}" if unit else "")
        (calls / f"{stem}.request.json").write_text(
            json.dumps({"key": request.key(), **request.model_dump()}, indent=2, ensure_ascii=False), encoding="utf-8"
        )
        response = self.provider.complete(request)
        (calls / f"{stem}.response.md").write_text(response.text, encoding="utf-8")
        if response.files:
            (calls / f"{stem}.files.json").write_text(json.dumps(response.files, indent=2, ensure_ascii=False), encoding="utf-8")
        if response.tool_calls:
            (calls / f"{stem}.tool_calls.json").write_text(json.dumps(
                [c.model_dump(mode="json") for c in response.tool_calls], indent=2, ensure_ascii=False), encoding="utf-8")
        self.gateway.record_model_call(
            self.run, stage=self.stage, unit=unit or self.unit, provider=response.provider, model=response.model,
            request_key=request.key(), tokens_in=response.usage.tokens_in, tokens_out=response.usage.tokens_out,
            cost=cost_usd(response), latency_s=response.latency_s, cache_hit=response.cache_hit, replay=response.replay,
        )
        self.last_response = response
        return response

    def _messages(self, name: str, values: dict[str, str]) -> list[Message]:
        return [
            Message(role="system", content=render(f"{name}.system", values)),
            Message(role="user", content=render(f"{name}.user", values)),
        ]

    def ask(self, name: str, values: dict[str, str], *, workspace: Path | None = None) -> ModelResponse:
        """Free-text reply to prompt ``name`` filled with ``values`` (a command agent runs in
        ``workspace`` and its file changes come back in ``ModelResponse.files``)."""
        return self._send(name, self._messages(name, values), json_output=False, workspace=workspace)

    def ask_messages(self, name: str, messages: list[Message]) -> ModelResponse:
        """Free-text reply to ``messages`` the caller built (a stage that carries its own prompt
        rather than a template under ``prompts/``); recorded and accounted like ``ask``."""
        return self._send(name, messages, json_output=False)

    def ask_turn(self, name: str, messages: list[Message], schema: type[BaseModel], tools: list[ToolDef],
                 turns: list[ToolTurn], tool_choice: str = "auto") -> ModelResponse:
        """One turn of a tool conversation (``fyan.agents.tool_loop.run``'s ``send``): ``messages``
        with the ``tools`` offered and the rounds so far; recorded and accounted like ``ask``.
        The reply's ``tool_calls`` are the model's calls; without any, its text is the reply
        (asked for as ``schema``, validated by the caller)."""
        return self._send(name, messages, json_output=True, schema=schema, tools=tools, turns=turns,
                          tool_choice=tool_choice)

    def ask_json(
        self, name: str, values: dict[str, str], schema: type[T], check: Callable[[T], list[str]] | None = None,
        repairs: int | None = None, *, unit: str | None = None,
    ) -> T:
        """A reply validated into ``schema`` (and by ``check``, a form check returning errors).

        ``repairs`` overrides ``form_repairs`` for this call (the audit's own limit); ``unit``
        overrides the session's unit for accounting (the Specifier's per-unit calls).
        Raises ``ModelOutputError`` after the allowed form repairs.
        """
        allowed = self.form_repairs if repairs is None else repairs
        return ask_with_repairs(
            lambda messages: self._send(name, messages, json_output=True, schema=schema, unit=unit).text,
            self._messages(name, values), schema, check, allowed, f"{self.stage} reply ({name})",
        )
