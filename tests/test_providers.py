"""Providers at their boundary.

The SDK providers run the real ``anthropic`` and ``openai`` clients; only the network is
replaced, by ``httpx2.MockTransport`` (the SDKs' HTTP library is ``httpx2``, which respx does
not patch), standing in for the Anthropic and OpenAI HTTP APIs. The command agent runs a real
scripted CLI written by the test. Record/replay runs on cassette files.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import anthropic
import httpx2
import openai
import pytest

from fyan import logs
from fyan.agents.pricing import cost_usd
from fyan.agents.providers.base import Message, ModelRequest
from fyan.agents.providers.breaker import CircuitBreaker
from fyan.agents.providers.command import CommandAgentProvider
from fyan.agents.providers.replay import RecordingProvider, ReplayProvider
from fyan.agents.providers.sdk import AnthropicProvider, OpenAIProvider
from fyan.agents.schemas import ProveReply
from fyan.agents.session import StageSession
from fyan.config import StageAgent
from fyan.errors import ModelOutputError, ProviderError, ProviderUnavailable, ReplayMissError
from fyan.state.models import Stage
from tests.helpers import ingested
from tests.sandboxing import needs_bwrap

KEY = "sk-test-SECRET-7f3a9c"


def request(**kw) -> ModelRequest:
    base = dict(stage="prove", unit="u", prompt="prove", model="claude-haiku-4-5",
                messages=[Message(role="system", content="You prove."), Message(role="user", content="Prove 1 = 1.")],
                max_tokens=100)
    base.update(kw)
    return ModelRequest(**base)


def anthropic_reply(text: str, usage: dict | None = None) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": usage or {"input_tokens": 10, "output_tokens": 5}}


def openai_reply(text: str, usage: dict | None = None) -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-5-mini",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class Server:
    """A scripted HTTP API: each request gets the next (status, json | exception) in turn."""

    def __init__(self, *script) -> None:
        self.script = list(script)
        self.requests: list[httpx2.Request] = []

    def __call__(self, req: httpx2.Request) -> httpx2.Response:
        self.requests.append(req)
        status, payload = self.script.pop(0)
        if isinstance(payload, Exception):
            raise payload
        return httpx2.Response(status, json=payload)

    def body(self, i: int = -1) -> dict:
        return json.loads(self.requests[i].content)


def anthropic_provider(server: Server, monkeypatch, **kw) -> AnthropicProvider:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    client = anthropic.Anthropic(max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    return AnthropicProvider(client=client, wait_initial=0, wait_max=0, **kw)


def openai_provider(server: Server, monkeypatch, base_url: str | None = None, **kw) -> OpenAIProvider:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    client = openai.OpenAI(max_retries=0, base_url=base_url,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    provider = OpenAIProvider(client=client, wait_initial=0, wait_max=0, **kw)
    if base_url:  # what the factory builds for provider = "openai-compatible"
        provider = OpenAIProvider(client=client, base_url=base_url, wait_initial=0, wait_max=0, **kw)
    return provider


# -- Anthropic ---------------------------------------------------------------------------------

def test_anthropic_request_shape_usage_and_cache_accounting(monkeypatch):
    usage = {"input_tokens": 40, "output_tokens": 20, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 60}
    server = Server((200, anthropic_reply('{"lean": "theorem t : 1 = 1 := rfl"}', usage)))
    provider = anthropic_provider(server, monkeypatch)
    req = request(json_output=True, json_schema=ProveReply.model_json_schema(), temperature=0.0)  # not sent
    resp = provider.complete(req)
    sent = server.requests[0]
    assert sent.url.path == "/v1/messages" and sent.method == "POST"
    body = server.body()
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 100 and "temperature" not in body
    # the system prompt is a cached block; the conversation carries no system message
    assert body["system"] == [{"type": "text", "text": "You prove.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": "Prove 1 = 1."}]
    assert body["cache_control"] == {"type": "ephemeral"}
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema" and set(fmt["schema"]["required"]) >= {"lean"}
    assert fmt["schema"]["additionalProperties"] is False
    # usage: every prompt token counted, cache reads and writes priced at their own rates
    assert resp.usage.tokens_in == 1100 and resp.usage.cache_read == 1000 and resp.usage.cache_write == 60
    assert resp.usage.tokens_out == 20 and resp.cache_hit and resp.provider == "anthropic"
    # claude-haiku-4-5: input 1.0, output 5.0, cache_read 0.10, cache_write 1.25 USD / Mtok
    assert cost_usd(resp) == pytest.approx((40 * 1.0 + 1000 * 0.10 + 60 * 1.25 + 20 * 5.0) / 1e6)


def test_anthropic_without_schema_mode(monkeypatch):
    server = Server((200, anthropic_reply("text")))
    provider = anthropic_provider(server, monkeypatch, structured_output="prompt")
    provider.complete(request(json_output=True, json_schema=ProveReply.model_json_schema()))
    body = server.body()
    assert "output_config" not in body and body["messages"][0]["role"] == "user"


@pytest.mark.parametrize("failure", [
    (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
    (529, {"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}}),
    (500, {"type": "error", "error": {"type": "api_error", "message": "oops"}}),
    (0, httpx2.ReadTimeout("timed out")),
    (0, httpx2.ConnectError("refused")),
])
def test_anthropic_retries_transient_failures(monkeypatch, failure):
    server = Server(failure, failure, (200, anthropic_reply("done")))
    resp = anthropic_provider(server, monkeypatch).complete(request())
    assert resp.text == "done" and len(server.requests) == 3


def test_anthropic_gives_up_after_the_attempt_budget(monkeypatch):
    overloaded = (529, {"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}})
    server = Server(*[overloaded] * 3)
    with pytest.raises(ProviderUnavailable, match=r"anthropic unavailable: OverloadedError \(HTTP 529\) after 3") as e:
        anthropic_provider(server, monkeypatch, attempts=3).complete(request())
    assert e.value.provider == "anthropic" and len(server.requests) == 3


def test_anthropic_bad_request_is_not_retried(monkeypatch):
    server = Server((400, {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens too big"}}),
                    (200, anthropic_reply("never sent")))
    with pytest.raises(ProviderError, match="HTTP 400"):
        anthropic_provider(server, monkeypatch).complete(request())
    assert len(server.requests) == 1


def test_authentication_failure_is_not_retryable(monkeypatch):
    server = Server((401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}))
    with pytest.raises(ProviderError) as e:
        anthropic_provider(server, monkeypatch).complete(request())
    assert not e.value.retryable and len(server.requests) == 1


def test_missing_key_is_reported_without_a_call(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY is not set"):
        AnthropicProvider()
    with pytest.raises(ProviderError, match="OPENAI_API_KEY is not set"):
        OpenAIProvider()


def test_api_key_never_appears_in_logs_or_errors(monkeypatch, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # SDK and httpx2 debug logging included
    logs.configure(tmp_path / "logs")
    rate = (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    bad = (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}})
    server = Server(rate, (200, anthropic_reply("ok")), bad)
    provider = anthropic_provider(server, monkeypatch)
    provider.complete(request())
    with pytest.raises(ProviderError) as e:
        provider.complete(request())
    oserver = Server(rate, (200, openai_reply("ok")))
    openai_provider(oserver, monkeypatch).complete(request(model="gpt-5-mini"))
    # the key was really sent, in the authentication header of every request
    assert all(KEY in (r.headers.get("x-api-key", "") + r.headers.get("authorization", "")) for r in server.requests)
    assert all(KEY in r.headers.get("authorization", "") for r in oserver.requests)
    log_file = (tmp_path / "logs" / "fyan.jsonl").read_text()
    assert "model_call_retry" in log_file  # the retry was logged ...
    assert KEY not in log_file and KEY not in caplog.text and KEY not in str(e.value)  # ... without the key
    assert "SECRET" not in log_file + caplog.text


# -- OpenAI and OpenAI-compatible -------------------------------------------------------------

def test_openai_request_shape_usage_and_structured_output(monkeypatch):
    usage = {"prompt_tokens": 2000, "completion_tokens": 50, "total_tokens": 2050,
             "prompt_tokens_details": {"cached_tokens": 1536}}
    server = Server((200, openai_reply('{"lean": "x", "notes": ""}', usage)))
    provider = openai_provider(server, monkeypatch)
    resp = provider.complete(request(model="gpt-5-mini", json_output=True, json_schema=ProveReply.model_json_schema(),
                                     schema_name="ProveReply"))
    assert server.requests[0].url.path == "/v1/chat/completions"
    body = server.body()
    assert body["messages"][0] == {"role": "system", "content": "You prove."}
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body and "temperature" not in body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "ProveReply"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["lean"]["type"] == "string"
    assert resp.usage.tokens_in == 2000 and resp.usage.cache_read == 1536 and resp.usage.tokens_out == 50
    # gpt-5-mini: input 0.25, cache_read 0.025, output 2.0 USD / Mtok
    assert cost_usd(resp) == pytest.approx((464 * 0.25 + 1536 * 0.025 + 50 * 2.0) / 1e6)


def test_openai_json_mode_and_retry_then_no_retry_on_400(monkeypatch):
    server = Server((429, {"error": {"message": "rate"}}), (0, httpx2.ReadTimeout("slow")), (200, openai_reply("{}")),
                    (400, {"error": {"message": "bad"}}))
    provider = openai_provider(server, monkeypatch, structured_output="json")
    provider.complete(request(model="gpt-5-mini", json_output=True, json_schema={"type": "object"}))
    assert len(server.requests) == 3 and server.body()["response_format"] == {"type": "json_object"}
    with pytest.raises(ProviderError, match="HTTP 400"):
        provider.complete(request(model="gpt-5-mini"))
    assert len(server.requests) == 4


def test_openai_compatible_endpoint_by_base_url(monkeypatch):
    server = Server((200, openai_reply("hello")))
    provider = openai_provider(server, monkeypatch, base_url="http://127.0.0.1:8080/v1")
    resp = provider.complete(request(model="qwen2.5-coder", temperature=0.2))
    sent = server.requests[0]
    assert str(sent.url) == "http://127.0.0.1:8080/v1/chat/completions"
    assert server.body()["max_tokens"] == 100 and server.body()["temperature"] == 0.2
    assert resp.provider == "openai-compatible" and cost_usd(resp) == 0.0  # not in the pricing table


# -- structured output through a stage session -------------------------------------------------

def test_structured_reply_is_validated_and_repaired_then_fails_closed(tmp_path, monkeypatch):
    project, gateway = ingested(tmp_path / "p")
    run = gateway.begin("def-a", Stage.REASON, 3)
    server = Server((200, anthropic_reply('{"lean": 3}')), (200, anthropic_reply('{"lean": "theorem t : True := trivial"}')),
                    (200, anthropic_reply("no json")), (200, anthropic_reply('{"notes": "x"}')))
    agent = StageAgent(provider="anthropic", model="claude-haiku-4-5")
    session = StageSession(gateway=gateway, run=run, provider=anthropic_provider(server, monkeypatch), agent=agent,
                           form_repairs=1, attempt_dir=tmp_path / "attempt")
    values = {k: "x" for k in ("unit", "kind", "namespace", "problem", "proof", "blueprint", "statement", "frozen",
                               "upstream", "feedback", "guidance", "previous", "library")}
    reply = session.ask_json("prove", values, ProveReply)
    assert reply.lean == "theorem t : True := trivial"
    repair = server.body(1)["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"lean": 3}'}
    assert "lean: Input should be a valid string" in repair[-1]["content"]
    with pytest.raises(ModelOutputError, match="did not validate after 1 form repair"):
        session.ask_json("prove", values, ProveReply)
    calls = gateway.store.model_calls()
    assert len(calls) == 4 and {c.stage for c in calls} == {"reason"} and {c.unit for c in calls} == {"def-a"}
    assert all(c.provider == "anthropic" and c.tokens_in == 10 and c.tokens_out == 5 and c.cost > 0 for c in calls)
    # the rendered prompt of every call is kept with the attempt
    assert len(list((tmp_path / "attempt" / "calls").glob("*.request.json"))) == 4
    gateway.close()


# -- command agent -----------------------------------------------------------------------------

AGENT = r'''
import os, sys, time
prompt = sys.stdin.read()
mode = sys.argv[1]
if mode == "write":
    open("Basic.lean", "w").write("-- written by the agent\n" + prompt.splitlines()[-1] + "\n")
    os.remove("old.txt")
    print("edited Basic.lean for", os.environ["FYAN_UNIT"], os.environ["FYAN_STAGE"])
elif mode == "sleep":
    open("started", "w").write("x")
    time.sleep(60)
    open("finished", "w").write("x")
elif mode == "fail":
    print("something broke", file=sys.stderr)
    sys.exit(3)
'''


def command_agent(tmp_path: Path, mode: str, timeout: float = 30.0) -> CommandAgentProvider:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    # the script lives in pytest's /tmp folder, which the sandbox makes private: named readable
    return CommandAgentProvider([sys.executable, str(script), mode], timeout_s=timeout, readable=[str(script)])


@needs_bwrap
def test_command_agent_runs_in_the_workspace_and_returns_its_file_changes(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".lake").mkdir(parents=True)
    (ws / "old.txt").write_text("old")
    (ws / "keep.txt").write_text("same")
    resp = command_agent(tmp_path, "write").complete(request(workspace=str(ws)))
    assert resp.text.strip() == "edited Basic.lean for u prove"
    assert resp.files == {"Basic.lean": "-- written by the agent\nProve 1 = 1.\n", "old.txt": None}
    assert resp.provider == "command" and resp.usage.tokens_in == 0


@needs_bwrap
def test_command_agent_is_killed_at_the_timeout(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    start = time.monotonic()
    with pytest.raises(ProviderError, match="killed at the timeout of 1 s"):
        command_agent(tmp_path, "sleep", timeout=1).complete(request(workspace=str(ws)))
    assert time.monotonic() - start < 20
    time.sleep(0.2)
    assert (ws / "started").exists() and not (ws / "finished").exists()


@needs_bwrap
def test_command_agent_failure(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(ProviderError, match="exited with status 3: something broke"):
        command_agent(tmp_path, "fail").complete(request(workspace=str(ws)))


def test_command_agent_missing_program(tmp_path):  # refused before any sandbox is needed
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(ProviderError, match="not found on PATH") as e:
        CommandAgentProvider(["fyan-no-such-agent"]).complete(request(workspace=str(ws)))
    assert not e.value.retryable


# -- record / replay ---------------------------------------------------------------------------

class Canned:
    name = "canned"
    edits_files = False

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, req):
        from fyan.agents.providers.base import ModelResponse, Usage

        self.calls += 1
        return ModelResponse(text=f"reply to {req.messages[-1].content}", usage=Usage(tokens_in=7, tokens_out=3),
                             provider="canned", model=req.model)


def test_record_then_replay_hit_miss_and_changed_prompt(tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    live = Canned()
    recorded = RecordingProvider(live, cassette).complete(request())
    assert live.calls == 1 and recorded.text == "reply to Prove 1 = 1."
    entry = json.loads(cassette.read_text())
    assert entry["key"] == request().key() and entry["prompt"] == "prove" and entry["label"] == "recorded model response"
    replay = ReplayProvider(cassette)
    hit = replay.complete(request())
    assert hit.replay and hit.text == recorded.text and hit.usage.tokens_in == 7 and cost_usd(hit) == 0.0
    changed = request(messages=[Message(role="system", content="You prove."), Message(role="user", content="Prove 2 = 2.")])
    with pytest.raises(ReplayMissError) as e:
        replay.complete(changed)
    # one wording per stage and prompt (units miss together under one cause); the key is kept apart
    assert e.value.message == f"the replay cassette {cassette} has no response for the prove stage (prompt prove), model claude-haiku-4-5"
    assert e.value.key == changed.key() and not e.value.retryable
    # a different schema or model is a different request too
    assert request(json_schema={"type": "object"}).key() != request().key()
    assert request(model="other").key() != request().key()
    assert request(workspace="/somewhere").key() == request().key()


# -- outages: waited out behind one circuit breaker per provider ---------------------------------

class Clock:
    """The breaker's clock (POSIX seconds), moved by the test instead of waiting."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


OUTAGES = {
    "refused connection": (0, httpx2.ConnectError("[Errno 111] Connection refused")),
    "read timeout": (0, httpx2.ReadTimeout("timed out")),
    "429 rate limit": (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
    "529 overloaded": (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    "500 server error": (500, {"type": "error", "error": {"type": "api_error", "message": "oops"}}),
    "503 unavailable": (503, {"error": {"message": "upstream unavailable"}}),
}


def sdk_provider(kind: str, server: Server, monkeypatch, breaker: CircuitBreaker):
    if kind == "anthropic":
        return anthropic_provider(server, monkeypatch, attempts=2, breaker=breaker), anthropic_reply("ok")
    return openai_provider(server, monkeypatch, attempts=2, breaker=breaker), openai_reply("ok")


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("outage", list(OUTAGES))
def test_an_outage_opens_the_breaker_calls_fail_fast_and_a_probe_closes_it(monkeypatch, kind, outage):
    failure = OUTAGES[outage]
    clock = Clock()
    breaker = CircuitBreaker(kind, wait_initial=10, wait_max=25, clock=clock)
    server = Server(failure, failure, failure, (200, anthropic_reply("ok") if kind == "anthropic" else openai_reply("ok")))
    provider, _ = sdk_provider(kind, server, monkeypatch, breaker)
    # the call's own retries (2), then the provider counts as unavailable: not a ProviderError
    # that would fail the attempt, but an outage with when to try again
    with pytest.raises(ProviderUnavailable) as e:
        provider.complete(request(model="m"))
    assert len(server.requests) == 2 and e.value.provider == kind
    assert e.value.since == clock.now and e.value.retry_at == clock.now + 10
    assert breaker.outage().failures == 1 and breaker.wait_s() == 10
    # while open, every call fails at once: no request reaches the provider
    clock.now += 9
    with pytest.raises(ProviderUnavailable):
        provider.complete(request(model="m"))
    assert len(server.requests) == 2
    # due: one call goes out as the probe; it meets the outage again: the wait doubles (capped)
    clock.now += 1
    with pytest.raises(ProviderUnavailable) as e:
        provider.complete(request(model="m"))
    assert len(server.requests) == 3 and breaker.outage().failures == 2 and e.value.retry_at == clock.now + 20
    assert breaker.wait_for(3) == 25  # the cap
    assert breaker.outage().describe(clock.now).endswith(", next try in 20 s")
    # the provider answers again: the probe closes the breaker
    clock.now += 20
    assert provider.complete(request(model="m")).text == "ok"
    assert breaker.outage() is None and breaker.wait_s() == 0


def test_an_answer_that_is_an_error_closes_the_breaker_and_fails_the_call(monkeypatch):
    clock = Clock()
    breaker = CircuitBreaker("anthropic", wait_initial=5, clock=clock)
    down = OUTAGES["529 overloaded"]
    server = Server(down, (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}))
    provider = anthropic_provider(server, monkeypatch, attempts=1, breaker=breaker)
    with pytest.raises(ProviderUnavailable):
        provider.complete(request())
    clock.now += 5
    with pytest.raises(ProviderError) as e:  # a 400 is the caller's problem, not an outage
        provider.complete(request())
    assert not isinstance(e.value, ProviderUnavailable) and breaker.outage() is None


def test_a_real_refused_connection_is_an_outage(monkeypatch):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there: the kernel refuses the connection
    provider = OpenAIProvider(base_url=f"http://127.0.0.1:{port}/v1", attempts=1)
    with pytest.raises(ProviderUnavailable, match=r"openai-compatible unavailable: APIConnectionError") as e:
        provider.complete(request(model="local"))
    assert provider.breaker.outage() is not None and e.value.retry_at > e.value.since


def test_stages_on_one_endpoint_share_one_breaker(tmp_path, monkeypatch):
    from fyan.agents.providers.factory import ProviderFactory

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    project, gateway = ingested(tmp_path / "p", extra_toml=(
        '[agents.default]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n'
        '[agents.stages.prove]\nprovider = "anthropic"\nmodel = "claude-opus-4-1"\n'
        '[agents.stages.review]\nprovider = "openai"\nmodel = "gpt-5"\n'))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    factory = ProviderFactory(project)
    reason, prove, review = (factory.for_stage(s) for s in ("reason", "prove", "review"))
    assert reason is not prove and reason.breaker is prove.breaker  # two models, one endpoint
    assert review.breaker is not reason.breaker and review.breaker.name == "openai"
    reason.breaker.failed("ConnectError")
    with pytest.raises(ProviderUnavailable):
        prove.complete(request())  # fails at once: the request never leaves
    assert [o.provider for o in factory.breakers.outages()] == ["anthropic"]
    gateway.close()
