"""Every stop path ends what it started, and status tells the truth after
a kill.

The agent is a real command agent (``provider = "command"``): a small Python CLI written by the
test that starts a grandchild in its own process group — the way a coding agent starts shells
and servers — which would write a file two minutes later if it were left running. The runs are
real ``fyan run`` / ``fyan daemon`` processes. After each stop path the agent, its grandchild,
the registry file and the scratch folders must be gone.

These tests run the agent unconfined (``sandbox = "off"``): that is the mode in which the
registry alone ends what an agent started, and in which the test can see the agent's and the
grandchild's process ids. Confined, bubblewrap's PID namespace and ``--die-with-parent`` end them
as well; ``test_a_confined_agent_ends_with_a_killed_run`` checks that from outside. Unconfined
processes run through ``fyan/sandbox/reaper.py``: these tests force its subreaper
mechanism (``FYAN_REAPER=subreaper``), so the ids the agent reports are the host's; its PID
namespace mechanism is tested in tests/test_sandbox.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fyan.agents import process_groups
from fyan.agents.providers.base import Message, ModelRequest
from fyan.agents.providers.command import CommandAgentProvider
from fyan.errors import ProviderError
from fyan.state.models import RunStatus
from fyan.state.store import Store
from tests.conftest import ROOT
from tests.helpers import make_project, wait_for

AGENT = r'''
import os, subprocess, sys, time
markers = os.environ["FYAN_TEST_MARKERS"]
late = os.path.join(markers, f"late-write-{os.getpid()}")
child = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(120); open(sys.argv[1], 'w').write('late')", late])
with open(os.path.join(markers, f"agent-{os.getpid()}.json"), "w") as fh:
    fh.write('{"agent": %d, "child": %d, "cwd": "%s"}' % (os.getpid(), child.pid, os.getcwd()))
sys.stdin.read()
if sys.argv[1] == "quick":
    print("done")  # leaves the grandchild running behind it
    sys.exit(0)
time.sleep(120)
'''


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"




def agents_started(markers: Path, n: int) -> list[dict]:
    found = [json.loads(p.read_text()) for p in markers.glob("agent-*.json") if p.read_text().endswith("}")]
    return found if len(found) >= n else []


@pytest.fixture
def agent(tmp_path, monkeypatch) -> tuple[Path, Path]:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("FYAN_TEST_MARKERS", str(markers))
    monkeypatch.setenv("FYAN_REAPER", "subreaper")  # the agent's pids are the host's (module docstring)
    return script, markers


def request(workspace: Path | None = None) -> ModelRequest:
    return ModelRequest(stage="prove", unit="u", model="m", messages=[Message(role="user", content="go")],
                        max_tokens=10, workspace=str(workspace) if workspace else None)


def test_the_end_of_an_attempt_ends_what_the_agent_left_running(agent, tmp_path):
    script, markers = agent
    t0 = time.monotonic()
    resp = CommandAgentProvider([sys.executable, str(script), "quick"], sandbox="off").complete(request())
    # the grandchild holds the agent's output pipe: without ending it when the agent exits, the
    # call would last until the grandchild's two minutes are over
    assert time.monotonic() - t0 < 20
    assert resp.text.strip() == "done"
    [started] = agents_started(markers, 1)
    assert not alive(started["agent"]) and not alive(started["child"])  # the grandchild ended with the call
    assert not Path(started["cwd"]).exists()  # the scratch folder too
    assert process_groups._current.groups() == []


def test_the_timeout_ends_the_whole_group(agent, tmp_path):
    script, markers = agent
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(ProviderError, match="killed at the timeout"):
        CommandAgentProvider([sys.executable, str(script), "sleep"], timeout_s=1.5, sandbox="off").complete(request(ws))
    [started] = agents_started(markers, 1)
    assert not alive(started["agent"]) and not alive(started["child"])


def command_project(tmp_path: Path, script: Path):
    toml = ('[agents]\npost_completion = false\n[agents.default]\nprovider = "command"\nmodel = "agent"\n'
            f'command = {json.dumps([sys.executable, str(script), "sleep"])}\ntimeout = 600\n'
            '[stagnation]\nenabled = false\n[scheduler]\nparallelism = 2\n[lean]\nsandbox = "off"\n')
    return make_project(tmp_path / "p", tex=TWO_LEMMAS, extra_toml=toml)


TWO_LEMMAS = ("\\begin{lemma}\\label{a} Every even number is even. \\end{lemma}\n"
              "\\begin{lemma}\\label{b} Every odd number is odd. \\end{lemma}\n")


def fyan(*argv: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "fyan", *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def assert_all_ended(project, started: list[dict]) -> None:
    for s in started:
        assert not alive(s["agent"]) and not alive(s["child"]), s
    assert not (project.paths.state / "agents.json").exists()
    tmp = project.paths.state / "tmp"
    assert not list(tmp.glob("fyan-command-*")) if tmp.is_dir() else True


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "daemon stop"])
def test_every_stop_path_ends_the_running_agents(agent, tmp_path, how):
    script, markers = agent
    project = command_project(tmp_path, script)
    root = str(project.paths.root)
    if how == "daemon stop":
        start = fyan("daemon", "start", root, "--no-dashboard")
        out, err = start.communicate(timeout=60)
        assert start.returncode == 0, err
        proc = None
    else:
        proc = fyan("run", root)
    try:
        started = wait_for(lambda: agents_started(markers, 2))
    except AssertionError:
        if proc is not None:
            proc.kill()
            raise AssertionError(proc.communicate()[1]) from None
        fyan("daemon", "stop", root).communicate(timeout=60)
        raise
    assert all(alive(s["agent"]) and alive(s["child"]) for s in started)
    assert json.loads((project.paths.state / "agents.json").read_text())  # recorded while they run
    assert all(Path(s["cwd"]).parent == project.paths.state / "tmp" for s in started)
    if how == "daemon stop":
        stop = fyan("daemon", "stop", root)
        out, err = stop.communicate(timeout=60)
        assert stop.returncode == 0, err
        reason = "stopped by SIGTERM"
    else:
        sig = signal.SIGINT if how == "ctrl-c" else signal.SIGTERM
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + sig, err  # 130 / 143, as shells report them
        reason = f"stopped by {sig.name}"
        assert "Traceback" not in err
        # the same words as an interrupt while starting up (tests/test_interrupts_and_exit_codes.py)
        assert err.splitlines()[-2:] == [f"fyan: stopped by {sig.name}",
                                         "  hint: what was done is kept (attempts in progress are recorded as "
                                         f"interrupted); `fyan resume {root}` continues"], err
    assert_all_ended(project, started)
    runs = Store(project.paths.db).runs()
    assert {r.status for r in runs} == {RunStatus.INTERRUPTED} and {r.reason for r in runs} == {f"interrupted: {reason}"}
    time.sleep(0.3)
    assert not list(markers.glob("late-write-*"))  # nothing was written after the stop


def test_a_restart_after_kill_9_ends_the_agents_the_killed_run_left(agent, tmp_path):
    script, markers = agent
    project = command_project(tmp_path, script)
    root = str(project.paths.root)
    start = fyan("daemon", "start", root, "--no-dashboard")
    out, err = start.communicate(timeout=60)
    assert start.returncode == 0, err
    daemon = json.loads((project.paths.state / "daemon.json").read_text())["pid"]
    first = wait_for(lambda: agents_started(markers, 2))
    os.kill(daemon, signal.SIGKILL)
    wait_for(lambda: not alive(daemon))
    # the agents do not outlive the killed daemon: each reaper gets its parent-death
    # signal and ends its whole tree; the registry still lists them (nobody could unregister them)
    wait_for(lambda: all(not alive(s["agent"]) and not alive(s["child"]) for s in first))
    assert len(json.loads((project.paths.state / "agents.json").read_text())) == 2
    # status tells the truth: no run is alive; the cut-off attempts resume on the next run
    status = fyan("status", root, "--json")
    out, _ = status.communicate(timeout=60)
    payload = json.loads(out)
    assert payload["run"]["alive"] is False and payload["counts"].get("interrupted") == 2 and "running" not in payload["counts"]
    assert {u["reason"] for u in payload["units"] if u["status"] == "interrupted"} == {"interrupted (resumes on the next run)"}
    dstatus = fyan("daemon", "status", root)
    out, _ = dstatus.communicate(timeout=60)
    assert out.startswith("No Fyan daemon is running") and "interrupted attempts resume on the next run" in out
    dry = fyan("resume", root, "--dry-run")
    out, _ = dry.communicate(timeout=60)
    assert "agent process group(s) the killed run left running" not in out  # the recorded groups are gone
    for p in markers.glob("agent-*.json"):
        p.unlink()
    restart = fyan("daemon", "start", root, "--no-dashboard")
    out, err = restart.communicate(timeout=60)
    assert restart.returncode == 0, err
    try:
        wait_for(lambda: all(not alive(s["agent"]) and not alive(s["child"]) for s in first))
        assert all(not Path(s["cwd"]).exists() for s in first)  # their scratch folders are gone too
        second = wait_for(lambda: agents_started(markers, 2))
    finally:
        stop = fyan("daemon", "stop", root)
        stop.communicate(timeout=60)
    log = (project.paths.state / "logs" / "daemon.log").read_text()
    assert "left running by a run that was killed" not in log  # they had ended with the killed daemon
    assert_all_ended(project, second)
    assert not list(markers.glob("late-write-*"))


def test_a_recorded_group_is_ended_only_when_it_is_provably_the_same(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        wait_for(lambda: process_groups._stat(proc.pid) is not None)
        real = process_groups.Registry().add(proc.pid, "sleeper")
        state = tmp_path / ".fyan"
        state.mkdir()
        other = process_groups.Group(pgid=proc.pid, label="another program's group", started=real.started,
                                     start_ticks=real.start_ticks + 1, boot_id=real.boot_id)
        (state / "agents.json").write_text(json.dumps([other.__dict__]))
        assert process_groups.end_leftovers(state) == [] and alive(proc.pid)  # a reused id: left alone
        (state / "agents.json").write_text(json.dumps([real.__dict__]))
        assert process_groups.end_leftovers(state) == [real]
        proc.wait(timeout=10)
        assert not (state / "agents.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()


def _processes_with(token: str) -> list[int]:
    """Live processes whose command line contains ``token`` (read from /proc, so processes in
    another PID namespace are seen with their host ids)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if token in (d / "cmdline").read_bytes().decode("utf-8", "replace") and alive(int(d.name)):
                    found.append(int(d.name))
            except OSError:
                pass
    return found


def test_a_confined_agent_ends_with_a_killed_run(agent, tmp_path):
    from fyan.sandbox.runner import bwrap_status

    if bwrap_status()[0] is None:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status()[1]}")
    script, markers = agent
    token = f"fyan-stop-test-{os.getpid()}-{time.monotonic_ns()}"
    caller = tmp_path / "caller.py"
    caller.write_text(
        "import sys\n"
        "from fyan.agents.providers.command import CommandAgentProvider\n"
        "from tests.test_stop_paths import request\n"
        f"p = CommandAgentProvider([sys.executable, {str(script)!r}, 'sleep', {token!r}], sandbox='require', "
        f"writable=[{str(markers)!r}], readable=[{str(script)!r}])\n"
        "p.complete(request())\n")
    proc = subprocess.Popen([sys.executable, str(caller)], env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stderr=subprocess.PIPE)
    try:
        wait_for(lambda: agents_started(markers, 1) or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()[1]
        # the agent (its argv has the token) and its grandchild (its argv names the markers folder)
        # run, confined: their ids inside are the namespace's own, so look them up from outside
        assert _processes_with(token) and _processes_with(str(markers / "late-write-"))
        proc.kill()  # SIGKILL: the registry gets no chance; the sandbox's namespace ends with the caller
        proc.wait(timeout=10)
        wait_for(lambda: not _processes_with(token) and not _processes_with(str(markers / "late-write-")))
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.3)
    assert not list(markers.glob("late-write-*"))
