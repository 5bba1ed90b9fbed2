"""Providers on the official SDKs: Anthropic, OpenAI, and OpenAI-compatible endpoints.

API keys come only from the environment variables the SDKs document (``ANTHROPIC_API_KEY``,
``OPENAI_API_KEY``; for an OpenAI-compatible server ``FYAN_OPENAI_COMPATIBLE_API_KEY``,
optional) and are never logged. SDK-internal retries are switched off; tenacity retries
transient failures only — rate limits (429), overload (529), server errors (5xx), timeouts and
connection errors — with exponential backoff and jitter. A 400-class error is not retried.
Anthropic prompt-prefix caching: the system prompt is sent as a cached block.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import anthropic
import openai
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from fyan.agents.providers.base import ModelRequest, ModelResponse, Provider, Usage
from fyan.errors import ProviderError


def _transient_anthropic(e: BaseException) -> bool:
    if isinstance(e, (anthropic.APITimeoutError, anthropic.APIConnectionError, anthropic.RateLimitError)):
        return True
    return isinstance(e, anthropic.APIStatusError) and (e.status_code >= 500 or e.status_code == 429)


def _transient_openai(e: BaseException) -> bool:
    if isinstance(e, (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError)):
        return True
    return isinstance(e, openai.APIStatusError) and (e.status_code >= 500 or e.status_code == 429)


class _SdkProvider(Provider):
    def __init__(self, *, attempts: int = 5, wait_initial: float = 1.0, wait_max: float = 60.0) -> None:
        self.attempts = attempts
        self.wait_initial = wait_initial
        self.wait_max = wait_max

    def _retrying(self, transient: Callable[[BaseException], bool]) -> Retrying:
        return Retrying(
            retry=retry_if_exception(transient),
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential_jitter(initial=self.wait_initial, max=self.wait_max),
            reraise=True,
        )

    def _call(self, fn: Callable[[], Any], transient: Callable[[BaseException], bool], error_types: tuple) -> Any:
        try:
            for attempt in self._retrying(transient):
                with attempt:
                    return fn()
        except error_types as e:
            status = getattr(e, "status_code", None)
            raise ProviderError(
                f"{self.name} call failed" + (f" (HTTP {status})" if status else "") + f": {type(e).__name__}: {_short(e)}",
                hint="check the model name, the API key in the environment and the endpoint",
            ) from None
        raise AssertionError("unreachable")


def _short(e: BaseException) -> str:
    text = str(e)
    return text if len(text) < 300 else text[:300] + "..."


class AnthropicProvider(_SdkProvider):
    name = "anthropic"

    def __init__(self, client: anthropic.Anthropic | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        if client is None:
            if not os.environ.get("ANTHROPIC_API_KEY"):
                raise ProviderError("ANTHROPIC_API_KEY is not set", hint="export ANTHROPIC_API_KEY=... (never put keys in fyan.toml)", retryable=False)
            client = anthropic.Anthropic(max_retries=0)
        self.client = client

    def complete(self, request: ModelRequest) -> ModelResponse:
        system = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}] if request.system else []
        messages = [{"role": m.role, "content": m.content} for m in request.conversation]
        start = time.monotonic()

        def call() -> Any:
            kwargs: dict[str, Any] = dict(model=request.model, max_tokens=request.max_tokens, messages=messages,
                                          temperature=request.temperature)
            if system:
                kwargs["system"] = system
            return self.client.messages.create(**kwargs)

        resp = self._call(call, _transient_anthropic, (anthropic.AnthropicError,))
        text = "".join(getattr(b, "text", "") for b in resp.content if getattr(b, "type", "") == "text")
        u = resp.usage
        usage = Usage(tokens_in=u.input_tokens or 0, tokens_out=u.output_tokens or 0,
                      cache_read=getattr(u, "cache_read_input_tokens", 0) or 0,
                      cache_write=getattr(u, "cache_creation_input_tokens", 0) or 0)
        return ModelResponse(text=text, usage=usage, provider=self.name, model=request.model,
                             latency_s=time.monotonic() - start, key=request.key())


class OpenAIProvider(_SdkProvider):
    """OpenAI, or any OpenAI-compatible server when ``base_url`` is given (vLLM, llama.cpp, Ollama)."""

    name = "openai"

    def __init__(self, client: openai.OpenAI | None = None, base_url: str | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        if client is None:
            if base_url:
                self.name = "openai-compatible"
                client = openai.OpenAI(base_url=base_url, max_retries=0,
                                       api_key=os.environ.get("FYAN_OPENAI_COMPATIBLE_API_KEY", "not-needed"))
            else:
                if not os.environ.get("OPENAI_API_KEY"):
                    raise ProviderError("OPENAI_API_KEY is not set", hint="export OPENAI_API_KEY=... (never put keys in fyan.toml)", retryable=False)
                client = openai.OpenAI(max_retries=0)
        self.client = client

    def complete(self, request: ModelRequest) -> ModelResponse:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        start = time.monotonic()

        def call() -> Any:
            kwargs: dict[str, Any] = dict(model=request.model, messages=messages, max_tokens=request.max_tokens,
                                          temperature=request.temperature)
            if request.json_output:
                kwargs["response_format"] = {"type": "json_object"}
            return self.client.chat.completions.create(**kwargs)

        resp = self._call(call, _transient_openai, (openai.OpenAIError,))
        text = resp.choices[0].message.content or ""
        u = resp.usage
        cached = 0
        if u is not None and getattr(u, "prompt_tokens_details", None) is not None:
            cached = getattr(u.prompt_tokens_details, "cached_tokens", 0) or 0
        usage = Usage(tokens_in=(u.prompt_tokens if u else 0) or 0, tokens_out=(u.completion_tokens if u else 0) or 0,
                      cache_read=cached)
        return ModelResponse(text=text, usage=usage, provider=self.name, model=request.model,
                             latency_s=time.monotonic() - start, key=request.key())
