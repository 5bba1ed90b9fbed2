"""Files an agent leaves in its workspace are untrusted: links, reused compiled outputs and
selftest records (attacks on compile-once, adoption and selftest trust).

The attacker is a command agent confined to ``workspaces/<unit>/``: it cannot write outside
it, but it can leave symbolic links there. Fyan itself prepares that folder again before the
next attempt, unconfined; a link it follows carries Fyan's deletions and writes out of the
workspace (into ``units/``, the project package's outputs, the selftest records, the user's
files). The Lake double (``fake_lake``) stands in for Lake; no Lean toolchain runs here.
"""

from __future__ import annotations

import json
import os

import pytest

from tests import gate_harness as h
from tests.conftest import DOUBLE_READABLE

from fyan.lakepackage.package import BUILD_LIB, olean_path
from fyan.lakepackage.workspace import prepare_workspace


@pytest.fixture
def honest(fake_lake, tmp_path) -> h.Setup:
    return h.setup(tmp_path / "p", h.HONEST)


def _victim(tmp_path):
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "precious.txt").write_text("keep me\n")
    (victim / "sub" / "deep.txt").write_text("keep me too\n")
    return victim


def _state(folder):
    return sorted((p.relative_to(folder).as_posix(), p.read_bytes()) for p in folder.rglob("*") if p.is_file())


def _replace_with_link(path, target):
    if path.is_dir() and not path.is_symlink():
        import shutil
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


@pytest.mark.parametrize("where", ["library folder", "unit folder", "build library folder"])
def test_a_link_an_agent_leaves_in_its_workspace_does_not_carry_deletions_outside(honest, tmp_path, where):
    """An agent replaces a folder of its workspace with a link to a folder outside it; Fyan's
    next (unconfined) preparation of the workspace must not delete or write anything there."""
    p, store = honest.project, honest.store
    unit = store.unit("thm-root")
    ws = prepare_workspace(p, unit, {"Basic": honest.basic.read_text()}, store=store)
    victim = _victim(tmp_path)
    before = _state(victim)
    link = {"library folder": ws.root / h.LIB,
            "unit folder": ws.root / h.LIB / "ThmRoot",
            "build library folder": ws.root / BUILD_LIB / h.LIB}[where]
    _replace_with_link(link, victim)
    prepare_workspace(p, unit, {"Basic": honest.basic.read_text() + "\n-- attempt 2\n"}, store=store)
    assert _state(victim) == before
    assert not link.is_symlink()


def test_a_link_to_the_units_folder_does_not_wipe_recorded_artifacts(honest, tmp_path):
    """The same attack aimed at the project: ``<Lib>`` -> ``units/`` would delete every unit's
    recorded files (and the compiled upstream output the downstream gates read)."""
    p, store = honest.project, honest.store
    unit = store.unit("thm-root")
    ws = prepare_workspace(p, unit, {"Basic": honest.basic.read_text()}, store=store)
    units = p.paths.unit("def-double").parent
    before = _state(units)
    _replace_with_link(ws.root / h.LIB, units)
    prepare_workspace(p, unit, {"Basic": honest.basic.read_text()}, store=store)
    assert _state(units) == before


@pytest.mark.parametrize("name", ["module file", "lean-toolchain", "lakefile.toml"])
def test_a_file_link_an_agent_leaves_is_not_written_through(honest, tmp_path, name):
    """An agent replaces a file Fyan rewrites with a link to a file outside its workspace (here
    a stand-in for ``~/.local/share/fyan/selftest/<lean>.json`` or ``units/<u>/Basic.lean``)."""
    p, store = honest.project, honest.store
    unit = store.unit("thm-root")
    ws = prepare_workspace(p, unit, {"Basic": honest.basic.read_text()}, store=store)
    victim = _victim(tmp_path) / "precious.txt"
    path = {"module file": ws.root / h.LIB / "ThmRoot" / "Basic.lean", "lean-toolchain": ws.root / "lean-toolchain",
            "lakefile.toml": ws.root / "lakefile.toml"}[name]
    _replace_with_link(path, victim)
    prepare_workspace(p, unit, {"Basic": honest.basic.read_text() + "\n-- attempt 2\n"}, store=store)
    assert victim.read_text() == "keep me\n"
    assert not path.is_symlink()


def test_workspace_links_fyan_makes_survive_the_cleanup(honest):
    """The links Fyan itself makes (upstream outputs, Lake packages) are there after preparation."""
    p, store = honest.project, honest.store
    unit = store.unit("thm-root")
    ws = prepare_workspace(p, unit, {"Basic": honest.basic.read_text()}, store=store)
    ws = prepare_workspace(p, unit, {"Basic": honest.basic.read_text()}, store=store)
    link = olean_path(ws.root, f"{h.LIB}.DefDouble.Basic")
    assert link.is_symlink() and link.resolve() == olean_path(p.paths.lean, f"{h.LIB}.DefDouble.Basic").resolve()


# -- the gate workspace: what compile-time code of the candidate leaves there ------------------

@pytest.mark.parametrize("plant", [
    # (the hook runs where `lean` runs: src/ of the gate workspace; the candidate's output folder is
    # build/build/, the one folder searched is lib/)
    # a link named like a module root to forged outputs kept inside the output folder
    "mkdir -p ../build/build/Cheats/ThmRoot/forged/Init && echo forged > "
    "../build/build/Cheats/ThmRoot/forged/Init/Prelude.olean && ln -s Cheats/ThmRoot/forged/Init ../build/build/Init",
    # a link in the searched folder itself
    "ln -s ../build/build/Cheats ../lib/Mathlib",
    # a link next to the outputs, to a folder the compile may write
    "mkdir -p ../tmp/x ../build/build/Cheats && ln -s ../../tmp/x ../build/build/Cheats/Other",
])
def test_a_link_compile_time_code_creates_in_the_gate_workspace_fails_the_build(honest, fake_lake, plant):
    """A new link in the gate workspace puts files on the inspector's search path without any
    new file named ``*.olean`` outside the library's folders; nothing the build makes is a link."""
    tamper = fake_lake.dir / "tamper.sh"
    tamper.write_text(f"#!/bin/sh\n{plant}\n")
    tamper.chmod(0o755)
    report = honest.gate({"build_hook": str(tamper), "build_only": ["Cheats.ThmRoot.Basic"]}, fake=fake_lake)
    c = report.check("build")
    # found by the comparison after the build, or (confined, a read-only folder) refused as it is made
    found = "changed the gate workspace beyond its own outputs" in c.reason
    refused = "Read-only file system" in c.reason and "cannot confirm the compile" in c.reason
    assert c.status == "fail" and (found or refused), c
    assert not report.passed


# -- selftest trust: whose toolchain a record vouches for --------------------------------------

def _record(version_line: str) -> dict:
    from fyan.trust import record as trust

    return {"format": trust.FORMAT, "key": "4.31.0", "passed": True, "toolchain": version_line,
            "pin": "leanprover/lean4:v4.31.0", "inspector_sha256": "0" * 64, "date": "2026-12-01T00:00:00Z",
            **trust.current_identity(), "cases": [{"id": "honest", "ok": True}]}


@pytest.mark.parametrize("other", [
    "Lake version 5.0.0-src+deadbeef (Lean version 4.31.0)",       # a fork / patched build of the same version
    "Lake version 5.0.0 (Lean version 4.31.0)",                     # a build that does not say its commit
])
def test_a_selftest_record_vouches_only_for_the_toolchain_that_ran_it(tmp_path, monkeypatch, other):
    """The record is kept per Lean version, but what passed the cheat corpus was one toolchain
    (its whole ``lake --version`` line). Another build reporting the same Lean version (another
    origin's pin in an adopted package's ``lean-toolchain``, a patched kernel) has not passed it."""
    from fyan.config import FyanConfig
    from fyan.lean.toolchain import Toolchain
    from fyan.trust import record as trust

    monkeypatch.setenv("FYAN_DATA_DIR", str(tmp_path / "data"))
    cfg = FyanConfig(project={"name": "x", "source": "-"}).lean
    assert not cfg.trust_without_selftest
    ran = Toolchain(lake=tmp_path / "a" / "lake", lean=None, version="Lake version 5.0.0-src+0123abc (Lean version 4.31.0)")
    other_tc = Toolchain(lake=tmp_path / "b" / "lake", lean=None, version=other)
    assert trust.toolchain_key(other_tc) == trust.toolchain_key(ran) == "4.31.0"
    trust.save_record(_record(ran.version))
    assert trust.toolchain_trust(ran, cfg).trusted  # control: the toolchain that ran it
    verdict = trust.toolchain_trust(other_tc, cfg)
    assert not verdict.trusted and "fyan selftest" in (verdict.problem or ""), verdict


# -- compile once: an output compiled against an upstream module that has changed since --------

def test_a_recorded_output_is_not_reused_after_its_upstream_unit_was_compiled_again(honest, fake_lake):
    """thm-root's ``.olean`` was compiled against def-double's ``.olean`` of that time. When
    def-double is completed again (a hand edit: a new helper, its frozen statement unchanged), a
    gate downstream of thm-root must not load thm-root's old ``.olean`` next to def-double's new
    one: Lean does not re-check an imported module, so proofs checked against the old upstream
    would enter an environment where they may not hold (a changed helper definition). The
    recorded ``Basic.olean.json`` binds only thm-root's own source."""
    from fyan.lakepackage import trusted
    from fyan.lakepackage.package import render_unit_file
    from fyan.state.models import Stage

    p, gw, store = honest.project, honest.gateway, honest.store
    h._drive(p, gw, "thm-root", "", h.HONEST, [Stage.GATE])
    root = store.unit("thm-root")
    source = (p.paths.unit("thm-root") / "Basic.lean").read_bytes()
    below = {"Cheats.DefDouble.Basic": store.artifact("def-double", "Basic.olean").sha256}
    assert trusted.upstream_output(p, store, root, source, below) is not None  # control: reused as recorded
    old = store.artifact("def-double", "Basic.olean").sha256
    edited = render_unit_file(p, store, store.unit("def-double"),
                              h.DEF_BODY + "\n\ntheorem double_zero : double 0 = 0 := by simp [double]", "Basic")
    run, why = gw.record_manual_attempt("def-double", {"Basic.lean": edited.encode()}, h.ATTEMPTS)
    assert run is not None, why
    h._drive(p, gw, "def-double", "", "", [Stage.GATE])
    assert store.artifact("def-double", "Basic.olean").sha256 != old
    now = {"Cheats.DefDouble.Basic": store.artifact("def-double", "Basic.olean").sha256}
    assert trusted.upstream_output(p, store, root, source, now) is None


def test_a_recorded_olean_is_reused_only_by_the_lean_build_that_compiled_it(honest, fake_lake):
    """After a toolchain change (another Lean build: another git hash, which
    Lean writes into every ``.olean`` header and checks at import — docs/lean-contract.md), a
    recorded upstream ``.olean`` is compiled again from its recorded source instead of being
    placed where the new Lean would refuse it (``incompatible header``) and the failure be blamed
    on the proof."""
    from fyan.lean import compile as leanc
    from fyan.lakepackage import trusted
    from fyan.lean.toolchain import discover
    from fyan.state.models import Stage

    p, gw, store = honest.project, honest.gateway, honest.store
    h._drive(p, gw, "thm-root", "", h.HONEST, [Stage.GATE])
    root = store.unit("thm-root")
    source = (p.paths.unit("thm-root") / "Basic.lean").read_bytes()
    below = {"Cheats.DefDouble.Basic": store.artifact("def-double", "Basic.olean").sha256}
    meta = json.loads((p.paths.unit("thm-root") / "Basic.olean.json").read_text())
    assert meta["lean_githash"] and meta["lean_version"] == "4.34.1"
    tc = discover(p.config.lean).toolchain
    leanc._CACHE.clear()
    same = leanc.resolve(tc, p.paths.lean, p.config.lean)
    assert trusted.upstream_output(p, store, root, source, below, same) is not None  # control
    fake_lake.scenario({"lean_githash": "0" * 40})  # the same version, rebuilt
    leanc._CACHE.clear()
    rebuilt = leanc.resolve(tc, p.paths.lean, p.config.lean)
    assert rebuilt.githash != same.githash
    assert trusted.upstream_output(p, store, root, source, below, rebuilt) is None
    # the gate of a unit downstream of thm-root builds it from source, and passes
    ws = trusted.prepare(p, store, store.unit("thm-root"), {}, purpose="probe", toolchain=tc)
    try:
        assert "Cheats.DefDouble.Basic" in ws.upstream_modules
    finally:
        ws.remove()


# -- a red-team attack: the warm server's scratch folder ---------------------------------------
# A warm server (fyan/lakepackage/pool.py) runs the candidate's compile-time code (`#eval`, a macro) inside
# its sandbox, where its scratch folder is writable: that code can replace `server.log` there by a
# link or a FIFO. The next server for the same key (after a crash, an idle end, the next run) is
# started by Fyan, unconfined, which opened `server.log` by name: a link carried the append (the
# server's standard error, which the candidate's code writes) to any file Fyan can write (the state
# store, a shell profile); a FIFO blocked Fyan forever.


def _warm_pool(fake_lake, tmp_path):
    from fyan.sandbox.admission import Admission
    from fyan.lakepackage.pool import ServerPool, ServerSpec

    fake_lake.scenario({"server": {}})
    spec = ServerSpec(scratch=tmp_path / "servers" / "k", extra_env={"LEAN_PATH": str(tmp_path)}, sandbox="off",
                      timeout_s=60, start_timeout_s=20)
    return ServerPool(size=1, idle_s=600, adm=Admission(budget_mb=8192, limit_mb=8192, peaks={})), spec


def _plant(scratch, how, victim):
    log = scratch / "server.log"
    if log.exists() or log.is_symlink():
        log.unlink()
    if how == "link to a host file":
        os.symlink(victim, log)
    elif how == "dangling link":
        os.symlink(victim.parent / "created-by-fyan.txt", log)
    elif how == "fifo":
        os.mkfifo(log)
    else:  # a folder of that name
        log.mkdir()


@pytest.mark.parametrize("how", ["link to a host file", "dangling link", "fifo", "folder"])
def test_what_a_candidate_leaves_as_the_warm_servers_log_is_never_opened(fake_lake, tmp_path, how):
    import threading

    from fyan.lakepackage.pool import ServerKey, header_of

    pool, spec = _warm_pool(fake_lake, tmp_path)
    victim = tmp_path / "host" / "state.db"
    victim.parent.mkdir()
    victim.write_bytes(b"the store\n")
    text = "import Mathlib\n\ntheorem t (p : Prop) (h : p) : p := sorry\n"
    key = ServerKey(str(fake_lake.lean), "fake", (), header_of(text))
    done: dict = {}

    def second_check():
        try:
            done["check"] = pool.check(key, text, spec, unit="a")
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            done["error"] = e

    try:
        pool.check(key, text, spec, unit="a")
        _plant(spec.scratch, how, victim)  # what the candidate's code may do inside the sandbox
        pool.shutdown()  # the server ends (idle, crash, the run ends); the next check starts a new one
        worker = threading.Thread(target=second_check, daemon=True)
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive(), "Fyan blocked opening what the candidate left as server.log"
        assert "error" not in done, done.get("error")
        assert done["check"].elaboration.diagnostics[0].text == "declaration uses `sorry`"
    finally:
        pool.shutdown()
        if (spec.scratch / "server.log").is_fifo():  # release a blocked opener
            fd = os.open(spec.scratch / "server.log", os.O_RDONLY | os.O_NONBLOCK)
            os.close(fd)
    assert victim.read_bytes() == b"the store\n"
    assert not (victim.parent / "created-by-fyan.txt").exists()
    log = spec.scratch / "server.log"
    assert log.is_file() and not log.is_symlink()


@pytest.mark.parametrize("how", ["file", "fifo", "link"])
def test_what_a_candidate_leaves_as_the_sandbox_tmp_folder_does_not_stop_the_next_warm_server(fake_lake, tmp_path,
                                                                                               how):
    """The same scratch folder: `.sandbox-tmp` (the confined server's TMPDIR) replaced by a file, a
    FIFO or a link by the candidate's code made every later server for that header fail to start
    with an uncaught `FileExistsError` (the Formalizer stage crashed), in every later run."""
    from fyan.lakepackage.pool import ServerKey, header_of
    from fyan.sandbox.runner import bwrap_status

    if bwrap_status()[0] is None:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status()[1]}")
    pool, spec = _warm_pool(fake_lake, tmp_path)
    spec.sandbox = "require"
    from pathlib import Path
    # the Lean double runs on this interpreter: readable inside, as a toolchain is
    spec.readable = tuple(Path(p) for p in DOUBLE_READABLE)
    elsewhere = tmp_path / "host-tmp"
    elsewhere.mkdir()
    text = "import Mathlib\n\ntheorem t (p : Prop) (h : p) : p := sorry\n"
    key = ServerKey(str(fake_lake.lean), "fake", (), header_of(text))
    try:
        assert pool.check(key, text, spec, unit="a").sandboxed
        planted = spec.scratch / ".sandbox-tmp"
        import shutil
        shutil.rmtree(planted)
        {"file": lambda: planted.write_text("x"), "fifo": lambda: os.mkfifo(planted),
         "link": lambda: os.symlink(elsewhere, planted)}[how]()
        pool.shutdown()
        check = pool.check(key, text, spec, unit="a")
        assert check.elaboration.diagnostics[0].text == "declaration uses `sorry`"
    finally:
        pool.shutdown()
    assert (spec.scratch / ".sandbox-tmp").is_dir() and not (spec.scratch / ".sandbox-tmp").is_symlink()


@pytest.mark.parametrize("how", ["file", "fifo"])
def test_a_command_agent_that_leaves_a_sandbox_tmp_file_does_not_stop_its_next_call(tmp_path, how):
    """The same family for a `command` agent: its workspace persists between calls, and a
    `.sandbox-tmp` it left as a file or FIFO made the next call raise `FileExistsError`."""
    from fyan.agents.providers.base import Message, ModelRequest
    from fyan.agents.providers.command import CommandAgentProvider
    from fyan.sandbox.runner import bwrap_status

    if bwrap_status()[0] is None:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status()[1]}")
    project = tmp_path / "project"
    workspace = project / "workspaces" / "u"
    workspace.mkdir(parents=True)
    agent_script = tmp_path / "agent.sh"
    plant = "echo x > .sandbox-tmp" if how == "file" else "mkfifo .sandbox-tmp"
    agent_script.write_text(f"#!/bin/sh\ncat >/dev/null\nrm -rf .sandbox-tmp; {plant}\necho ok\n")
    agent_script.chmod(0o755)
    agent = CommandAgentProvider([str(agent_script)], timeout_s=60, sandbox="require", project_root=project)
    request = ModelRequest(stage="prove", unit="u", prompt="prove", model="m", max_tokens=10,
                           workspace=str(workspace), messages=[Message(role="user", content="go")])
    assert agent.complete(request).text.strip() == "ok"
    assert agent.complete(request).text.strip() == "ok"  # the next call of the same workspace runs
