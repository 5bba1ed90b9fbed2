"""The completion gate on bad input, stale certifications, without a toolchain, and through
``fyan gate``. The toolchain is the test double ``tests/fakes/fake_lake.py`` (standing in for
``lake``: no Lean runs in CI), driven into each failure by a scenario; every failure must be a
failed check with a precise reason, never a pass and never an exception."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from fyan.cli import main
from fyan.gates.completion import CHECK_ORDER
from fyan.lean.toolchain import TOOLCHAIN_MISSING
from tests import gate_harness as h

LEAN_DEPENDENT = ("sorry_free", "build", "axiom_audit")


@pytest.fixture
def honest(fake_lake, tmp_path) -> h.Setup:
    return h.setup(tmp_path / "p", h.HONEST)


def failed(report, name: str) -> str:
    c = report.check(name)
    assert c.status == "fail", (name, c)
    return c.reason


# -- the toolchain misbehaves -----------------------------------------------------------------

def test_build_that_times_out(honest, fake_lake):
    honest.project.config.lean.build_timeout = 1
    report = honest.gate({"build": {"sleep": 10}}, fake=fake_lake)
    assert not report.passed
    assert failed(report, "build") == "lake build Cheats.ThmRoot.Basic was killed at the timeout of 1 s"
    assert failed(report, "sorry_free").startswith("sorry count unknown: the build failed (lake build")
    assert failed(report, "axiom_audit").startswith("axiom audit did not run: the build failed")
    assert report.check("build").evidence["timed_out"] is True


def test_build_that_crashes(honest, fake_lake):
    report = honest.gate({"build": {"signal": 11}}, fake=fake_lake)
    assert failed(report, "build") == "lake build Cheats.ThmRoot.Basic failed (killed by SIGSEGV (crashed)); it printed nothing"


def test_build_that_prints_nothing(honest, fake_lake):
    report = honest.gate({"build": {"exit": 0, "output": ""}}, fake=fake_lake)
    assert "exited 0 but printed nothing: cannot confirm the build" in failed(report, "build")
    assert not report.passed


def test_build_output_in_a_format_never_seen(honest, fake_lake):
    report = honest.gate({"build": {"exit": 0, "output": "BUILD OK!!\nall good, trust me"}}, fake=fake_lake)
    reason = failed(report, "build")
    assert "printed output in no format Fyan knows (2 unrecognized line(s), e.g. 'BUILD OK!!')" in reason


def test_build_that_fails_names_the_first_error(honest, fake_lake):
    out = ("✖ [2/2] Building Cheats.ThmRoot.Basic (0.5s)\n"
           "error: Cheats/ThmRoot/Basic.lean:12:58: unsolved goals\nn : Int\n⊢ ∃ k, double n = 2 * k\n"
           "error: Lean exited with code 1\nSome required targets logged failures:\n- Cheats.ThmRoot.Basic\n"
           "error: build failed")
    report = honest.gate({"build": {"exit": 1, "output": out}}, fake=fake_lake)
    assert failed(report, "build") == ("lake build Cheats.ThmRoot.Basic failed (exit code 1); first error: "
                                       "Cheats/ThmRoot/Basic.lean:12:58: unsolved goals")


def test_success_tail_with_a_failure_report_is_not_a_build(honest, fake_lake):
    out = "Some required targets logged failures:\n- Cheats.ThmRoot.Basic\nerror: build failed"
    report = honest.gate({"build": {"exit": 0, "output": out}}, fake=fake_lake)
    assert "exited 0 but its output reports failures (Cheats.ThmRoot.Basic)" in failed(report, "build")


@pytest.mark.parametrize("spec, expected", [
    ({"probe_process": {"signal": 6}}, "the probe gave no evidence: probe printed nothing (killed by SIGABRT (crashed))"),
    ({"probe_output": ""}, "the probe gave no evidence: probe printed nothing (exit code 0)"),
    ({"probe_output": "<html>not lean</html>"}, "the probe gave no evidence: probe printed no record for Cheats.ThmRoot.double_even"),
    ({"probe_output": '{"severity": "error", "pos": {"line": 80, "column": 2}, "data": "unknown constant \'Lean.collectAxioms\'", '
                      '"fileName": "<stdin>"}', "probe_process": {"exit": 1}},
     "the probe gave no evidence: probe failed (exit code 1); first error: line 80: unknown constant 'Lean.collectAxioms'"),
])
def test_probe_that_crashes_prints_nothing_or_garbage(honest, fake_lake, spec, expected):
    report = honest.gate(spec, fake=fake_lake)
    assert not report.passed
    assert failed(report, "axiom_audit").startswith("axiom audit did not run: " + expected)
    assert failed(report, "sorry_free").startswith("sorry count unknown: " + expected)
    assert "not confirmed in the compiled environment" in failed(report, "frozen_statements")


def test_probe_that_times_out(honest, fake_lake):
    honest.project.config.lean.build_timeout = 2
    report = honest.gate({"probe_process": {"sleep": 10}}, fake=fake_lake)
    assert failed(report, "axiom_audit") == ("axiom audit did not run: the probe gave no evidence: probe did not "
                                             "finish: killed at the timeout of 2 s")


def test_probe_output_with_a_wrong_nonce_is_ignored(honest, fake_lake):
    forged = {"name": "Cheats.ThmRoot.double_even", "found": True, "kind": "theorem", "axioms": []}
    line = json.dumps({"severity": "information", "pos": {"line": 1, "column": 0}, "fileName": "<stdin>",
                       "data": "FYAN-PROBE-" + "0" * 32 + " " + json.dumps(forged)})
    report = honest.gate({"probe_output": line}, fake=fake_lake)
    assert failed(report, "axiom_audit") == (
        "axiom audit did not run: the probe gave no evidence: probe printed no record for Cheats.ThmRoot.double_even "
        "(1 probe-like line(s) with another nonce or position were ignored)")


def test_this_nonce_outside_leans_messages_rejects_the_evidence(honest, fake_lake):
    plain = '@NONCE@ {"name": "Cheats.ThmRoot.double_even", "found": true, "kind": "theorem", "axioms": []}'
    report = honest.gate({"probe_extra_output": [plain]}, fake=fake_lake)
    assert "probe output carries this run's nonce outside Lean's messages" in failed(report, "axiom_audit")


def test_record_at_another_position_does_not_count(honest, fake_lake):
    # a message with this nonce, but not at the #fyan_probe command's line (e.g. logged by
    # imported code): ignored, so the genuine record decides
    rec = {"name": "Cheats.ThmRoot.double_even", "found": True, "kind": "theorem", "axioms": []}
    extra = json.dumps({"severity": "information", "pos": {"line": 3, "column": 0}, "fileName": "<stdin>",
                        "data": "@NONCE@ " + json.dumps(rec)})
    report = honest.gate({"probe_extra_output": [extra], "probe": {"Cheats.ThmRoot.double_even": {"axioms": ["sorryAx"]}}},
                         fake=fake_lake)
    audit = report.check("axiom_audit")
    assert audit.status == "fail" and "sorryAx (rejected by name" in audit.reason
    assert audit.evidence["ignored_probe_lines"] == 1


# -- the workspace and the package are broken ------------------------------------------------

def test_workspace_missing_its_lakefile(honest, fake_lake):
    (honest.project.paths.lean / "lakefile.toml").unlink()
    (honest.project.paths.workspace("thm-root") / "lakefile.toml").unlink()
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "build") == (
        "workspace workspaces/thm-root has no lakefile.toml: the project's Lake package lean/lakefile.toml is "
        "missing; restore it (it is written from lake-template/ when the project is created)")
    for name in ("sorry_free", "axiom_audit"):
        assert "has no lakefile.toml" in failed(report, name)


def test_workspace_missing_its_toolchain_pin(honest, fake_lake):
    (honest.project.paths.lean / "lean-toolchain").unlink()
    (honest.project.paths.workspace("thm-root") / "lean-toolchain").unlink()
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "build").endswith("lean-toolchain is missing or empty: the Lake package does not pin a "
                                            "toolchain; restore it (fyan writes it from [lean] toolchain when it "
                                            "creates the package)")


def test_toolchain_that_is_not_the_pinned_one(honest, fake_lake):
    report = honest.gate({"version": {"output": "Lake version 5.0.0-x (Lean version 4.30.0)"}}, fake=fake_lake)
    assert failed(report, "build") == (
        "toolchain mismatch: lean-toolchain pins leanprover/lean4:v4.31.0 but `lake --version` reports Lean 4.30.0; "
        "install the pinned toolchain (elan toolchain install leanprover/lean4:v4.31.0) or change [lean] toolchain")
    assert report.toolchain_pin == "leanprover/lean4:v4.31.0"


def _make_unwritable(path) -> callable:
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


def test_unwritable_workspace(honest, fake_lake):
    ws = honest.project.paths.workspace("thm-root")
    restore = _make_unwritable(ws)
    try:
        report = honest.gate(None, fake=fake_lake)
    finally:
        restore()
    reason = failed(report, "build")
    assert reason.startswith("cannot prepare the workspace workspaces/thm-root: ")
    assert reason.endswith("make it writable or delete it (Fyan recreates it)")
    assert not report.passed


def test_candidate_edited_after_the_prove_stage(honest, fake_lake):
    honest.basic.write_text(honest.basic.read_text() + "\n-- edited\n")
    report = honest.gate(None, fake=fake_lake)
    expected = "units/thm-root/Basic.lean differs from the recorded artifact (edited after its stage)"
    for name in ("build", "sorry_free", "axiom_audit", "frozen_statements", "source_lints"):
        assert failed(report, name) == expected or expected in failed(report, name)


def test_unreadable_audit_result(honest, fake_lake):
    (honest.project.paths.unit("thm-root") / "audit" / "result.json").write_text("{not json")
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "semantic_certification").startswith("unreadable audit result:")


# -- stale certifications ---------------------------------------------------------------------

def test_problem_tex_changed_after_the_freeze(honest, fake_lake):
    problem = honest.project.paths.unit("thm-root") / "problem.tex"
    problem.write_text(problem.read_text() + "\n% the statement was changed\n")
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "frozen_statements") == (
        "certification stale: Cheats.ThmRoot.double_even: bound input units/thm-root/problem.tex changed since the freeze")
    assert "certification is stale" in failed(report, "semantic_certification")


def test_local_definition_changed_after_the_freeze(honest, fake_lake):
    # the compiled upstream definition differs from the one the statement was frozen against
    upstream = honest.project.paths.lean / "Cheats" / "DefDouble" / "Basic.lean"
    upstream.write_text(upstream.read_text().replace("def double (n : Int) : Int := 2 * n",
                                                     "def double (n : Int) : Int := 0"))
    report = honest.gate(None, fake=fake_lake)
    assert failed(report, "frozen_statements") == (
        "certification stale: Cheats.ThmRoot.double_even: local definition Cheats.DefDouble.double changed since the freeze")


def test_elaborated_statement_changed_with_another_toolchain(honest, fake_lake):
    scenario = {"version": {"output": "Lake version 5.0.1 (Lean version 4.31.0)"},
                "probe": {"Cheats.ThmRoot.double_even": {"type_repr": "elaborated differently"}}}
    report = honest.gate(scenario, fake=fake_lake)
    reason = failed(report, "frozen_statements")
    assert reason.startswith("certification stale: Cheats.ThmRoot.double_even: elaborated statement differs from the freeze (sha256:")
    assert reason.endswith("; the toolchain changed since the freeze (Lake version 5.0.0-fake (Lean version 4.31.0) "
                           "[Fyan test double] → Lake version 5.0.1 (Lean version 4.31.0))")


def test_frozen_without_a_toolchain_compares_with_the_audited_statement(fake_lake, tmp_path):
    s = h.setup(tmp_path / "p", h.HONEST, freeze_without_toolchain=True)
    (freeze,) = s.store.freezes("thm-root")
    assert freeze.type_hash is None and not any(k.startswith("lean:") for k in freeze.bound_inputs)
    report = s.gate(None, fake=fake_lake)
    assert report.passed, report.summary()
    assert report.check("frozen_statements").evidence["reference"] == "audited Statement.lean elaborated now"
    # only the candidate's record is replaced; the probe of the audited Statement.lean is honest
    cheat = {"probe_by_import": {"Cheats.ThmRoot.Basic": {
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
    assert report.check("kernel_replay").status == "unavailable" and not report.check("kernel_replay").required
    assert report.check("source_lints").passed and report.check("semantic_certification").passed


# -- fyan gate ----------------------------------------------------------------------------------

def test_fyan_gate_prints_the_full_report_and_keeps_its_logs(honest, fake_lake, capsys):
    root = str(honest.project.paths.root)
    honest.gateway.close()
    os.environ.pop("FAKE_LAKE_SCENARIO", None)
    assert main(["gate", root, "thm-root"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Completion gate for thm-root: PASSED\n  roots: Cheats.ThmRoot.double_even\n")
    assert "  toolchain: Lake version 5.0.0-fake (Lean version 4.31.0) [Fyan test double]; lean-toolchain: leanprover/lean4:v4.31.0" in out
    assert '  sandbox: off ([lean] sandbox = "off"): builds run unsandboxed' in out
    for name in CHECK_ORDER:
        assert f"] {name}" in out
    assert "$ " in out and "Cheats.ThmRoot.double_even: []" in out
    log_dir = next(l.split(": ", 1)[1] for l in out.splitlines() if l.startswith("  logs: "))
    folder = honest.project.paths.root / log_dir
    assert {"build.log", "build.log.json", "probe.log", "probe.log.json", "report.json"} <= {p.name for p in folder.iterdir()}
    assert json.loads((folder / "build.log.json").read_text())["exit_code"] == 0
    assert main(["gate", root, "thm-root", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is True and [c["name"] for c in data["checks"]] == list(CHECK_ORDER)
    assert data["checks"][1]["evidence"]["command"].endswith("build Cheats.ThmRoot.Basic")


def test_sandbox_required_but_unusable_blocks_instead_of_blaming_the_proof(honest, fake_lake, monkeypatch, tmp_path):
    from fyan.state.models import FailureKind, Stage

    monkeypatch.setenv("PATH", str(tmp_path / "no-bwrap-here"))
    monkeypatch.setenv("FYAN_LEAN__SANDBOX", "require")
    from fyan.project import Project

    honest.project = Project.open(honest.project.paths.root)
    report = honest.gate(None, fake=fake_lake)
    reason = failed(report, "build")
    assert reason == ('lake build Cheats.ThmRoot.Basic did not run: refused: [lean] sandbox = "require" but '
                      "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)")
    assert report.environment_problem == reason
    assert report.sandbox.startswith("require: builds refused: bubblewrap (bwrap) is not installed")
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
