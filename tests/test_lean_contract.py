"""``docs/lean-contract.md`` stays true: every row cites Lean's or Lake's source and a test that
exists, its ``file:line`` references point at what they name, and the toolchain doubles follow
the rows (the real core ``lean`` 4.35.0 of ``tests/lean_core.py`` answers the same questions the
same way where it can run)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import gate_harness as h
from tests.conftest import ROOT

CONTRACT = ROOT / "docs" / "lean-contract.md"
_TEST_REF = re.compile(r"`?(tests/[\w/]+\.py)((?:::[\w\[\]-]+)?)`?")


def rows() -> list[list[str]]:
    """The table rows of the contract (cells), headers and separators left out."""
    out = []
    for line in CONTRACT.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith(("| Fyan relies on", "|---")):
            out.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return out


def test_contract_references_are_current():
    sys.path.insert(0, str(ROOT / "scripts"))
    import contract_lines

    stale = contract_lines.check(CONTRACT.read_text(encoding="utf-8"))
    assert not stale, f"stale references (run python scripts/contract_lines.py --fix): {stale}"


def test_every_row_cites_a_source_and_an_existing_test():
    table = rows()
    assert len(table) >= 20
    for cells in table:
        assert len(cells) == 5, cells
        claim, where, says, source, test = cells
        assert where.startswith("`") and says, cells
        # Lean's source, a real run, or a library's file read at a commit (mathlib4's `Mathlib/…`)
        assert re.search(r"src/|real 4\.35|README|unknown|lean-samples|lean4#\d+|mathlib4 Mathlib/\S+ @ [0-9a-f]{8}|hanwenzhu/LeanArchitect|leanprover-community/(aesop|batteries) [^@]+ @ [0-9a-f]{8}",
                         source), f"no source: {cells}"
        named = _TEST_REF.findall(test)
        assert named or "unknown" in test or "tests/cheats/" in test or "fyan selftest" in test, cells
        last_file = None
        for path, name in named:
            assert (ROOT / path).is_file(), f"{path} does not exist ({claim[:40]}…)"
            last_file = path
        for name in re.findall(r"::(\w+)", test):
            files = [p for p, _ in named] or [last_file]
            assert any(re.search(rf"^def {name}\(", (ROOT / f).read_text(), re.M) for f in files if f), \
                f"test {name} named by the contract does not exist"


# -- the doubles follow the rows -------------------------------------------------------------

def _run(argv, cwd, env=None):
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_the_doubles_answer_the_toolchain_questions_as_lean_does(fake_lake, tmp_path):
    prefix = _run([fake_lake.lean, "--print-prefix"], tmp_path).stdout.strip()
    assert Path(prefix) == fake_lake.dir and (Path(prefix) / "bin" / "lean").is_file()
    assert re.fullmatch(r"[0-9a-f]{40}", _run([fake_lake.lean, "--githash"], tmp_path).stdout.strip())
    assert re.match(r"Lean \(version \d+\.\d+\.\d+, ", _run([fake_lake.lean, "--version"], tmp_path).stdout)


@pytest.mark.lean_core
def test_the_lean_double_reports_missing_imports_as_real_lean_does(fake_lake, core_lean, tmp_path):
    """The same two missing-import situations through real Lean 4.35.0 and the double: the same
    message kinds, and the same verdict of ``compile_module`` (an environment problem)."""
    from fyan.config import LeanSection
    from fyan.lean.compile import LeanSetup, compile_module

    text = "prelude\nimport Lib.Up.Basic\n"
    (tmp_path / "src" / "Lib" / "Down").mkdir(parents=True)
    (tmp_path / "src" / "Lib" / "Down" / "Basic.lean").write_text(text)
    (tmp_path / "half" / "Lib" / "Up").mkdir(parents=True)
    cfg = LeanSection(sandbox="off", build_timeout=60)
    verdicts = {}
    for label, lean in (("real", core_lean), ("double", fake_lake.lean)):
        setup = LeanSetup(lean=Path(lean), sysroot=Path(lean).parent.parent, version="x", githash="y")
        for case, search in (("no prefix", [tmp_path / "empty"]), ("no module", [tmp_path / "half"])):
            r = compile_module(setup, source_root=tmp_path / "src", module="Lib.Down.Basic",
                               out_root=tmp_path / f"out-{label}", search_path=search, config=cfg,
                               log_dir=tmp_path / "logs", name=f"{label}-{case}")
            verdicts[label, case] = (r.ok, (r.environment_error or "").split("'")[0].split(" of module")[0])
    assert verdicts["real", "no prefix"] == verdicts["double", "no prefix"] == (False, "unknown module prefix ")
    assert verdicts["real", "no module"] == verdicts["double", "no module"] == (False, "object file ")


def test_the_lake_double_writes_a_manifest_where_lake_does(fake_lake, tmp_path):
    """Lake/Load/Workspace.lean ``loadWorkspace``: a package without ``lake-manifest.json`` gets
    one at its top from any workspace-loading command (``build``, ``env``)."""
    (tmp_path / "lakefile.toml").write_text('name = "P"\n[[lean_lib]]\nname = "P"\n')
    proc = _run([fake_lake.path, "env", "printenv", "LEAN_PATH"], tmp_path)
    assert proc.returncode == 0 and (tmp_path / "lake-manifest.json").is_file()
    assert str((tmp_path / ".lake" / "build" / "lib" / "lean").resolve()) in proc.stdout


def test_no_lake_command_runs_in_a_gate_workspace(fake_lake, tmp_path):
    """The gate's decision involves no Lake workspace, so no manifest is
    written or dependency fetched there; Lake runs only in the project's own package."""
    s = h.setup(tmp_path / "p", h.HONEST)
    before = len(fake_lake.calls())
    report = s.gate(None, fake=fake_lake)
    assert report.passed, report.summary()
    # the double logs every program of the toolchain folder: lean, lake, and Fyan's inspector binary
    lake_calls = [c for c in fake_lake.calls()[before:] if c["argv"][:1] not in (["lean"], ["fyan-inspector"])]
    gate_root = (s.project.paths.state / "gate").resolve()
    assert lake_calls and all(not Path(c["cwd"]).resolve().is_relative_to(gate_root) for c in lake_calls)
    compiles = [c for c in fake_lake.calls()[before:] if c["argv"][:1] == ["lean"] and "-R" in c["argv"]]
    assert compiles and all(Path(c["cwd"]).resolve().is_relative_to(gate_root) for c in compiles)
    assert not list(gate_root.rglob("lake-manifest.json"))


def test_missing_dependencies_are_built_once_by_lake(fake_lake, tmp_path):
    from fyan.lean import compile as leanc
    from fyan.lean.toolchain import discover

    s = h.setup(tmp_path / "p", h.HONEST)
    s.project.config.lean.extra_imports = ["Mathlib"]
    tc = discover(s.project.config.lean).toolchain
    leanc._CACHE.clear()
    setup = leanc.resolve(tc, s.project.paths.lean, s.project.config.lean)
    builds = [c["argv"] for c in fake_lake.calls() if "build" in c["argv"] and "+Mathlib" in c["argv"]]
    assert builds == [["--keep-toolchain", "build", "+Mathlib"]]
    assert any((d / "Mathlib.olean").is_file() for d in setup.dependency_path)
    leanc._CACHE.clear()
    leanc.resolve(tc, s.project.paths.lean, s.project.config.lean)
    assert len([c for c in fake_lake.calls() if "+Mathlib" in c["argv"]]) == 1  # built, not built again


def test_comparator_without_its_prerequisites_is_unavailable(fake_lake, tmp_path, monkeypatch):
    comparator = tmp_path / "bin" / "comparator"
    comparator.parent.mkdir()
    comparator.write_text("#!/bin/sh\necho 'Your solution is okay!'\n")
    comparator.chmod(0o755)
    s = h.setup(tmp_path / "p", h.HONEST)
    s.project.config.lean.comparator = str(comparator)
    monkeypatch.delenv("COMPARATOR_LANDRUN", raising=False)
    monkeypatch.delenv("COMPARATOR_LEAN4EXPORT", raising=False)
    report = s.gate(None, fake=fake_lake)
    check = report.check("comparator")
    assert check.status == "unavailable" and not check.required
    assert "needs landrun (on PATH or $COMPARATOR_LANDRUN), lean4export" in check.reason
    assert report.passed  # an optional checker that cannot run is reported, never a pass of its own
    # with its prerequisites, it runs (in a Lake package of its own) and its verdict counts
    for name in ("landrun", "lean4export"):
        (tmp_path / "bin" / name).write_text("#!/bin/sh\nexit 0\n")
        (tmp_path / "bin" / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    ran = s.gate(None, fake=fake_lake)
    assert ran.check("comparator").status == "pass" and ran.check("comparator").required
    logged = json.loads((s.project.paths.root / "gate-logs" / "comparator.log.json").read_text())
    assert logged["cwd"].endswith("comparator") and logged["argv"][1:3] == ["env", str(comparator)]


def test_the_inspector_source_uses_no_api_the_contract_rules_out():
    """Rows "no `String.take`" and "`scoped` is a keyword": the inspector must build on every
    supported version; what the contract found to have changed or to be reserved stays out of it."""
    source = (ROOT / "lake-template" / "inspector" / "FyanInspector.lean").read_text(encoding="utf-8")
    code = re.sub(r"/-.*?-/", "", source, flags=re.S)
    code = "\n".join(line.split("--")[0] for line in code.splitlines())
    assert not re.search(r"\.take\b|String\.take", code), "String.take returns String.Slice in newer Lean"
    assert not re.search(r"[(\s]scoped\s*:", code), "`scoped` is a keyword: not an identifier"


def test_an_attribute_on_another_modules_declaration_is_refused_by_effect():
    """Row "`attribute [reducible] f` on another module's `f`": its extension is refused by the policy
    table even when the allow-list names it; an own `abbrev`'s is admitted."""
    from fyan.lean.policy import extension_reason

    assert "reducibility of another module's constants" in extension_reason("reducibilityExtra",
                                                                              allow={"reducibilityExtra"})
    assert extension_reason("reducibilityCore") is None  # control: an `abbrev` of its own


# -- toolchain spellings, elan's pin, the /proc mechanism of the reaper ---------------------------

@pytest.mark.parametrize("pin, version, reported, match", [
    # Lean.versionString: core, then "-" ++ specialDesc when there is one (src/Init/Meta.lean)
    ("leanprover/lean4:v4.19.0-rc2", "4.19.0-rc2", "4.19.0-rc2", True),
    # Lean.toolchain of a release candidate has no "v" (origin ++ ":" ++ core ++ "-" ++ specialDesc)
    ("leanprover/lean4:4.19.0-rc2", "4.19.0-rc2", "4.19.0-rc2", True),
    ("leanprover/lean4:v4.19.0", "4.19.0", "4.19.0-rc2", False),
    # a nightly: toolchain "leanprover/lean4:nightly-…", version "<core>-nightly-…"
    ("leanprover/lean4:nightly-2025-01-01", "nightly-2025-01-01", "4.16.0-nightly-2025-01-01", True),
    ("leanprover/lean4:nightly-2025-01-01", "nightly-2025-01-01", "4.16.0-nightly-2025-01-02", False),
    ("v4.35.0", "4.35.0", "4.35.0", True),
    ("stable", None, "4.35.0", None),
])
def test_version_spellings_of_releases_candidates_and_nightlies(pin, version, reported, match):
    """toolchain.py `pin_version`/`versions_match` against Lean's own `versionString` and
    `toolchain` (src/Init/Meta.lean: `versionStringCore ++ "-" ++ version.specialDesc`; the special
    description is "nightly-YYYY-MM-DD" or "rcN")."""
    from fyan.lean.toolchain import pin_version, versions_match

    assert pin_version(pin) == version
    if version is not None:
        assert versions_match(version, reported) is match


@pytest.mark.parametrize("text, pin", [
    ("leanprover/lean4:v4.9.0\n", "leanprover/lean4:v4.9.0"),
    ("  leanprover/lean4:v4.9.0  \r\nignored\n", "leanprover/lean4:v4.9.0"),
    ("\nleanprover/lean4:v4.9.0\n", None),  # elan reads the (blank) first line and refuses it
    ("", None),
    ("leanprover/lean4:v4.9.0\x0bx\n", "leanprover/lean4:v4.9.0\x0bx"),  # only "\n" ends a line
])
def test_read_pin_reads_lean_toolchain_as_elan_does(tmp_path, text, pin):
    """elan src/elan/config.rs `find_override_from_dir_walk`: `s.lines().next()`, `trim()`."""
    from fyan.lean.toolchain import read_pin

    (tmp_path / "lean-toolchain").write_text(text, encoding="utf-8")
    assert read_pin(tmp_path) == pin


def test_the_reaper_reads_parent_pids_from_proc_stat_after_the_last_parenthesis(tmp_path):
    """reaper.py `descendants`: proc(5) `/proc/<pid>/stat` is `pid (comm) state ppid …` and `comm`
    may hold spaces and parentheses, so the fields are read after the last `)`. A grandchild whose
    program name is `x) y (z 1` is still found below this process."""
    import os
    import shutil
    import subprocess
    import time

    from fyan.sandbox.reaper import descendants

    sleeper = tmp_path / "x) y (z 1"
    shutil.copy(shutil.which("sleep"), sleeper)
    parent = subprocess.Popen(["/bin/sh", "-c", f"'{sleeper}' 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        found: list[int] = []
        while time.monotonic() < deadline:
            found = descendants(os.getpid())
            names = {open(f"/proc/{p}/stat", "rb").read().split(b" (", 1)[1].rsplit(b")", 1)[0]
                     for p in found if os.path.exists(f"/proc/{p}/stat")}
            if b"x) y (z 1" in names:
                break
            time.sleep(0.05)
        assert parent.pid in found and b"x) y (z 1" in names, (found, names)
    finally:
        for pid in descendants(parent.pid):
            os.kill(pid, 9)
        parent.kill()
        parent.wait()
