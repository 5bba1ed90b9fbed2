"""Each complete unit is compiled once, by the completion gate; workspaces read its
``.olean``. The Lake double (``tests/fakes/fake_lake.py``) stands in for Lake: it follows Lake's
rebuild rule (modification times), puts outputs in the package that owns the module and logs
each compilation, so these tests count what a run compiles."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests import gate_harness as h
from tests.conftest import write

from fyan.lean.diagnostics import parse_lake_output
from fyan.lakepackage.package import LakefileError, olean_path, workspace_lakefile
from fyan.lakepackage.workspace import prepare_workspace
from fyan.state.gateway import sha256_file


@pytest.fixture
def honest(fake_lake, tmp_path) -> h.Setup:
    return h.setup(tmp_path / "p", h.HONEST)


def modules_compiled(fake_lake, where: str) -> list[str]:
    return [c["module"] for c in fake_lake.compiles() if where in c["package"]]


# -- the Lake double follows Lake's rebuild rules ----------------------------------------------

def lake(fake_lake, cwd, *targets):
    return subprocess.run([str(fake_lake.path), "build", *targets], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin"})


def test_the_lake_double_rebuilds_by_modification_time_and_owning_package(fake_lake, tmp_path):
    dep, ws = tmp_path / "dep", tmp_path / "ws"
    write(dep / "lakefile.toml", 'name = "Dep"\n[[lean_lib]]\nname = "Dep"\n')
    write(dep / "Dep" / "A.lean", "def a := 1\n")
    assert lake(fake_lake, dep, "Dep.A").returncode == 0
    write(ws / "lakefile.toml", 'name = "W"\n[[lean_lib]]\nname = "W"\n')
    write(ws / "W" / "B.lean", "import Dep.A\nimport W.C\ndef b := 2\n")
    write(ws / "W" / "C.lean", "def c := 3\n")
    # an import no local library owns must be compiled on the search path already
    out = lake(fake_lake, ws, "W.B")
    assert out.returncode == 1 and "object file .lake/build/lib/lean/Dep/A.olean of module Dep.A does not exist" in out.stdout
    (ws / ".lake" / "packages").mkdir(parents=True)
    os.symlink(dep, ws / ".lake" / "packages" / "dep")
    out = lake(fake_lake, ws, "W.B")
    assert out.returncode == 0, out.stdout
    log = parse_lake_output(out.stdout)
    assert [(j.target, j.index, j.total) for j in log.jobs] == [("W.C", 1, 2), ("W.B", 2, 2)] and log.succeeded
    assert "✔ [2/2] Built W.B (" in out.stdout
    assert olean_path(ws, "W.B").is_file() and not olean_path(ws, "Dep.A").exists()  # outputs in the owning package
    assert modules_compiled(fake_lake, str(ws)) == ["W.C", "W.B"]
    # up to date: nothing compiled
    assert "Replayed W.B" in lake(fake_lake, ws, "W.B").stdout and len(fake_lake.compiles()) == 3
    # an import's .olean newer than the module's: recompiled (the import itself is not)
    c_olean = olean_path(ws, "W.C")
    later = olean_path(ws, "W.B").stat().st_mtime_ns + 10**9
    os.utime(c_olean, ns=(later, later))
    lake(fake_lake, ws, "W.B")
    assert modules_compiled(fake_lake, str(ws))[-1:] == ["W.B"] and len(fake_lake.compiles()) == 4
    # the source newer than its .olean: recompiled
    later += 10**9
    os.utime(ws / "W" / "C.lean", ns=(later, later))
    lake(fake_lake, ws, "W.B")
    assert modules_compiled(fake_lake, str(ws))[-2:] == ["W.C", "W.B"]
    # a newer .olean of the dependency package: the importing module is recompiled
    later += 10**9
    os.utime(olean_path(dep, "Dep.A"), ns=(later, later))
    lake(fake_lake, ws, "W.B")
    assert modules_compiled(fake_lake, str(ws))[-1:] == ["W.B"] and not modules_compiled(fake_lake, str(dep))[1:]


# -- the workspace lakefile ----------------------------------------------------------------------

def test_workspace_lakefile_narrows_the_library_to_the_unit():
    template = 'name = "L"\ndefaultTargets = ["L"]\n\n[leanOptions]\nautoImplicit = false\n\n[[lean_lib]]\nname = "L"\n'
    out = workspace_lakefile(template, "L", ["L.U"])
    assert out.endswith('[[lean_lib]]\nname = "L"\nroots = ["L.U"]\n') and out.startswith(template.split("[[")[0])
    edited = template + 'roots = ["L"]\nglobs = ["L.+"]\n\n[[lean_lib]]\nname = "Other"\n'
    out = workspace_lakefile(edited, "L", ["L.U", "L.V"])
    assert 'roots = ["L.U", "L.V"]' in out and 'roots = ["L"]' not in out and 'name = "Other"' in out
    import tomllib

    libs = tomllib.loads(out)["lean_lib"]
    assert libs[0]["roots"] == ["L.U", "L.V"] and "roots" not in libs[1]
    for broken in ('name = "L"\n', '[[lean_lib]]\nname = "M"\n', '[[lean_exe]]\nname = "L"\n'):
        with pytest.raises(LakefileError, match='no \\[\\[lean_lib\\]\\] with name = "L"'):
            workspace_lakefile(broken, "L", ["L.U"])


# -- compiled once -----------------------------------------------------------------------------

def test_a_completed_unit_is_compiled_once_and_read_compiled_downstream(honest, fake_lake):
    p, store = honest.project, honest.store
    # the gate that completed def-double recorded its module as it compiled it
    olean = p.paths.unit("def-double") / "Basic.olean"
    meta = json.loads((p.paths.unit("def-double") / "Basic.olean.json").read_text())
    assert store.artifact("def-double", "Basic.olean").sha256 == sha256_file(olean) == meta["olean_sha256"]
    assert store.artifact("def-double", "Basic.olean").run_id == store.completion("def-double") \
        == store.artifact("def-double", "Basic.olean.json").run_id
    assert meta["source_sha256"] == sha256_file(p.paths.unit("def-double") / "Basic.lean")
    shared = olean_path(p.paths.lean, "Cheats.DefDouble.Basic")
    assert shared.read_bytes() == olean.read_bytes()
    assert shared.stat().st_mode & 0o222 == 0  # read-only
    # the gate of thm-root compiles thm-root's modules only
    before = len(fake_lake.compiles())
    report = honest.gate(None, fake=fake_lake)
    assert report.passed, report.summary()
    compiled = [c["module"] for c in fake_lake.compiles()[before:]]
    assert compiled and set(compiled) <= {"Cheats.ThmRoot.Statement", "Cheats.ThmRoot.Basic"}
    assert report.module_olean_sha256 and not {"module_outputs_b64", "module_olean_sha256"} & report_json_keys(report)
    # the agent's workspace: the unit's own modules, the upstream module linked compiled
    unit = store.unit("thm-root")
    ws = prepare_workspace(p, unit, {"Basic": honest.basic.read_text()}, store=store)
    assert sorted(x.relative_to(ws.root).as_posix() for x in ws.root.rglob("*.lean")) == ["Cheats/ThmRoot/Basic.lean"]
    link = olean_path(ws.root, "Cheats.DefDouble.Basic")
    assert link.is_symlink() and link.resolve() == shared.resolve()
    assert 'roots = ["Cheats.ThmRoot"]' in ws.lakefile.read_text()
    before = len(fake_lake.compiles())
    out = lake(fake_lake, ws.root, "Cheats.ThmRoot.Basic")
    assert out.returncode == 0, out.stdout
    assert [c["module"] for c in fake_lake.compiles()[before:]] == ["Cheats.ThmRoot.Basic"]
    # a second attempt with a new candidate: the unit's module again, nothing upstream
    ws = prepare_workspace(p, unit, {"Basic": honest.basic.read_text() + "\n-- attempt 2\n"}, store=store)
    lake(fake_lake, ws.root, "Cheats.ThmRoot.Basic")
    assert [c["module"] for c in fake_lake.compiles()[before:]] == ["Cheats.ThmRoot.Basic"] * 2


def report_json_keys(report) -> set[str]:
    from fyan.models.gate_report import report_json

    return set(json.loads(report_json(report)))


@pytest.mark.parametrize("tamper", ["olean", "meta"])
def test_a_changed_recorded_output_fails_the_gate(honest, fake_lake, tamper):
    """The gate reads an upstream .olean only as recorded by the gate run that completed it."""
    name = {"olean": "Basic.olean", "meta": "Basic.olean.json"}[tamper]
    path = honest.project.paths.unit("def-double") / name
    path.chmod(0o644)
    path.write_bytes(path.read_bytes() + b"\n")
    report = honest.gate(None, fake=fake_lake)
    reason = report.check("build").reason
    assert not report.passed and report.environment_problem is not None
    assert f"units/def-double/{name} differs from the recorded artifact" in reason


def test_the_project_packages_copy_is_not_what_the_gate_reads(honest, fake_lake):
    shared = olean_path(honest.project.paths.lean, "Cheats.DefDouble.Basic")
    shared.chmod(0o644)
    shared.write_text(json.dumps({"fake_olean": 1, "module": "Cheats.DefDouble.Basic", "source": "forged"}))
    assert honest.gate(None, fake=fake_lake).passed


def test_a_unit_completed_without_a_recorded_output_is_built_from_its_source(honest, fake_lake):
    """Units completed before compiled outputs were recorded have no Basic.olean: dependents build their source."""
    c = honest.gateway._conn
    c.execute("DELETE FROM artifacts WHERE unit = 'def-double' AND kind LIKE 'Basic.olean%'")
    c.commit()
    before = len(fake_lake.compiles())
    report = honest.gate(None, fake=fake_lake)
    assert report.passed, report.summary()
    assert "Cheats.DefDouble.Basic" in [x["module"] for x in fake_lake.compiles()[before:]]
    # the agent's workspace builds it too, from the project package's source
    olean_path(honest.project.paths.lean, "Cheats.DefDouble.Basic").unlink()
    ws = prepare_workspace(honest.project, honest.store.unit("thm-root"), {"Basic": honest.basic.read_text()},
                           store=honest.store)
    assert (ws.root / "Cheats" / "DefDouble" / "Basic.lean").is_file()
    assert 'roots = ["Cheats.ThmRoot", "Cheats.DefDouble"]' in ws.lakefile.read_text()
    assert lake(fake_lake, ws.root, "Cheats.ThmRoot.Basic").returncode == 0
