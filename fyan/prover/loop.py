"""A provider-side tool loop: a model answers with tool calls (Anthropic ``tool_use`` blocks,
OpenAI function calls), Fyan runs the prover tools and sends their results back, until the
model answers without a tool call or the attempt's budget runs out.

* **Tools** are ``ToolSpec``: a name, a description, a pydantic input model (its JSON schema is
  what the model sees) and a function from that model to a pydantic result.
* **Budget** (``Budget``) per attempt: tool calls, tokens (input + output, summed over the model
  calls) and wall time (s). It is checked before every model call and before every tool call;
  running out stops the loop with ``stop = "budget_<what>"`` — never an exception — and the
  calls the model asked for beyond it are recorded as ``not_run``.
* **Each tool round is recorded** (``Round``: tool, arguments, status, seconds, result size)
  and appended as a JSON line to ``log`` when given. A round's status:
  ``ok``; ``unknown_tool`` (no such tool); ``malformed_arguments`` (not JSON, or not the input
  model: the validation error is sent back); ``tool_timeout`` (the tool did not return in
  ``tool_timeout_s``); ``tool_error`` (it raised); ``not_run`` (the budget ran out). The model
  gets each as the tool's result (``is_error`` for Anthropic), so it can correct itself.
  ``environment_failures`` counts rounds the environment caused (a timeout, a tool that raised,
  a tool result whose ``status`` is ``timeout``/``server_failed``/``unavailable``): they are not
  the proof's doing, and a caller charges nothing to the proof for them.

The clients are the official SDKs' (``anthropic.Anthropic``, ``openai.OpenAI``, including
openai-compatible servers given as ``base_url``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

RoundStatus = Literal["ok", "unknown_tool", "malformed_arguments", "tool_timeout", "tool_error", "not_run"]
Stop = Literal["done", "budget_tool_calls", "budget_tokens", "budget_wall_time"]
_ENVIRONMENT = {"timeout", "server_failed", "unavailable"}


@dataclass
class ToolSpec:
    name: str
    description: str
    input: type[BaseModel]
    run: Callable[[BaseModel], BaseModel]


class Budget(BaseModel):
    """Per-attempt bounds: tool calls, tokens (input + output), wall time in seconds."""

    tool_calls: int = 30
    tokens: int = 400_000
    wall_s: float = 1800.0


class Round(BaseModel):
    index: int
    tool: str
    arguments: Any = None
    status: RoundStatus
    detail: str = ""
    duration_s: float = 0.0
    result_chars: int = 0
    environment: bool = False


class LoopResult(BaseModel):
    text: str = ""
    stop: Stop
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    rounds: list[Round] = Field(default_factory=list)
    seconds: float = 0.0

    @property
    def environment_failures(self) -> int:
        return sum(r.environment for r in self.rounds)


class _Loop:
    def __init__(self, tools: list[ToolSpec], budget: Budget, log: Path | None, tool_timeout_s: float) -> None:
        self.tools = {t.name: t for t in tools}
        self.budget, self.log, self.tool_timeout_s = budget, log, tool_timeout_s
        self.start = time.monotonic()
        self.result = LoopResult(stop="done")
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="prover-tool")

    def out_of_budget(self) -> Stop | None:
        r = self.result
        if time.monotonic() - self.start >= self.budget.wall_s:
            return "budget_wall_time"
        if r.input_tokens + r.output_tokens >= self.budget.tokens:
            return "budget_tokens"
        return None

    def record(self, rnd: Round) -> Round:
        self.result.rounds.append(rnd)
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(rnd.model_dump(mode="json"), ensure_ascii=False)[:20_000] + "\n")
        return rnd

    def call(self, name: str, raw: Any) -> tuple[str, bool]:
        """Run one tool call; (the text sent back to the model, whether it is an error)."""
        index = len(self.result.rounds)
        ran = sum(r.status not in ("not_run",) for r in self.result.rounds)
        if ran >= self.budget.tool_calls or self.out_of_budget():
            self.result.stop = "budget_tool_calls" if ran >= self.budget.tool_calls else self.out_of_budget()
            self.record(Round(index=index, tool=name, arguments=raw, status="not_run", detail=self.result.stop))
            return json.dumps({"error": f"not run: the attempt's budget ran out ({self.result.stop})"}), True
        spec = self.tools.get(name)
        if spec is None:
            self.record(Round(index=index, tool=name, arguments=raw, status="unknown_tool"))
            return json.dumps({"error": f"unknown tool {name!r}; tools: {sorted(self.tools)}"}), True
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
            parsed = spec.input.model_validate(args)
        except (ValueError, ValidationError) as e:
            detail = str(e)[:2000]
            self.record(Round(index=index, tool=name, arguments=raw, status="malformed_arguments", detail=detail))
            return json.dumps({"error": f"malformed arguments for {name}: {detail}"}), True
        t0 = time.monotonic()
        future = self.pool.submit(spec.run, parsed)
        try:
            out = future.result(timeout=self.tool_timeout_s)
        except FutureTimeout:
            self.record(Round(index=index, tool=name, arguments=args, status="tool_timeout", environment=True,
                              duration_s=round(time.monotonic() - t0, 4),
                              detail=f"no result in {self.tool_timeout_s:g} s"))
            return json.dumps({"error": f"{name} did not finish in {self.tool_timeout_s:g} s (the environment, "
                                        "not the proof)"}), True
        except Exception as e:  # a tool that raised: the environment's failure, reported to the model
            self.record(Round(index=index, tool=name, arguments=args, status="tool_error", environment=True,
                              duration_s=round(time.monotonic() - t0, 4), detail=f"{type(e).__name__}: {e}"[:2000]))
            return json.dumps({"error": f"{name} failed: {type(e).__name__}"}), True
        text = out.model_dump_json()
        status = getattr(out, "status", "ok")
        self.record(Round(index=index, tool=name, arguments=args, status="ok", duration_s=round(time.monotonic() - t0, 4),
                          result_chars=len(text), environment=status in _ENVIRONMENT,
                          detail=str(getattr(out, "note", ""))[:500]))
        return text, False

    def finish(self, stop: Stop, text: str = "") -> LoopResult:
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.result.stop == "done":
            self.result.stop = stop
        self.result.text = text
        self.result.seconds = round(time.monotonic() - self.start, 4)
        return self.result


def run_anthropic(client, *, model: str, system: str, prompt: str, tools: list[ToolSpec], budget: Budget,
                  max_tokens: int = 4096, log: Path | None = None, tool_timeout_s: float = 120.0) -> LoopResult:
    """The loop on Anthropic's Messages API (``tool_use`` / ``tool_result`` blocks)."""
    loop = _Loop(tools, budget, log, tool_timeout_s)
    schema = [{"name": t.name, "description": t.description, "input_schema": t.input.model_json_schema()} for t in tools]
    messages: list[dict] = [{"role": "user", "content": prompt}]
    while True:
        stop = loop.out_of_budget()
        if stop:
            return loop.finish(stop)
        resp = client.messages.create(model=model, max_tokens=max_tokens, system=system, tools=schema, messages=messages)
        loop.result.model_calls += 1
        loop.result.input_tokens += resp.usage.input_tokens or 0
        loop.result.output_tokens += resp.usage.output_tokens or 0
        text = "".join(b.text for b in resp.content if b.type == "text")
        uses = [b for b in resp.content if b.type == "tool_use"]
        if not uses:
            return loop.finish("done", text)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in resp.content]})
        results = []
        for b in uses:
            content, error = loop.call(b.name, b.input)
            results.append({"type": "tool_result", "tool_use_id": b.id, "content": content, "is_error": error})
        messages.append({"role": "user", "content": results})
        if loop.result.stop != "done":
            return loop.finish(loop.result.stop, text)


def run_openai(client, *, model: str, system: str, prompt: str, tools: list[ToolSpec], budget: Budget,
               max_tokens: int = 4096, log: Path | None = None, tool_timeout_s: float = 120.0) -> LoopResult:
    """The loop on OpenAI's Chat Completions API (function ``tool_calls`` / ``tool`` messages)."""
    loop = _Loop(tools, budget, log, tool_timeout_s)
    schema = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                "parameters": t.input.model_json_schema()}} for t in tools]
    messages: list[dict] = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    while True:
        stop = loop.out_of_budget()
        if stop:
            return loop.finish(stop)
        resp = client.chat.completions.create(model=model, messages=messages, tools=schema,
                                              max_completion_tokens=max_tokens)
        loop.result.model_calls += 1
        if resp.usage is not None:
            loop.result.input_tokens += resp.usage.prompt_tokens or 0
            loop.result.output_tokens += resp.usage.completion_tokens or 0
        msg = resp.choices[0].message
        calls = msg.tool_calls or []
        if not calls:
            return loop.finish("done", msg.content or "")
        messages.append({"role": "assistant", "content": msg.content,
                         "tool_calls": [c.model_dump(exclude_none=True) for c in calls]})
        for c in calls:
            content, _ = loop.call(c.function.name, c.function.arguments)
            messages.append({"role": "tool", "tool_call_id": c.id, "content": content})
        if loop.result.stop != "done":
            return loop.finish(loop.result.stop, msg.content or "")
