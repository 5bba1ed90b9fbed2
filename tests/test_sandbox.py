"""The build sandbox and limits of ``fyan.sandbox.runner.run_process``, with real bubblewrap and
ordinary commands (no Lean needed): writes outside the workspace, network, timeout, memory;
and what happens without a usable ``bwrap``."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from fyan.sandbox.runner import Confinement, bwrap_status, project_confinement, run_process
from tests.sandboxing import BWRAP, WHY, leftover_processes, needs_bwrap


@pytest.fixture
def outside_tmp():
    """A project folder outside pytest's /tmp folders: /var/tmp when writable."""
    base = Path("/var/tmp")
    if not (base.is_dir() and shutil.disk_usage(base)):
        pytest.skip("/var/tmp not available")
    d = Path(tempfile.mkdtemp(prefix="fyan-sandbox-test-", dir=base))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@needs_bwrap
def test_writes_only_in_the_workspace(tmp_path, outside_tmp):
    ws = outside_tmp / "project" / "workspaces" / "u"
    ws.mkdir(parents=True)
    units = outside_tmp / "project" / "units"
    units.mkdir()
    script = (
        "echo ok > inside.txt; "
        f"echo x > {units}/forged.lean; echo units=$?; "
        f"echo y > {tmp_path}/escaped.txt; echo tmp=$?; "
        "echo r > /etc/fyan-sandbox-test; echo root=$?; "
        "echo z > $HOME/.fyan-sandbox-test; echo home=$?"
    )
    result = run_process(["/bin/sh", "-c", script], cwd=ws, timeout_s=30, sandbox="require", writable=[ws])
    assert result.sandboxed and result.exit_code == 0
    assert (ws / "inside.txt").read_text() == "ok\n"
    assert "units=2" in result.output and not (units / "forged.lean").exists()  # /var/tmp is private
    assert "root=2" in result.output and "Read-only file system" in result.output  # refused outright
    assert not Path("/etc/fyan-sandbox-test").exists()
    assert "tmp=2" in result.output and not (tmp_path / "escaped.txt").exists()  # /tmp is private too
    assert "home=0" in result.output and not (Path.home() / ".fyan-sandbox-test").exists()  # a private tmpfs
    # control: the same command unsandboxed does write outside
    run_process(["/bin/sh", "-c", f"echo x > {units}/control.lean"], cwd=ws, timeout_s=30, sandbox="off")
    assert (units / "control.lean").exists()


@needs_bwrap
def test_no_network_inside(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def serve():
        server.settimeout(20)
        try:
            while True:
                conn, _ = server.accept()
                accepted.append(conn)
                conn.close()
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    client = (
        "import socket, sys\n"
        "for host, port in (('127.0.0.1', %d), ('192.0.2.1', 80)):\n"
        "    s = socket.socket(); s.settimeout(3)\n"
        "    try:\n"
        "        s.connect((host, port)); print(host, 'connected')\n"
        "    except OSError as e:\n"
        "        print(host, 'failed', e.errno)\n" % port
    )
    inside = run_process([sys.executable, "-c", client], cwd=tmp_path, timeout_s=30, sandbox="require")
    assert inside.sandboxed, inside.note
    assert "127.0.0.1 failed" in inside.output and "192.0.2.1 failed" in inside.output
    assert accepted == []  # nothing reached the host's loopback
    outside = run_process([sys.executable, "-c", client], cwd=tmp_path, timeout_s=30, sandbox="off")
    assert "127.0.0.1 connected" in outside.output  # control: the server is reachable from outside
    time.sleep(0.2)
    assert len(accepted) == 1
    server.close()


@needs_bwrap
def test_killed_at_the_timeout_with_every_child(tmp_path):
    late = tmp_path / "late.txt"
    start = time.monotonic()
    result = run_process(["/bin/sh", "-c", f"(sleep 3; echo late > {late}) & sleep 60"], cwd=tmp_path,
                         timeout_s=1, sandbox="require")
    assert result.timed_out and result.exit_code is None and result.sandboxed
    assert result.note.startswith("killed at the timeout of 1 s")
    assert time.monotonic() - start < 10
    time.sleep(3.5)
    assert not late.exists()  # the background child died with the sandbox


@needs_bwrap
def test_memory_limit_inside_the_sandbox(tmp_path):
    hog = "x = bytearray(1024 * 1024 * 1024)\nprint('allocated')"
    result = run_process([sys.executable, "-c", hog], cwd=tmp_path, timeout_s=60, memory_mb=300, sandbox="require")
    assert result.sandboxed and result.exit_code not in (0, None)
    assert result.memory_exceeded and "allocated" not in result.output
    assert result.note.startswith("ran out of memory at the limit of 300 MiB")
    fine = run_process([sys.executable, "-c", "x = bytearray(10 * 1024 * 1024); print('ok')"], cwd=tmp_path,
                       timeout_s=60, memory_mb=300, sandbox="require")
    assert fine.ok and fine.output.strip() == "ok"


def test_memory_limit_unsandboxed(tmp_path):
    hog = "x = bytearray(1024 * 1024 * 1024)\nprint('allocated')"
    result = run_process([sys.executable, "-c", hog], cwd=tmp_path, timeout_s=60, memory_mb=300, sandbox="off")
    assert result.memory_exceeded and not result.ok


def test_without_bwrap_auto_says_so_and_require_refuses(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty)}
    marker = tmp_path / "ran.txt"
    auto = run_process(["/bin/sh", "-c", f"echo ran > {marker}"], cwd=tmp_path, timeout_s=30, sandbox="auto", env=env)
    assert auto.ok and not auto.sandboxed and marker.exists()
    assert auto.note == "not sandboxed: bubblewrap (bwrap) is not installed"
    marker.unlink()
    required = run_process(["/bin/sh", "-c", f"echo ran > {marker}"], cwd=tmp_path, timeout_s=30, sandbox="require",
                           env=env, log_path=tmp_path / "refused.log")
    assert required.refused and required.exit_code is None and not marker.exists()
    assert required.note.startswith('refused: [lean] sandbox = "require" but bubblewrap (bwrap) is not installed; '
                                    "install bubblewrap (apt-get install bubblewrap")
    assert 'or set [lean] sandbox = "off"' in required.note  # the remedy, and the explicit alternative
    assert "refused" in (tmp_path / "refused.log").read_text()
    missing = run_process(["fyan-no-such-program"], cwd=tmp_path, timeout_s=30, sandbox="auto", env=env)
    assert missing.exit_code is None and not missing.sandboxed  # both said: what failed, and that it was unconfined
    assert missing.note.startswith("could not start fyan-no-such-program")
    assert "not sandboxed: bubblewrap" in missing.note


def test_bwrap_that_cannot_load_the_seccomp_filter_is_refused_by_the_probe(tmp_path):
    """A kernel without seccomp filters (or a container that forbids loading one) made every
    confined process fail at bwrap's start while the probe said bwrap works: each build failed as
    if the proof were wrong. The probe loads the filter too; ``require`` then refuses with why."""
    from fyan.sandbox import seccomp

    if seccomp.program() is None:
        pytest.skip("no seccomp table for this architecture: no filter is loaded here")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    bwrap = fake_bin / "bwrap"  # stands in for bwrap (bubblewrap 0.8, bwrap.c) on a kernel without seccomp filters
    bwrap.write_text("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --seccomp ] && "
                     "{ echo 'bwrap: prctl(PR_SET_SECCOMP): Invalid argument' >&2; exit 1; }; done\nexit 0\n")
    bwrap.chmod(0o755)
    path, why = bwrap_status(str(fake_bin))
    assert path is None and why.endswith("a seccomp filter): bwrap: prctl(PR_SET_SECCOMP): Invalid argument"), why
    required = run_process(["/bin/sh", "-c", "echo hi"], cwd=tmp_path, timeout_s=30, sandbox="require",
                           env={"PATH": str(fake_bin)})
    assert required.refused and "PR_SET_SECCOMP" in required.note


def test_bwrap_that_cannot_create_namespaces_is_detected(tmp_path):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    bwrap = fake_bin / "bwrap"  # stands in for bwrap in a container without user namespaces
    bwrap.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel "
                     "does not allow non-privileged user namespaces' >&2\nexit 1\n")
    bwrap.chmod(0o755)
    path, why = bwrap_status(str(fake_bin))
    assert path is None
    assert why.startswith(f"bwrap ({bwrap}) cannot create its namespaces here (a user namespace with every "
                          "capability dropped, pid, ipc, network; a seccomp filter): bwrap: No permissions")
    env = {"PATH": str(fake_bin)}
    auto = run_process(["/bin/sh", "-c", "echo hi"], cwd=tmp_path, timeout_s=30, sandbox="auto", env=env)
    assert auto.ok and not auto.sandboxed and auto.note == f"not sandboxed: {why}"
    required = run_process(["/bin/sh", "-c", "echo hi"], cwd=tmp_path, timeout_s=30, sandbox="require", env=env)
    assert required.refused and required.output == ""


def test_command_artifacts_record_command_exit_duration_and_log(tmp_path):
    import json

    result = run_process(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], cwd=tmp_path, timeout_s=30,
                         sandbox="off", log_path=tmp_path / "logs" / "build.log")
    log = (tmp_path / "logs" / "build.log").read_text()
    meta = json.loads((tmp_path / "logs" / "build.log.json").read_text())
    assert log.startswith("$ /bin/sh -c echo out; echo err >&2; exit 3\n") and "out\nerr\n" in log
    assert meta["argv"] == result.argv and meta["exit_code"] == 3 and meta["duration_s"] == result.duration_s
    assert meta["log"] == "build.log" and meta["output_bytes"] == len("out\nerr\n")
    crash = run_process(["/bin/sh", "-c", "kill -SEGV $$"], cwd=tmp_path, timeout_s=30, sandbox="off")
    assert crash.exit_code == -11 and crash.describe() == "killed by SIGSEGV (crashed)"


def test_bwrap_probe_is_the_real_one():
    """With bubblewrap installed (CI installs it), the runner uses it."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed here (apt-get install bubblewrap)")
    proc = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-net", "--", "true"], capture_output=True)
    assert (BWRAP is not None) == (proc.returncode == 0), WHY


@needs_bwrap
def test_confinement_hides_the_project_and_the_home_and_protects_outputs(outside_tmp):
    """Finding 2 family: the state store, .fyan/, other units and the user's home are neither
    writable nor readable; the project's Lake package is readable only; outputs a build must
    not change stay read-only inside the writable workspace."""
    project = outside_tmp / "project"
    ws = project / ".fyan" / "gate" / "u" / "gate"
    ws.mkdir(parents=True)
    (project / ".fyan" / "state.db").write_text("secret state")
    (project / "units" / "other").mkdir(parents=True)
    (project / "units" / "other" / "Basic.lean").write_text("theorem other : True := trivial")
    (project / "lean").mkdir()
    (project / "lean" / "lakefile.toml").write_text("name = 'P'")
    (ws / "upstream.olean").write_text("trusted output")
    script = (
        f"cat {project}/.fyan/state.db; echo db=$?; "
        f"cat {project}/units/other/Basic.lean; echo units=$?; "
        f"cat {project}/lean/lakefile.toml; echo; echo pkg=$?; "
        f"echo x > {project}/lean/forged; echo pkgw=$?; "
        "echo y > upstream.olean; echo protected=$?; "
        "echo z > built.olean; echo ws=$?; "
        "ls -A $HOME | wc -l"
    )
    # the folder that contains the project is bound read-only too (as a program's folder may be):
    # the project inside it stays hidden
    confinement = project_confinement(project, [ws], read_only=[ws / "upstream.olean"], extra_readable=[outside_tmp])
    result = run_process(["/bin/sh", "-c", script], cwd=ws, timeout_s=30, sandbox="require", confinement=confinement)
    assert result.sandboxed, result.note
    out = result.output
    assert "secret state" not in out and "db=1" in out
    assert "theorem other" not in out and "units=1" in out
    assert "name = 'P'" in out and "pkg=0" in out and "pkgw=2" in out
    assert "protected=2" in out and (ws / "upstream.olean").read_text() == "trusted output"
    assert "ws=0" in out and (ws / "built.olean").read_text() == "z\n"
    assert out.strip().splitlines()[-1] == "0"  # the home folder is an empty tmpfs
    assert not (project / "lean" / "forged").exists()


@needs_bwrap
def test_network_only_when_the_confinement_allows_it(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    port = server.getsockname()[1]
    client = f"import socket; s = socket.socket(); s.settimeout(3); s.connect(('127.0.0.1', {port})); print('connected')"
    closed = run_process([sys.executable, "-c", client], cwd=tmp_path, timeout_s=30, sandbox="require",
                         confinement=Confinement(writable=(tmp_path,)))
    opened = run_process([sys.executable, "-c", client], cwd=tmp_path, timeout_s=30, sandbox="require",
                         confinement=Confinement(writable=(tmp_path,), network=True))
    server.close()
    assert closed.sandboxed and "connected" not in closed.output
    assert opened.sandboxed and "connected" in opened.output


@pytest.mark.parametrize("sandbox", ["off", "require"])
def test_the_process_group_ends_with_the_command_even_after_a_normal_exit(tmp_path, sandbox):
    if sandbox == "require" and BWRAP is None:
        pytest.skip(f"no usable bubblewrap here: {WHY}")
    late = tmp_path / "late.txt"
    result = run_process(["/bin/sh", "-c", f"(sleep 1; echo late > {late}) & echo started"], cwd=tmp_path,
                         timeout_s=30, sandbox=sandbox)
    assert result.ok and "started" in result.output
    time.sleep(1.8)  # 0.8 s past the moment the child would have written
    assert not late.exists()  # the child left behind died with the command's process group


# -- the whole process tree ends, the environment is minimal -----------------------------


@pytest.mark.parametrize("mechanism", ["auto", "subreaper"])
@pytest.mark.parametrize("ending", ["exit", "timeout"])
def test_unconfined_a_setsid_child_ends_with_the_command(tmp_path, monkeypatch, mechanism, ending):
    """With sandbox = "off" a child in a new session (setsid) used to outlive
    the command (a process group does not hold it). The reaper ends it: by a PID namespace where
    one can be made (as root, or in a user namespace), else as a child subreaper (forced here),
    after a normal exit and at the timeout (SIGTERM to the reaper, then SIGKILL)."""
    import os
    import signal

    from fyan.sandbox import runner

    if mechanism == "subreaper":
        monkeypatch.setattr(runner, "reaped_argv", lambda argv: [sys.executable, "-I", "-S", str(runner.REAPER),
                                                                 "--mechanism", "subreaper", "--", *argv])
    late = tmp_path / "late.txt"
    delay = 3 if ending == "timeout" else 0.5  # the child writes only after the command ended
    child = f"setsid sh -c 'sleep {delay}; for i in 1 2 3 4 5 6; do sleep 0.5; echo t >> {late}; done' " \
            "</dev/null >/dev/null 2>&1 &"
    script = child + (" echo started" if ending == "exit" else " echo started; sleep 30")
    try:
        result = run_process(["/bin/sh", "-c", script], cwd=tmp_path, timeout_s=2 if ending == "timeout" else 30,
                             sandbox="off")
        assert "started" in result.output and result.timed_out == (ending == "timeout"), result
        time.sleep(delay + 1.5)  # past the child's first write (at delay + 0.5 s after it started)
        assert not late.exists() and leftover_processes(str(tmp_path)) == []
    finally:
        for pid in leftover_processes(str(tmp_path)):  # only what this test started, by id
            os.kill(pid, signal.SIGKILL)


def test_the_reaper_keeps_the_exit_status_and_the_signal(tmp_path):
    for mechanism in ("auto", "subreaper"):
        from fyan.sandbox.runner import REAPER

        argv = [sys.executable, "-I", "-S", str(REAPER), "--mechanism", mechanism, "--"]
        assert subprocess.run([*argv, "/bin/sh", "-c", "exit 7"]).returncode == 7
        assert subprocess.run([*argv, "/bin/sh", "-c", "kill -TERM $$"]).returncode == -15
        missing = subprocess.run([*argv, str(tmp_path / "no-such-program")], capture_output=True, text=True)
        assert missing.returncode == 127 and "No such file" in missing.stderr


@pytest.mark.parametrize("sandbox", ["off", "require"])
def test_a_process_gets_only_the_minimal_environment_and_what_pass_env_names(tmp_path, monkeypatch, sandbox):
    """PATH, HOME, LANG, TMPDIR, the FYAN_* variables (not secret-looking ones)
    and what pass_env names; nothing else of Fyan's environment (SSH_AUTH_SOCK, API keys)."""
    if sandbox == "require" and BWRAP is None:
        pytest.skip(f"no usable bubblewrap here: {WHY}")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-passed")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-passed")
    monkeypatch.setenv("FYAN_OPENAI_COMPATIBLE_API_KEY", "sk-fyan-secret")
    monkeypatch.setenv("FYAN_FAKE_SETTING", "kept")
    monkeypatch.setenv("LANG", "C.UTF-8")
    result = run_process(["/bin/sh", "-c", "env"], cwd=tmp_path, timeout_s=30, sandbox=sandbox,
                         pass_env=["OPENAI_API_KEY", "UNSET_VARIABLE"])
    env = dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)
    assert env["OPENAI_API_KEY"] == "sk-passed" and env["FYAN_FAKE_SETTING"] == "kept" and env["LANG"] == "C.UTF-8"
    for name in ("SSH_AUTH_SOCK", "ANTHROPIC_API_KEY", "FYAN_OPENAI_COMPATIBLE_API_KEY", "UNSET_VARIABLE"):
        assert name not in env, name
    allowed = {"PATH", "HOME", "LANG", "TMPDIR", "OPENAI_API_KEY", "NO_COLOR", "TERM", "PWD", "SHLVL", "_", "OLDPWD"}
    assert {k for k in env if not k.startswith("FYAN_")} <= allowed, sorted(env)


@needs_bwrap
def test_private_folders_and_no_privilege_inside(tmp_path, outside_tmp):
    """/tmp, /var/tmp, /run, /dev/shm and $HOME are private and empty (what
    the confinement names is bound back), no capability is left, umount and remount fail, and no
    nested user namespace can be made, whoever runs Fyan."""
    ws = outside_tmp / "ws"
    ws.mkdir()
    marker = outside_tmp / "visible.txt"
    marker.write_text("named")
    script = ("for d in /tmp /var/tmp /run /dev/shm $HOME; do echo \"$d=$(ls -A $d | wc -l)"
              "\"; done; grep CapEff /proc/self/status; umount -l /tmp && echo UMOUNTED; "
              "mount -o remount,rw / && echo REMOUNTED; unshare -Ur true 2>/dev/null && echo NESTED; "
              f"cat {marker}; echo")
    confinement = Confinement(writable=(ws,), read_only=(marker,))
    result = run_process(["/bin/sh", "-c", script], cwd=ws, timeout_s=30, sandbox="require", confinement=confinement)
    out = result.output
    assert result.sandboxed and "CapEff:\t0000000000000000" in out, out
    for d in ("/tmp", "/run", "/dev/shm"):
        assert f"{d}=0" in out, out
    assert "/var/tmp=1" in out  # only the way down to the workspace and the named file
    assert "UMOUNTED" not in out and "REMOUNTED" not in out and "NESTED" not in out
    assert "named" in out


@needs_bwrap
def test_a_setuid_program_written_inside_loses_the_bit(tmp_path, outside_tmp, monkeypatch):
    """Fresh-eyes finding: the uid inside stays the caller's, so a confined root
    process could leave a setuid-root program in its workspace for the host's other users.
    Every regular file it wrote loses the setuid/setgid bits when it ends. (Here without the
    seccomp filter that refuses the bits in the first place, as on an architecture it has no
    table for: the strip is the second line.)"""
    import os
    import stat

    from fyan.sandbox import seccomp

    monkeypatch.setattr(seccomp, "program", lambda machine=None: None)
    ws = outside_tmp / "ws"
    ws.mkdir()
    script = "cp /bin/true prog && chmod 6755 prog && echo set; mkdir -p d && cp /bin/true d/p2 && chmod u+s d/p2"
    result = run_process(["/bin/sh", "-c", script], cwd=ws, timeout_s=30, sandbox="require")
    assert result.sandboxed and "set" in result.output, result
    for f in (ws / "prog", ws / "d" / "p2"):
        assert not os.lstat(f).st_mode & (stat.S_ISUID | stat.S_ISGID), oct(os.lstat(f).st_mode)
    assert os.access(ws / "prog", os.X_OK) and "cleared setuid/setgid bits of 2 file(s)" in result.note


@pytest.mark.parametrize("sandbox", ["off", "require"])
@pytest.mark.parametrize(("name", "value"), [
    ("FYAN_PROXY_AUTH", "Basic dXNlcjpwYXNz"),
    ("FYAN_DB_PASSWD", "hunter2"),
    ("FYAN_GIT_CREDS", "user:ghp_x"),
    ("FYAN_AGENTS__PROVE__BASE_URL", "https://user:sk-in-url@llm.example/v1"),
    ("FYAN_HUB_BEARER", "eyJhbGciOi"),
])
def test_secret_looking_fyan_variables_of_every_spelling_stay_out(tmp_path, monkeypatch, sandbox, name, value):
    """A red-team attack: the marker list missed AUTH, PASSWD, CREDS, BEARER, and a URL that
    carries its credentials (``https://user:token@host``) in a FYAN_* setting reached every
    confined process (builds, warm servers, command agents)."""
    if sandbox == "require" and BWRAP is None:
        pytest.skip(f"no usable bubblewrap here: {WHY}")
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("FYAN_AGENTS__PROVE__MODEL", "kept-model")
    result = run_process(["/bin/sh", "-c", "env"], cwd=tmp_path, timeout_s=30, sandbox=sandbox)
    assert value not in result.output and name not in result.output
    assert "FYAN_AGENTS__PROVE__MODEL=kept-model" in result.output
    passed = run_process(["/bin/sh", "-c", "env"], cwd=tmp_path, timeout_s=30, sandbox=sandbox, pass_env=[name])
    assert f"{name}={value}" in passed.output  # a pass_env still names it through


def _host_socket(path: Path) -> tuple[socket.socket, list[bytes]]:
    """A Unix socket listening at ``path`` on the host; what connects to it is collected."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    server.settimeout(0.2)
    got: list[bytes] = []

    def accept() -> None:
        while server.fileno() != -1:
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                got.append(conn.recv(64))

    threading.Thread(target=accept, daemon=True).start()
    return server, got


PROGRAM_PLACES = ["home/bin/agent", "home/agent.sh", "proj/bin/agent", "proj/agent.sh", "proj/bin/../agent.sh",
                  "/tmp/agent.sh", "interpreter-in-home", "interpreter-in-tmp"]


@needs_bwrap
@pytest.mark.parametrize("place", PROGRAM_PLACES)
def test_where_the_program_lives_never_binds_back_a_hidden_or_private_folder(outside_tmp, monkeypatch, place):
    """Red-team finding (program_paths): the prefix of the program a confined process starts (the
    folder above bin/, else its own folder; of its interpreter too) was bound back read-only
    whole. A program kept in ~/bin or ~/ bound the whole home (~/.ssh) back; in the project's
    bin/ or root, the project with .fyan/state.db; directly in /tmp, the host's real /tmp with
    its Unix sockets (tmux, ssh-agent, X11: connect works on a read-only mount). Each of these
    now binds only the program itself; it still runs."""
    base = outside_tmp
    home, proj = base / "home", base / "proj"
    ws = proj / ".fyan" / "work" / "u"
    for d in (home / "bin", home / ".ssh", proj / "bin", proj / "lean", ws, base / "tools"):
        d.mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text("HOME-SECRET\n")
    (proj / ".fyan" / "state.db").write_text("STATE-DB\n")
    monkeypatch.setenv("HOME", str(home))
    sock_dir = Path(tempfile.mkdtemp(prefix="fyan-rt-sock-", dir="/tmp"))
    server, got = _host_socket(sock_dir / "agent.sock")
    connect = (f"{sys.executable if Path(sys.executable).is_relative_to('/usr') else '/usr/bin/python3'} -c "
               f"\"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{sock_dir}/agent.sock'); "
               "s.send(b'ESCAPED')\" 2>/dev/null && echo CONNECTED")
    body = (f"echo ran; cat {home}/.ssh/id_rsa {proj}/.fyan/state.db 2>/dev/null; ls -A /tmp; {connect}; "
            "echo done\n")
    made: list[Path] = []
    if place.startswith("interpreter-in-"):
        folder = home if place.endswith("home") else Path("/tmp")
        shell = Path(tempfile.mktemp(prefix="fyan-rt-sh-", dir=folder))
        shell.symlink_to("/bin/sh")
        made.append(shell)
        program = base / "tools" / "agent.sh"
        program.write_text(f"#!{shell}\n{body}")
        argv0 = str(program)
    else:
        if place == "/tmp/agent.sh":
            program = Path(tempfile.mktemp(prefix="fyan-rt-agent-", suffix=".sh", dir="/tmp"))
            made.append(program)
            argv0 = str(program)
        else:
            argv0 = str(base / place)
            program = Path(argv0).resolve()
        program.write_text("#!/bin/sh\n" + body)
    program.chmod(0o755)
    try:
        confinement = project_confinement(proj, [ws])
        result = run_process([argv0], cwd=ws, timeout_s=60, sandbox="require", confinement=confinement)
    finally:
        server.close()
        for p in made:
            p.unlink()
        shutil.rmtree(sock_dir, ignore_errors=True)
    out = result.output
    if ".." in place:  # "proj/bin/.." needs proj/bin, hidden inside the sandbox: it may not start, never leak
        assert result.sandboxed and (result.exit_code == 0 or "ran" not in out), result
    else:
        assert result.sandboxed and result.exit_code == 0 and "ran" in out and "done" in out, result
    assert "HOME-SECRET" not in out and "STATE-DB" not in out, out
    assert "CONNECTED" not in out and got == [] and sock_dir.name not in out, out


SET_ID_WAYS = {
    "chmod u+s": "cp /bin/true p && chmod u+s p",
    "chmod g+s": "cp /bin/true p && chmod g+s p",
    "chmod 6755": "cp /bin/true p && chmod 6755 p",
    "install -m 4755": "install -m 4755 /bin/true p",
    "open(O_CREAT, 04755)": "python3 -c \"import os; os.close(os.open('p', os.O_CREAT | os.O_WRONLY, 0o4755))\"",
    "mknod(S_IFREG | 02755)": "python3 -c \"import os, stat; os.mknod('p', stat.S_IFREG | 0o2755)\"",
    "fchmod": "python3 -c \"import os; f = os.open('p', os.O_CREAT | os.O_WRONLY, 0o755); os.fchmod(f, 0o4755)\"",
    "cp -p of a setuid program": "cp -p $(command -v su || command -v passwd) p",
}


@needs_bwrap
@pytest.mark.parametrize("way", sorted(SET_ID_WAYS))
def test_no_setuid_or_setgid_file_exists_even_while_the_confined_process_runs(outside_tmp, way):
    """Red-team finding: the uid inside stays the caller's (0 for root) and the set-id bits were
    only cleared after the process ended: while it ran (up to its timeout), any user of the host
    who could reach the workspace ran its `chmod u+s` copy of /bin/sh with euid 0. A seccomp filter
    (fyan.sandbox.seccomp) refuses a mode with S_ISUID/S_ISGID in every call that sets or creates one;
    ordinary modes still work. The mode is read inside, while the process still runs."""
    import os
    import stat

    ws = outside_tmp / "ws"
    ws.mkdir()
    script = (f"{SET_ID_WAYS[way]}; [ -e p ] && echo \"mode=$(stat -c %a p)\"; "
              "cp /bin/true q && chmod 750 q && echo \"plain=$(stat -c %a q)\"")
    result = run_process(["/bin/sh", "-c", script], cwd=ws, timeout_s=60, sandbox="require")
    out = result.output
    assert result.sandboxed and "plain=750" in out, out
    inside = [line.split("=", 1)[1] for line in out.splitlines() if line.startswith("mode=")]
    assert all(int(m, 8) & (stat.S_ISUID | stat.S_ISGID) == 0 for m in inside), out
    if (ws / "p").exists():
        assert not os.lstat(ws / "p").st_mode & (stat.S_ISUID | stat.S_ISGID)


def test_the_seccomp_filter_exists_where_it_has_a_table_and_is_well_formed():
    """Each known architecture gets a program of whole 8-byte instructions ending in a return;
    an unknown one gets none (the strip alone then)."""
    from fyan.sandbox import seccomp

    for machine in seccomp.TABLES:
        prog = seccomp.program(machine)
        assert prog and len(prog) % 8 == 0 and prog[-8:-6] == (0x06).to_bytes(2, sys.byteorder)
    assert seccomp.program("sparc64") is None


UNIX_WAYS = {
    "stream by path": "s = socket.socket(socket.AF_UNIX); s.connect(PATH); s.send(b'ESCAPED')",
    "datagram by path": "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b'ESCAPED', DGRAM)",
    "datagram pair, sendto a path": "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); "
                                    "a.sendto(b'ESCAPED', DGRAM)",
    "abstract name": "s = socket.socket(socket.AF_UNIX); s.connect(ABSTRACT); s.send(b'ESCAPED')",
}


@needs_bwrap
@pytest.mark.parametrize("network", [False, True], ids=["no-network", "network"])
@pytest.mark.parametrize("way", sorted(UNIX_WAYS))
def test_no_unix_socket_of_the_host_is_reachable_wherever_it_lives(outside_tmp, network, way):
    """Red-team finding: only the private folders kept host sockets away; one anywhere else that
    the sandbox shows (/var/snap/lxd/common/lxd/unix.socket, /var/lib/kubelet/..., a folder the
    confinement names readable, here the project's Lake package) took a connection from a
    confined root process, and with the network on every abstract socket of the host too. The
    seccomp filter refuses socket(AF_UNIX) and datagram socket pairs; a stream pair still works."""
    import os

    proj = outside_tmp / "p"
    ws, lean = proj / "ws", proj / "lean"
    ws.mkdir(parents=True)
    lean.mkdir()
    path = str(lean / "s.sock")
    dgram = str(lean / "d.sock")
    abstract = f"\0fyan-rt-{os.getpid()}-{outside_tmp.name}"
    got: list[bytes] = []
    stream, stream_got = _host_socket(Path(path))
    abstract_server = socket.socket(socket.AF_UNIX)
    abstract_server.bind(abstract)
    abstract_server.listen(1)
    abstract_server.settimeout(0.2)
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(dgram)
    receiver.settimeout(0.2)
    code = (f"import socket\nPATH, DGRAM, ABSTRACT = {path!r}, {dgram!r}, {abstract!r}\n"
            f"try:\n    {UNIX_WAYS[way]}\n    print('REACHED')\nexcept OSError as e:\n    print('refused', e)\n"
            "a, b = socket.socketpair(); a.send(b'x'); print('pair', b.recv(1))\n")
    try:
        confinement = project_confinement(proj, [ws], network=network)
        result = run_process(["/usr/bin/python3", "-c", code], cwd=ws, timeout_s=60, sandbox="require",
                             confinement=confinement)
        for server in (abstract_server, receiver):
            try:
                got.append(server.accept()[0].recv(16) if server is abstract_server else server.recv(16))
            except (TimeoutError, OSError):
                pass
    finally:
        stream.close()
        abstract_server.close()
        receiver.close()
    out = result.output
    assert result.sandboxed and "pair b'x'" in out, out
    assert "REACHED" not in out and "refused" in out and got == [] and stream_got == [], (out, got)


@pytest.mark.parametrize("sandbox", ["off", "require"])
def test_a_missing_program_could_not_start_and_a_relative_one_is_found_in_the_working_folder(tmp_path, sandbox):
    """Unconfined, a program that does not exist is "could not start" (exit None, the log kept),
    never the reaper's exit 127; a relative ``./prog`` is the working folder's, as exec resolves
    it in the child, confined or not (the check looked in Fyan's own folder and refused it)."""
    if sandbox == "require" and BWRAP is None:
        pytest.skip(f"no usable bubblewrap here: {WHY}")
    log = tmp_path / "logs" / "run.log"
    missing = run_process(["fyan-no-such-program"], cwd=tmp_path, timeout_s=30, sandbox=sandbox, log_path=log)
    assert not missing.ok, missing  # confined: bwrap's own exit 1 ("execvp ...: No such file")
    if sandbox == "off":
        assert missing.exit_code is None and "could not start fyan-no-such-program" in missing.note
        assert "could not start" in log.read_text()
    prog = tmp_path / "prog.sh"
    prog.write_text("#!/bin/sh\necho relative-ran\n")
    prog.chmod(0o755)
    ran = run_process(["./prog.sh"], cwd=tmp_path, timeout_s=30, sandbox=sandbox)
    assert ran.exit_code == 0 and "relative-ran" in ran.output, ran


@needs_bwrap
@pytest.mark.parametrize("place", ["home/bin/lake", "home/lake", "proj/bin/lake", "proj/lake", "/tmp/lake"])
def test_where_lake_lives_never_binds_back_a_hidden_or_private_folder(outside_tmp, monkeypatch, place):
    """Red-team finding, the same kind as the program's prefix: ``toolchain_paths`` bound the
    prefix of ``lake``'s real path back read-only, for builds and command agents; ``lake`` kept in
    ~/bin or the project's bin/ brought back the home (~/.ssh) or the project (.fyan/state.db),
    in /tmp the host's /tmp. Now only ``lake`` itself is bound there."""
    from fyan.agents.providers.command import CommandAgentProvider

    home, proj = outside_tmp / "home", outside_tmp / "proj"
    ws = proj / "ws"
    for d in (home / "bin", home / ".ssh", proj / "bin", proj / ".fyan", ws):
        d.mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text("HOME-SECRET\n")
    (proj / ".fyan" / "state.db").write_text("STATE-DB\n")
    monkeypatch.setenv("HOME", str(home))
    lake = Path(tempfile.mktemp(prefix="fyan-rt-lake-", dir="/tmp")) if place == "/tmp/lake" else outside_tmp / place
    lake.write_text("#!/bin/sh\necho lake-ran\n")
    lake.chmod(0o755)
    marker = Path(tempfile.mkdtemp(prefix="fyan-rt-tmp-", dir="/tmp"))
    script = f"cat {home}/.ssh/id_rsa {proj}/.fyan/state.db; ls -A /tmp; {lake}"
    try:
        agent = CommandAgentProvider(["/bin/sh"], project_root=proj, lake=lake)
        for confinement in (project_confinement(proj, [ws], lake=lake), agent.confinement(ws)):
            result = run_process(["/bin/sh", "-c", script], cwd=ws, timeout_s=60, sandbox="require",
                                 confinement=confinement)
            out = result.output
            assert result.sandboxed and "lake-ran" in out, out
            assert "HOME-SECRET" not in out and "STATE-DB" not in out and marker.name not in out, out
    finally:
        shutil.rmtree(marker, ignore_errors=True)
        if place == "/tmp/lake":
            lake.unlink()


@needs_bwrap
def test_the_kernels_knobs_are_read_only_inside_even_for_root(tmp_path, outside_tmp):
    """Red-team finding (root only): the sandbox's new /proc left /proc/sys writable, and a sysctl
    trusts the host's uid 0 whatever the capabilities, so a root-run confined process changed host
    sysctls (``kernel.core_pattern = |prog`` runs prog as host root at the next crash). Tried
    harmlessly: a sysctl's own value written back, core_pattern and sysrq-trigger opened for
    writing without writing. /proc/sys, /proc/sysrq-trigger, /proc/irq and /proc/bus are now
    read-only; the process's own /proc entries stay writable."""
    ws = outside_tmp / "ws"
    ws.mkdir()
    code = (
        "import os\n"
        "v = open('/proc/sys/fs/lease-break-time').read()\n"
        "try:\n    open('/proc/sys/fs/lease-break-time', 'w').write(v); print('WROTE sysctl')\n"
        "except OSError as e:\n    print('refused sysctl', e.errno)\n"
        "for p in ('/proc/sys/kernel/core_pattern', '/proc/sysrq-trigger'):\n"
        "    try:\n        os.close(os.open(p, os.O_WRONLY)); print('OPENED', p)\n"
        "    except OSError as e:\n        print('refused', p, e.errno)\n"
        "open('/proc/self/comm', 'w').write('own'); print('own entry written')\n"
    )
    result = run_process(["/usr/bin/python3", "-c", code], cwd=ws, timeout_s=60, sandbox="require")
    out = result.output
    assert result.sandboxed and "own entry written" in out and "refused sysctl" in out, out
    assert "WROTE" not in out and "OPENED" not in out, out


KEYRING_PROBE = '''
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[sys.argv[2]]
SESSION = ctypes.c_long(-3)  # KEY_SPEC_SESSION_KEYRING
if sys.argv[1] == "host":  # a session keyring of its own with one secret, then a confined reader
    libc.syscall(KEYCTL, ctypes.c_long(1), ctypes.c_long(0))  # KEYCTL_JOIN_SESSION_KEYRING
    secret = b"KEYRING-SECRET"
    assert libc.syscall(ADD_KEY, b"user", b"fyan-rt-secret", secret, len(secret), SESSION) > 0
    sys.path.insert(0, sys.argv[3])
    from pathlib import Path
    from fyan.sandbox.runner import Confinement, run_process
    ws = Path(sys.argv[4])
    me = Path(sys.argv[0]).resolve()
    result = run_process(["/usr/bin/python3", str(me), "inside", sys.argv[2]], cwd=ws, timeout_s=60,
                         sandbox="require", confinement=Confinement(writable=(ws,), read_only=(me,)))
    print(result.sandboxed, result.output)
else:
    key = libc.syscall(KEYCTL, ctypes.c_long(10), SESSION, b"user", b"fyan-rt-secret", ctypes.c_long(0))
    buf = ctypes.create_string_buffer(64)
    n = libc.syscall(KEYCTL, ctypes.c_long(11), ctypes.c_long(key), buf, ctypes.c_long(64))  # KEYCTL_READ
    print("read", buf.raw[:max(n, 0)])
'''


@needs_bwrap
def test_the_parents_session_keyring_is_out_of_reach(outside_tmp):
    """Red-team finding (root and ordinary users): the session keyring is inherited through bwrap
    and a user namespace, so a confined process read every key Fyan's session holds (a Kerberos
    ticket cache, a token stored with keyctl). The seccomp filter refuses the key calls."""
    import platform

    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"no system call table for {platform.machine()} in this test")
    probe = outside_tmp / "keyring_probe.py"
    probe.write_text(KEYRING_PROBE)
    ws = outside_tmp / "ws"
    ws.mkdir()
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(probe), "host", platform.machine(), str(root), str(ws)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("True"), done
    assert "read b''" in done.stdout and "KEYRING-SECRET" not in done.stdout, done.stdout
