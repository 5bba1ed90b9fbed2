"""Confined model processes (issue 11, finding 2 family), with real bubblewrap.

A ``command`` agent is an untrusted process: it runs in the unit workspace with the project
folder (the state store, ``.fyan/``, other units) and the user's home hidden, the network off
unless configured, and its whole process group ends with the attempt. The agent here is
``tests/cheats/agents/forge_state.sh``, a real script that tries what an RL-trained agent
would: insert a succeeded gate run into the state store, write a gate report, and leave a child
behind. Each test has a control that shows the attack works unconfined, so the test can fail.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import pytest

from fyan.agents.providers.base import Message, ModelRequest
from fyan.agents.providers.command import CommandAgentProvider
from fyan.errors import ProviderError
from fyan.lean.runner import bwrap_status
from fyan.state.models import RunStatus, Stage, UnitStatus
from tests.conftest import ROOT
from tests.test_stages import to_prove

FORGE = Path(__file__).parent / "cheats" / "agents" / "forge_state.sh"
BWRAP, WHY = bwrap_status()
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason=f"no usable bubblewrap here: {WHY}")


def forged_runs(store) -> list:
    return [r for u in store.units() for r in store.runs(u.id) if r.reason == "forged"]


def run_forger(tmp_path: Path, sandbox: str):
    project, gateway, engine = to_prove(tmp_path, None)
    agent = CommandAgentProvider([str(FORGE)], timeout_s=60, sandbox=sandbox, project_root=project.paths.root)
    engine.providers = lambda stage: agent
    run = engine.step("def-a", Stage.PROVE)
    time.sleep(2.6)  # the child the agent left behind would write now
    return project, gateway, run


@needs_bwrap
def test_a_command_agent_cannot_forge_the_state_store(tmp_path, no_lake):
    project, gateway, run = run_forger(tmp_path / "confined", "require")
    assert run.status is RunStatus.SUCCEEDED, run.reason  # the attempt itself is ordinary
    views = gateway.store.views(3)
    assert forged_runs(gateway.store) == [] and views["def-a"].status is not UnitStatus.COMPLETE
    assert not (project.paths.unit("def-a") / "gate" / "report.json").exists()
    assert not (project.paths.unit("def-a") / "late-forgery.txt").exists()
    calls = sorted((project.paths.root / run.attempt_dir / "calls").glob("*.response.md"))
    gateway.close()
    # control: the same agent unconfined forges a completion (what `fyan verify` then catches)
    project, gateway, run = run_forger(tmp_path / "unconfined", "off")
    assert forged_runs(gateway.store) and gateway.store.views(3)["def-a"].status is UnitStatus.COMPLETE
    assert (project.paths.unit("def-a") / "gate" / "report.json").exists()
    # ... but even unconfined, its process group ended with the attempt: the child did not write
    assert not (project.paths.unit("def-a") / "late-forgery.txt").exists()
    gateway.close()
    assert calls  # the confined agent did run and answer


def request(workspace: Path) -> ModelRequest:
    return ModelRequest(stage="prove", unit="u", prompt="prove", model="m", max_tokens=10, workspace=str(workspace),
                        messages=[Message(role="user", content="Prove 1 = 1.")])


def test_a_command_agent_without_bubblewrap_is_refused_with_the_remedy(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n: > ran\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bwrap-here"))
    agent = CommandAgentProvider([str(script)], sandbox="require")
    with pytest.raises(ProviderError) as e:
        agent.complete(request(ws))
    assert not e.value.retryable and not (ws / "ran").exists()
    assert 'sandbox = "require" but bubblewrap (bwrap) is not installed; install bubblewrap' in e.value.message
    assert CommandAgentProvider([str(script)], sandbox="off").complete(request(ws)) is not None
    assert (ws / "ran").exists()  # control: the explicit "off" runs it


@needs_bwrap
def test_a_command_agent_has_the_network_only_when_configured(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    port = server.getsockname()[1]
    script = tmp_path / "agent.py"
    script.write_text(f"import socket\ns = socket.socket(); s.settimeout(3)\n"
                      f"try:\n    s.connect(('127.0.0.1', {port})); print('connected')\nexcept OSError:\n    print('no network')\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    off = CommandAgentProvider([sys.executable, str(script)], sandbox="require").complete(request(ws))
    on = CommandAgentProvider([sys.executable, str(script)], sandbox="require", network=True).complete(request(ws))
    server.close()
    assert off.text.strip() == "no network" and on.text.strip() == "connected"


@needs_bwrap
def test_a_command_agent_sees_only_its_workspace_and_what_it_is_given(tmp_path):
    project = tmp_path / "project"
    ws = project / "workspaces" / "u"
    ws.mkdir(parents=True)
    (project / ".fyan").mkdir()
    (project / ".fyan" / "state.db").write_text("state")
    extra = tmp_path / "agent-home"
    extra.mkdir()
    (extra / "config").write_text("agent config\n")
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\ncat {project}/.fyan/state.db 2>/dev/null || echo hidden\n"
                      f"cat {extra}/config\necho x > {extra}/state && echo wrote || echo read-only\n")
    script.chmod(0o755)
    agent = CommandAgentProvider([str(script)], sandbox="require", project_root=project, readable=[str(extra)])
    assert agent.complete(request(ws)).text.split("\n")[:3] == ["hidden", "agent config", "read-only"]
    writer = CommandAgentProvider([str(script)], sandbox="require", project_root=project, writable=[str(extra)])
    assert writer.complete(request(ws)).text.split("\n")[2] == "wrote"
    from fyan.errors import ConfigError

    for bad in (project / ".fyan", project, tmp_path):  # inside the project, the project, a folder containing it
        with pytest.raises(ConfigError, match="overlaps the project folder"):
            CommandAgentProvider([str(script)], project_root=project, writable=[str(bad)])


@needs_bwrap
def test_the_gate_builds_and_inspects_confined_end_to_end(fake_lake, tmp_path, monkeypatch):
    """The gate with `[lean] sandbox = "require"` through real bubblewrap: every build and the
    inspector run confined (the Lake and inspector doubles stand in for Lean); a toolchain that
    needs a folder the sandbox hides is an environment problem that names the remedy."""
    from tests import gate_harness as h

    s = h.setup(tmp_path / "p", h.HONEST)
    home = Path("/var/tmp") / f"fyan-home-{tmp_path.name}"
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))  # hidden inside the sandbox
    monkeypatch.setenv("FYAN_LEAN__SANDBOX", "require")
    from fyan.project import Project

    s.project = Project.open(s.project.paths.root)
    report = s.gate(None, fake=fake_lake)
    assert report.passed, report.summary()
    assert report.check("build").evidence["sandboxed"] is True
    assert report.sandbox.startswith("require: bubblewrap")
    # a toolchain whose `lean` runs an implementation in a hidden folder (here: under the home)
    tools = home / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "impl").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests/fakes/fake_lean.py"}" "$@"\n')
    (tools / "impl").chmod(0o755)
    prefix = home / "lean"
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    (prefix / "bin" / "lean").write_text(f'#!/bin/sh\nFAKE_LEAN_PREFIX="{prefix}" exec "{tools / "impl"}" "$@"\n')
    (prefix / "bin" / "lean").chmod(0o755)
    (prefix / "bin" / "lake").write_text(f'#!/bin/sh\nexec "{fake_lake.path}" "$@"\n')
    (prefix / "bin" / "lake").chmod(0o755)
    monkeypatch.setenv("FYAN_LEAN__LAKE", str(prefix / "bin" / "lake"))
    s.project = Project.open(s.project.paths.root)
    report = s.gate(None, fake=fake_lake)
    assert not report.passed and report.environment_problem is not None
    assert "cannot be found (inside the sandbox" in report.environment_problem
    assert "[lean] sandbox_readable" in report.environment_problem
    monkeypatch.setenv("FYAN_LEAN__SANDBOX_READABLE", json.dumps([str(tools)]))
    s.project = Project.open(s.project.paths.root)
    assert s.gate(None, fake=fake_lake).passed
    import shutil

    shutil.rmtree(home, ignore_errors=True)
