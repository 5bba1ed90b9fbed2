"""The Formalizer's tool loop through the real stage path (``fyan.agents.stages.prove`` →
``fyan.agents.prove_tools`` → ``fyan.agents.tool_loop``), at the SDKs' HTTP layer: the real
``anthropic`` and ``openai`` clients and Fyan's SDK providers, the network replaced by
``httpx2.MockTransport`` standing in for the Messages and Chat Completions APIs (the SDKs' HTTP
library is ``httpx2``, which respx does not patch). The tools are the real ones: the declaration
search over a small list in the project, and the ``lean_*`` tools on the toolchain double's
language server (``tests/fakes/fake_lean.py``, which follows the rows of docs/lean-contract.md
"The language server") or on no toolchain at all. Each outcome must be recorded, and what the
environment caused must not be charged to the proof."""

from __future__ import annotations

import json

import anthropic
import httpx2
import openai
import pytest

from fyan.agents.providers.replay import RecordingProvider, ReplayProvider
from fyan.agents.providers.sdk import AnthropicProvider, OpenAIProvider
from fyan.agents.prove_tools import NO_TOOLCHAIN
from fyan.agents.tool_loop import FINAL_TURN
from fyan.prover.search import DeclarationList, DeclarationRecord, write_declarations
from fyan.state.lifecycle import progress
from fyan.state.models import FailureKind, RunStatus, Stage
from tests.test_formalizer_loop import HONEST
from tests.test_prover_loop import Server, anthropic_msg, use
from tests.test_stages import to_prove

DECLS = [DeclarationRecord(name="Int.mul_add", kind="theorem", module="Init.Data.Int.Lemmas",
                           signature="Int.mul_add (a b c : Int) : a * (b + c) = a * b + a * c"),
         DeclarationRecord(name="Int.add_comm", kind="theorem", module="Init.Data.Int.Lemmas",
                           signature="Int.add_comm (a b : Int) : a + b = b + a")]
FINAL = json.dumps({"plan": "p", "lean": HONEST, "done": True})


def with_declarations(toml: str = "") -> str:
    return '[agents]\nprove_iterations = 2\n[prover]\ndeclarations = "decls.jsonl"\n' + toml


def write_decls(project, records=DECLS) -> None:
    write_declarations(project.paths.root / "decls.jsonl", DeclarationList(toolchain="t", dependencies="d",
                                                                          count=len(records)), records)


def prepared(tmp_path, provider, toml: str = "", records=DECLS):
    """The example chain's def-a at the prove stage, with the declaration list in place."""
    project, gateway, engine = to_prove(tmp_path, provider, with_declarations(toml))
    write_decls(project, records)
    return project, gateway, engine


def anthropic_provider(server: Server, monkeypatch) -> AnthropicProvider:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    client = anthropic.Anthropic(max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    return AnthropicProvider(client=client, attempts=1)


def openai_provider(server: Server, monkeypatch) -> OpenAIProvider:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    client = openai.OpenAI(max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    return OpenAIProvider(client=client, attempts=1)


def final(text: str = FINAL, tokens: int = 10) -> dict:
    return anthropic_msg([{"type": "text", "text": text}], tokens)


def oai(calls: list[tuple[str, str]] | None, text: str | None = None) -> dict:
    msg: dict = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
                             for i, (n, a) in enumerate(calls)]
    return {"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-5-mini",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": msg}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def rounds(project, run) -> list[dict]:
    path = project.paths.root / run.attempt_dir / "tools.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def loop_record(project, run) -> dict:
    return json.loads((project.paths.root / run.attempt_dir / "tool_loop.json").read_text())


def test_anthropic_formalizer_calls_tools_and_each_round_is_recorded(tmp_path, fake_lake, monkeypatch):
    server = Server(
        anthropic_msg([{"type": "text", "text": "looking"}, use(1, "search_declarations", {"query": "mul add"})]),
        anthropic_msg([use(2, "lean_magic", {})]),
        anthropic_msg([use(3, "search_declarations", {"limit": 2})]),
        anthropic_msg([use(4, "lean_check", {"text": HONEST})]),
        final(),
    )
    project, gateway, engine = prepared(tmp_path, anthropic_provider(server, monkeypatch))
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    assert [r["status"] for r in rounds(project, run)] == ["ok", "unknown_tool", "malformed_arguments", "ok"]
    # the model saw the real search result and the warm server's answer
    sent = server.bodies[1]["messages"][-1]["content"][0]
    assert sent["tool_use_id"] == "tu1" and json.loads(sent["content"])["hits"][0]["name"] == "Int.mul_add"
    assert "duration_s" not in sent["content"]  # timings are not sent: the same answer is the same text
    check = json.loads(server.bodies[4]["messages"][-1]["content"][0]["content"])
    assert check["status"] == "ok" and check["complete"] is True
    assert server.bodies[2]["messages"][-1]["content"][0]["is_error"]  # the unknown tool, as an error result
    assert "query" in server.bodies[3]["messages"][-1]["content"][0]["content"]
    assert [t["name"] for t in server.bodies[0]["tools"]] == ["lean_check", "lean_goals", "lean_try", "lean_lookup",
                                                            "lean_axioms", "search_declarations"]
    assert "output_config" not in server.bodies[0]  # the JSON reply is asked for by the prompt
    used = loop_record(project, run)["used"]
    assert used == {"model_calls": 5, "tool_calls": 4, "tokens": 75, "wall_s": used["wall_s"],
                    "environment_failures": 0}
    # every turn is a model call of the run, accounted
    calls = [c for c in gateway.store.model_calls("def-a") if c.run_id == run.id]
    assert len(calls) == 5 and sum(c.tokens_in + c.tokens_out for c in calls) == 75
    assert len(list((project.paths.root / run.attempt_dir / "calls").glob("*.tool_calls.json"))) == 4
    gateway.close()


def test_status_shows_the_budgets_used(tmp_path, fake_lake, monkeypatch, capsys):
    server = Server(anthropic_msg([use(1, "search_declarations", {"query": "add comm"})]), final())
    project, gateway, engine = prepared(tmp_path, anthropic_provider(server, monkeypatch), "tool_calls = 7\n")
    run = engine.step("def-a", Stage.PROVE)
    gateway.close()
    from fyan.cli import main

    capsys.readouterr()
    assert main(["status", str(project.paths.root), "--unit", "def-a", "--cost", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    [attempt] = payload["tool_loop"]["def-a"]
    assert attempt["run"] == run.id and attempt["tool_calls"] == 1 and attempt["model_calls"] == 2
    assert attempt["tokens"] == 30 and attempt["stops"] == ["done"] and attempt["budget"]["tool_calls"] == 7
    assert payload["cost"]["tool_loop"]["by_unit"]["def-a"]["tool_calls"] == 1
    assert payload["cost"]["tool_loop"]["total"]["attempts"] == 1
    assert main(["status", str(project.paths.root), "--unit", "def-a", "--cost"]) == 0
    text = capsys.readouterr().out
    assert "def-a: Formalizer tool loop per attempt" in text and "1 / 7" in text
    assert "Formalizer tool loop by unit" in text


def test_openai_a_tool_that_times_out_is_the_environment_and_charges_nothing(tmp_path, fake_lake, monkeypatch):
    fake_lake.scenario({"server": {"elaborate_s": 2}})
    server = Server(oai([("lean_check", json.dumps({"text": HONEST}))]), oai([("lean_check", "{not json")]),
                    oai(None, FINAL))
    project, gateway, engine = prepared(tmp_path, openai_provider(server, monkeypatch),
                                        "tool_timeout = 0.3\nenvironment_failures = 1\n")
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.FAILED and run.failure_kind is FailureKind.ENVIRONMENT
    assert "the prover tools failed 1 time(s)" in run.reason and "the environment, not the proof" in run.reason
    assert [r["status"] for r in rounds(project, run)] == ["tool_timeout"]
    assert loop_record(project, run)["iterations"][0]["stop"] == "environment"
    p = progress(gateway.store.runs("def-a"), attempts_per_stage=1)
    assert p.next_stage is Stage.PROVE and "budget" not in (p.blocked_reason or "")  # not charged to the proof
    gateway.close()
    # control: allowed more environment failures, the model goes on and its proof is judged
    server = Server(oai([("lean_check", json.dumps({"text": HONEST}))]), oai([("lean_check", "{not json")]),
                    oai(None, FINAL))
    project, gateway, engine = prepared(tmp_path / "b", openai_provider(server, monkeypatch),
                                        "tool_timeout = 0.3\nenvironment_failures = 2\n")
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    assert [r["status"] for r in rounds(project, run)] == ["tool_timeout", "malformed_arguments"]
    used = loop_record(project, run)["used"]
    assert used["tool_calls"] == 1 and used["environment_failures"] == 1  # the timeout is not a charged call
    sent = server.bodies[1]["messages"]
    assert sent[-1]["role"] == "tool" and "did not finish" in sent[-1]["content"]
    assert "malformed arguments" in server.bodies[2]["messages"][-1]["content"]
    gateway.close()


def test_without_a_toolchain_the_lean_tools_say_so(tmp_path, no_lake, monkeypatch):
    server = Server(oai([("lean_check", json.dumps({"text": HONEST})), ("search_declarations", '{"query": "add"}')]),
                    oai(None, FINAL))
    project, gateway, engine = prepared(tmp_path, openai_provider(server, monkeypatch))
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    answers = [m for m in server.bodies[1]["messages"] if m["role"] == "tool"]
    assert json.loads(answers[0]["content"]) == {"complete": False, "errors": 0, "goals": [], "messages": [],
                                                 "note": NO_TOOLCHAIN, "sorries": 0, "status": "unavailable",
                                                 "truncated": False}
    assert "Int.add_comm" in answers[1]["content"]
    assert [r["environment"] for r in rounds(project, run)] == [True, False]
    gateway.close()


def test_the_budget_running_out_mid_loop(tmp_path, fake_lake, monkeypatch):
    # tool calls: the second call is not run, and the model is asked once more, without tools
    two = anthropic_msg([use(1, "search_declarations", {"query": "add"}), use(2, "search_declarations",
                                                                            {"query": "mul"})])
    server = Server(two, final())
    project, gateway, engine = prepared(tmp_path, anthropic_provider(server, monkeypatch), "tool_calls = 1\n")
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    assert [(r["status"], r["detail"]) for r in rounds(project, run)][1] == ("not_run", "budget_tool_calls")
    last = server.bodies[-1]
    assert last["tool_choice"] == {"type": "none"} and last["messages"][-1]["content"][-1]["text"] == FINAL_TURN
    assert loop_record(project, run)["iterations"][0]["stop"] == "budget_tool_calls"
    gateway.close()
    # tokens: the first reply uses them up; no reply, no candidate: the model's failure, recorded
    server = Server(anthropic_msg([use(1, "search_declarations", {"query": "add"})], tokens=900))
    project, gateway, engine = prepared(tmp_path / "b", anthropic_provider(server, monkeypatch), "tokens = 500\n")
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.FAILED and run.failure_kind is FailureKind.AGENT
    assert "used up its budget before replying (budget_tokens" in run.reason
    assert len(server.bodies) == 1 and [r["status"] for r in rounds(project, run)] == ["not_run"]
    gateway.close()


def test_a_tool_conversation_replays_and_a_differing_tool_result_is_named(tmp_path, fake_lake, monkeypatch):
    server = Server(anthropic_msg([use(1, "search_declarations", {"query": "mul add"})]), final())
    cassette = tmp_path / "cassette.jsonl"
    recorder = RecordingProvider(anthropic_provider(server, monkeypatch), cassette)
    project, gateway, engine = prepared(tmp_path / "rec", recorder)
    assert engine.step("def-a", Stage.PROVE).status is RunStatus.SUCCEEDED
    gateway.close()
    entries = [json.loads(x) for x in cassette.read_text().splitlines()]
    prove = [e for e in entries if e["stage"] == "prove"]
    assert [e["turn"] for e in prove] == [0, 1] and prove[0]["tool_calls"][0]["name"] == "search_declarations"
    assert prove[1]["thread"] == prove[0]["thread"] and "Int.mul_add" in prove[1]["answers"][0]["content"]
    # replayed (tools = true: the replay provider does not assume tools): the same conversation, offline
    toml = '[agents.stages.prove]\nprovider = "replay"\ntools = true\n'
    replay = ReplayProvider(cassette)
    project, gateway, engine = prepared(tmp_path / "replay", replay, toml)
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    assert [c.replay for c in gateway.store.model_calls("def-a") if c.run_id == run.id] == [True, True]
    gateway.close()
    # the tool answers otherwise on replay (another declaration list): a named error, not a silent miss
    project, gateway, engine = prepared(tmp_path / "other", ReplayProvider(cassette), toml, records=DECLS[1:])
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.FAILED and run.failure_kind is FailureKind.ENVIRONMENT
    assert "the result of tool search_declarations in round 1 differs from the recorded one where they part" \
        in run.reason
    assert "Int.mul_add" in run.reason.split("now:")[0] and "Int.mul_add" not in run.reason.split("now:")[1]
    gateway.close()


@pytest.mark.parametrize("toml", ["", '[agents.stages.prove]\nprovider = "replay"\ntools = false\n'])
def test_without_tool_support_nothing_changes(tmp_path, no_lake, monkeypatch, toml):
    """An OpenAI-compatible server is not assumed to take tools; ``tools = false`` turns them off."""
    server = Server(oai(None, FINAL))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    client = openai.OpenAI(max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    provider = OpenAIProvider(client=client, base_url="http://localhost:1/v1", attempts=1) if not toml \
        else OpenAIProvider(client=client, attempts=1)
    project, gateway, engine = prepared(tmp_path, provider, toml)
    run = engine.step("def-a", Stage.PROVE)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    assert "tools" not in server.bodies[0] and "response_format" in server.bodies[0]
    assert not (project.paths.root / run.attempt_dir / "tool_loop.json").exists()
    gateway.close()
