"""Parsers of real Lean/Lake output (tests/fixtures/lean-samples), the declaration scanner, lints,
the trusted inspector's report schema and build, and the process runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fyan.lean import declarations
from fyan.lean.diagnostics import parse_lake_output, parse_lean_json
from fyan.lean.lints import errors, lint
from fyan.sandbox.runner import run_process
from tests.conftest import SAMPLES


def sample(name: str) -> str:
    path = SAMPLES / name
    assert path.exists(), f"lean sample {name} missing from {SAMPLES}"
    return path.read_text(encoding="utf-8")


def test_lake_v432_failure_log():
    log = parse_lake_output(sample("lake-build-v4.32-failure-ci.txt"))
    assert log.succeeded is False
    assert log.failed_targets == ["IUTThreeClosures.PrimePowerGeneratedThetaHull"]
    err = next(d for d in log.diagnostics if d.severity == "error")
    assert (err.file, err.line, err.column, err.text.splitlines()[0]) == (
        "IUTThreeClosures/PrimePowerGeneratedThetaHull.lean", 339, 28, "unsolved goals")
    # the tail repeats the error with its goal dump: continuation lines belong to the message
    dumps = [d.text for d in log.diagnostics if d.line == 339 and "⊢ Function.update" in d.text]
    assert len(dumps) == 1 and dumps[0].splitlines()[1] == "AG : AnabelianGeometry"
    job = next(j for j in log.jobs if j.icon == "✖")
    assert (job.index, job.total, job.verb, job.duration) == (8788, 8822, "Building", "8.4s")
    assert 1 in log.lean_exit_codes


def test_lake_sorry_warnings_old_path_formats():
    log = parse_lake_output(sample("lake-build-v4.17-sorry-warning-formal-conjectures.txt"))
    sorries = [d for d in log.diagnostics if d.is_sorry]
    assert [(d.file, d.line) for d in sorries] == [
        ("FormalConjectures/ForMathlib/Combinatorics/Basic.lean", 41),
        ("FormalConjectures/ForMathlib/Combinatorics/Basic.lean", 45)]
    win = parse_lake_output(sample("lake-build-v4.8.0-rc1-windows-sorry.txt"))
    first = win.diagnostics[0]
    assert (first.file, first.line, first.column, first.end_line, first.end_column) == (
        "LeanCuttingPlanes/Rules/Division.lean", 8, 8, 8, 24)
    assert sum(d.is_sorry for d in win.diagnostics) == 3


def test_lake_success_tails_and_old_formats():
    log = parse_lake_output(sample("lake-build-success-message-history.txt"))
    assert log.succeeded is True and log.job_count == 6  # timestamps stripped, last tail wins
    old = parse_lake_output(sample("lake-build-2023-old-format.txt"))
    assert old.jobs[0].target == "Mathlib.Tactic.ToAdditive" and old.jobs[0].index == 285
    assert old.diagnostics[0].file == "lake-packages/aesop/Aesop/Util/Basic.lean"
    assert parse_lake_output(sample("lake-build-v4.8.0-windows-failure.txt")).lean_exit_codes == [3221225477]
    assert parse_lake_output(sample("lake-build-v4.14-failure-love.txt")).failed_targets == [
        "Smt.Term", "Smt.Graph", "Smt.Tactic.WHNFConfigurable"]


def test_every_lake_sample_parses():
    for path in sorted(SAMPLES.glob("lake-build-*.txt")):
        log = parse_lake_output(path.read_text(encoding="utf-8"))
        assert log.jobs or log.diagnostics or log.succeeded is not None, path.name


def test_lean_json_lines_both_sorry_texts_and_forged_lines():
    out = parse_lean_json(sample("lean-json-captured-lines.txt"))
    sorries = [d for d in out.diagnostics if d.is_sorry]
    assert len(sorries) == 3
    old = next(d for d in out.diagnostics if d.file == "Old.lean")
    assert old.kind is None and old.is_sorry  # pre-4.15: no kind field, old quote style
    assert any(d.text.startswith("'Empiricist.one_eq_two' depends on axioms: [propext") for d in out.diagnostics)
    assert out.unrecognized  # the prose lines of the sample file


def test_inspector_report_hashes_types_values_and_local_definitions():
    import hashlib

    from fyan.lean.inspector import InspectorReport
    from tests import inspector_records as records

    def sha(text: str) -> str:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    report = InspectorReport.model_validate(records.report(
        modules=[records.module("L.U.Basic", imports=["Init", "L.D.Basic"],
                                extensions=[{"name": "Lean.declRangeExt", "entries": 2}],
                                declarations=[records.declaration("L.U.t", module="L.U.Basic", type_repr="Expr A",
                                                                  axioms=["propext"]),
                                              records.declaration("L.U.d", kind="def", module="L.U.Basic",
                                                                  type_repr="Expr A", value_repr="Body",
                                                                  sorry_direct=True)])],
        lookups=[records.lookup("L.U.t", module="L.U.Basic", type_repr="Expr A", axioms=["propext"],
                                local_constants=[{"name": "L.D.f", "module": "L.D.Basic", "kind": "def",
                                                  "meaning": ["T", "V"]}],
                                constants=[{"name": "L.D.f", "module": "L.D.Basic", "kind": "def",
                                            "projection": False, "conclusion": ["Int"]}],
                                binder_domains=["Lean.Expr.const `Int []"]),
                 {"name": "L.U.missing", "found": False}]))
    t = report.lookup("L.U.t")
    assert t.type_hash == sha("Expr A") == t.statement_hash
    assert t.local_digests == {"L.D.f": sha("T\n:=\nV")} and t.binder_domain_hashes == [sha("Lean.Expr.const `Int []")]
    assert not t.uses_sorry
    d = report.module("L.U.Basic").declarations[1]
    assert d.statement_hash == sha("Expr A\n:=\nBody") != d.type_hash and d.uses_sorry
    assert report.lookup("L.U.missing").found is False and report.records.keys() == {"L.U.t", "L.U.missing"}
    assert report.module("L.U.Basic").lean_version == "4.34.1"


def test_inspector_build_key_follows_the_pin_and_the_source(tmp_path, monkeypatch):
    from fyan.lean import inspector

    a, b = inspector.inspector_key("leanprover/lean4:v4.31.0"), inspector.inspector_key("4.30.0")
    assert a != b and a.startswith("leanprover-lean4-v4.31.0-") and b.startswith("4.30.0-")
    copy = tmp_path / "inspector"
    import shutil

    shutil.copytree(inspector.source_dir(), copy)
    monkeypatch.setattr(inspector, "source_dir", lambda: copy)
    assert inspector.inspector_key("4.30.0") == b
    (copy / "FyanInspector.lean").write_text((copy / "FyanInspector.lean").read_text() + "\n-- changed\n")
    assert inspector.inspector_key("4.30.0") != b  # a changed inspector source is rebuilt


LEAN = """namespace A
/-- doc -/
theorem t (n : Int) (h : 0 < n) :
    0 < n + 1 := by
  omega -- comment
def d (n : Int) : Prop := ∃ k, n = 2 * k
end A
"""


def test_declaration_scanner_and_signatures():
    ds = declarations.scan(LEAN)
    assert [(d.kind, d.full_name, d.line_start, d.line_end) for d in ds] == [
        ("theorem", "A.t", 3, 5), ("def", "A.d", 6, 6)]
    assert ds[0].signature == "theorem t (n : Int) (h : 0 < n) : 0 < n + 1"
    assert ds[0].type_text == "0 < n + 1"
    assert ds[1].frozen_signature == "def d (n : Int) : Prop := ∃ k, n = 2 * k"
    assert declarations.strip_comments("a -- b\n/- c /- d -/ e -/ f").split("\n") == ["a     ", "                  f"]


def test_lints_flag_forbidden_constructs_outside_comments():
    src = "-- #exit\nset_option debug.skipKernelTC true\ntheorem x : 1 = 1 := by native_decide\naxiom bad : False\n#eval IO.println \"hi\"\n"
    rules = {f.rule for f in errors(lint(src))}
    assert rules == {"skip-kernel", "native-decide", "axiom", "eval", "io"}


def test_runner_timeout_and_output(tmp_path):
    result = run_process([sys.executable, "-c", "print('hello'); import sys; sys.stdout.flush()"], cwd=tmp_path,
                         timeout_s=30, sandbox="off", log_path=tmp_path / "log.txt")
    assert result.ok and result.output.strip() == "hello"
    assert "$ " in (tmp_path / "log.txt").read_text()
    slow = run_process([sys.executable, "-c", "import time; time.sleep(30)"], cwd=tmp_path, timeout_s=1, sandbox="off")
    assert slow.timed_out and slow.exit_code is None and "killed at the timeout of 1 s" in slow.note
    missing = run_process(["/nonexistent/lake", "build"], cwd=tmp_path, timeout_s=5, sandbox="off")
    assert missing.exit_code is None and "could not start" in missing.note


# -- every sample format ----------------------------------------------------------------------

def test_both_sorry_wordings_are_recognised():
    diff = sample("repl-sorry-quote-change.txt")
    old = next(line for line in diff.splitlines() if line.startswith("-") and "declaration uses" in line)
    new = next(line for line in diff.splitlines() if line.startswith("+") and "declaration uses" in line)
    for line in (old, new):
        text = json.JSONDecoder().raw_decode(line.split('"data": ')[1])[0]
        assert parse_lean_json(json.dumps({"severity": "warning", "data": text})).diagnostics[0].is_sorry, text


def test_every_lean_json_line_of_the_sample_parses():
    text = sample("lean-json-captured-lines.txt")
    out = parse_lean_json(text)
    json_lines = [line for line in text.splitlines() if line.startswith("{")]
    assert len(out.diagnostics) == len(json_lines) == 15
    assert all(not u.startswith("{") for u in out.unrecognized)
    first = out.diagnostics[0]
    assert (first.file, first.line, first.column, first.end_line, first.end_column, first.severity, first.kind) == (
        "EmpiricistLean/Scratch_x.lean", 3, 8, 3, 21, "warning", "hasSorry")


@pytest.mark.parametrize("name, exit_code, ok, fragment", [
    ("lake-build-success-message-history.txt", 0, True, "Build completed successfully (6 jobs)"),
    ("lake-build-v4.32-failure-ci.txt", 1, False, "first error: IUTThreeClosures/PrimePowerGeneratedThetaHull.lean:339:28: unsolved goals"),
    ("lake-build-v4.32-failure-ci.txt", 0, False, "exited 0 but its output reports failures"),
    ("lake-build-v4.8.0-windows-failure.txt", 1, False, "failed (exit code 1)"),
])
def test_lake_build_verdict_on_recorded_outputs(name, exit_code, ok, fragment):
    from fyan.lean.lake import _verdict
    from fyan.sandbox.runner import ProcessResult

    text = sample(name)
    proc = ProcessResult(argv=["lake", "build", "X"], cwd=".", exit_code=exit_code, duration_s=1.0, output=text)
    verdict, reason = _verdict(["X"], proc, parse_lake_output(text))
    assert verdict is ok and fragment in reason, reason


# -- toolchain discovery ----------------------------------------------------------------------

def _lake(tmp_path, body: str) -> Path:
    lake = tmp_path / "bin" / "lake"  # stands in for a broken or odd `lake` executable
    lake.parent.mkdir(exist_ok=True)
    lake.write_text("#!/bin/sh\n" + body + "\n")
    lake.chmod(0o755)
    return lake


@pytest.mark.parametrize("body, problem", [
    ("echo 'Lake version 5.0.0-abc (Lean version 4.31.0)'", None),
    ("exit 0", "printed nothing: is {lake} a Lake executable?"),
    ("echo 'elan: toolchain not installed' >&2; exit 1", "`{lake} --version` exited with 1: elan: toolchain not installed"),
    ("kill -SEGV $$", "`{lake} --version` was killed by signal 11"),
    ("sleep 10", "`{lake} --version` did not answer within 1 s"),
])
def test_discovery_reports_the_version_or_fails_closed(tmp_path, body, problem):
    from fyan.config import LeanSection
    from fyan.lean.toolchain import discover

    lake = _lake(tmp_path, body)
    found = discover(LeanSection(lake=str(lake)), env={"PATH": "/usr/bin:/bin"}, timeout=1)
    if problem is None:
        assert found.toolchain is not None and found.toolchain.version == "Lake version 5.0.0-abc (Lean version 4.31.0)"
        assert found.toolchain.lean_version == "4.31.0"
    else:
        assert found.toolchain is None and problem.format(lake=lake) in found.problem


def test_discovery_order_and_missing_toolchain(tmp_path):
    from fyan.config import LeanSection
    from fyan.lean.toolchain import TOOLCHAIN_MISSING, discover

    home = tmp_path / "home"
    elan = home / ".elan" / "bin" / "lake"
    elan.parent.mkdir(parents=True)
    elan.write_text("#!/bin/sh\necho 'Lake version 5 (Lean version 4.29.0)'\n")
    elan.chmod(0o755)
    found = discover(LeanSection(), env={"PATH": "/usr/bin:/bin", "HOME": str(home)})
    assert found.toolchain.lake == elan and found.looked_in[-1] == f"elan: {elan}"
    on_path = _lake(tmp_path, "echo 'Lake version 5 (Lean version 4.30.0)'")
    found = discover(LeanSection(), env={"PATH": f"{on_path.parent}:/usr/bin", "HOME": str(home)})
    assert found.toolchain.lake == on_path
    missing = discover(LeanSection(), env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "nobody")})
    assert missing.toolchain is None and missing.problem == TOOLCHAIN_MISSING
    bad = discover(LeanSection(lake=str(tmp_path / "no-such-lake")), env={"PATH": "/usr/bin"})
    assert bad.toolchain is None and "is not an executable file; fix the path in fyan.toml" in bad.problem


def test_toolchain_pin(tmp_path):
    from fyan.lean.toolchain import Toolchain, check_pin, read_pin

    tc = Toolchain(Path("/x/lake"), None, "Lake version 5.0.0-6d38 (Lean version 4.33.0-rc2)")
    assert read_pin(tmp_path) is None and not check_pin(tc, tmp_path).ok
    (tmp_path / "lean-toolchain").write_text("leanprover/lean4:v4.33.0-rc2\n")
    assert check_pin(tc, tmp_path).ok and check_pin(tc, tmp_path).reason == "lean-toolchain leanprover/lean4:v4.33.0-rc2 (Lean 4.33.0-rc2)"
    (tmp_path / "lean-toolchain").write_text("leanprover/lean4:v4.32.0\n")
    assert "toolchain mismatch" in check_pin(tc, tmp_path).reason
    (tmp_path / "lean-toolchain").write_text("leanprover/lean4:nightly-2026-01-01\n")
    assert not check_pin(tc, tmp_path).ok  # another version: refused
    nightly = Toolchain(Path("/x/lake"), None, "Lake version 5.0.0 (Lean version 4.27.0-nightly-2026-01-01)")
    assert check_pin(nightly, tmp_path).ok
    for spelling in ("v4.33.0-rc2", "4.33.0-rc2"):
        (tmp_path / "lean-toolchain").write_text(spelling + "\n")
        assert check_pin(tc, tmp_path).ok
    (tmp_path / "lean-toolchain").write_text("stable\n")
    assert "names no Lean version" in check_pin(tc, tmp_path).reason  # not comparable: refused


def test_new_lint_rules():
    src = "@[init fooInit] def foo : IO Unit := pure ()\nset_option warn.sorry false in\ntheorem t : True := trivial\n"
    found = {(f.rule, f.severity) for f in lint(src)}
    assert ("attribute", "error") in found and ("warn-sorry-off", "error") in found


# -- with a real toolchain --------------------------------------------------------------------

@pytest.mark.lean
@pytest.mark.skipif(__import__("shutil").which("lake") is None, reason="no Lean toolchain (`lake`) on PATH")
def test_inspector_builds_and_reads_a_module_on_real_lean(tmp_path):
    """The inspector compiles for the installed toolchain and reports what it should, from the
    compiled module only."""
    from fyan.config import LeanSection
    from fyan.lean.inspector import ensure_inspector, module_findings, run_inspector
    from fyan.lean.lake import lake_build
    from fyan.lean.toolchain import discover

    tc = discover(LeanSection()).toolchain
    assert tc is not None and tc.lean_version
    pin = f"leanprover/lean4:v{tc.lean_version}"
    (tmp_path / "lakefile.toml").write_text('name = "P"\ndefaultTargets = ["P"]\n\n[[lean_lib]]\nname = "P"\n')
    (tmp_path / "lean-toolchain").write_text(pin + "\n")
    (tmp_path / "P").mkdir()
    (tmp_path / "P" / "A.lean").write_text(
        "namespace P\ndef double (n : Int) : Int := 2 * n\n"
        "theorem t (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩\n"
        "set_option warn.sorry false in\ntheorem s : 1 = 1 := sorry\naxiom ax : False\ntheorem u : True := ax.elim\n"
        "macro \"my_tac\" : tactic => `(tactic| rfl)\nend P\n")
    cfg = LeanSection(sandbox="off", build_timeout=1800, inspector_dir=str(tmp_path / "inspector"), toolchain=pin)
    build = lake_build(tc, tmp_path, ["P.A"], cfg, tmp_path / "logs")
    assert build.ok, build.reason
    inspector, why = ensure_inspector(tc, pin, cfg, tmp_path / "logs")
    assert inspector is not None, why
    result = run_inspector(inspector, tc, tmp_path, config=cfg, out_dir=tmp_path / "logs", modules=["P.A"],
                           names=["P.t", "P.s", "P.u", "P.missing"], local_prefix="P")
    assert result.ok, result.problem
    t, s, u = (result.report.lookup(n) for n in ("P.t", "P.s", "P.u"))
    assert t.found and t.kind == "theorem" and t.module == "P.A" and t.type_hash.startswith("sha256:")
    assert set(t.local_digests) == {"P.double"} and t.axioms == []
    assert s.uses_sorry and "sorryAx" in s.axioms and u.axioms == ["P.ax"] and u.conclusion_true
    assert result.report.lookup("P.missing").found is False
    module = result.report.module("P.A")
    names = {d.name for d in module.declarations}
    assert {"P.double", "P.t", "P.s", "P.ax", "P.u"} <= names
    findings = module_findings(module, expected_imports=[])
    assert any("P.ax: declares an axiom" in f for f in findings)
    assert any("macro" in f.lower() or "parser" in f.lower() for f in findings), findings


def test_an_inspector_changed_after_it_was_checked_is_never_run(tmp_path):
    # the executable is re-hashed right before each run: one swapped between ensure_inspector
    # and run_inspector (or by anything that wrote the cache meanwhile) gives a problem, not evidence
    import hashlib

    from fyan.config import LeanSection
    from fyan.lean.inspector import InspectorBuild, run_inspector
    from fyan.lean.toolchain import Toolchain

    marker = tmp_path / "ran"
    exe = tmp_path / "bin" / "fyan-inspector"
    exe.parent.mkdir()
    honest = b"#!/bin/sh\nexit 0\n"
    exe.write_bytes(f"#!/bin/sh\ntouch {marker}\n".encode())
    exe.chmod(0o755)
    lake = tmp_path / "lake"
    lake.write_text(f"#!/bin/sh\ntouch {marker}\n")
    lake.chmod(0o755)
    build = InspectorBuild(exe, tmp_path, "k", "leanprover/lean4:v4.31.0", "4.31.0",
                           hashlib.sha256(honest).hexdigest(), "reused")
    tc = Toolchain(lake, None, "Lake version 5.0.0 (Lean version 4.31.0)")
    result = run_inspector(build, tc, tmp_path, config=LeanSection(sandbox="off"), out_dir=tmp_path / "logs",
                           modules=["P.A"])
    assert result.report is None and result.process is None and not marker.exists()
    assert "does not match its recorded SHA-256 (changed after it was built): evidence refused" in result.problem
    assert result.executable_sha256 == hashlib.sha256(exe.read_bytes()).hexdigest()
