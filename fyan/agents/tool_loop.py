"""A provider-side tool loop: a model answers with tool calls (Anthropic ``tool_use`` blocks,
OpenAI function calls), Fyan runs the prover tools and sends their results back, until the
model answers without a tool call or the attempt's budget runs out.

* **Tools** are ``ToolSpec``: a name, a description, a pydantic input model (its JSON schema is
  what the model sees) and a function from that model to a pydantic result.
* **Budget** (``Budget``) per attempt: tool calls, tokens (input + output, summed over the model
  calls) and wall time (s). It is checked before every model call and before every tool call;
  running out stops the loop with ``stop = "budget_<what>"`` — never an exception — and the
  calls the model asked for beyond it are recorded as ``not_run``. With ``final_turn`` the
  tool-call budget running out is answered once more: the pending calls get "not run" and the
  model is asked for its final reply with ``tool_choice = "none"`` (tokens and wall time allowing).
* **The environment is not the proof.** A round the environment failed (below) uses none of
  the tool-call budget, and its seconds are not counted against the wall-time budget; instead
  at most ``Budget.environment_failures`` of them are allowed, after which the loop stops with
  ``stop = "environment"`` (the caller fails the attempt as the environment's, charging
  nothing to the proof).
* **Each tool round is recorded** (``Round``: tool, arguments, status, seconds, result size)
  and appended as a JSON line to ``log`` when given. A round's status:
  ``ok``; ``unknown_tool`` (no such tool); ``malformed_arguments`` (not JSON, or not the input
  model: the validation error is sent back); ``tool_timeout`` (the tool did not return in
  ``tool_timeout_s``); ``tool_error`` (it raised); ``not_run`` (the budget ran out). The model
  gets each as the tool's result (``is_error`` for Anthropic), so it can correct itself.
  ``environment_failures`` counts rounds the environment caused (a timeout, a tool that raised,
  a tool result whose ``status`` is ``timeout``/``server_failed``/``unavailable``): they are not
  the proof's doing, and a caller charges nothing to the proof for them.

``run`` is the loop over any ``send(turns, tool_choice) -> ModelResponse`` (a provider's
``complete`` on a ``ModelRequest`` with ``tools`` and ``turns``: ``fyan.agents.providers.base``);
the Formalizer runs it through its stage session, so each model call is recorded, accounted and
replayable. ``run_anthropic``/``run_openai`` run it on a bare SDK client (``anthropic.Anthropic``,
``openai.OpenAI``, including openai-compatible servers given as ``base_url``) through the SDK
providers' own translation.
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

from fyan.agents.providers.base import Message, ModelRequest, ModelResponse, ToolAnswer, ToolDef, ToolTurn

RoundStatus = Literal["ok", "unknown_tool", "malformed_arguments", "tool_timeout", "tool_error", "not_run"]
Stop = Literal["done", "budget_tool_calls", "budget_tokens", "budget_wall_time", "environment"]
#: the user text of the last turn after the tool-call budget ran out (``final_turn``)
FINAL_TURN = ("The tool-call budget of this attempt is used up: the calls above were not run. Give your final "
              "reply now, in the form asked for, without calling a tool.")
_ENVIRONMENT = {"timeout", "server_failed", "unavailable"}


@dataclass
class ToolSpec:
    name: str
    description: str
    input: type[BaseModel]
    run: Callable[[BaseModel], BaseModel]


class Budget(BaseModel):
    """Per-attempt bounds: tool calls, tokens (input + output), wall time in seconds, and the
    rounds the environment may fail before the loop stops (module docstring)."""

    tool_calls: int = 30
    tokens: int = 400_000
    wall_s: float = 1800.0
    environment_failures: int = 5


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
    """What the loop did: the final ``text`` (``replied``: the model answered without calling a
    tool; False when a budget or the environment stopped it first), why it stopped, its model
    calls and tokens, the tool rounds and its wall time (s)."""

    text: str = ""
    replied: bool = False
    stop: Stop
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    rounds: list[Round] = Field(default_factory=list)
    seconds: float = 0.0

    @property
    def environment_failures(self) -> int:
        return sum(r.environment for r in self.rounds)

    @property
    def tool_calls(self) -> int:
        """Tool calls charged to the budget: run, by the model's doing (not ``not_run``, not the
        environment's)."""
        return sum(r.status != "not_run" and not r.environment for r in self.rounds)


class _Loop:
    def __init__(self, tools: list[ToolSpec], budget: Budget, log: Path | None, tool_timeout_s: float) -> None:
        self.tools = {t.name: t for t in tools}
        self.budget, self.log, self.tool_timeout_s = budget, log, tool_timeout_s
        self.start = time.monotonic()
        self.environment_s = 0.0  # seconds of rounds the environment failed: not the proof's
        self.result = LoopResult(stop="done")
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="prover-tool")

    def out_of_budget(self) -> Stop | None:
        r = self.result
        if time.monotonic() - self.start - self.environment_s >= self.budget.wall_s:
            return "budget_wall_time"
        if r.input_tokens + r.output_tokens >= self.budget.tokens:
            return "budget_tokens"
        return None

    def record(self, rnd: Round) -> Round:
        self.result.rounds.append(rnd)
        if rnd.environment:
            self.environment_s += rnd.duration_s
            if self.result.environment_failures >= self.budget.environment_failures and self.result.stop == "done":
                self.result.stop = "environment"
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(rnd.model_dump(mode="json"), ensure_ascii=False)[:20_000] + "\n")
        return rnd

    def call(self, name: str, raw: Any) -> tuple[str, bool]:
        """Run one tool call; (the text sent back to the model, whether it is an error)."""
        index = len(self.result.rounds)
        over = self.out_of_budget()
        if self.result.stop != "done" or self.result.tool_calls >= self.budget.tool_calls or over:
            if self.result.stop == "done":
                self.result.stop = over or "budget_tool_calls"
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
        text = model_text(out)
        status = getattr(out, "status", "ok")
        self.record(Round(index=index, tool=name, arguments=args, status="ok", duration_s=round(time.monotonic() - t0, 4),
                          result_chars=len(text), environment=status in _ENVIRONMENT,
                          detail=str(getattr(out, "note", ""))[:500]))
        return text, False

    def finish(self, stop: Stop, text: str = "", replied: bool = False) -> LoopResult:
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.result.stop == "done":
            self.result.stop = stop
        self.result.text = text
        self.result.replied = replied
        self.result.seconds = round(time.monotonic() - self.start, 4)
        return self.result


#: keys of a tool result the model is not sent: timings, and the search's FTS5 score (the hits'
#: order says it; the number may differ in its last digits between SQLite builds)
_VOLATILE = frozenset({"duration_s", "rank"})


def _strip_volatile(value: Any) -> Any:
    """``value`` without its ``_VOLATILE`` keys at any depth and with floats rounded to 6
    significant digits: what a tool result says, not how fast this machine said it."""
    if isinstance(value, dict):
        return {k: _strip_volatile(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_strip_volatile(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value


def model_text(result: BaseModel) -> str:
    """The text a tool result is sent to the model as: its JSON without timings and scores
    (``_strip_volatile``), so that the same answer is the same text on every machine and a
    replayed conversation is keyed by what the tools said."""
    return json.dumps(_strip_volatile(result.model_dump(mode="json")), ensure_ascii=False, sort_keys=True)


def tool_defs(tools: list[ToolSpec]) -> list[ToolDef]:
    """The tools as the model is offered them (name, description, input JSON schema)."""
    return [ToolDef(name=t.name, description=t.description, parameters=t.input.model_json_schema()) for t in tools]


Send = Callable[[list[ToolTurn], Literal["auto", "none"]], ModelResponse]


def run(send: Send, *, tools: list[ToolSpec], budget: Budget, log: Path | None = None,
        tool_timeout_s: float = 120.0, final_turn: bool = False, turns: list[ToolTurn] | None = None) -> LoopResult:
    """The loop (module docstring): ``send(turns, tool_choice)`` asks the model with the rounds
    so far and returns its reply (``ModelResponse``: text, ``tool_calls``, usage). ``turns``:
    rounds to continue from (a form repair after a final reply); the list is extended in place
    with this loop's rounds. Never raises for a tool's or a budget's sake; ``send``'s own errors
    (a provider error, a replay miss) propagate."""
    loop = _Loop(tools, budget, log, tool_timeout_s)
    turns = turns if turns is not None else []
    choice: Literal["auto", "none"] = "auto"
    while True:
        stop = loop.out_of_budget()
        if stop:
            return loop.finish(stop)
        resp = send(list(turns), choice)
        loop.result.model_calls += 1
        loop.result.input_tokens += resp.usage.tokens_in
        loop.result.output_tokens += resp.usage.tokens_out
        if not resp.tool_calls or choice == "none":
            return loop.finish("done", resp.text, replied=True)
        answers = []
        for c in resp.tool_calls:
            content, error = loop.call(c.name, c.arguments)
            answers.append(ToolAnswer(id=c.id, content=content, is_error=error))
        turns.append(ToolTurn(text=resp.text, calls=resp.tool_calls, answers=answers))
        if loop.result.stop != "done":
            if final_turn and loop.result.stop == "budget_tool_calls" and not loop.out_of_budget():
                turns[-1].user = FINAL_TURN
                choice = "none"
                continue
            return loop.finish(loop.result.stop, resp.text)


def _request(model: str, system: str, prompt: str, tools: list[ToolSpec], max_tokens: int) -> ModelRequest:
    return ModelRequest(stage="prove", model=model, max_tokens=max_tokens, tools=tool_defs(tools),
                        messages=[Message(role="system", content=system), Message(role="user", content=prompt)])


def run_anthropic(client, *, model: str, system: str, prompt: str, tools: list[ToolSpec], budget: Budget,
                  max_tokens: int = 4096, log: Path | None = None, tool_timeout_s: float = 120.0) -> LoopResult:
    """The loop on Anthropic's Messages API (``tool_use`` / ``tool_result`` blocks), through
    ``AnthropicProvider`` on ``client`` (one try per call)."""
    from fyan.agents.providers.sdk import AnthropicProvider

    provider = AnthropicProvider(client=client, attempts=1)
    base = _request(model, system, prompt, tools, max_tokens)
    return run(lambda turns, choice: provider.complete(base.model_copy(update={"turns": turns, "tool_choice": choice})),
               tools=tools, budget=budget, log=log, tool_timeout_s=tool_timeout_s)


def run_openai(client, *, model: str, system: str, prompt: str, tools: list[ToolSpec], budget: Budget,
               max_tokens: int = 4096, log: Path | None = None, tool_timeout_s: float = 120.0) -> LoopResult:
    """The loop on OpenAI's Chat Completions API (function ``tool_calls`` / ``tool`` messages),
    through ``OpenAIProvider`` on ``client`` (one try per call)."""
    from fyan.agents.providers.sdk import OpenAIProvider

    provider = OpenAIProvider(client=client, attempts=1)
    base = _request(model, system, prompt, tools, max_tokens)
    return run(lambda turns, choice: provider.complete(base.model_copy(update={"turns": turns, "tool_choice": choice})),
               tools=tools, budget=budget, log=log, tool_timeout_s=tool_timeout_s)
