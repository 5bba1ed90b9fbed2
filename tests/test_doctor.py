"""``fyan doctor`` and ``fyan init --no-ingest``; the post-completion transition rules."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from fyan.cli import main
from fyan.errors import TransitionError
from fyan.state.models import Stage
from tests.helpers import ingested, make_project

SECRET = "sk-doctor-SECRET-31d"


class Models(BaseHTTPRequestHandler):
    """A local OpenAI-compatible server's /v1/models (stands in for vLLM/llama.cpp/Ollama)."""

    def do_GET(self):  # noqa: N802
        body = json.dumps({"data": [{"id": "local-model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_server():
    server = HTTPServer(("127.0.0.1", 0), Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def doctor(capsys, *argv):
    code = main(["doctor", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_doctor_reports_each_provider_and_the_toolchain_honestly(tmp_path, capsys, monkeypatch, local_server, no_lake):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    toml = f'''[agents.default]
provider = "anthropic"
model = "claude-haiku-4-5"
[agents.stages.reason]
provider = "openai-compatible"
base_url = "{local_server}"
model = "local-model"
[agents.stages.prove]
provider = "command"
command = ["fyan-no-such-agent", "--print"]
pass_env = ["ANTHROPIC_API_KEY", "FYAN_DOCTOR_UNSET"]
[agents.stages.review]
provider = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"
'''
    project = make_project(tmp_path / "p", extra_toml=toml)
    code, report = doctor(capsys, str(project.paths.root))
    assert code == 3 and not report["ok"]
    by = {tuple(p["stages"]): p for p in report["providers"]}
    anthropic = by[("plan", "audit", "critic", "curate")]
    assert anthropic["usable"] and anthropic["checks"][0]["detail"] == "ANTHROPIC_API_KEY is set"
    assert anthropic["checks"][1]["ok"] is None and "not checked" in anthropic["checks"][1]["detail"]
    local = by[("reason",)]
    assert local["usable"] and local["checks"][0]["detail"] == f"{local_server}/models answered HTTP 200"
    assert not by[("prove",)]["usable"] and "fyan-no-such-agent not found on PATH" in by[("prove",)]["checks"][0]["detail"]
    assert not by[("review",)]["usable"] and "unreachable" in by[("review",)]["checks"][0]["detail"]
    assert report["lean"]["present"] is False and report["lean"]["detail"].startswith("Lean toolchain not found")
    main(["doctor", str(project.paths.root)])
    text = capsys.readouterr().out
    assert SECRET not in text and SECRET not in json.dumps(report)
    assert "[FAIL] provider command for prove" in text and "provider command (" not in text  # a command picks its model
    # what reaches confined processes: names and whether set, never values
    env = report["environment"]
    assert set(env["always"]) >= {"PATH", "HOME", "LANG", "TMPDIR"} and "SSH_AUTH_SOCK" not in env["always"]
    assert env["lean"] == {"ELAN_HOME": False} or env["lean"] == {"ELAN_HOME": True}
    assert env["agents"] == [{"stages": ["prove"], "pass_env": {"ANTHROPIC_API_KEY": True, "FYAN_DOCTOR_UNSET": False}}]
    assert "command agent for prove also gets (pass_env): ANTHROPIC_API_KEY, FYAN_DOCTOR_UNSET (unset)" in text
    assert "environment of confined processes: PATH" in text and "do not pass" in text
    assert report["sandbox"]["unconfined_tree"] in ("pid namespace", "pid namespace in a user namespace",
                                                   "child subreaper")


def test_doctor_on_the_example_with_a_toolchain(capsys, fake_lake):
    from tests.conftest import EXAMPLE

    code, report = doctor(capsys, str(EXAMPLE))
    assert report["lean"]["present"] and "Lake version 5.0.0-fake" in report["lean"]["detail"]
    # the example's Formalizer has a section of its own (the replayed tool loop): two replay entries
    entries = sum(1 for line in (EXAMPLE / "replay" / "cassette.jsonl").read_text().splitlines() if line.strip())
    for replay in report["providers"]:
        assert replay["provider"] == "replay" and replay["usable"]
        assert f"{entries} recorded responses" in replay["checks"][0]["detail"]
    stages = [s for replay in report["providers"] for s in replay["stages"]]
    assert sorted(stages) == sorted(["specify", "reason", "plan", "audit", "prove", "critic", "curate", "review"])
    assert [r["stages"] for r in report["providers"] if "prove" in r["stages"]] == [["prove"]]
    assert code == (0 if report["sandbox"]["available"] or report["sandbox"]["setting"] != "require" else 3)


def test_doctor_without_a_project_checks_the_hosted_keys(capsys, monkeypatch, no_lake):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code, report = doctor(capsys)
    keys = {p["provider"]: p["checks"][0]["ok"] for p in report["providers"]}
    assert keys == {"anthropic": False, "openai": True} and code == 3


def test_doctor_without_a_project_fails_on_no_provider_nobody_chose(capsys, monkeypatch, fake_lake):
    """No project: no provider was chosen, so a hosted provider without its key is "not
    configured", never a failure; what every project needs (Lean, the sandbox it requires) still is."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, report = doctor(capsys)
    states = {p["provider"]: (p["needed"], p["state"]) for p in report["providers"]}
    assert states == {"anthropic": (False, "not configured"), "openai": (False, "not configured")}
    # ok depends on what every project needs, not on the providers
    expected = ((report["sandbox"]["available"] or report["sandbox"]["setting"] != "require")
                and report["selftest"]["trusted"] is not False)
    assert report["lean"]["present"] and report["ok"] is expected and code == (0 if expected else 3), report
    assert main(["doctor"]) == code
    text = capsys.readouterr().out
    assert "[FAIL] provider" not in text and "[FAIL] api key" not in text
    assert "[--  ] provider anthropic: not configured (no project given" in text
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    _, report = doctor(capsys)
    assert {p["provider"]: p["state"] for p in report["providers"]}["openai"] == "available"


def test_init_without_ingest_leaves_ingest_to_the_first_run(tmp_path, capsys):
    src = tmp_path / "doc" / "main.tex"
    src.parent.mkdir()
    src.write_text("\\begin{lemma}\\label{l} $1 = 1$. \\end{lemma}\n")
    assert main(["init", str(tmp_path / "p"), "--source", str(src), "--no-ingest"]) == 0
    assert "not ingested yet" in capsys.readouterr().out
    assert (tmp_path / "p" / "fyan.toml").is_file() and not (tmp_path / "p" / ".fyan").exists()
    assert main(["status", str(tmp_path / "p")]) == 0
    assert "not ingested yet" in capsys.readouterr().out


def test_post_tasks_only_for_complete_units(tmp_path):
    project, gateway = ingested(tmp_path / "p")
    with pytest.raises(TransitionError, match="curate runs only after the completion gate passed"):
        gateway.begin_post("def-a", "curate")
    with pytest.raises(TransitionError, match="unknown post-completion task"):
        gateway.begin_post("def-a", "gate")
    assert gateway.store.post_runs() == [] and [r.stage for r in gateway.store.runs()] == []
    assert Stage.GATE.next is None  # no post task is a stage: the lifecycle ends at the gate
    gateway.close()
