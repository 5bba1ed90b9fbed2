"""The provider interface: messages in, text (or file changes) out, usage out.

A ``ModelRequest`` is hashed (``key``) over exactly what determines the reply — model,
messages, token budget, temperature, output mode and the JSON schema of a structured reply —
so record/replay can serve it back and a changed prompt is a miss. Retries (tenacity) happen
inside providers, on transient errors only (rate limit, overload, timeout, connection); never
on a validation failure, which is handled by form repairs (``fyan.agents.session``).

A structured reply is asked for with ``json_schema`` (the pydantic model's JSON schema): the SDK
providers pass it to the API's own structured-output mode when ``structured_output = "schema"``
(``[agents.*]`` in ``fyan.toml``); whatever the provider does, the reply text is validated with
pydantic by the stage session, never trusted.

A command agent (``fyan.agents.providers.command``) also returns ``files``: what it changed in
the workspace it ran in (``ModelRequest.workspace``).
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, Field


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class ModelRequest(BaseModel):
    stage: str
    unit: str | None = None
    prompt: str = Field(default="", description="Name of the prompt pair in prompts/ (e.g. reason_review)")
    model: str
    messages: list[Message]
    max_tokens: int = Field(gt=0, description="Reply budget, tokens")
    temperature: float | None = Field(default=None, description="None: the provider's default")
    json_output: bool = Field(default=False, description="The stage expects one JSON object")
    json_schema: dict[str, Any] | None = Field(
        default=None, description="JSON schema of the expected object (from the pydantic reply model)"
    )
    schema_name: str = Field(default="reply", description="Name of the schema (OpenAI asks for one)")
    workspace: str | None = Field(
        default=None, description="Folder a command agent runs in (not part of the key: paths differ per machine)"
    )

    def key(self) -> str:
        """sha256 of the canonical JSON of the fields that determine the reply."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "json_output": self.json_output,
        }
        if self.json_schema is not None:
            payload["json_schema"] = self.json_schema
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    @property
    def system(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "system")

    @property
    def conversation(self) -> list[Message]:
        return [m for m in self.messages if m.role != "system"]

    @property
    def transcript(self) -> str:
        """The whole request as one text (what a command agent reads on stdin)."""
        parts = []
        for m in self.messages:
            parts.append(m.content if m.role != "assistant" else f"(your previous reply)\n{m.content}")
        return "\n\n---\n\n".join(parts) + "\n"


class Usage(BaseModel):
    """Tokens of one call. ``tokens_in`` counts *every* prompt token, including those read from
    or written to the provider's prompt cache (``cache_read``, ``cache_write``)."""

    tokens_in: int = 0
    tokens_out: int = 0
    cache_read: int = Field(default=0, description="Prompt tokens served from the provider's prompt cache")
    cache_write: int = Field(default=0, description="Prompt tokens written to the provider's prompt cache")


class ModelResponse(BaseModel):
    text: str
    usage: Usage = Usage()
    provider: str
    model: str
    latency_s: float = 0.0
    replay: bool = False
    key: str = ""
    files: dict[str, str | None] = Field(
        default_factory=dict,
        description="Command agents: workspace files the agent changed (relative path -> new text; None = deleted)",
    )

    @property
    def cache_hit(self) -> bool:
        return self.replay or self.usage.cache_read > 0


class Provider(ABC):
    """One model backend. ``complete`` raises ``ProviderError`` (or ``ReplayMissError``).

    ``edits_files`` is True for providers that work on a workspace (command agents): stages
    then hand them the unit workspace and take the changed files as the attempt's output.
    A provider behind a network endpoint raises ``ProviderUnavailable`` during an outage
    (``breaker``).
    """

    name: str = "provider"
    edits_files: bool = False
    #: the provider's circuit breaker (``fyan.agents.providers.breaker``); None for providers
    #: that cannot be "down" (replay, a command agent run here)
    breaker: Any = None

    @abstractmethod
    def complete(self, request: ModelRequest) -> ModelResponse: ...
