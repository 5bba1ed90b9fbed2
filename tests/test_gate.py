"""The completion gate on bad input, stale certifications, without a toolchain, and through
``fyan gate``. The toolchain is the test double ``tests/fakes/fake_lake.py`` (standing in for
``lake``: no Lean runs in CI), driven into each failure by a scenario; every failure must be a
failed check with a precise reason, never a pass and never an exception."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests import inspector_records as records

from fyan.cli import main
from fyan.gates.completion import CHECK_ORDER
from fyan.lean.toolchain import TOOLCHAIN_MISSING
from fyan.sandbox.runner import bwrap_status
from tests import gate_harness as h

LEAN_DEPENDENT = ("sorry_free", "build", "axiom_audit", "environment_policy")


@pytest.fixture
def honest(fake_lake, tmp_path) -> h.Setup:
    return h.setup(tmp_path / "p", h.HONEST)


def failed(report, name: str) -> str:
    c = report.check(name)
    assert c.status == "fail", (name, c)
    return c.reason


# -- the toolchain misbehaves -----------------------------------------------------------------

CANDIDATE = ["Cheats.ThmRoot.Basic"]  # the scenario's `build` applies to the candidate's build only


def lean_message(severity: str, data: str, line: int = 12, col: int = 0, kind: str = "[anonymous]") -> str:
    """One line of ``lean --json`` (the fields Lean 4.35.0 prints: tests/test_compile.py)."""
    return json.dumps({"caption": "", "data": data, "endPos": None, "fileName": "@FILE@", "isSilent": False,
                       "keepFullRange": False, "kind": kind, "pos": {"column": col, "line": line},
                       "severity": severity})


def test_build_that_times_out(honest, fake_lake):
    honest.project.config.lean.build_timeout = 1
    report = honest.gate({"build": {"sleep": 10}, "build_only": CANDIDATE}, fake=fake_lake)
    assert not report.passed
    # confined, the note goes on to say how (the sandbox's description)
    assert failed(report, "build").startswith("lean Cheats.ThmRoot.Basic was killed at the timeout of 1 s")
    assert failed(report, "sorry_free").startswith("sorry count unknown: the build failed (lean Cheats.ThmRoot.Basic")
    assert failed(report, "axiom_audit").startswith("axiom audit did not run: the build failed")
    assert report.check("build").evidence["timed_out"] is True
    assert report.environment_problem is None  # a slow proof is the proof's


def test_build_that_crashes_is_the_environments(honest, fake_lake):
    """A crashing ``lean`` (Lean 4.35.0 segfaults on a truncated .olean: tests/test_compile.py) is
    not charged to the proof."""
    report = honest.gate({"build": {"signal": 11}, "build_only": CANDIDATE}, fake=fake_lake)
    # unconfined, Python sees the signal; confined, bubblewrap reports it as exit code 139
    assert failed(report, "build").startswith("lean Cheats.ThmRoot.Basic killed by SIGSEGV (crashed")
    assert "a toolchain crash" in report.environment_problem


def test_build_that_exits_0_without_an_olean(honest, fake_lake):
    report = honest.gate({"build": {"exit": 0, "output": "", "write_olean": False}, "build_only": CANDIDATE},
                         fake=fake_lake)
    assert failed(report, "build").startswith("lean Cheats.ThmRoot.Basic exited 0 but wrote no .olean at ")
    assert not report.passed


def test_build_output_in_a_format_never_seen(honest, fake_lake):
    report = honest.gate({"build": {"exit": 0, "output": "BUILD OK!!\nall good, trust me"}, "build_only": CANDIDATE},
                         fake=fake_lake)
    reason = failed(report, "build")
    assert ("exited 0 but printed 2 line(s) that are not Lean messages (e.g. 'BUILD OK!!'): cannot confirm the compile"
            in reason)


def test_build_that_fails_names_the_first_error(honest, fake_lake):
    out = "\n".join([lean_message("error", "unsolved goals\nn : Int\n⊢ ∃ k, double n = 2 * k", 12, 58),
                     lean_message("error", "another", 13, 0)])
    report = honest.gate({"build": {"exit": 1, "output": out}, "build_only": CANDIDATE}, fake=fake_lake)
    assert failed(report, "build").startswith("lean Cheats.ThmRoot.Basic failed (exit code 1); first error: ")
    assert failed(report, "build").endswith("Cheats/ThmRoot/Basic.lean:12:58: unsolved goals")
    assert report.environment_problem is None  # a failing proof goes back to the Formalizer


def test_an_error_message_fails_the_build_even_when_lean_exits_0(honest, fake_lake):
    """A compile that reports an error but exits 0 is not a build."""
    out = lean_message("error", "unsolved goals", 12, 58)
    report = honest.gate({"build": {"exit": 0, "output": out}, "build_only": CANDIDATE}, fake=fake_lake)
    assert "exited 0 but reported 1 error(s)" in failed(report, "build")


@pytest.mark.parametrize("text", [
    "unknown module prefix 'Mathlib'\n\nNo directory 'Mathlib' or file 'Mathlib.olean' in the search path entries:\n/x",
    "object file '/p/.lake/packages/mathlib/.lake/build/lib/lean/Mathlib/Foo.olean' of module Mathlib.Foo does not exist",
    "failed to read file '/p/lib/Cheats/DefDouble/Basic.olean', incompatible header",
    "invalid -D parameter, unknown configuration option 'maxHeartbeat'",
])
def test_a_broken_environment_is_an_environment_problem_not_the_proofs_fault(honest, fake_lake, text):
    """Messages of real Lean 4.35.0 (tests/test_compile.py) that blame the environment — a dependency
    not built, an .olean of another Lean build, a bad option of the package — block the unit as an
    environment problem instead of sending it back to the Formalizer."""
    report = honest.gate({"build": {"exit": 1, "output": lean_message("error", text, 1, 0)}, "build_only": CANDIDATE},
                         fake=fake_lake)
    reason = failed(report, "build")
    assert report.environment_problem is not None and text.splitlines()[0][:30] in report.environment_problem
    # and a Lean error in the unit's own file is not one
    lean_error = honest.gate({"build": {"exit": 1, "output": lean_message("error", "Unknown identifier `x`", 1, 0)},
                              "build_only": CANDIDATE}, fake=fake_lake)
    assert lean_error.environment_problem is None and reason != failed(lean_error, "build")


def test_a_package_lake_cannot_load_is_an_environment_problem(honest, fake_lake):
    (honest.project.paths.lean / "lakefile.toml").write_text("name = [broken\n")
    report = honest.gate(None, fake=fake_lake)
    assert "the project's Lake package is broken" in failed(report, "build") or "not valid TOML" in failed(report, "build")
    assert report.environment_problem is not None


# -- the inspector misbehaves -------------------------------------------------------------------

@pytest.mark.parametrize("spec, expected", [
    ({"inspector_process": {"signal": 6}}, "the inspector gave no evidence: the inspector failed (killed by SIGABRT (crashed"),
    ({"inspector_output": ""}, "the inspector gave no evidence: the inspector's report is not JSON"),
    ({"inspector_output": "<html>not lean</html>"}, "the inspector gave no evidence: the inspector's report is not JSON"),
    ({"inspector_output": json.dumps(records.report(
        "@NONCE@", error="object file 'x.olean' of module X does not exist"))},
     "the inspector gave no evidence: the inspector could not load the modules: object file 'x.olean'"),
    ({"inspector_output": json.dumps({"format": "someone-else/9", "modules": []})},
     "the inspector gave no evidence: the inspector's report has format 'someone-else/9'"),
    ({"inspector_output": json.dumps(records.report("@NONCE@", lean_version="4.30.0"))},
     "the inspector gave no evidence: the inspector runs Lean 4.30.0 but the toolchain is Lean 4.34.1"),
    ({"inspector_output": json.dumps(records.report("@NONCE@"))},
     "the inspector gave no evidence: module(s) Cheats.ThmRoot.Basic not in the inspected environment"),
])
def test_inspector_that_crashes_prints_nothing_or_garbage(honest, fake_lake, spec, expected):
    report = honest.gate(spec, fake=fake_lake)
    assert not report.passed
    assert failed(report, "axiom_audit").startswith("axiom audit did not run: " + expected)
    assert failed(report, "sorry_free").startswith("sorry count unknown: " + expected)
    assert failed(report, "environment_policy").startswith("the compiled module was not inspected: " + expected)
    assert "not confirmed in the compiled environment" in failed(report, "frozen_statements")


def test_inspector_that_times_out(honest, fake_lake):
    honest.project.config.lean.build_timeout = 2
    report = honest.gate({"inspector_process": {"sleep": 10}}, fake=fake_lake)
    assert failed(report, "axiom_audit").startswith("axiom audit did not run: the inspector gave no evidence: the "
                                                    "inspector did not finish: killed at the timeout of 2 s")


def test_inspector_that_cannot_be_built_blocks_as_an_environment_problem(honest, fake_lake):
    report = honest.gate({"inspector_build": {"exit": 1, "output": "error: FyanInspector.lean:3:0: unknown constant"}},
                         fake=fake_lake)
    reason = failed(report, "build")
    assert reason.startswith("no trusted inspector: the trusted inspector could not be built for leanprover/lean4:v4.34.1")
    assert "unknown constant" in reason and report.environment_problem == reason


def test_inspector_is_built_once_per_pin_kept_read_only_and_hash_checked(honest, fake_lake):
    from fyan.lean.inspector import MANIFEST, cache_root

    report = honest.gate(None, fake=fake_lake)
    assert report.passed, report.summary()
    builds = [c for c in fake_lake.calls() if c["argv"][:2] == ["build", "fyan-inspector"]]
    assert len(builds) == 1 and report.inspector and "built" in report.inspector
    root = cache_root(honest.project.config.lean)
    (folder,) = [p for p in root.iterdir() if p.is_dir()]
    exe = folder / "bin" / "fyan-inspector"
    assert not exe.stat().st_mode & 0o222 and json.loads((folder / MANIFEST).read_text())["pin"] == "leanprover/lean4:v4.34.1"
    # reused as long as it matches its manifest
    assert honest.gate(None, fake=fake_lake).passed
    assert len([c for c in fake_lake.calls() if c["argv"][:2] == ["build", "fyan-inspector"]]) == 1
    # a changed executable (one that would report a clean module whatever it reads) is never run:
    # the gate rebuilds it from Fyan's source and says so
    exe.chmod(0o755)
    exe.write_text("#!/bin/sh\necho forged\n")
    report = honest.gate(None, fake=fake_lake)
    assert report.passed and "did not match its recorded SHA-256" in report.inspector
    assert len([c for c in fake_lake.calls() if c["argv"][:2] == ["build", "fyan-inspector"]]) == 2
    assert "echo forged" not in exe.read_text()


def test_what_the_candidate_printed_while_compiling_is_never_read(honest, fake_lake):
    # forged inspector-like JSON in the build output changes nothing: the report is a file the
    # inspector writes after the build, from the compiled module
    forged = json.dumps({"format": "fyan-inspector/1", "modules": [], "lookups": []})
    out = lean_message("information", forged + "\n", 3, 0)
    report = honest.gate({"build": {"exit": 0, "output": out}, "build_only": CANDIDATE,
                          "inspect": {"Cheats.ThmRoot.double_even": {"axioms": ["sorryAx"]}}}, fake=fake_lake)
    assert "sorryAx (rejected by name" in failed(report, "axiom_audit")


# -- the workspace and the package are broken ------------------------------------------------

def test_project_package_missing_its_lakefile(honest, fake_lake):
    (honest.project.paths.lean / "lakefile.toml").unlink()
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "build") == (
        "the project's Lake package has no lakefile.toml (lean/lakefile.toml); restore it (it is written from "
        "lake-template/ when the project is created)")
    for name in ("sorry_free", "axiom_audit"):
        assert "has no lakefile.toml" in failed(report, name)
    assert report.environment_problem is not None


def test_project_package_missing_its_toolchain_pin(honest, fake_lake):
    (honest.project.paths.lean / "lean-toolchain").unlink()
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "build").startswith("the project's Lake package has no lean-toolchain (lean/lean-toolchain)")


def test_toolchain_that_is_not_the_pinned_one(honest, fake_lake):
    report = honest.gate({"version": {"output": "Lake version 5.0.0-x (Lean version 4.30.0)"}}, fake=fake_lake)
    assert failed(report, "build") == (
        "toolchain mismatch: lean-toolchain pins leanprover/lean4:v4.34.1 but `lake --version` reports Lean 4.30.0; "
        "install the pinned toolchain (elan toolchain install leanprover/lean4:v4.34.1) or change [lean] toolchain")
    assert report.toolchain_pin == "leanprover/lean4:v4.34.1"
    assert report.environment_problem == failed(report, "build")


@pytest.mark.parametrize("pin, reported, ok", [
    ("leanprover/lean4:v4.19.0-rc2", "4.19.0-rc2", True),
    ("v4.19.0-rc2", "4.19.0-rc2", True),
    ("4.19.0-rc2", "4.19.0-rc2", True),
    ("v4.19.0-rc2", "4.19.0", False),
    ("4.19.0-rc2", "4.31.0", False),
    ("leanprover/lean4:nightly-2025-01-01", "4.16.0-nightly-2025-01-01", True),
    ("leanprover/lean4:nightly-2025-01-01", "4.16.0-nightly-2025-01-02", False),
    ("stable", "4.31.0", False),
])
def test_every_spelling_of_a_pin_is_compared(honest, fake_lake, pin, reported, ok):
    """Finding 8 (augustepoiroux/LeanInteract#7 kind): a pin without the origin prefix or the
    `v` is compared, not accepted unseen; a pin naming no version fails closed."""
    (honest.project.paths.lean / "lean-toolchain").write_text(pin + "\n")
    report = honest.gate({"version": {"output": f"Lake version 5.0.0-x (Lean version {reported})"},
                          "inspect": {}}, fake=fake_lake)
    build = report.check("build")
    if ok:
        assert not build.reason.startswith(("toolchain mismatch", "lean-toolchain pins")), build.reason
    else:
        assert build.status == "fail" and (build.reason.startswith("toolchain mismatch")
                                           or "names no Lean version" in build.reason)


def _make_unwritable(path) -> callable:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o500)
    probe = path / ".probe"
    try:
        probe.write_text("x")
    except OSError:
        return lambda: path.chmod(0o755)
    probe.unlink()
    path.chmod(0o755)
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0:  # root ignores modes
        return lambda: subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    pytest.skip("cannot make a folder unwritable here (root without chattr)")


def test_unwritable_gate_workspace(honest, fake_lake):
    gate_dir = honest.project.paths.state / "gate" / "thm-root"
    restore = _make_unwritable(gate_dir)
    try:
        report = honest.gate(None, fake=fake_lake)
    finally:
        restore()
    reason = failed(report, "build")
    assert reason.startswith("cannot prepare the gate workspace .fyan/gate/thm-root/gate: ")
    assert reason.endswith("make .fyan/ writable")
    assert not report.passed and report.environment_problem == reason


def test_candidate_edited_after_the_prove_stage(honest, fake_lake):
    honest.basic.write_text(honest.basic.read_text() + "\n-- edited\n")
    report = honest.gate(None, fake=fake_lake)
    expected = "units/thm-root/Basic.lean differs from the recorded artifact (edited after its stage)"
    for name in ("build", "sorry_free", "axiom_audit", "frozen_statements", "source_lints"):
        assert failed(report, name) == expected or expected in failed(report, name)


def test_audit_result_is_read_only_as_recorded(honest, fake_lake):
    """Finding 9: `semantic_certification` checks the recorded hash of audit/result.json."""
    path = honest.project.paths.unit("thm-root") / "audit" / "result.json"
    data = json.loads(path.read_text())
    data["grade"], data["routing"] = 3, "freeze"  # what a forger would write: the best grade
    path.write_text(json.dumps(data))
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "semantic_certification") == (
        "units/thm-root/audit/result.json differs from the recorded artifact (edited after its stage)")
    path.write_text("{not json")
    assert "differs from the recorded artifact" in failed(honest.gate(None, fake=fake_lake), "semantic_certification")


def test_an_upstream_units_file_is_read_only_as_recorded(honest, fake_lake):
    upstream = honest.project.paths.unit("def-double") / "Basic.lean"
    upstream.write_text(upstream.read_text().replace("2 * n", "0"))
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "build") == ("an upstream unit's recorded file cannot be used: units/def-double/Basic.lean "
                                       "differs from the recorded artifact (edited after its stage)")
    # the project package's copy is not what the gate reads: editing it changes nothing
    upstream.write_text(upstream.read_text().replace("Int := 0", "Int := 2 * n"))
    copy = honest.project.paths.lean / "Cheats" / "DefDouble" / "Basic.lean"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text("-- forged\n")
    assert honest.gate(None, fake=fake_lake).passed


# -- stale certifications ---------------------------------------------------------------------

def test_problem_tex_changed_after_the_freeze(honest, fake_lake):
    problem = honest.project.paths.unit("thm-root") / "problem.tex"
    problem.write_text(problem.read_text() + "\n% the statement was changed\n")
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "frozen_statements") == (
        "certification stale: Cheats.ThmRoot.double_even: bound input units/thm-root/problem.tex changed since the freeze")
    assert "certification is stale" in failed(report, "semantic_certification")


def test_local_definition_changed_after_the_freeze(honest, fake_lake):
    # the upstream unit was re-recorded with another definition after this statement's freeze
    from fyan.state.gateway import sha256_file

    upstream = honest.project.paths.unit("def-double") / "Basic.lean"
    upstream.write_text(upstream.read_text().replace("def double (n : Int) : Int := 2 * n",
                                                     "def double (n : Int) : Int := 0"))
    honest.gateway._conn.execute("UPDATE artifacts SET sha256 = ? WHERE unit = 'def-double' AND kind = 'Basic.lean'",
                                 (sha256_file(upstream),))
    reason = failed(honest.gate(None, fake=fake_lake), "frozen_statements")
    assert reason.startswith("certification stale: Cheats.ThmRoot.double_even: bound input units/def-double/Basic.lean "
                             "changed since the freeze")
    assert "Cheats.ThmRoot.double_even: local definition Cheats.DefDouble.double changed since the freeze" in reason


def test_elaborated_statement_changed_with_another_toolchain(honest, fake_lake):
    scenario = {"version": {"output": "Lake version 5.0.1 (Lean version 4.34.1)"},
                "inspect": {"Cheats.ThmRoot.double_even": {"type_repr": "elaborated differently"}}}
    # another toolchain build has not passed the selftest of 5.0.0-fake (fyan.trust.record)
    honest.project.config.lean.trust_without_selftest = True
    report = honest.gate(scenario, fake=fake_lake)
    reason = failed(report, "frozen_statements")
    assert reason.startswith("certification stale: Cheats.ThmRoot.double_even: elaborated statement differs from the freeze (sha256:")
    assert reason.endswith("; the toolchain changed since the freeze (Lake version 5.0.0-fake (Lean version 4.34.1) "
                           "[Fyan test double] → Lake version 5.0.1 (Lean version 4.34.1))")


def test_frozen_without_a_toolchain_compares_with_the_audited_statement(fake_lake, tmp_path):
    s = h.setup(tmp_path / "p", h.HONEST, freeze_without_toolchain=True)
    (freeze,) = s.store.freezes("thm-root")
    assert freeze.type_hash is None and not any(k.startswith("lean:") for k in freeze.bound_inputs)
    report = s.gate(None, fake=fake_lake)
    assert report.passed, report.summary()
    assert report.check("frozen_statements").evidence["reference"] == "audited Statement.lean elaborated now"
    # only the candidate's record is replaced; the inspection of the audited Statement.lean is honest
    cheat = {"inspect_by_module": {"Cheats.ThmRoot.Basic": {
        "Cheats.ThmRoot.double_even": {"type_repr": "∃ k, (fun _ => 0) n = 2 * k"}}}}
    report = s.gate(cheat, fake=fake_lake)
    assert "elaborated statement differs from the audited Statement.lean" in failed(report, "frozen_statements")


# -- no toolchain -----------------------------------------------------------------------------

def test_without_a_toolchain_the_report_says_what_could_not_run(fake_lake, tmp_path, monkeypatch):
    s = h.setup(tmp_path / "p", h.HONEST)
    monkeypatch.setenv("FYAN_LEAN__LAKE", "")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    from fyan.project import Project

    s.project = Project.open(s.project.paths.root)
    report = s.gate(None)
    assert not report.passed and report.toolchain is None
    for name in LEAN_DEPENDENT:
        assert failed(report, name) == TOOLCHAIN_MISSING
    assert failed(report, "frozen_statements").endswith(f"not confirmed in the compiled environment ({TOOLCHAIN_MISSING})")
    for name in ("kernel_replay", "comparator"):
        assert report.check(name).status == "unavailable" and not report.check(name).required
    assert report.check("source_lints").passed and report.check("semantic_certification").passed


# -- fyan gate ----------------------------------------------------------------------------------

def test_fyan_gate_prints_the_full_report_and_keeps_its_logs(honest, fake_lake, capsys):
    root = str(honest.project.paths.root)
    honest.gateway.close()
    os.environ.pop("FYAN_FAKE_SCENARIO", None)
    assert main(["gate", root, "thm-root"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Completion gate for thm-root: PASSED\n  roots: Cheats.ThmRoot.double_even\n")
    assert "  toolchain: Lake version 5.0.0-fake (Lean version 4.34.1) [Fyan test double]; lean-toolchain: leanprover/lean4:v4.34.1" in out
    sandbox_line = next(line for line in out.splitlines() if line.startswith("  sandbox: "))
    # confined where bubblewrap works (the fixture's `auto`), and said so either way
    assert ("UNCONFINED" in sandbox_line) == (bwrap_status()[0] is None), sandbox_line
    for name in CHECK_ORDER:
        assert f"] {name}" in out
    assert "$ " in out and "Cheats.ThmRoot.double_even: []" in out
    log_dir = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("  logs: "))
    folder = honest.project.paths.root / log_dir
    assert {"build.log", "build.log.json", "inspect.log", "inspect.json", "report.json"} <= {p.name for p in folder.iterdir()}
    inspected = json.loads((folder / "inspect.json").read_text())
    assert inspected["format"] == "fyan-inspector/3" and inspected["modules"][0]["name"] == "Cheats.ThmRoot.Basic"
    assert json.loads((folder / "build.log.json").read_text())["exit_code"] == 0
    assert main(["gate", root, "thm-root", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is True and [c["name"] for c in data["checks"]] == list(CHECK_ORDER)
    assert data["checks"][1]["evidence"]["command"].endswith("src/Cheats/ThmRoot/Basic.lean")


def test_sandbox_required_but_unusable_blocks_instead_of_blaming_the_proof(honest, fake_lake, monkeypatch, tmp_path):
    from fyan.state.models import FailureKind, Stage

    monkeypatch.setenv("PATH", str(tmp_path / "no-bwrap-here"))
    monkeypatch.setenv("FYAN_LEAN__SANDBOX", "require")
    from fyan.project import Project

    honest.project = Project.open(honest.project.paths.root)
    calls = len(fake_lake.calls())
    report = honest.gate(None, fake=fake_lake)
    reason = failed(report, "build")
    assert reason.startswith('model-written code is not built: [lean] sandbox = "require" but '
                             "bubblewrap (bwrap) is not installed; install bubblewrap (apt-get install bubblewrap")
    assert 'or set [lean] sandbox = "off"' in reason
    assert report.environment_problem == reason
    assert report.sandbox.startswith("require: model-written code is refused: bubblewrap (bwrap) is not installed")
    compiles = [c for c in fake_lake.calls()[calls:] if c["argv"][:1] == ["build"] or "-R" in c["argv"]]
    assert not compiles  # nothing was built unconfined
    # through the stage flow: an environment failure (the unit waits for the machine), not a
    # failed proof sent back to the Formalizer
    gw = h.Gateway(honest.project, h._checks({"thm-root": ([h.ROOT], [])}, False))
    run = gw.begin("thm-root", Stage.GATE, h.ATTEMPTS)
    done = gw.finish(run)
    assert done.failure_kind is FailureKind.ENVIRONMENT and done.rewind_to is None and done.reason == reason


def test_an_extra_import_outside_the_model_part_is_refused(fake_lake, tmp_path):
    s = h.setup(tmp_path / "p", h.HONEST)
    # what a candidate that bypassed the prove check could record: the same proof, one more import
    from fyan.state.gateway import sha256_file

    text = "import Cheats.Evil\n" + s.basic.read_text()
    s.basic.write_text(text)
    s.gateway._conn.execute("UPDATE artifacts SET sha256 = ? WHERE unit = 'thm-root' AND kind = 'Basic.lean'",
                            (sha256_file(s.basic),))
    report = s.gate(None, fake=fake_lake)
    assert failed(report, "source_lints").startswith("Basic.lean was changed outside the model-written part")


# -- checks that must stay (each fails its test when removed) ------------------------

def test_a_root_declared_outside_the_units_module_is_stale(honest, fake_lake):
    moved = {"Cheats.ThmRoot.double_even": {"module": "Cheats.DefDouble.Basic"}}
    reason = failed(honest.gate({"inspect": moved}, fake=fake_lake), "frozen_statements")
    assert ("Cheats.ThmRoot.double_even: declared in module Cheats.DefDouble.Basic, not in the unit's module "
            "Cheats.ThmRoot.Basic") in reason


def test_a_root_compiled_as_another_kind_is_stale(honest, fake_lake):
    reason = failed(honest.gate({"inspect": {"Cheats.ThmRoot.double_even": {"kind": "def"}}}, fake=fake_lake),
                    "frozen_statements")
    assert "Cheats.ThmRoot.double_even: frozen as a theorem, compiled as a def" in reason


def test_an_elaborated_true_conclusion_is_never_certified(honest, fake_lake):
    # the source text is not `True` (so a text check alone would not see it); the elaborated
    # type concludes in True after its binders
    report = honest.gate({"inspect": {"Cheats.ThmRoot.double_even": {"conclusion_true": True}}}, fake=fake_lake)
    assert "root Cheats.ThmRoot.double_even states `True`" in failed(report, "semantic_certification")


def test_a_bridge_compiled_as_a_definition_is_not_discharged(fake_lake, tmp_path):
    s = h.setup(tmp_path / "p", h.HONEST_BRIDGE, bridge=True)
    assert s.gate(None, fake=fake_lake).passed
    report = s.gate({"inspect": {"Cheats.ThmRoot.double_even_faithful": {"kind": "def"}}}, fake=fake_lake)
    assert "Cheats.ThmRoot.double_even_faithful: is a def, not a proved theorem" in failed(report, "bridge_obligations")
    report = s.gate({"inspect": {"Cheats.ThmRoot.double_even_faithful": {"module": "Cheats.Other"}}}, fake=fake_lake)
    assert "declared in module Cheats.Other" in failed(report, "bridge_obligations")


def test_a_statement_depending_on_an_unaudited_upstream_declaration_is_stale(honest, fake_lake):
    """Attack review: an instance added to an upstream unit's proof file (`instance : LE Int`)
    changes what a downstream statement means while its text reads the same. The statement may
    use, from upstream units, only their frozen declarations — or constants whose type
    concludes in one (an instance *for* a frozen structure)."""
    orphan = {"name": "Cheats.DefDouble.evilLE", "module": "Cheats.DefDouble.Basic", "kind": "def", "projection": False, "conclusion": ["LE", "Int"]}
    frozen = {"name": "Cheats.DefDouble.double", "module": "Cheats.DefDouble.Basic", "kind": "def", "projection": False, "conclusion": ["Int"]}
    scenario = {"inspect": {"Cheats.ThmRoot.double_even": {"constants": [frozen, orphan]}}}
    reason = failed(honest.gate(scenario, fake=fake_lake), "frozen_statements")
    assert ("Cheats.ThmRoot.double_even: its statement depends on Cheats.DefDouble.evilLE, declared in upstream "
            "module Cheats.DefDouble.Basic but not frozen there") in reason
    # a name under a frozen declaration proves nothing: an instance can be called anything
    disguised = dict(orphan, name="Cheats.DefDouble.double.instLE")
    scenario = {"inspect": {"Cheats.ThmRoot.double_even": {"constants": [frozen, disguised]}}}
    assert "depends on Cheats.DefDouble.double.instLE" in failed(honest.gate(scenario, fake=fake_lake), "frozen_statements")
    # ... nor a frozen declaration among the instance's arguments: only its conclusion counts
    guarded = dict(orphan, conclusion=["LE", "Int"], name="Cheats.DefDouble.guardedLE")
    scenario = {"inspect": {"Cheats.ThmRoot.double_even": {"constants": [frozen, guarded]}}}
    assert "depends on Cheats.DefDouble.guardedLE" in failed(honest.gate(scenario, fake=fake_lake), "frozen_statements")
    # an instance *for* a frozen declaration, or a projection of a frozen structure, is fine
    for_frozen = dict(orphan, name="Cheats.DefDouble.instDouble", conclusion=["Cheats.DefDouble.double"])
    projection = {"name": "Cheats.DefDouble.double.fst", "module": "Cheats.DefDouble.Basic", "projection": True,
                  "kind": "def", "conclusion": ["Int"]}
    scenario = {"inspect": {"Cheats.ThmRoot.double_even": {"constants": [frozen, for_frozen, projection]}}}
    assert honest.gate(scenario, fake=fake_lake).check("frozen_statements").passed


def test_outputs_planted_in_the_agents_workspace_are_never_used(fake_lake, tmp_path):
    """Finding 7: build outputs an agent left in workspaces/<unit>/.lake (which Lake trusts when
    their trace matches) are never what the gate reads: it builds in a fresh workspace of its
    own under .fyan/gate/ from the recorded files."""
    import hashlib
    import sys

    s = h.setup(tmp_path / "p", "theorem double_even (n : Int) : ∃ k, double n = 2 * k := by\n  sorry")
    ws = s.project.paths.workspace("thm-root")
    src = ws / "Cheats" / "ThmRoot" / "Basic.lean"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(s.basic.read_text())
    up = ws / "Cheats" / "DefDouble" / "Basic.lean"  # the upstream unit it imports
    up.parent.mkdir(parents=True, exist_ok=True)
    up.write_bytes((s.project.paths.unit("def-double") / "Basic.lean").read_bytes())
    up_olean = ws / ".lake" / "build" / "lib" / "lean" / "Cheats" / "DefDouble" / "Basic.olean"
    up_olean.parent.mkdir(parents=True, exist_ok=True)
    up_olean.write_text(json.dumps({"fake_olean": 1, "module": "Cheats.DefDouble.Basic", "source": up.read_text()}))
    olean = ws / ".lake" / "build" / "lib" / "lean" / "Cheats" / "ThmRoot" / "Basic.olean"
    olean.parent.mkdir(parents=True, exist_ok=True)
    honest_text = s.basic.read_text().replace("by\n  sorry", "⟨n, rfl⟩")
    olean.write_text(json.dumps({"fake_olean": 1, "module": "Cheats.ThmRoot.Basic", "source": honest_text}))
    olean.with_suffix(".trace").write_text(hashlib.sha256(src.read_text().encode()).hexdigest())
    # control: a build in the agent's workspace trusts the plant (what the old gate did)
    out = subprocess.run([str(fake_lake.path), "build", "Cheats.ThmRoot.Basic"], cwd=ws, capture_output=True, text=True,
                         env={**os.environ, "PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin"})
    assert "Replayed Cheats.ThmRoot.Basic" in out.stdout and "sorry" not in olean.read_text()
    report = s.gate(None, fake=fake_lake)
    assert "sorryAx in the axioms of Cheats.ThmRoot.double_even" in failed(report, "sorry_free")
    builds = [c for c in fake_lake.calls() if c["argv"][:1] == ["build"] and "Cheats.ThmRoot.Basic" in c["argv"]]
    assert builds and all("/.fyan/gate/thm-root/gate" in c["cwd"] for c in builds[1:])
    assert report.workspace == ".fyan/gate/thm-root/gate"
    assert not (s.project.paths.root / report.workspace).exists()  # removed after the run: never reused


def test_the_gate_of_a_unit_waits_for_another_gate_of_the_same_unit(honest, fake_lake):
    """Finding 9: `fyan gate` takes the unit's gate lock, so it never races a daemon's gate."""
    import sys
    import time

    lock = honest.project.paths.state / "locks" / "gate-thm-root.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl, sys, time\nf = open(sys.argv[1], 'a+')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
                               "print('held', flush=True)\ntime.sleep(2.5)\n", str(lock)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    start = time.monotonic()
    report = honest.gate(None, fake=fake_lake)
    waited = time.monotonic() - start
    holder.wait()
    assert report.passed and waited >= 1.5, waited


def test_the_freeze_refuses_a_statement_that_depends_on_an_unaudited_upstream_declaration(honest, fake_lake):
    from fyan.lean import declarations
    from fyan.lakepackage.signatures import freeze_specs

    statement = (honest.project.paths.unit("thm-root") / "Statement.lean").read_text()
    decl = declarations.find(declarations.scan(statement), "Cheats.ThmRoot.double_even")
    unit = honest.store.unit("thm-root")
    log = honest.project.paths.root / "freeze-logs"
    specs, note, problems = freeze_specs(honest.project, honest.store, unit, statement,
                                         {"Cheats.ThmRoot.double_even": decl}, log)
    assert problems == [] and specs[0].type_hash and "recorded with" in note
    orphan = {"name": "Cheats.DefDouble.evilLE", "module": "Cheats.DefDouble.Basic", "kind": "def", "projection": False, "conclusion": ["LE", "Int"]}
    fake_lake.scenario({"inspect": {"Cheats.ThmRoot.double_even": {"constants": [orphan]}}})
    _, _, problems = freeze_specs(honest.project, honest.store, unit, statement, {"Cheats.ThmRoot.double_even": decl}, log)
    assert problems and "depends on Cheats.DefDouble.evilLE" in problems[0]


def test_an_instance_of_the_unit_itself_cannot_change_what_its_statement_means(honest, fake_lake):
    """Attack review: `instance : LE Int` written next to the statement (by the Planner or the
    Formalizer) changes its meaning without appearing in its text. A constant of the unit's own
    module that the statement uses without naming it must be frozen."""
    frozen = {"name": "Cheats.DefDouble.double", "module": "Cheats.DefDouble.Basic", "kind": "def", "projection": False, "conclusion": ["Int"]}
    implicit = {"name": "Cheats.ThmRoot.instLEInt", "module": "Cheats.ThmRoot.Basic", "kind": "def", "projection": False, "conclusion": ["LE", "Int"]}
    scenario = {"inspect": {"Cheats.ThmRoot.double_even": {"constants": [frozen, implicit]}}}
    assert ("Cheats.ThmRoot.double_even: its statement uses Cheats.ThmRoot.instLEInt without naming it"
            in failed(honest.gate(scenario, fake=fake_lake), "frozen_statements"))
    # a definition of the unit that the statement names is visible to the audit
    named = {"name": "Cheats.ThmRoot.double", "module": "Cheats.ThmRoot.Basic", "kind": "def", "projection": False, "conclusion": ["Int"]}
    scenario = {"inspect": {"Cheats.ThmRoot.double_even": {"constants": [frozen, named]}}}
    assert honest.gate(scenario, fake=fake_lake).check("frozen_statements").passed


@pytest.mark.parametrize("plant, fragment", [
    # the hook runs where `lean` runs: the gate workspace's src/ (-R); the candidate's output
    # folder is build/build/, the one folder searched is lib/
    ("mkdir -p ../build/build/Init && echo forged > ../build/build/Init/Prelude.olean",
     "build/build/Init/Prelude.olean was created (not an output of Cheats.ThmRoot.Basic)"),
    ("echo forged > ../lib/Init.olean", "lib/Init.olean was created"),
    ("mkdir -p ../build/build/Cheats/ThmRoot && ln -s /etc ../build/build/Cheats/ThmRoot/evil",
     "build/build/Cheats/ThmRoot/evil was created as a link (/etc)"),
    ("echo x >> Cheats/ThmRoot/Basic.lean", "src/Cheats/ThmRoot/Basic.lean was changed or removed"),
    # the upstream unit is read compiled: its recorded .olean, never rebuilt here
    ("echo x > ../lib/Cheats/DefDouble/Basic.olean", "lib/Cheats/DefDouble/Basic.olean was changed or removed"),
    ("rm ../lib/Cheats/DefDouble/Basic.olean", "lib/Cheats/DefDouble/Basic.olean was changed or removed"),
])
@pytest.mark.parametrize("sandbox", ["off", "require"])
def test_compile_time_code_that_tampers_with_the_gate_workspace_fails_the_build(honest, fake_lake, monkeypatch,
                                                                               plant, fragment, sandbox):
    """Attack review: code that runs while the candidate compiles (a lint evasion) could plant an
    `Init` `.olean` the inspector would load, or change the workspace's configuration. Unconfined
    (``[lean] sandbox = "off"``), the workspace's comparison after the build finds any such change;
    confined, the files already there are read-only (the write fails and the compile is refused)
    and what lands in the writable output folders is found by the same comparison."""
    if sandbox == "require" and bwrap_status()[0] is None:
        pytest.skip("bubblewrap is not usable here")
    from fyan.project import Project

    monkeypatch.setenv("FYAN_LEAN__SANDBOX", sandbox)
    honest.project = Project.open(honest.project.paths.root)
    tamper = fake_lake.dir / "tamper.sh"
    tamper.write_text(f"#!/bin/sh\n{plant}\n")
    tamper.chmod(0o755)
    report = honest.gate({"build_hook": str(tamper), "build_only": CANDIDATE}, fake=fake_lake)
    reason = failed(report, "build")
    found = "changed the gate workspace beyond its own outputs (compile-time code?)" in reason and fragment in reason
    refused = "that are not Lean messages" in reason and "cannot confirm the compile" in reason  # the shell's error
    assert found or (sandbox == "require" and refused), reason
    assert report.environment_problem is None  # the candidate's doing, not the machine's
    assert honest.gate(None, fake=fake_lake).passed  # control: the same unit without the tampering


def test_a_bridge_is_matched_to_its_audited_s0_by_signature_not_only_by_name(fake_lake, tmp_path):
    """A mutation survivor (name equality alone): the audit graded an S0 named `double_even_faithful`; a frozen
    bridge of that name stating something else does not certify the root."""
    weaker = ("theorem double_even_faithful : (∀ n : Int, ∃ k, double n = 2 * k) → True := by\n  sorry")
    s = h.setup(tmp_path / "p", h.HONEST_BRIDGE, bridge=True, audited_bridge=weaker)
    report = s.gate(scenario=None, fake=fake_lake)
    assert "does not match an audited S0 (routing, S0 grade, name or signature)" in failed(report,
                                                                                          "semantic_certification")
    same = h.setup(tmp_path / "q", h.HONEST_BRIDGE, bridge=True)
    assert same.gate(scenario=None, fake=fake_lake).passed


def test_universe_parameters_are_part_of_the_elaborated_statement():
    """`foo.{u, v}` and `foo.{v, u}` print the same type but bind explicit universe
    arguments differently; the statement hash (what a freeze binds) tells them apart."""
    from fyan.lean.inspector import InspectedDeclaration

    rec = records.declaration("L.U.t", type_repr="Lean.Expr.sort (Lean.Level.param `u)", level_params=["u", "v"])
    swapped = {**rec, "level_params": ["v", "u"]}
    none = {**rec, "level_params": []}
    hashes = {InspectedDeclaration.model_validate(r).statement_hash for r in (rec, swapped, none)}
    assert len(hashes) == 3
    plain = InspectedDeclaration.model_validate(none)
    assert plain.statement_hash == plain.type_hash  # no universe: unchanged from earlier freezes


# -- mutation survivors: each test fails when the line it names is changed ------------

def test_the_gate_rechecks_the_threshold_of_a_recorded_freeze(fake_lake, tmp_path):
    """completion.py `check_semantic_certification`: `result.grade >= threshold` (a `freeze` routing with grade 1 is
    not trusted; `>= threshold - 1` would pass it). Grade 2 = the threshold passes."""
    low = h.setup(tmp_path / "a", h.HONEST, audited_grade=1)
    reason = failed(low.gate(scenario=None, fake=fake_lake), "semantic_certification")
    assert "audit grade 1 below threshold 2" in reason
    at = h.setup(tmp_path / "b", h.HONEST, audited_grade=2)
    assert at.gate(scenario=None, fake=fake_lake).passed


def test_outputs_changed_after_the_inspection_fail_the_decision(honest, fake_lake, monkeypatch):
    """evidence.py `Collector.collect` / trusted.py `GateWorkspace.recheck`: the `.olean` files the
    inspector read are hashed again at the end of the collection; one rewritten after the inspection
    (by anything that runs later: a kernel checker, comparator, a racing process) fails the gate."""
    import fyan.gates.evidence as evidence

    original = evidence.Collector._comparator
    touched = []

    def tamper(self, freezes, no_lean):
        run = original(self, freezes, no_lean)
        olean = next(p for p in self.ws.recorded if p.name.endswith(".olean") and "ThmRoot" in p.as_posix())
        olean.chmod(0o644)
        olean.write_bytes(olean.read_bytes() + b"\0")
        touched.append(olean)
        return run

    monkeypatch.setattr(evidence.Collector, "_comparator", tamper)
    report = honest.gate(scenario=None, fake=fake_lake)
    assert touched and not report.passed
    assert "files the decision rests on changed during the gate" in failed(report, "build")
    assert report.module_outputs_b64 is None or report.module_outputs_b64 == {}


def test_a_projection_of_an_unfrozen_upstream_structure_is_unaudited(honest, fake_lake):
    """signatures.py `unaudited_dependencies`: a projection counts as audited only when its
    structure is frozen upstream (`c.name.rpartition('.')[0] in names`), not any projection."""
    frozen = {"name": "Cheats.DefDouble.double", "module": "Cheats.DefDouble.Basic", "kind": "def",
              "projection": False, "conclusion": ["Int"]}
    secret = {"name": "Cheats.DefDouble.Secret.val", "module": "Cheats.DefDouble.Basic", "projection": True,
              "kind": "def", "conclusion": ["Int"]}
    scenario = {"inspect": {"Cheats.ThmRoot.double_even": {"constants": [frozen, secret]}}}
    reason = failed(honest.gate(scenario, fake=fake_lake), "frozen_statements")
    assert "depends on Cheats.DefDouble.Secret.val" in reason


def test_a_newly_used_local_definition_makes_the_freeze_stale():
    """signatures.py `compare_compiled`: a local definition the statement uses now but did not at the
    freeze is named (not only changed or dropped ones)."""
    from fyan.lean.inspector import InspectedLookup
    from fyan.lakepackage.signatures import LEAN_KEY, compare_compiled
    from fyan.state.models import FreezeRecord

    helper = {"name": "L.U.helper", "module": "L.U.Basic", "kind": "def", "meaning": ["def helper"]}
    rec = InspectedLookup.model_validate(records.lookup("L.U.t", local_constants=[helper]))
    freeze = FreezeRecord(id=1, unit="u", run_id=1, decl="L.U.t", role="root", normalized_signature="theorem t : True",
                          signature_hash="x", type_hash=rec.statement_hash, bound_inputs={}, created_at=0.0)
    assert compare_compiled(freeze, rec, None).changes == [
        "L.U.t: the statement now uses local definition L.U.helper, not bound at the freeze"]
    bound = freeze.model_copy(update={"bound_inputs": {LEAN_KEY + "L.U.helper": rec.local_digests["L.U.helper"]}})
    assert compare_compiled(bound, rec, None).changes == []
