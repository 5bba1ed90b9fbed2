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

**Tool turns.** A request may offer tools (``tools``: name, description, JSON schema of the
input) and carry the tool rounds so far (``turns``: each the model's reply — text and
``ToolCall``s — then Fyan's answer: one ``ToolAnswer`` per call, and optionally a user text).
The model's reply then carries ``tool_calls``. This is provider-neutral: the SDK providers
translate it into Anthropic ``tool_use``/``tool_result`` blocks or OpenAI ``tool_calls``/``tool``
messages, and the key covers tools, turns and ``tool_choice`` (only when tools are offered, so
the key of a request without tools is what it always was), which makes a replayed tool
conversation deterministic: a tool result that differs changes the next turn's key.
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


class ToolDef(BaseModel):
    """A tool offered to the model: ``parameters`` is the JSON schema of its input."""

    name: str
    description: str
    parameters: dict[str, Any]


class ToolCall(BaseModel):
    """One tool call of the model: ``arguments`` as the API gave them (Anthropic: an object;
    OpenAI: a JSON string, possibly malformed — the tool loop validates it)."""

    id: str
    name: str
    arguments: Any = None


class ToolAnswer(BaseModel):
    """Fyan's answer to one ``ToolCall`` (``id``): the result text sent to the model."""

    id: str
    content: str
    is_error: bool = False


class ToolTurn(BaseModel):
    """One round of a tool conversation: the model's reply (``text``, ``calls``), then Fyan's
    ``answers`` (one per call, in order) and an optional ``user`` text after them."""

    text: str = ""
    calls: list[ToolCall] = Field(default_factory=list)
    answers: list[ToolAnswer] = Field(default_factory=list)
    user: str | None = None


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
    tools: list[ToolDef] = Field(default_factory=list, description="Tools offered (empty: a plain call)")
    turns: list[ToolTurn] = Field(default_factory=list, description="The tool rounds so far (module docstring)")
    tool_choice: Literal["auto", "none"] = Field(
        default="auto", description="none: the model must answer without calling a tool (the budget ran out)")

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
        if self.tools:
            payload["tools"] = [t.model_dump() for t in self.tools]
            payload["turns"] = [t.model_dump() for t in self.turns]
            payload["tool_choice"] = self.tool_choice
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def thread(self) -> str:
        """The key of this tool conversation's first turn (same request, no rounds yet): what
        every turn of one conversation shares (replay names a differing tool result by it)."""
        return self.model_copy(update={"turns": [], "tool_choice": "auto"}).key()

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
    tool_calls: list[ToolCall] = Field(default_factory=list, description="The tools the model called (tool turns)")

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
    #: whether ``complete`` takes a request with ``tools`` (module docstring) when the stage's
    #: ``tools`` setting is left unset: an SDK provider does; replay, a command agent, an
    #: OpenAI-compatible server (unknown support) do not unless configured
    supports_tools: bool = False
    #: whether a request with ``tools`` can be served at all (``tools = true`` is honoured)
    can_use_tools: bool = False
    #: the provider's circuit breaker (``fyan.agents.providers.breaker``); None for providers
    #: that cannot be "down" (replay, a command agent run here)
    breaker: Any = None

    @abstractmethod
    def complete(self, request: ModelRequest) -> ModelResponse: ...
