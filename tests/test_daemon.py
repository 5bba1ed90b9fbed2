"""`fyan daemon start|stop|status` on the example project, as a user runs it.

The daemon is a real background process (``fyan daemon serve``). The Lean toolchain is the
test double ``tests/fakes/fake_lake.py`` (``fake_lake``) or absent (``no_lake``); model
replies are the example's replayed authored responses.
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter

from fyan.cli import main
from fyan.daemon import read_state
from fyan.project import Project
from fyan.state.store import Store
from tests.helpers import wait_for


def cli_json(capsys, *argv):
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)




def counts(example):
    db = example / ".fyan" / "state.db"
    if not db.exists():
        return {}
    try:
        views = Store(db).views(3)
    except Exception:
        return {}
    return Counter(v.status.value for v in views.values())


def test_second_daemon_is_refused_and_stop_status_work(example, no_lake, capsys):
    code, state = cli_json(capsys, "daemon", "start", str(example), "--port", "0")
    assert code == 0 and state["pid"] and state["dashboard"].startswith("http://127.0.0.1:") and state["token"]
    try:
        wait_for(lambda: counts(example).get("blocked") == 11)  # no toolchain: every unit blocked at the gate
        assert main(["daemon", "start", str(example)]) == 5
        err = capsys.readouterr().err
        assert "a Fyan daemon or run is already working on this project" in err and f"pid {state['pid']}" in err
        assert main(["run", str(example)]) == 5
        assert "another Fyan run is already working on this project" in capsys.readouterr().err
        code, status = cli_json(capsys, "daemon", "status", str(example))
        assert status["running"] and status["pid"] == state["pid"] and status["counts"] == {"failed": 2, "waiting": 9}
        info = json.loads((example / ".fyan" / "daemon.json").read_text())
        assert oct((example / ".fyan" / "daemon.json").stat().st_mode & 0o777) == "0o600" and info["token"]
    finally:
        code, stopped = cli_json(capsys, "daemon", "stop", str(example))
    assert code == 0 and stopped == {"running": False, "stopped": True, "pid": state["pid"]}
    code, status = cli_json(capsys, "daemon", "status", str(example))
    assert status["running"] is False and read_state(Project.open(example)) is None
    log = (example / ".fyan" / "logs" / "daemon.log").read_text()
    assert "stopped by SIGTERM" in log


def test_daemon_killed_mid_run_restarts_and_continues(example, fake_lake, capsys, monkeypatch):
    # the first daemon dies (like kill -9) right after its 20th committed transition
    monkeypatch.setenv("FYAN_FAULT_AT", "finish:after_commit@20")
    code, state = cli_json(capsys, "daemon", "start", str(example), "--no-dashboard")
    assert code == 0

    def dead():
        try:
            os.kill(state["pid"], 0)
        except ProcessLookupError:
            return True
        try:  # a zombie child of this test process
            return os.waitpid(state["pid"], os.WNOHANG)[0] == state["pid"]
        except ChildProcessError:
            return True

    wait_for(dead)
    runs = Store(example / ".fyan" / "state.db").runs()
    done_before = {r.id: r.status.value for r in runs if r.status.value in ("succeeded", "failed")}
    assert len(done_before) == 20
    monkeypatch.delenv("FYAN_FAULT_AT")
    code, status = cli_json(capsys, "daemon", "status", str(example))
    assert status["running"] is False  # the kernel released the dead daemon's lock
    code, state = cli_json(capsys, "daemon", "start", str(example), "--no-dashboard")
    assert code == 0
    try:
        wait_for(lambda: counts(example).get("complete") == 11)
    finally:
        main(["daemon", "stop", str(example)])
        capsys.readouterr()
    runs = Store(example / ".fyan" / "state.db").runs()
    assert {r.id: r.status.value for r in runs if r.id in done_before} == done_before  # nothing lost
    succeeded = Counter((r.unit, r.stage) for r in runs if r.status.value == "succeeded")
    assert len(succeeded) == 55 and set(succeeded.values()) == {1}  # nothing done twice


def test_daemon_serve_handles_sigterm(example, no_lake):
    import subprocess
    import sys

    from tests.conftest import ROOT

    proc = subprocess.Popen([sys.executable, "-m", "fyan", "daemon", "serve", str(example), "--no-dashboard"],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    wait_for(lambda: read_state(Project.open(example)))
    wait_for(lambda: counts(example).get("blocked") == 11)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert "stopped by SIGTERM" in out
    assert read_state(Project.open(example)) is None
