"""The provider interface: messages in, text out, usage out.

A ``ModelRequest`` is hashed (``key``) over exactly what determines the reply — model,
messages, token budget, temperature, output mode — so record/replay can serve it back and a
changed prompt is a miss. Retries (tenacity) happen inside providers, on transient errors only
(rate limit, overload, timeout, connection); never on a validation failure, which is handled by
form repairs (``fyan.agents.structured``).
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Literal

from pydantic import BaseModel, Field


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class ModelRequest(BaseModel):
    stage: str
    unit: str | None = None
    model: str
    messages: list[Message]
    max_tokens: int = Field(gt=0, description="Reply budget, tokens")
    temperature: float = 0.0
    json_output: bool = Field(default=False, description="The stage expects one JSON object")

    def key(self) -> str:
        """sha256 of the canonical JSON of the fields that determine the reply."""
        payload = {
            "model": self.model,
            "messages": [m.model_dump() for m in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "json_output": self.json_output,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    @property
    def system(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "system")

    @property
    def conversation(self) -> list[Message]:
        return [m for m in self.messages if m.role != "system"]


class Usage(BaseModel):
    tokens_in: int = 0
    tokens_out: int = 0
    cache_read: int = Field(default=0, description="Prompt tokens served from the provider's prompt cache")
    cache_write: int = 0


class ModelResponse(BaseModel):
    text: str
    usage: Usage = Usage()
    provider: str
    model: str
    latency_s: float = 0.0
    replay: bool = False
    key: str = ""

    @property
    def cache_hit(self) -> bool:
        return self.replay or self.usage.cache_read > 0


class Provider(ABC):
    """One model backend. ``complete`` raises ``ProviderError`` (or ``ReplayMissError``)."""

    name: str = "provider"

    @abstractmethod
    def complete(self, request: ModelRequest) -> ModelResponse: ...
