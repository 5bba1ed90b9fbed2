"""Provider outages are waited out, not counted.

Two levels, both through the official SDKs' HTTP layer:

* the engine with a real ``AnthropicProvider`` whose HTTP transport (``httpx2.MockTransport``,
  standing in for the Anthropic API) answers with refused connections, 529, 500 and 429 for an
  outage window and normally afterwards; the stage agents are doubles that make one model call
  each and write their outputs (the models' and Lean's part is not what is tested here);
* a real ``fyan daemon`` process on the example project whose provider is an OpenAI-compatible
  server on a local port — a test double of a model server that answers each request with the
  example's recorded response for it — which the test stops (connections refused), then makes
  answer 529/500/429, then restores, while the daemon runs.

In both: nothing is blocked, nothing is lost, no attempt budget is used, no critic is called,
and the outage is reported while it lasts ("… unavailable since 14:02, next try in 3 s").
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anthropic
import httpx2

from fyan.agents.providers.base import Message, ModelRequest
from fyan.agents.providers.breaker import Breakers
from fyan.agents.providers.replay import load_cassette
from fyan.agents.providers.sdk import AnthropicProvider
from fyan.cli import main
from fyan.orchestrator.engine import Engine
from fyan.stages import stage_spec
from fyan.state.gateway import CheckOutcome
from fyan.state.models import RunStatus, Stage
from fyan.state.store import Store
from tests.helpers import ingested, wait_for

REFUSED = httpx2.ConnectError("[Errno 111] Connection refused")


def anthropic_reply(text: str) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-1",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


class FlakyAnthropic:
    """The Anthropic API during an outage of ``down_s`` seconds from the first request:
    refused connections, 529 overloaded, 500, 429 in turn; then normal replies."""

    def __init__(self, down_s: float) -> None:
        self.down_s = down_s
        self.start: float | None = None
        self.requests = 0
        self.failures = Counter()
        self._lock = threading.Lock()

    def __call__(self, req: httpx2.Request) -> httpx2.Response:
        with self._lock:
            self.start = self.start or time.monotonic()
            self.requests += 1
            down = time.monotonic() - self.start < self.down_s
            kind = ("refused", "529", "500", "429")[self.requests % 4]
            if down:
                self.failures[kind] += 1
        if down:
            if kind == "refused":
                raise REFUSED
            status = int(kind)
            err = {"529": "overloaded_error", "500": "api_error", "429": "rate_limit_error"}[kind]
            return httpx2.Response(status, json={"type": "error", "error": {"type": err, "message": err}})
        return httpx2.Response(200, json=anthropic_reply("a reply"))


def test_an_outage_is_waited_out_nothing_counted_nothing_lost(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    project, gateway = ingested(tmp_path / "p", checks={s: (lambda ctx: CheckOutcome(True, "ok (test double)"))
                                                         for s in Stage})
    api = FlakyAnthropic(down_s=2.0)
    breakers = Breakers(wait_initial=0.2, wait_max=0.6)
    client = anthropic.Anthropic(max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(api)))
    provider = AnthropicProvider(client=client, attempts=2, wait_initial=0, wait_max=0, breaker=breakers.get("anthropic"))

    def agent(session, ctx) -> None:  # one real model call, then the stage's outputs
        session.provider.complete(ModelRequest(stage=ctx.run.stage.value, unit=ctx.unit.id, model="claude-opus-4-1",
                                               messages=[Message(role="user", content=f"{ctx.run.stage.value} {ctx.unit.id}")],
                                               max_tokens=100))
        for rel in stage_spec(ctx.run.stage).outputs:
            ctx.write(rel, f"{rel} of {ctx.unit.id}\n")

    class Critic:
        calls = 0

        def review_for(self, ledger, run):
            Critic.calls += 1

    events = []
    engine = Engine(project, gateway, agents={s: agent for s in Stage if s is not Stage.GATE}, providers=lambda s: provider,
                    breakers=breakers, parallelism=2, critic=Critic(),
                    on_event=lambda e, v: events.append((e.unit, e.status, e.reason)))
    summary = engine.run()  # with nothing else to do, the run waits for the provider instead of ending
    assert summary.counts == {"complete": 3}  # nothing blocked
    assert set(api.failures) == {"refused", "529", "500", "429"}
    runs = gateway.store.runs()
    assert not [r for r in runs if r.status is RunStatus.FAILED]  # no attempt was counted against a unit
    interrupted = [r for r in runs if r.status is RunStatus.INTERRUPTED]
    assert interrupted and all(r.reason.startswith("interrupted: anthropic unavailable (") for r in interrupted)
    succeeded = Counter((r.unit, r.stage) for r in runs if r.status is RunStatus.SUCCEEDED)
    assert len(succeeded) == 15 and set(succeeded.values()) == {1}  # nothing lost, nothing done twice
    assert Critic.calls == 0
    kinds = [e.kind for e in gateway.store.events(limit=10_000) if e.kind.startswith("provider_")]
    assert kinds[0] == "provider_unavailable" and kinds[-1] == "provider_available"
    assert any(s == "unavailable" and "anthropic unavailable since" in (r or "") for _, s, r in events)
    by_provider = [e for e in gateway.store.events(kind="stage_interrupted", limit=10_000) if e.data.get("by") == "provider"]
    assert len(by_provider) == len(interrupted) and {e.data["provider"] for e in by_provider} == {"anthropic"}
    gateway.close()


# -- a real daemon across an outage of its model server -----------------------------------------

class CassetteServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1:``port`` that answers each
    request with the example cassette's response for it (the request key is computed from the
    body exactly as Fyan computes it). ``mode``: ``up``, or ``errors`` (529, 500, 429 in turn);
    ``stop()`` closes the port (connections are refused) until ``start()``."""

    def __init__(self, cassette: Path, port: int, down_after: int | None = None) -> None:
        self.entries = load_cassette(cassette)
        self.port = port
        self.mode = "up"
        self.down_after = down_after  # stop listening after serving this many replies
        self.went_down = threading.Event()
        self.served = 0
        self.errors = 0
        self.httpd: ThreadingHTTPServer | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if outer.mode == "errors":
                    outer.errors += 1
                    status = (529, 500, 429)[outer.errors % 3]
                    return self._send(status, {"error": {"message": "overloaded", "type": "server_error"}})
                fmt = body.get("response_format") or {}
                key = ModelRequest(stage="-", model=body["model"], messages=[Message(**m) for m in body["messages"]],
                                   max_tokens=body["max_tokens"], temperature=body.get("temperature"),
                                   json_output="response_format" in body,
                                   json_schema=(fmt.get("json_schema") or {}).get("schema")).key()
                entry = outer.entries.get(key)
                if entry is None:
                    return self._send(400, {"error": {"message": f"no recorded response for {key}"}})
                outer.served += 1
                if outer.served == outer.down_after:  # the outage begins (from another thread)
                    threading.Thread(target=lambda: (outer.stop(), outer.went_down.set()), daemon=True).start()
                time.sleep(0.03)  # a model takes a moment
                self._send(200, {"id": "c1", "object": "chat.completion", "created": 1, "model": body["model"],
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": entry.text}}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.handler = Handler

    def start(self) -> None:
        ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port




def cli_json(capsys, *argv):
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_daemon_rides_out_an_outage_of_its_model_server(example, fake_lake, capsys, monkeypatch):
    port = free_port()
    toml = (example / "fyan.toml").read_text()
    toml = toml.replace('provider = "replay"\nmodel = "example-authored"',
                        f'provider = "openai-compatible"\nbase_url = "http://127.0.0.1:{port}/v1"\nmodel = "example-authored"')
    # this server answers plain requests only: the Formalizer asks without its tools (the cassette holds both)
    toml = toml.replace("tools = true", "tools = false")
    (example / "fyan.toml").write_text(toml)
    server = CassetteServer(example / "replay" / "cassette.jsonl", port, down_after=40)
    (example / "replay" / "cassette.jsonl").unlink()  # the daemon really talks to the server
    monkeypatch.setenv("FYAN_AGENTS__OUTAGE_WAIT_INITIAL", "0.5")
    monkeypatch.setenv("FYAN_AGENTS__OUTAGE_WAIT_MAX", "1.5")
    monkeypatch.setenv("FYAN_AGENTS__CALL_ATTEMPTS", "1")
    monkeypatch.setenv("FYAN_SCHEDULER__PARALLELISM", "2")
    # the server is down when the daemon starts: even the first ingest (the model Specifier) waits
    code, state = cli_json(capsys, "daemon", "start", str(example), "--no-dashboard")
    assert code == 0
    try:
        time.sleep(2.0)
        server.start()
        db = example / ".fyan" / "state.db"
        assert server.went_down.wait(120)  # after 40 replies, in the middle of the run: connections refused
        code, status = wait_for(lambda: (r := cli_json(capsys, "status", str(example)))[1]["providers"] and r)
        [outage] = status["providers"]
        assert outage["provider"] == f"openai-compatible http://127.0.0.1:{port}/v1"
        assert " unavailable since " in outage["text"] and ("next try in" in outage["text"] or "trying again" in outage["text"])
        code, dstatus = cli_json(capsys, "daemon", "status", str(example))
        assert dstatus["running"] and dstatus["providers"][0]["provider"] == outage["provider"]
        time.sleep(3.0)
        server.mode = "errors"  # it answers again, but 529 / 500 / 429
        server.start()
        wait_for(lambda: server.errors >= 3, timeout=60)
        server.mode = "up"
        wait_for(lambda: Counter(v.status.value for v in Store(db).views(3).values()).get("complete") == 11, timeout=300)
    finally:
        main(["daemon", "stop", str(example)])
        capsys.readouterr()
        server.stop()
    runs = Store(example / ".fyan" / "state.db").runs()
    assert not [r for r in runs if r.status is RunStatus.FAILED and "unavailable" in (r.reason or "")]
    assert not [r for r in runs if r.status is RunStatus.FAILED and r.stage is not Stage.GATE]
    interrupted = [r for r in runs if r.status is RunStatus.INTERRUPTED]
    assert interrupted and all("unavailable" in (r.reason or "") for r in interrupted)
    succeeded = Counter((r.unit, r.stage) for r in runs if r.status is RunStatus.SUCCEEDED)
    assert len(succeeded) == 55 and set(succeeded.values()) == {1}  # nothing lost, nothing done twice
    store = Store(example / ".fyan" / "state.db")
    assert not store.events(kind="critic_scheduled")
    log = (example / ".fyan" / "logs" / "daemon.log").read_text()
    assert "unavailable since" in log and "answers again" in log  # the daemon log says so too
