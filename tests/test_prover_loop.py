"""The provider-side tool loop (``fyan.agents.tool_loop``) at the SDKs' HTTP layer: the real
``anthropic`` and ``openai`` clients, the network replaced by ``httpx2.MockTransport`` (the
SDKs' HTTP library is ``httpx2``, which respx does not patch) standing in for the Messages and
Chat Completions APIs. The tool is the real ``search_declarations`` over a small index; a tool
that sleeps stands in for a language server that does not answer."""

from __future__ import annotations

import json
import time

import anthropic
import httpx2
import openai
import pytest
from pydantic import BaseModel

from fyan.agents.tool_loop import Budget, ToolSpec, run_anthropic, run_openai
from fyan.prover.search import DeclarationIndex, DeclarationList, DeclarationRecord, SearchResult, build_index, write_declarations


class Server:
    def __init__(self, *replies) -> None:
        self.replies = list(replies)
        self.bodies: list[dict] = []

    def __call__(self, req: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(req.content))
        return httpx2.Response(200, json=self.replies.pop(0))


class Query(BaseModel):
    query: str
    limit: int = 5


class Slow(BaseModel):
    seconds: float


@pytest.fixture
def tools(tmp_path):
    decls = tmp_path / "d.jsonl"
    write_declarations(decls, DeclarationList(toolchain="t", dependencies="d", count=1), [
        DeclarationRecord(name="Nat.add_comm", kind="theorem", module="M", signature="Nat.add_comm (n m : ℕ) : n + m = m + n")])
    build_index(decls, tmp_path / "i.sqlite")
    idx = DeclarationIndex(tmp_path / "i.sqlite")

    def slow(a: Slow) -> SearchResult:  # a hung language server
        time.sleep(a.seconds)
        return SearchResult(query="")

    yield [ToolSpec("search_declarations", "search", Query, lambda a: idx.search(a.query, limit=a.limit)),
           ToolSpec("lean_slow", "a tool that hangs", Slow, slow)]
    idx.close()


def anthropic_msg(content: list[dict], tokens: int = 10) -> dict:
    return {"id": "m", "type": "message", "role": "assistant", "model": "claude-haiku-4-5", "content": content,
            "stop_reason": "tool_use" if any(c["type"] == "tool_use" for c in content) else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": tokens, "output_tokens": 5}}


def use(i: int, name: str, args: dict) -> dict:
    return {"type": "tool_use", "id": f"tu{i}", "name": name, "input": args}


def anthropic_client(server: Server, monkeypatch) -> anthropic.Anthropic:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    return anthropic.Anthropic(max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(server)))


def openai_client(server: Server, monkeypatch) -> openai.OpenAI:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return openai.OpenAI(max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(server)))


def test_anthropic_tool_rounds_unknown_tool_malformed_arguments_and_a_timeout(tools, monkeypatch, tmp_path):
    server = Server(
        anthropic_msg([{"type": "text", "text": "searching"}, use(1, "search_declarations", {"query": "add comm"})]),
        anthropic_msg([use(2, "lean_magic", {})]),
        anthropic_msg([use(3, "search_declarations", {"limit": 3})]),
        anthropic_msg([use(4, "lean_slow", {"seconds": 3})]),
        anthropic_msg([{"type": "text", "text": "theorem t : 1 = 1 := rfl"}]),
    )
    log = tmp_path / "rounds.jsonl"
    r = run_anthropic(anthropic_client(server, monkeypatch), model="claude-haiku-4-5", system="prove", prompt="go",
                      tools=tools, budget=Budget(), log=log, tool_timeout_s=0.3)
    assert r.stop == "done" and r.text == "theorem t : 1 = 1 := rfl" and r.model_calls == 5
    assert [x.status for x in r.rounds] == ["ok", "unknown_tool", "malformed_arguments", "tool_timeout"]
    assert r.environment_failures == 1 and r.input_tokens == 50 and r.output_tokens == 25
    first = server.bodies[1]["messages"][-1]["content"][0]
    assert first["type"] == "tool_result" and first["tool_use_id"] == "tu1" and not first["is_error"]
    assert json.loads(first["content"])["hits"][0]["name"] == "Nat.add_comm"
    errors = [server.bodies[i]["messages"][-1]["content"][0] for i in (2, 3, 4)]
    assert all(e["is_error"] for e in errors)
    assert "unknown tool" in errors[0]["content"] and "query" in errors[1]["content"] and "did not finish" in errors[2]["content"]
    assert server.bodies[0]["tools"][0]["input_schema"]["required"] == ["query"]
    assert [json.loads(x)["status"] for x in log.read_text().splitlines()] == [x.status for x in r.rounds]


def test_openai_function_calls_with_arguments_that_are_not_json(tools, monkeypatch):
    def reply(calls: list[tuple[str, str]] | None, text: str | None = None) -> dict:
        msg = {"role": "assistant", "content": text}
        if calls:
            msg["tool_calls"] = [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
                                 for i, (n, a) in enumerate(calls)]
        return {"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-5-mini",
                "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": msg}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    server = Server(reply([("search_declarations", '{"query": "add comm"}'), ("search_declarations", "{not json")]),
                    reply([("nope", "{}")]), reply(None, "done"))
    r = run_openai(openai_client(server, monkeypatch), model="gpt-5-mini", system="prove", prompt="go", tools=tools,
                   budget=Budget())
    assert r.stop == "done" and r.text == "done" and r.model_calls == 3
    assert [x.status for x in r.rounds] == ["ok", "malformed_arguments", "unknown_tool"]
    sent = server.bodies[1]["messages"]
    assert [m["role"] for m in sent[-3:]] == ["assistant", "tool", "tool"]
    assert sent[-2]["tool_call_id"] == "c0" and "Nat.add_comm" in sent[-2]["content"]
    assert "malformed arguments" in sent[-1]["content"]
    assert server.bodies[0]["tools"][0]["function"]["name"] == "search_declarations"


def test_the_budget_running_out_mid_loop_is_a_recorded_stop(tools, monkeypatch):
    three = anthropic_msg([use(i, "search_declarations", {"query": "comm"}) for i in range(3)])
    server = Server(three)
    r = run_anthropic(anthropic_client(server, monkeypatch), model="m", system="s", prompt="p", tools=tools,
                      budget=Budget(tool_calls=2))
    assert r.stop == "budget_tool_calls" and r.model_calls == 1
    assert [x.status for x in r.rounds] == ["ok", "ok", "not_run"] and r.rounds[2].detail == "budget_tool_calls"
    # tokens: the first reply uses the whole budget, so no second model call is made
    server = Server(anthropic_msg([use(1, "search_declarations", {"query": "comm"})], tokens=1000))
    r = run_anthropic(anthropic_client(server, monkeypatch), model="m", system="s", prompt="p", tools=tools,
                      budget=Budget(tokens=500))
    assert r.stop == "budget_tokens" and r.model_calls == 1 and len(server.bodies) == 1
    assert [x.status for x in r.rounds] == ["not_run"]
    # wall time
    server = Server(anthropic_msg([use(1, "lean_slow", {"seconds": 0.4})]))
    r = run_anthropic(anthropic_client(server, monkeypatch), model="m", system="s", prompt="p", tools=tools,
                      budget=Budget(wall_s=0.2), tool_timeout_s=5)
    assert r.stop == "budget_wall_time" and r.model_calls == 1 and [x.status for x in r.rounds] == ["ok"]
