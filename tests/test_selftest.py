"""``fyan selftest``: the gate proves itself on a toolchain before it is trusted.

No Lean toolchain runs here: the toolchain is the Lake double (``tests/fakes/fake_lake.py``) and
the inspector its double, with the corpus's authored replays (``tests/cheat_replay.py``) for what
a real Lean prints beyond what the doubles derive. A "toolchain that lets a cheat through" is the
double told (by its scenario) to report what a broken Lean or a moved API would: a cheat's
evidence gone. What is real: the selftest's runner, the corpus and its judge, the records in the
data folder, the gate's trust decision, the stage flow blocking on it, the CLI and ``doctor``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fyan.cli import main
from fyan.models.gate_report import report_text
from fyan.lean import declarations
from fyan.lean.diagnostics import parse_lean_json
from fyan.lean.inspector import InspectorReport, module_findings
from fyan.lean.policy import classify_axioms
from fyan.trust import corpus, record as trust
from fyan.selftest.run import render, run_selftest
from tests import gate_harness as h
from tests.cheat_replay import replay

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "fixtures" / "lean-recorded"
PIN = "leanprover/lean4:v4.34.1"
MODULE = "Cheats.ThmRoot.Basic"


def with_replays(fake, overrides: dict[str, dict] | None = None):
    """A ``before_case`` giving the double each case's authored replay, with ``overrides`` (case
    id → inspector fields of every declaration of the case) standing in for a toolchain that reports otherwise."""
    def before(case, setup):
        scenario = replay(setup, case.entry)
        if overrides and case.id in overrides:
            every = {f"{setup.ns}.{d.name}" for d in declarations.scan(case.text) if d.name}
            scenario["inspect"] = {**scenario.get("inspect", {}), **{n: overrides[case.id] for n in every}}
            scenario["sorry_warnings"] = False
            scenario.pop("build", None)
        fake.scenario(scenario)
    return before


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    """An empty data folder: no toolchain has passed a selftest yet."""
    d = tmp_path / "data"
    monkeypatch.setenv("FYAN_DATA_DIR", str(d))
    return d


# -- the selftest itself -------------------------------------------------------------------------

def test_selftest_of_the_double_passes_records_and_names_every_case(double_selftest):
    """The conftest's run (``double_selftest``: ``run_selftest`` against the double, once per session)."""
    result = double_selftest
    assert result.passed, render(result)
    ids = [c.id for c in result.cases]
    assert ids == [c.id for c in corpus.cases()] and len(ids) == len(set(ids)) >= 38
    rec = json.loads(Path(result.record_file).read_text())
    assert Path(result.record_file) == Path(os.environ["FYAN_DATA_DIR"]) / "selftest" / "4.34.1.json"
    assert rec["passed"] and rec["toolchain"].startswith("Lake version 5.0.0-fake")
    assert rec["corpus_sha256"] == corpus.corpus_digest() and rec["fyan_version"] and rec["inspector_sha256"]
    assert rec["date"].endswith("Z") and rec["inspector_source_sha256"]
    table = render(result)
    cheats = sum(c.kind == "cheat" for c in corpus.cases())
    controls = sum(c.kind == "control" for c in corpus.cases())
    assert (cheats, controls) >= (39 + 12, 4 + 1)  # the Lean-side cheats (kernel-evaluated code, foreign instances, option spellings) run
    passed = f"SELFTEST PASSED: {cheats} cheats rejected by their intended checks, {controls} honest controls passed"
    assert passed in table
    ran = {c.id for c in result.cases}
    assert {"reduce_bool_abbrev", "reduce_bool_open_in", "reduce_nat_root", "foreign_instance",
            "foreign_alias_instance", "decide_native_paren", "own_instance"} <= ran
    sorry = next(line for line in table.splitlines() if line.strip().startswith("sorry "))
    assert "sorry_free" in sorry and sorry.rstrip().endswith("ok")


@pytest.mark.parametrize("cheat, evidence_gone", [
    ("native_decide", {"axioms": []}),  # a toolchain whose axiom collection misses the native axiom
    ("sorry", {"axioms": [], "sorry_direct": False}),  # ... or sorryAx
    ("user_axiom", {"axioms": ["propext"]}),
])
def test_a_toolchain_that_lets_one_cheat_through_fails_the_selftest_naming_it(fake_lake, data_dir, tmp_path, cheat,
                                                                            evidence_gone):
    result = run_selftest(PIN, work_dir=tmp_path / "w", before_case=with_replays(fake_lake, {cheat: evidence_gone}),
                          only={cheat, "honest", "admit"})
    assert not result.passed
    assert [c.id for c in result.failed] == [cheat]
    wrong = result.failed[0]
    intended = next(c for c in corpus.cases() if c.id == cheat).caught_by
    assert wrong.expected == intended and any(p.startswith(f"{intended}: pass") for p in wrong.problems), wrong.problems
    table = render(result)
    assert f"SELFTEST FAILED: {cheat} not as intended" in table
    assert next(line for line in table.splitlines() if line.strip().startswith(cheat + " ")).rstrip().endswith("WRONG")
    rec = trust.load_record("4.34.1")
    assert rec is not None and rec["passed"] is False
    assert next(c for c in rec["cases"] if c["id"] == cheat)["ok"] is False


def test_a_control_the_toolchain_rejects_fails_the_selftest(fake_lake, data_dir, tmp_path):
    def before(case, setup):
        scenario = replay(setup, case.entry)
        if case.id == "honest":
            scenario["inspect"] = {f"{setup.ns}.{h.ROOT}": {"axioms": ["sorryAx"]}}
        fake_lake.scenario(scenario)

    result = run_selftest(PIN, work_dir=tmp_path / "w", before_case=before, only={"honest", "sorry"})
    assert [c.id for c in result.failed] == ["honest"]
    assert "the honest control did not pass" in result.failed[0].problems[0]


def test_selftest_cli_without_a_toolchain_exits_3_and_records_nothing(no_lake, data_dir, capsys):
    code = main(["selftest", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 3 and payload["passed"] is False
    assert payload["problem"].startswith("Lean toolchain not found")
    assert not (data_dir / "selftest").exists()


def test_selftest_of_a_pin_the_toolchain_is_not_refuses_before_any_case(fake_lake, data_dir, capsys):
    code = main(["selftest", "--toolchain", "leanprover/lean4:v4.28.0", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 3 and payload["cases"] == [] and not (data_dir / "selftest").exists()
    assert payload["problem"].startswith("`lake --version` reports 'Lake version 5.0.0-fake (Lean version 4.34.1)")
    assert "elan toolchain install leanprover/lean4:v4.28.0" in payload["problem"]


def test_selftest_cli_when_the_inspector_cannot_be_built(fake_lake, data_dir, capsys):
    fake_lake.scenario({"inspector_build": {"exit": 1, "output": "error: unknown constant 'Lean.collectAxioms'"}})
    code = main(["selftest"])
    out = capsys.readouterr().out
    assert code == 3 and "the trusted inspector could not be built" in out and "SELFTEST NOT PASSED" in out


def test_selftest_cli_runs_every_case_and_its_exit_code_is_the_verdict(fake_lake, data_dir, tmp_path, capsys):
    """Without the authored replays the double cannot show what only a real Lean prints (a
    silenced warning's absence, ...): whatever it gets wrong, the CLI names and exits 3 for."""
    code = main(["selftest", "--json", "--toolchain", PIN, "--record", str(tmp_path / "rec")])
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["cases"]) == len(corpus.cases())
    assert code == (0 if payload["passed"] else 3)
    assert payload["failed"] == [c["id"] for c in payload["cases"] if not c["ok"]]
    assert (Path(payload["record_dir"]) / "toolchain.json").is_file()


# -- the gate trusts a toolchain only after its selftest passed ------------------------------------

@pytest.fixture
def honest(fake_lake, tmp_path) -> h.Setup:
    return h.setup(tmp_path / "p", h.HONEST)


def _refused(report):
    assert not report.passed
    build = report.check("build")
    assert build.status == "fail" and report.environment_problem == build.reason
    assert f"run `fyan selftest --toolchain {PIN}`" in build.reason
    assert "trust_without_selftest = true" in build.reason
    assert report.toolchain_trust.startswith("refused: ")
    return build.reason


def test_no_selftest_blocks_completion_with_the_remedy(honest, fake_lake, data_dir):
    reason = _refused(honest.gate(None, fake=fake_lake))
    assert "Lean 4.34.1 has never passed `fyan selftest` here" in reason


def test_a_failed_selftest_blocks_completion(honest, fake_lake, data_dir, tmp_path):
    run_selftest(PIN, work_dir=tmp_path / "w", before_case=with_replays(fake_lake, {"native_decide": {"axioms": []}}),
                 only={"native_decide"})
    reason = _refused(honest.gate(None, fake=fake_lake))
    assert "`fyan selftest` failed for Lean 4.34.1" in reason and "native_decide" in reason


@pytest.mark.parametrize("field, what", [("fyan_version", "Fyan version"), ("inspector_source_sha256", "inspector"),
                                         ("corpus_sha256", "cheat corpus")])
def test_a_selftest_of_another_fyan_inspector_or_corpus_blocks_completion(honest, fake_lake, double_selftest, data_dir,
                                                                         field, what):
    trust.save_record({**double_selftest.record(), field: "something else"})
    reason = _refused(honest.gate(None, fake=fake_lake))
    assert f"was for another {what} than this Fyan's" in reason


def test_a_passing_selftest_is_stated_in_the_report(honest, fake_lake, double_selftest, data_dir):
    trust.save_record(double_selftest.record())
    report = honest.gate(None, fake=fake_lake)
    assert report.passed, report.summary()
    assert report.toolchain_trust.startswith("proven: `fyan selftest` passed for Lean 4.34.1 on ")
    assert "  selftest: proven" in report_text(report)


def test_the_opt_out_completes_and_every_report_says_so(fake_lake, data_dir, tmp_path, double_selftest):
    # without a selftest the gate first checks that Fyan's honest controls pass the policy on this
    # toolchain (fyan.trust.learn.learned_now), keeping what they wrote
    allow = {"trust_without_selftest": True}
    s = h.setup(tmp_path / "p", h.HONEST, lean=allow)
    report = s.gate(None, fake=fake_lake)
    assert report.passed, report.summary()
    learned = sorted((data_dir / "learned").glob("*.json"))
    assert len(learned) == 1 and set(json.loads(learned[0].read_text())["extensions"]) == set(
        double_selftest.learned_extensions)
    assert report.toolchain_trust == ("NOT PROVEN: Lean 4.34.1 has never passed `fyan selftest` here; trusted anyway "
                                      "because [lean] trust_without_selftest = true")
    assert "  selftest: NOT PROVEN" in report_text(report)
    cheat = h.setup(tmp_path / "q", "theorem double_even (n : Int) : ∃ k, double n = 2 * k := by\n  sorry",
                    lean=allow)
    rejected = cheat.gate(None, fake=fake_lake)
    assert not rejected.passed and rejected.toolchain_trust.startswith("NOT PROVEN")


def test_a_run_without_a_selftest_blocks_units_as_an_environment_problem(example, fake_lake, data_dir, capsys):
    code = main(["run", str(example), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 3 and summary["counts"].get("complete", 0) == 0, summary
    main(["status", str(example), "--json"])
    units = json.loads(capsys.readouterr().out)["units"]
    blocked = [u for u in units if "fyan selftest --toolchain" in (u.get("reason") or "")]
    assert blocked, units


def test_doctor_shows_the_selftest_state_per_toolchain(fake_lake, data_dir, double_selftest, capsys):
    from tests.conftest import EXAMPLE

    main(["doctor", str(EXAMPLE), "--json"])
    st = json.loads(capsys.readouterr().out)["selftest"]
    assert st["trusted"] is False and st["toolchains"] == [] and "fyan selftest --toolchain" in st["statement"]
    trust.save_record({**double_selftest.record(), "key": "4.28.0", "passed": False,
                       "toolchain": "Lean 4.28 (recorded)"})
    trust.save_record(double_selftest.record())
    main(["doctor", str(EXAMPLE)])
    out = capsys.readouterr().out
    assert "gate selftest of this toolchain: proven: `fyan selftest` passed for Lean 4.34.1" in out
    assert "Lean 4.28.0: selftest FAILED on" in out and "Lean 4.34.1: selftest passed on" in out


# -- real output comes back as fixtures --------------------------------------------------------------

def replay_recorded(folder: Path) -> list[str]:
    """Re-decide every recorded case of one toolchain version from its raw output with Fyan's
    parsers (``lean --json`` output: ``fyan.lean.diagnostics``; the inspector's report: its schema
    and the policy) and compare with the manifest; returns what disagrees."""
    meta = json.loads((folder / "toolchain.json").read_text(encoding="utf-8"))
    assert meta["format"] == trust.FORMAT and meta["toolchain"]
    wrong = []
    by_id = {c.id: c for c in corpus.cases()}
    recorded = {c["id"]: c for c in meta["cases"]}
    for case_id, case in by_id.items():
        if case_id not in recorded:
            continue  # a case added to the corpus after this recording
        build_file = folder / f"{case_id}.lean-build.txt"
        if not build_file.is_file():
            continue  # the build did not run (no output was recorded)
        head, _, output = build_file.read_text(encoding="utf-8").partition("\n")
        assert head.startswith("SOURCE: fyan selftest --record, case " + case_id)
        log = parse_lean_json(output)
        if log.unrecognized:
            wrong.append(f"{case_id}: Lean output in no known format: {log.unrecognized[:2]}")
        sorry_warnings = [d for d in log.diagnostics if d.is_sorry]
        report_file = folder / f"{case_id}.inspector.json"
        if not report_file.is_file():
            continue
        report = InspectorReport.model_validate_json(report_file.read_text(encoding="utf-8"))
        module = report.module(MODULE)
        if module is None:
            wrong.append(f"{case_id}: the inspector report has no module {MODULE}")
            continue
        sorry = [d.name for d in module.declarations if d.uses_sorry]
        axioms = [d.name for d in module.declarations if classify_axioms(d.axioms, ["propext", "Classical.choice",
                                                                                   "Quot.sound"])]
        policy = [f for f in module_findings(module) if "imports" not in f]
        if case.kind == "control":
            failed = [d.text for d in log.diagnostics if d.severity == "error"] or (not head.endswith("exit 0"))
            if sorry or axioms or policy or sorry_warnings or failed:
                wrong.append(f"{case_id}: honest, yet {sorry or axioms or policy or sorry_warnings or failed}")
        elif case.caught_by == "sorry_free" and "sorryAx" in case.reason and not sorry:
            wrong.append(f"{case_id}: no declaration uses sorryAx in the recorded report")
        elif case.caught_by == "axiom_audit" and not axioms and module.declarations:
            wrong.append(f"{case_id}: no rejected axiom in the recorded report")
        elif case.caught_by == "environment_policy" and not policy:
            wrong.append(f"{case_id}: no policy finding in the recorded report")
    return wrong


def test_record_writes_raw_output_that_the_replay_reads(fake_lake, data_dir, tmp_path):
    result = run_selftest(PIN, work_dir=tmp_path / "w", record_dir=tmp_path / "rec",
                          before_case=with_replays(fake_lake))
    assert result.passed, render(result)
    folder = tmp_path / "rec" / "4.34.1"
    assert Path(result.record_dir) == folder
    sorry = (folder / "sorry.lean-build.txt").read_text(encoding="utf-8").splitlines()
    assert sorry[0] == ("SOURCE: fyan selftest --record, case sorry (sorry.lean); toolchain Lake version 5.0.0-fake "
                        "(Lean version 4.34.1) [Fyan test double]; exit 0")
    assert not any(line.startswith(("$ ", "# cwd:")) for line in sorry)  # Lean's output only
    assert any("declaration uses `sorry`" in line for line in sorry)
    assert replay_recorded(folder) == []
    # the replay can fail: a recording where the sorry evidence is gone is caught
    report = json.loads((folder / "sorry.inspector.json").read_text())
    for m in report["modules"]:
        for d in m["declarations"]:
            d["axioms"], d["sorry_direct"] = [], False
    (folder / "sorry.inspector.json").write_text(json.dumps(report))
    assert replay_recorded(folder) == ["sorry: no declaration uses sorryAx in the recorded report"]


def test_a_partial_run_never_passes_and_a_passing_one_is_not_kept(fake_lake, data_dir, tmp_path):
    result = run_selftest(PIN, work_dir=tmp_path / "w", before_case=with_replays(fake_lake), only={"honest", "sorry"})
    assert [c.id for c in result.cases] == ["honest", "sorry"] and not result.failed
    assert not result.passed and result.record_file is None and not (data_dir / "selftest").exists()


RECORDINGS = sorted(p for p in RECORDED.glob("*") if (p / "toolchain.json").is_file()) if RECORDED.is_dir() else []


@pytest.mark.skipif(not RECORDINGS, reason="no real toolchain's output recorded yet in tests/fixtures/lean-recorded/ "
                                           "(`fyan selftest --record DIR` on a machine with Lean makes one)")
@pytest.mark.parametrize("folder", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_every_recorded_toolchain_version_replays(folder):
    assert replay_recorded(folder) == []


def test_selftest_data_folder_is_the_platform_one_unless_overridden(monkeypatch):
    import platformdirs

    monkeypatch.delenv("FYAN_DATA_DIR", raising=False)
    assert trust.data_root() == Path(platformdirs.user_data_dir("fyan", appauthor=False))
    assert trust.data_root({"FYAN_DATA_DIR": "/x/y"}) == Path("/x/y")
    assert os.environ.get("FYAN_DATA_DIR") is None


def test_the_corpus_ships_in_the_wheel_from_the_files_the_tests_read():
    """One source of truth: the wheel's ``fyan/_data/cheats`` is ``tests/cheats`` (pyproject), and in
    a checkout the selftest reads ``tests/cheats`` itself, as tests/test_cheats.py does."""
    import tomllib

    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert build["force-include"]["tests/cheats"] == "fyan/_data/cheats"
    assert corpus.cases_dir() == ROOT / "tests" / "cheats"
    files = {c.file for c in corpus.cases()}
    assert files == {p.name for p in (ROOT / "tests" / "cheats").glob("*.lean")}


def test_selftest_of_a_project_uses_its_lean_settings(fake_lake, data_dir, tmp_path, capsys, monkeypatch):
    """``fyan selftest DIR``: the project's ``[lean] lake`` (here the only way to find the double)
    and pin are used; a pin the toolchain is not is refused before any case."""
    monkeypatch.delenv("FYAN_LEAN__LAKE")
    project = tmp_path / "proj"
    (project / "source").mkdir(parents=True)
    (project / "source" / "doc.tex").write_text(h.TEX)
    (project / "fyan.toml").write_text(f'[project]\nname = "p"\nsource = "source/doc.tex"\n\n[lean]\n'
                                       f'lake = "{fake_lake.path}"\ntoolchain = "v4.29.0"\n')
    code = main(["selftest", str(project), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 3 and payload["pin"] == "v4.29.0" and payload["toolchain"].startswith("Lake version 5.0.0-fake")
    assert "not the pinned v4.29.0" in payload["problem"]
    code = main(["selftest", str(project), "--toolchain", PIN, "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert payload["problem"] is None and len(payload["cases"]) == len(corpus.cases())
    assert all(c["ok"] for c in payload["cases"] if c["kind"] == "control")  # the cases found the double too


def test_the_opt_out_still_refuses_an_extension_no_honest_control_writes(fake_lake, data_dir, tmp_path):
    """The opt-out changes nothing in the policy by effect: a macro's extension stays refused."""
    s = h.setup(tmp_path / "p", h.HONEST, lean={"trust_without_selftest": True})
    scenario = {"inspect_module": {"Cheats.ThmRoot.Basic": {"extensions": [
        {"name": "Lean.Parser.parserExtension", "entries": 1}]}}}
    report = s.gate(scenario, fake=fake_lake)
    assert not report.passed
    assert "Lean.Parser.parserExtension" in report.check("environment_policy").reason


def test_the_unproven_toolchain_check_is_made_again_for_another_fyan(data_dir, monkeypatch, tmp_path):
    """learned_now keeps its check per toolchain *and* Fyan (version, inspector, controls): a check
    made under another policy or other controls proves nothing now."""
    from types import SimpleNamespace

    from fyan.config import LeanSection
    from fyan.trust import learn

    calls = []

    def check(*args, **kwargs):
        calls.append(1)
        return learn.Learned(extensions=["Lean.docStringExt"])

    monkeypatch.setattr(learn, "learn_extensions", check)
    tc = SimpleNamespace(version="Lake version 5.0.0 (Lean version 4.31.0)", lean_version="4.31.0")
    assert learn.learned_now(tc, "v4.31.0", LeanSection(), None, tmp_path) == (frozenset({"Lean.docStringExt"}), "")
    assert learn.learned_now(tc, "v4.31.0", LeanSection(), None, tmp_path)[0] is not None and len(calls) == 1
    cache = next((data_dir / "learned").glob("*.json"))
    data = json.loads(cache.read_text())
    cache.write_text(json.dumps({**data, "identity": {**data["identity"], "corpus_sha256": "other"}}))
    learn.learned_now(tc, "v4.31.0", LeanSection(), None, tmp_path)
    assert len(calls) == 2


# -- the project's dependencies: their extensions and the Mathlib controls ------------------------

def _mathlib_package(fake_lake, folder: Path) -> Path:
    """A project's Lake package requiring Mathlib, fetched by the Lake double (``lake update``,
    ``lake exe cache get``: Mathlib's stand-in ``.olean`` in ``.lake/packages/mathlib``)."""
    import subprocess

    folder.mkdir(parents=True)
    (folder / "lakefile.toml").write_text('name = "proj"\n\n[[require]]\nname = "mathlib"\n'
                                          'scope = "leanprover-community"\nrev = "v4.34.1"\n')
    (folder / "lean-toolchain").write_text(PIN + "\n")
    for argv in (["update"], ["exe", "cache", "get"]):
        subprocess.run([str(fake_lake.path), *argv], cwd=folder, check=True, capture_output=True, timeout=60)
    return folder


def _mathlib_lean():
    from fyan.config import FyanConfig

    return FyanConfig(project={"name": "selftest", "source": "-"}).lean.model_copy(
        update={"extra_imports": ["Mathlib"], "toolchain": PIN})


def test_a_mathlib_projects_selftest_compiles_the_mathlib_controls_and_lists_its_dependencies_extensions(
        fake_lake, data_dir, tmp_path):
    """``fyan selftest <project>`` of a package requiring Mathlib: the Mathlib controls
    (``[[learn_mathlib]]``) are compiled with the package's dependency folders and pass the policy,
    writing the extensions Mathlib's attributes register (the inspector double follows the rows
    of ``_MATHLIB_ROWS``); the registry is listed in the package, so an extension only Mathlib
    registers (the double's ``registry_imported``, following the ``lean --stats`` row) is listed,
    and Lean's own recorded 197 are all classified."""
    package = _mathlib_package(fake_lake, tmp_path / "lean")
    fake_lake.scenario({"registry_imported": {"Mathlib": ["Mathlib.Tactic.GCongr.gcongrExt",
                                                          "Mathlib.Tactic.Unread.someExt"]}})
    result = run_selftest(PIN, work_dir=tmp_path / "w", lean=_mathlib_lean(), package=package, save=False,
                          only={"honest"})
    assert result.problem is None and result.registry_problem is None, (result.problem, result.registry_problem)
    assert result.library_controls == ["FyanControls.Attributes"]
    assert {"Mathlib.Tactic.ToAdditive.translations", "simpsAttr", "Mathlib.Meta.FunProp.functionTheoremsExt",
            "Mathlib.Tactic.GCongr.gcongrExt", "Lean.Meta.Ext.extExtension", "Lean.Meta.simpExtension",
            "Lean.noncomputableExt", "Lean.Meta.instanceExtension"} <= set(result.learned_extensions)
    assert result.unclassified_extensions == ["Mathlib.Tactic.Unread.someExt"]
    text = render(result)
    assert "Mathlib controls compiled in the project's package and admitted by the policy: FyanControls.Attributes" \
        in text and "Mathlib.Tactic.Unread.someExt (registered in the module declaring" in text
    # in a scratch package (no Mathlib) the same probe finds no Mathlib: it fails, naming why
    scratch = run_selftest(PIN, work_dir=tmp_path / "w2", lean=_mathlib_lean().model_copy(update={"extra_imports": []}),
                           save=False, only={"honest"})
    assert "Mathlib.Tactic.Unread.someExt" not in scratch.unclassified_extensions and not scratch.library_controls


def test_a_mathlib_control_the_policy_refuses_fails_the_selftest(fake_lake, data_dir, tmp_path):
    """The Mathlib controls face the policy: were a toolchain to write a refused extension for them
    (a norm_num extension, meta-code), learning fails naming the control and the extension."""
    package = _mathlib_package(fake_lake, tmp_path / "lean")
    fake_lake.scenario({"inspect_module": {"FyanControls.Attributes": {"extensions": [
        {"name": "Mathlib.Meta.NormNum.normNumExt", "entries": 1}]}}})
    result = run_selftest(PIN, work_dir=tmp_path / "w", lean=_mathlib_lean(), package=package, save=False,
                          only={"honest"})
    assert result.problem is not None and not result.passed
    assert "FyanControls.Attributes" in result.problem and "Mathlib.Meta.NormNum.normNumExt" in result.problem
    assert "to do: prove with the existing tactics" in result.problem


def test_a_mathlib_project_without_its_package_says_to_set_it_up(fake_lake, data_dir, tmp_path):
    result = run_selftest(PIN, work_dir=tmp_path / "w", lean=_mathlib_lean(), package=tmp_path / "lean", save=False,
                          only={"honest"})
    assert result.problem is not None and "fyan setup <project>" in result.problem and not result.cases


def test_each_mathlib_control_imports_mathlib_as_lean_reads_a_header():
    """A control Lean would not parse fails every user's selftest: its header (read as Lean reads
    it, ``fyan.lean.header``; a ``/-!`` doc before ``import`` would end the header) imports Mathlib
    and nothing else, and each attribute the manifest promises is written in it."""
    from fyan.lean.header import read_header
    from fyan.trust import learn

    library = learn.controls(section="learn_mathlib")
    assert library
    text = "\n".join(c.text for c in library)
    for c in library:
        header = read_header(c.text)
        assert header.error is None and [i.module for i in header.imports] == ["Mathlib"], c.file
    for attribute in ("@[ext]", "@[simp]", "@[simps]", "@[to_additive]", "@[fun_prop]", "@[gcongr]",
                      "noncomputable def", "Finset.sum", "instance"):
        assert attribute in text, attribute
