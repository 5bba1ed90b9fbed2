"""Providers on the official SDKs: Anthropic, OpenAI, and OpenAI-compatible endpoints.

API keys come only from the environment variables the SDKs document (``ANTHROPIC_API_KEY``,
``OPENAI_API_KEY``; for an OpenAI-compatible server ``FYAN_OPENAI_COMPATIBLE_API_KEY``,
optional) and are never logged: Fyan logs the provider, model, HTTP status and attempt number
of a retried call, never headers or the client object.

Retries and outages: the SDKs' own retries are switched off (``max_retries=0``); tenacity
retries transient failures only — rate limits (429), overload (Anthropic 529), other 5xx,
request timeouts (408), client timeouts and connection errors — ``attempts`` times in all
(``[agents] call_attempts``), with exponential backoff and jitter (``wait_initial`` ..
``wait_max`` seconds). When they are used up the provider is *unavailable*: its circuit breaker
(``fyan.agents.providers.breaker``, shared by every unit) opens and the call raises
``ProviderUnavailable`` — an outage, which the engine waits out without counting it against
the unit. While the breaker is open calls fail at once, without a request; the probe sent when
it is due tries once. Anything else (400
bad request, 401 authentication, 404 unknown model, 422) is an answer from a working model: it
closes the breaker and fails the call with ``ProviderError``; 401/403/404 are marked not
retryable (another attempt cannot help until the configuration is fixed). A reply that does
not validate is not a provider error: the stage session repairs it.

Structured output (``structured_output`` of the stage's agent configuration):
``schema`` sends the reply model's JSON schema through the API's structured-output mode
(Anthropic ``output_config.format``, schema adapted by ``anthropic.transform_schema``; OpenAI
``response_format`` ``json_schema``, non-strict), ``json`` asks only for a JSON object (OpenAI
``json_object``; Anthropic has no such mode, so the prompt alone asks), ``prompt`` relies on the
prompt. The reply is validated with pydantic in every case.

Sampling temperature: sent to OpenAI-style endpoints when configured; the Messages API this
Anthropic SDK speaks (2.x) takes none, so it is not sent there.

Prompt-prefix caching: Anthropic gets a cache breakpoint on the system prompt (shared by every
unit of a stage) and the top-level automatic breakpoint (so form repairs and Formalizer
iterations, which resend the conversation, read it from the cache); OpenAI caches long prefixes
automatically. Both report cached tokens, which pricing charges at the cache price.

Tool turns (``ModelRequest.tools``/``turns``, ``fyan.agents.providers.base``): Anthropic gets
``tools`` (``input_schema``), each past round as an assistant message of ``text`` and
``tool_use`` blocks followed by a user message of ``tool_result`` blocks (``is_error``) and the
round's user text, ``tool_choice = {"type": "none"}`` when asked; OpenAI gets ``tools``
(``function`` with ``parameters``), each round as an assistant message with ``tool_calls`` (the
arguments as the JSON string the model gave) followed by one ``tool`` message per call and the
user text, ``tool_choice = "none"`` when asked. The reply's ``tool_use`` blocks / ``tool_calls``
come back as ``ModelResponse.tool_calls``. A request with tools asks for JSON by the prompt
only (no ``output_config``/``response_format``): while the model is calling tools its text is
not the reply; the final reply is validated with pydantic as always. An OpenAI-compatible
server is not assumed to take ``tools`` (``supports_tools`` False: ``tools = true`` in the
stage's agent configuration turns them on).

Tests pass a client built on ``httpx2.MockTransport`` (``http_client=``): the SDKs use
``httpx2``, which respx does not patch.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import anthropic
import openai
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from fyan import logs
from fyan.agents.providers.base import ModelRequest, ModelResponse, Provider, ToolCall, Usage
from fyan.agents.providers.breaker import CircuitBreaker
from fyan.errors import ProviderError

StructuredOutput = str  # "schema" | "json" | "prompt"

_NOT_RETRYABLE_STATUS = (401, 403, 404)


def _transient_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def _transient_anthropic(e: BaseException) -> bool:
    if isinstance(e, (anthropic.APITimeoutError, anthropic.APIConnectionError, anthropic.RateLimitError)):
        return True
    return isinstance(e, anthropic.APIStatusError) and _transient_status(e.status_code)


def _transient_openai(e: BaseException) -> bool:
    if isinstance(e, (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError)):
        return True
    return isinstance(e, openai.APIStatusError) and _transient_status(e.status_code)


class _SdkProvider(Provider):
    def __init__(
        self, *, attempts: int = 3, wait_initial: float = 1.0, wait_max: float = 8.0,
        structured_output: StructuredOutput = "schema", request_timeout: float = 600.0,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.attempts = attempts
        self.wait_initial = wait_initial
        self.wait_max = wait_max
        self.structured_output = structured_output
        self.request_timeout = request_timeout
        self._breaker = breaker

    @property
    def breaker(self) -> CircuitBreaker:
        """This provider's circuit breaker (the factory passes the one shared by every stage
        using the same endpoint; a provider built alone gets its own)."""
        if self._breaker is None:
            self._breaker = CircuitBreaker(self.name)
        return self._breaker

    def _log_retry(self, state: RetryCallState) -> None:
        e = state.outcome.exception() if state.outcome else None
        logs.get().warning(
            "model_call_retry", provider=self.name, attempt=state.attempt_number,
            status=getattr(e, "status_code", None), error=type(e).__name__,
            wait_s=round(state.next_action.sleep, 2) if state.next_action else None,
        )

    def _retrying(self, transient: Callable[[BaseException], bool], attempts: int) -> Retrying:
        return Retrying(
            retry=retry_if_exception(transient),
            stop=stop_after_attempt(attempts),
            wait=wait_exponential_jitter(multiplier=self.wait_initial, max=self.wait_max, jitter=self.wait_initial),
            before_sleep=self._log_retry,
            reraise=True,
        )

    def _call(self, fn: Callable[[], Any], transient: Callable[[BaseException], bool], error_types: tuple) -> Any:
        """``fn()`` with retries on transient failures, behind the breaker (module docstring).

        Raises ``ProviderUnavailable`` (an outage: retries used up, or the breaker open) or
        ``ProviderError`` (the provider answered with an error)."""
        probe = self.breaker.admit()
        attempts = 1 if probe else self.attempts  # a probe of a provider that was down tries once
        try:
            for attempt in self._retrying(transient, attempts):
                with attempt:
                    result = fn()
        except error_types as e:
            status = getattr(e, "status_code", None)
            logs.get().warning("model_call_failed", provider=self.name, status=status, error=type(e).__name__)
            if transient(e):
                raise self.breaker.failed(
                    f"{type(e).__name__}" + (f" (HTTP {status})" if status else "")
                    + f" after {attempts} attempt(s): {_short(e)}"
                ) from None
            self.breaker.succeeded()  # an answer, if an unwelcome one: the provider is up
            raise ProviderError(
                f"{self.name} call failed" + (f" (HTTP {status})" if status else "") + f": {type(e).__name__}: {_short(e)}",
                hint="check the model name, the API key in the environment and the endpoint (`fyan doctor`)",
                retryable=status not in _NOT_RETRYABLE_STATUS,
            ) from None
        except BaseException:
            if probe:
                self.breaker.release()
            raise
        self.breaker.succeeded()
        return result


def _short(e: BaseException) -> str:
    text = str(e)
    return text if len(text) < 300 else text[:300] + "..."


class AnthropicProvider(_SdkProvider):
    """Anthropic Messages API. ``client`` (tests) replaces the one built from the environment."""

    name = "anthropic"
    supports_tools = True
    can_use_tools = True

    def __init__(self, client: anthropic.Anthropic | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        if client is None:
            if not os.environ.get("ANTHROPIC_API_KEY"):
                raise ProviderError("ANTHROPIC_API_KEY is not set", hint="export ANTHROPIC_API_KEY=... (never put keys in fyan.toml)", retryable=False)
            client = anthropic.Anthropic(max_retries=0, timeout=self.request_timeout)
        self.client = client

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        kwargs: dict[str, Any] = dict(
            model=request.model, max_tokens=request.max_tokens,
            messages=[{"role": m.role, "content": m.content} for m in request.conversation],
            cache_control={"type": "ephemeral"},
        )
        if request.system:
            kwargs["system"] = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
        if request.tools:
            kwargs["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                               for t in request.tools]
            for turn in request.turns:
                blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
                blocks += [{"type": "tool_use", "id": c.id, "name": c.name,
                            "input": c.arguments if isinstance(c.arguments, dict) else {}} for c in turn.calls]
                kwargs["messages"].append({"role": "assistant", "content": blocks or turn.text})
                answer: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": a.id, "content": a.content,
                                                 "is_error": a.is_error} for a in turn.answers]
                if turn.user:
                    answer.append({"type": "text", "text": turn.user})
                if answer:
                    kwargs["messages"].append({"role": "user", "content": answer})
            if request.tool_choice == "none":
                kwargs["tool_choice"] = {"type": "none"}
        elif request.json_schema is not None and self.structured_output == "schema":
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": anthropic.transform_schema(request.json_schema)}}
        return kwargs

    def complete(self, request: ModelRequest) -> ModelResponse:
        kwargs = self.body(request)
        start = time.monotonic()
        resp = self._call(lambda: self.client.messages.create(**kwargs), _transient_anthropic, (anthropic.AnthropicError,))
        text = "".join(getattr(b, "text", "") for b in resp.content if getattr(b, "type", "") == "text")
        calls = [ToolCall(id=b.id, name=b.name, arguments=b.input) for b in resp.content
                 if getattr(b, "type", "") == "tool_use"]
        u = resp.usage
        read = getattr(u, "cache_read_input_tokens", 0) or 0
        write = getattr(u, "cache_creation_input_tokens", 0) or 0
        # Anthropic's input_tokens counts only the uncached tokens after the last breakpoint
        usage = Usage(tokens_in=(u.input_tokens or 0) + read + write, tokens_out=u.output_tokens or 0,
                      cache_read=read, cache_write=write)
        return ModelResponse(text=text, usage=usage, provider=self.name, model=request.model,
                             latency_s=time.monotonic() - start, key=request.key(), tool_calls=calls)


class OpenAIProvider(_SdkProvider):
    """OpenAI Chat Completions, or any OpenAI-compatible server when ``base_url`` is given
    (vLLM, llama.cpp server, Ollama). ``client`` (tests) replaces the one built here."""

    name = "openai"
    can_use_tools = True

    def __init__(self, client: openai.OpenAI | None = None, base_url: str | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.compatible = bool(base_url)
        self.supports_tools = not self.compatible  # a compatible server: only with ``tools = true``
        if base_url:
            self.name = "openai-compatible"
        self.base_url = base_url
        if client is None:
            if base_url:
                client = openai.OpenAI(base_url=base_url, max_retries=0, timeout=self.request_timeout,
                                       api_key=os.environ.get("FYAN_OPENAI_COMPATIBLE_API_KEY", "not-needed"))
            else:
                if not os.environ.get("OPENAI_API_KEY"):
                    raise ProviderError("OPENAI_API_KEY is not set", hint="export OPENAI_API_KEY=... (never put keys in fyan.toml)", retryable=False)
                client = openai.OpenAI(max_retries=0, timeout=self.request_timeout)
        self.client = client

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        kwargs: dict[str, Any] = dict(model=request.model, messages=[{"role": m.role, "content": m.content} for m in request.messages])
        # hosted OpenAI models take max_completion_tokens (reasoning models refuse max_tokens);
        # local OpenAI-compatible servers generally know only max_tokens
        kwargs["max_tokens" if self.compatible else "max_completion_tokens"] = request.max_tokens
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.tools:
            kwargs["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                                 "parameters": t.parameters}} for t in request.tools]
            for turn in request.turns:
                message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
                if turn.calls:
                    message["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                        "name": c.name, "arguments": c.arguments if isinstance(c.arguments, str)
                        else json.dumps(c.arguments, ensure_ascii=False)}} for c in turn.calls]
                kwargs["messages"].append(message)
                kwargs["messages"] += [{"role": "tool", "tool_call_id": a.id, "content": a.content}
                                       for a in turn.answers]
                if turn.user:
                    kwargs["messages"].append({"role": "user", "content": turn.user})
            if request.tool_choice == "none":
                kwargs["tool_choice"] = "none"
        elif request.json_output and self.structured_output != "prompt":
            if request.json_schema is not None and self.structured_output == "schema":
                kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": request.schema_name, "schema": request.json_schema, "strict": False}}
            else:
                kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    def complete(self, request: ModelRequest) -> ModelResponse:
        kwargs = self.body(request)
        start = time.monotonic()
        resp = self._call(lambda: self.client.chat.completions.create(**kwargs), _transient_openai, (openai.OpenAIError,))
        if not resp.choices:
            raise ProviderError(f"{self.name} returned no choices for model {request.model}")
        text = resp.choices[0].message.content or ""
        calls = [ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
                 for c in (resp.choices[0].message.tool_calls or []) if getattr(c, "function", None) is not None]
        u = resp.usage
        cached = 0
        if u is not None and getattr(u, "prompt_tokens_details", None) is not None:
            cached = getattr(u.prompt_tokens_details, "cached_tokens", 0) or 0
        usage = Usage(tokens_in=(u.prompt_tokens if u else 0) or 0, tokens_out=(u.completion_tokens if u else 0) or 0,
                      cache_read=cached)
        return ModelResponse(text=text, usage=usage, provider=self.name, model=request.model,
                             latency_s=time.monotonic() - start, key=request.key(), tool_calls=calls)
