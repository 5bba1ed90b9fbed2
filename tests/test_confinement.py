"""Confined model processes, with real bubblewrap.

A ``command`` agent is an untrusted process: it runs in the unit workspace with the project
folder (the state store, ``.fyan/``, other units) and the user's home hidden, the network off
unless configured, and its whole process group ends with the attempt. The agent here is
``tests/cheats/agents/forge_state.sh``, a real script that tries what an RL-trained agent
would: insert a succeeded gate run into the state store, write a gate report, and leave a child
behind. Each test has a control that shows the attack works unconfined, so the test can fail.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import time
from pathlib import Path

import pytest

from fyan.agents.providers.base import Message, ModelRequest
from fyan.agents.providers.command import CommandAgentProvider
from fyan.errors import ProviderError
from fyan.state.models import RunStatus, Stage, UnitStatus
from tests.conftest import DOUBLE_READABLE, ROOT
from tests.sandboxing import BWRAP, WHY, leftover_processes, needs_bwrap
from tests.test_stages import to_prove

FORGE = Path(__file__).parent / "cheats" / "agents" / "forge_state.sh"


def forged_runs(store) -> list:
    return [r for u in store.units() for r in store.runs(u.id) if r.reason == "forged"]


def run_forger(tmp_path: Path, sandbox: str):
    project, gateway, engine = to_prove(tmp_path, None)
    agent = CommandAgentProvider([str(FORGE)], timeout_s=60, sandbox=sandbox, project_root=project.paths.root)
    engine.providers = lambda stage: agent
    gateway.store.views(3)  # Fyan holds the store open while the agent runs
    run = engine.step("def-a", Stage.PROVE)
    time.sleep(2.6)  # the children the agent left behind would write now
    calls = sorted((project.paths.root / run.attempt_dir / "calls").glob("*.response.md"))
    said = "\n".join(c.read_text() for c in calls)
    return project, gateway, run, said


def late_writes(project) -> list[Path]:
    ws = project.paths.workspace("def-a").resolve()
    return [p for p in (project.paths.unit("def-a") / "late-forgery.txt", ws / "late-child.txt", ws / "late-group.txt")
            if p.exists()]


@needs_bwrap
def test_a_command_agent_cannot_forge_the_state_store(tmp_path, no_lake):
    """As root too: the agent finds its project (it says where), tries to
    uncover it (umount, remount, a nested user namespace) and to write the store through every
    path (direct, /proc/*/root, /proc/*/cwd, open fds): nothing reaches it."""
    project, gateway, run, said = run_forger(tmp_path / "confined", "require")
    assert run.status is RunStatus.SUCCEEDED, run.reason  # the attempt itself is ordinary
    assert f"project={project.paths.root.resolve()}" in said, said  # it knew where to aim
    for success in ("uncovered", "remounted", "forged via", "wrote bytes via", "wrote gate report"):
        assert success not in said, said
    views = gateway.store.views(3)
    assert forged_runs(gateway.store) == [] and views["def-a"].status is not UnitStatus.COMPLETE
    assert not (project.paths.unit("def-a") / "gate" / "report.json").exists()
    assert late_writes(project) == []
    gateway.close()
    # control: the same agent unconfined forges a completion (what `fyan verify` then catches)
    project, gateway, run, said = run_forger(tmp_path / "unconfined", "off")
    assert f"forged via {project.paths.root.resolve()}/.fyan/state.db" in said, said
    assert forged_runs(gateway.store) and gateway.store.views(3)["def-a"].status is UnitStatus.COMPLETE
    assert (project.paths.unit("def-a") / "gate" / "report.json").exists()
    # ... but even unconfined, its whole process tree ended with the attempt: no child wrote, not even
    # the one in a new session
    assert late_writes(project) == []
    gateway.close()


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
    off = CommandAgentProvider([sys.executable, str(script)], sandbox="require", readable=[str(script)]).complete(
        request(ws))
    on = CommandAgentProvider([sys.executable, str(script)], sandbox="require", network=True,
                              readable=[str(script)]).complete(request(ws))
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
    monkeypatch.setenv("FYAN_LEAN__SANDBOX_READABLE", json.dumps([str(tools), *DOUBLE_READABLE]))
    s.project = Project.open(s.project.paths.root)
    assert s.gate(None, fake=fake_lake).passed
    import shutil

    shutil.rmtree(home, ignore_errors=True)


# -- as root and as an ordinary user ---------------------------------

ESCAPE = Path(__file__).parent / "cheats" / "agents" / "escape_sandbox.sh"
ATTACK = Path(__file__).parent / "sandbox_attack.py"
NOBODY = 65534


def python_as(user: str) -> tuple[list[str], dict[str, str]]:
    """(argv prefix that runs a Python with Fyan importable as ``user``, extra environment): the
    test's own interpreter when it already runs as that user; as root, an ordinary user (uid
    65534) through ``setpriv``, with a Python it can read. Skips with the reason otherwise."""
    import os
    import shutil
    import site
    import subprocess

    root = os.geteuid() == 0
    if user == "root":
        if not root:
            pytest.skip("not running as root here (CI runs as root)")
        return [sys.executable], {}
    if not root:
        return [sys.executable], {}
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot run as an ordinary user")
    prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    paths = {"PYTHONPATH": os.pathsep.join([str(ROOT), *site.getsitepackages()])}
    for python in dict.fromkeys([sys.executable, shutil.which("python3") or "", "/usr/bin/python3"]):
        if not python:
            continue
        check = ("import subprocess, sys, fyan.agents.providers.command, pydantic; "
                 "subprocess.run([sys.executable, '-c', ''], check=True)")  # Fyan re-runs its interpreter
        probe = subprocess.run([*prefix, python, "-c", check],
                               env={**os.environ, **paths, "HOME": "/"}, capture_output=True, cwd="/")
        if probe.returncode == 0:
            return [*prefix, python], paths
    pytest.skip("no Python with Fyan's dependencies is readable by an ordinary user (uid 65534) here")


def attack(user: str, sandbox: str) -> dict:
    """Run the escape agent as ``user`` under ``sandbox``; returns its reply and what reached the
    host: the store's hash before and after, connections each host socket accepted, files
    written outside, files its children wrote after it ended, processes left over."""
    import hashlib
    import os
    import shutil
    import signal
    import sqlite3
    import subprocess
    import tempfile
    import uuid

    argv, extra_env = python_as(user)
    uid = NOBODY if argv[0].endswith("setpriv") else os.geteuid()
    token = f"fyan-escape-{uuid.uuid4().hex[:12]}"
    base = Path(tempfile.mkdtemp(prefix=f"{token}-", dir="/var/tmp"))  # outside pytest's private /tmp folders
    project = base / "project"
    (project / ".fyan").mkdir(parents=True)
    (project / "workspaces" / "u").mkdir(parents=True)
    (base / "home").mkdir()
    db = project / ".fyan" / "state.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE stage_runs (unit, stage, attempt, status, started_at, finished_at, reason, "
                  "attempt_dir)")
    outside = [Path(f"/tmp/{token}.out"), Path(f"/var/tmp/{token}.out"), Path(f"/dev/shm/{token}.out"),
               base / "home" / "escaped.out"]
    servers, lines = {}, [f"project: {project}", f"secret: secret-{token}"]
    places = [Path(f"/tmp/{token}.sock"), base / "home" / "agent.sock", project / ".fyan" / "daemon.sock",
              Path(f"/dev/shm/{token}.sock")]
    if os.access("/run", os.W_OK):
        places.append(Path(f"/run/{token}.sock"))
    for place in places:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(place))
        os.chmod(place, 0o777)
        s.listen(5)
        s.setblocking(False)
        servers[str(place)] = s
        lines.append(f"socket: {place}")
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + token)
    abstract.listen(5)
    abstract.setblocking(False)
    servers["@" + token] = abstract
    lines.append(f"abstract: {token}")
    lines += [f"outside: {p}" for p in outside]
    (base / "prompt.txt").write_text("\n".join(lines) + "\n")
    for path in [base, *base.rglob("*")]:
        os.chown(path, uid, uid, follow_symlinks=False)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(base / "home"),
           "SSH_AUTH_SOCK": f"/tmp/ssh-{token}/agent.1", "ANTHROPIC_API_KEY": f"passed-{token}",
           "OPENAI_API_KEY": f"secret-{token}", "FYAN_OPENAI_COMPATIBLE_API_KEY": f"secret-{token}", **extra_env}
    try:
        proc = subprocess.run([*argv, str(ATTACK), str(base), sandbox], env=env, capture_output=True, text=True,
                              timeout=300, cwd="/")
        time.sleep(3.5)  # the children it left behind would write now
        late = sorted(p.name for p in (project / "workspaces" / "u").glob("late-*.txt"))
        left = leftover_processes(token)
        connected = {}
        for name, s in servers.items():
            n = 0
            while True:
                try:
                    s.accept()[0].close()
                    n += 1
                except BlockingIOError:
                    break
            connected[name] = n
        return {"uid": uid, "project": project, "db": db, "token": token, "out": proc.stdout + proc.stderr,
                "changed": hashlib.sha256(db.read_bytes()).hexdigest() != before, "connected": connected,
                "outside": [str(p) for p in outside if p.exists()], "late": late, "left": left}
    finally:
        for pid in leftover_processes(token):  # only what this test started, by id
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for s in servers.values():
            s.close()
        for p in outside + [Path(x) for x in servers if not x.startswith("@")]:
            with contextlib.suppress(OSError):
                p.unlink()
        shutil.rmtree(base, ignore_errors=True)



@needs_bwrap
@pytest.mark.parametrize("user", ["root", "user"])
def test_an_agent_cannot_leave_its_sandbox_as_root_or_as_a_user(user):
    """Umount/remount, the store through every path (direct,
    /proc/*/root, /proc/*/cwd, open fds), host Unix sockets (paths and abstract), the host's
    /tmp, /var/tmp, /dev/shm and home, the parent's secrets, a setsid child: each fails. The
    control runs the same agent unconfined: the store and the sockets are reached there (so the
    test can fail), while the environment stays minimal and no child outlives it."""
    got = attack(user, "require")
    out = got["out"]
    assert f"uid={got['uid']} project={got['project']}" in out, out  # it knew where to aim
    assert "ESCAPED" not in out and not out.startswith("ERROR"), out
    assert not got["changed"] and not got["outside"], (got["outside"], out)
    assert not any(got["connected"].values()), got["connected"]
    assert f"env ANTHROPIC_API_KEY=passed-{got['token']}" in out  # named in pass_env
    for name in ("SSH_AUTH_SOCK", "OPENAI_API_KEY", "FYAN_OPENAI_COMPATIBLE_API_KEY"):
        assert f"env {name}=" not in out, out
    assert got["late"] == [] and got["left"] == [], (got["late"], got["left"])
    control = attack(user, "off")
    out = control["out"]
    assert f"ESCAPED: wrote {control['db']}" in out and control["changed"], out
    assert sum(control["connected"].values()) >= 1 and len(control["outside"]) >= 1, (control, out)
    assert "env SSH_AUTH_SOCK=" not in out and f"env ANTHROPIC_API_KEY=passed-{control['token']}" in out
    assert control["late"] == [] and control["left"] == [], (control["late"], control["left"])


def test_require_refuses_where_bwrap_cannot_create_a_user_namespace(tmp_path):
    """A real place without user namespaces: inside a bubblewrap sandbox made with
    ``--disable-userns`` (bubblewrap >= 0.8), no process can create one. ``sandbox = "require"``
    refuses there with bwrap's own reason; ``auto`` runs unconfined and says why."""
    import os
    import shutil
    import subprocess

    bwrap = shutil.which("bwrap")
    if bwrap is None or BWRAP is None:
        pytest.skip(f"no usable bubblewrap here: {WHY}")
    outer = [bwrap, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--proc", "/proc", "--"]
    if subprocess.run([*outer, "true"], capture_output=True).returncode != 0:
        pytest.skip("this bubblewrap cannot make a sandbox without user namespaces (--disable-userns: >= 0.8)")
    script = ("import json, sys; from pathlib import Path; from fyan.sandbox.runner import run_process\n"
              "r = {m: run_process(['/bin/sh', '-c', 'echo ran'], cwd=Path(sys.argv[1]), timeout_s=30, sandbox=m)"
              ".model_dump() for m in ('require', 'auto')}\nprint(json.dumps(r))\n")
    proc = subprocess.run([*outer, sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                          cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    required, auto = results["require"], results["auto"]
    assert required["refused"] and required["exit_code"] is None and required["output"] == "", required
    assert "cannot create its namespaces here (a user namespace with every capability dropped" in required["note"]
    assert "nesting depth or /proc/sys/user/max_*_namespaces exceeded" in required["note"]  # bwrap's own words
    assert auto["output"].strip() == "ran" and not auto["sandboxed"] and auto["note"].startswith("not sandboxed: ")
