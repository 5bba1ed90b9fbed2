"""Adopting a stalled leanblueprint project's Lake package.

The package ``tests/data/adopt/pkg`` (Lake package ``tiny``) has declarations proved, two with
``sorry``, one resting on a user axiom; its blueprint ``tests/data/adopt/blueprint/src`` names
one declaration that does not exist, marks a ``sorry`` proof ``\\leanok`` (a lie) and misses a
``\\leanok`` and a ``\\uses``. No Lean toolchain runs here: the Lake double
(``tests/fakes/fake_lake.py``) "builds" the package into stand-in ``.olean`` files and the
inspector double (``tests/fakes/fake_inspector.py``) stands in for the compiled trusted
inspector, reporting declarations, ``sorryAx`` and axioms from those built stand-ins. The test
marked ``lean`` runs the same adoption with a real toolchain.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from fyan.adopt.decide import Outcome, decide, outcome_from_marks
from fyan.adopt.marks import UnitMarks
from fyan.cli import main
from fyan.lean.inspector import InspectedLookup, MissingDeclaration, digest
from tests import inspector_records as records
from fyan.project import Project
from fyan.state.store import Store

DATA = Path(__file__).parent / "data" / "adopt"
ALLOW = ["propext", "Classical.choice", "Quot.sound"]


def run(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def tree_digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and ".lake" not in p.parts}


@pytest.fixture
def package(tmp_path) -> Path:
    dest = tmp_path / "tiny"
    shutil.copytree(DATA / "pkg", dest)
    return dest


def by_label(payload: dict) -> dict[str, dict]:
    return {u["label"]: u for u in payload["units"]}


def test_init_adopts_three_outcomes_and_status_shows_adopted(fake_lake, tmp_path, package, capsys):
    before = tree_digest(package)
    code, out = run(capsys, "init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                    "--lean-project", str(package))
    assert code == 0, out
    decisions = {d["unit"]: d for d in out["adoption"]["decisions"]}
    assert out["adoption"]["counts"] == {"adopted": 3, "candidate": 3, "pipeline": 2}

    code, status = run(capsys, "status", str(tmp_path / "p"))
    units = by_label(status)
    outcome = {label: decisions[u["id"]]["outcome"] for label, u in units.items()}
    assert outcome == {
        "def:double": "adopted", "lem:double-eq": "adopted", "lem:add-zero": "adopted",  # proved, with or without \leanok
        "lem:double-even": "candidate", "lem:double-self": "candidate",  # sorry; double-self's \leanok lies
        "lem:mul-zero": "candidate",  # proved from a user axiom: not adopted
        "thm:quadruple": "pipeline", "cor:even-plus": "pipeline",  # not declared / no \lean
    }
    for label, u in units.items():
        assert u["adopted"] is (outcome[label] == "adopted")
        assert (u["status"] == "complete") is (outcome[label] == "adopted"), (label, u)
    assert "adopted: Tiny.double_eq" in units["lem:double-eq"]["short_reason"]
    assert "sorry" in units["lem:double-self"]["short_reason"]
    # thm:quadruple waits only on units that are adopted: it is ready now, its module imports theirs
    assert units["thm:quadruple"]["status"] == "ready"
    assert units["cor:even-plus"]["status"] == "waiting"

    # the text status names adoption apart from completion by the gate
    assert main(["status", str(tmp_path / "p")]) in (0, 3)
    text = capsys.readouterr().out
    assert "p: 3/8 complete (3 by adoption)" in text and "adopted" in text

    # the evidence is the inspector's, recorded with the frozen statements
    project = Project.open(tmp_path / "p")
    store = Store(project.paths.db)
    eq = units["lem:double-eq"]["id"]
    freezes = store.freezes(eq)
    assert [(f.decl, f.run_id, f.role) for f in freezes] == [("Tiny.double_eq", 0, "root")]
    assert freezes[0].signature_hash.startswith("sha256:")
    record = store.adoptions()[eq]
    assert record.evidence["inspector_sha256"] and record.evidence["inspector_report"].endswith("inspect.json")
    assert json.loads((project.paths.unit(eq) / "adoption.json").read_text())["outcome"] == "adopted"
    assert store.freezes(units["lem:double-self"]["id"]) == []  # a candidate is not frozen before its audit
    # the project's Lake package requires the adopted one; new modules import the existing ones
    lakefile = (project.paths.lean / "lakefile.toml").read_text()
    assert f'path = "{package.resolve()}"' in lakefile and 'name = "tiny"' in lakefile
    from fyan.lakepackage.package import unit_imports, unit_module

    quad = store.unit(units["thm:quadruple"]["id"])
    assert unit_imports(project, store, quad) == ["Tiny.Basic"]
    cor = store.unit(units["cor:even-plus"]["id"])
    assert unit_imports(project, store, cor) == [unit_module(project, store.unit(units["lem:double-even"]["id"]))]
    store.close()
    # the adopted package's files are neither copied nor changed (only its .lake build outputs)
    assert tree_digest(package) == before
    assert not (project.paths.lean / "Tiny").exists()


def test_drift_report(fake_lake, tmp_path, package, capsys):
    assert main(["init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                 "--lean-project", str(package), "--json"]) == 0
    capsys.readouterr()
    code, out = run(capsys, "drift", str(tmp_path / "p"))
    assert code == 3
    found = {(d["label"], d["kind"]) for d in out["drift"]}
    assert found == {
        ("lem:double-self", "leanok-sorry"),   # \leanok on a proof that is `sorry`
        ("lem:mul-zero", "leanok-sorry"),      # \leanok on a proof resting on a user axiom
        ("thm:quadruple", "unknown-name"),     # \lean name that does not exist
        ("thm:quadruple", "leanok-missing"),   # ... marked \leanok anyway
        ("lem:add-zero", "proved-unmarked"),   # proved, no \leanok
        ("lem:double-even", "uses-missing"),   # its Lean statement uses Tiny.double; no \uses{def:double}
    }
    assert out["counts"]["leanok-sorry"] == 2


def test_drift_follows_the_package_not_the_blueprint(fake_lake, tmp_path, package, capsys):
    """Fixing the Lean (proving double_self) changes the decision and clears its drift, with
    the blueprint unchanged: the compiled environment decides."""
    assert main(["init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                 "--lean-project", str(package), "--json"]) == 0
    capsys.readouterr()
    more = package / "Tiny" / "More.lean"
    more.write_text(more.read_text().replace(
        "theorem Tiny.double_self (n : Nat) : Tiny.double n = n + n := by\n  sorry",
        "theorem Tiny.double_self (n : Nat) : Tiny.double n = n + n := rfl"))
    code, out = run(capsys, "drift", str(tmp_path / "p"))
    assert ("lem:double-self", "leanok-sorry") not in {(d["label"], d["kind"]) for d in out["drift"]}
    code, out = run(capsys, "adopt", str(tmp_path / "p"))
    assert code == 0, out
    assert out["counts"] == {"adopted": 4, "candidate": 2, "pipeline": 2}


def _rec(**kw) -> InspectedLookup:
    return InspectedLookup.model_validate(records.lookup(kw.pop("name", "X.t"), module="X", type_repr="t", **kw))


@pytest.mark.parametrize("rec, outcome", [
    (_rec(axioms=["propext"]), Outcome.ADOPTED),
    (_rec(sorry_direct=True, axioms=["sorryAx"]), Outcome.CANDIDATE),         # sorry in its own proof
    (_rec(axioms=["sorryAx", "propext"]), Outcome.CANDIDATE),                  # sorry in its closure
    (_rec(axioms=["X.t._native.native_decide.ax_1_1"]), Outcome.CANDIDATE),   # native_decide
    (_rec(axioms=["X.magic"]), Outcome.CANDIDATE),                             # a user axiom
    (_rec(axioms=["Lean.ofReduceBool"]), Outcome.CANDIDATE),
    (_rec(safety="unsafe"), Outcome.PIPELINE),                                 # refused by the gate's policy
    (_rec(implemented_by="X.fast"), Outcome.PIPELINE),
    (_rec(sorry_in_type=True, axioms=["sorryAx"]), Outcome.PIPELINE),          # the statement itself is sorry
    (MissingDeclaration(name="X.t", found=False), Outcome.PIPELINE),
    (None, Outcome.PIPELINE),
])
@pytest.mark.parametrize("leanok", [False, True])
def test_decision_reads_the_evidence_never_leanok(rec, outcome, leanok):
    marks = UnitMarks(unit="u", lean_names=["X.t"], leanok_statement=leanok, leanok_proof=leanok, has_proof=True)
    lookups = {"X.t": rec} if rec is not None else {}
    assert decide(marks, lookups, ALLOW).outcome is outcome


def test_a_unit_is_adopted_only_when_all_its_names_are_proved():
    marks = UnitMarks(unit="u", lean_names=["X.a", "X.b"], leanok_proof=True, has_proof=True)
    good = _rec(name="X.a")
    assert decide(marks, {"X.a": good, "X.b": _rec(name="X.b")}, ALLOW).outcome is Outcome.ADOPTED
    assert decide(marks, {"X.a": good, "X.b": _rec(name="X.b", axioms=["sorryAx"])}, ALLOW).outcome is Outcome.CANDIDATE
    assert decide(marks, {"X.a": good}, ALLOW).outcome is Outcome.PIPELINE


def test_estimate_from_marks_alone():
    m = UnitMarks
    assert outcome_from_marks(m(unit="u", lean_names=["a"], leanok_statement=True, leanok_proof=True, has_proof=True)) \
        is Outcome.ADOPTED
    assert outcome_from_marks(m(unit="u", lean_names=["a"], leanok_statement=True, has_proof=False)) is Outcome.ADOPTED
    assert outcome_from_marks(m(unit="u", lean_names=["a"], leanok_statement=True, has_proof=True)) is Outcome.CANDIDATE
    assert outcome_from_marks(m(unit="u", lean_names=["a"], has_proof=True)) is Outcome.PIPELINE
    assert outcome_from_marks(m(unit="u", leanok_statement=True, leanok_proof=True)) is Outcome.PIPELINE


def test_without_a_toolchain_nothing_is_adopted_and_the_project_is_kept(no_lake, tmp_path, package, capsys):
    code, out = run(capsys, "init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                    "--lean-project", str(package))
    assert code == 0
    assert out["adoption"]["adopted"] is False and "toolchain" in out["adoption"]["problem"].lower()
    code, status = run(capsys, "status", str(tmp_path / "p"))
    assert not any(u["adopted"] or u["status"] == "complete" for u in status["units"])  # \leanok alone adopts nothing
    code, out = run(capsys, "adopt", str(tmp_path / "p"))
    assert code == 3 and "fyan adopt" in (out.get("hint") or "")


def test_a_toolchain_without_a_passing_selftest_adopts_nothing(fake_lake, tmp_path, package, capsys, monkeypatch):
    """Adoption marks units complete, so it trusts the toolchain only as the gate does:
    here the Lake double has no selftest record in this (empty) data folder."""
    monkeypatch.setenv("FYAN_DATA_DIR", str(tmp_path / "no-selftest"))
    code, out = run(capsys, "init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                    "--lean-project", str(package))
    assert code == 0
    assert out["adoption"]["adopted"] is False and "fyan selftest" in out["adoption"]["problem"]
    code, status = run(capsys, "status", str(tmp_path / "p"))
    assert not any(u["adopted"] or u["status"] == "complete" for u in status["units"])


@pytest.mark.parametrize("make, says", [
    (lambda d: None, "no such folder"),
    (lambda d: d.mkdir(), "no lakefile"),
    (lambda d: (d.mkdir(), (d / "lakefile.toml").write_text("name = \"x\"\n")), "no lean_lib"),
    (lambda d: (d.mkdir(), (d / "lakefile.toml").write_text("name = [\n")), "not valid TOML"),
    (lambda d: (d.mkdir(), (d / "lakefile.toml").write_text("name = \"x\"\n[[lean_lib]]\nname = \"X\"\n"),
                (d / "X.lean").write_text("")), "no lean-toolchain"),
])
def test_a_folder_that_is_no_lake_package_creates_nothing(tmp_path, capsys, make, says):
    make(tmp_path / "pkg")
    code, out = run(capsys, "init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                    "--lean-project", str(tmp_path / "pkg"))
    assert code == 4 and says in out["error"] and out.get("hint")
    assert not (tmp_path / "p").exists()


def test_adopt_refuses_another_package(fake_lake, tmp_path, package, capsys):
    assert main(["init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                 "--lean-project", str(package), "--json"]) == 0
    other = tmp_path / "other"
    shutil.copytree(package, other)
    capsys.readouterr()
    code, out = run(capsys, "adopt", str(tmp_path / "p"), "--lean-project", str(other))
    assert code == 4 and "already adopts" in out["error"]


@pytest.mark.lean
def test_real_lean_adoption(tmp_path, package, capsys):
    """With a real toolchain (`lake` on PATH, the package's pin leanprover/lean4:v4.34.1
    installed): the same three outcomes, decided by the compiled trusted inspector."""
    if shutil.which("lake") is None:
        pytest.skip("no Lean toolchain (`lake`) on PATH: the real-Lean adoption test needs one")
    code, out = run(capsys, "init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                    "--lean-project", str(package))
    assert code == 0 and out["adoption"]["counts"] == {"adopted": 3, "candidate": 3, "pipeline": 2}


def _close_by_gate(project: Project, unit_id: str, name: str, statement: str, proof: str) -> None:
    """Run a unit's stages through the gateway: the model stages are stood in for by checks that
    accept the given Lean (``tests/gate_harness.py``; the audit freezes ``name`` with the real
    ``freeze_specs``), the gate stage is the real completion gate (``check_gate``) on the Lake
    and inspector doubles."""
    from fyan.gates.stages import check_gate
    from fyan.state.gateway import Gateway
    from fyan.state.models import Stage
    from tests.gate_harness import _accept, _audit, _drive

    checks = {Stage.REASON: _accept, Stage.PLAN: _accept, Stage.PROVE: _accept, Stage.GATE: check_gate,
              Stage.AUDIT: _audit({unit_id: ([name], [])}, set())}
    gw = Gateway(project, checks)
    try:
        _drive(project, gw, unit_id, statement, proof, list(Stage))
    finally:
        gw.close()


QUAD = "theorem quadruple_eq (n : Nat) : Tiny.double (Tiny.double n) = 4 * n := by\n"


def _adopted_project_and_quadruple(tmp_path, package, capsys):
    """``fyan init`` adopting the fixture package; the project and its unit thm:quadruple (not in
    the package: it goes through the pipeline)."""
    assert main(["init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                 "--lean-project", str(package), "--json"]) == 0
    capsys.readouterr()
    project = Project.open(tmp_path / "p")
    store = Store(project.paths.db)
    quad = next(u for u in store.units() if u.label == "thm:quadruple")
    store.close()
    return project, quad


def test_a_new_unit_imports_the_adopted_modules_and_passes_the_gate(fake_lake, tmp_path, package, capsys):
    """thm:quadruple is not in the package: its new module imports the adopted Tiny.Basic (the
    project's Lake package requires the adopted one) and the real completion gate passes on it."""
    project, quad = _adopted_project_and_quadruple(tmp_path, package, capsys)
    _close_by_gate(project, quad.id, "quadruple_eq", QUAD + "  sorry", QUAD + "  simp [Tiny.double]\n  omega")
    code, status = run(capsys, "status", str(tmp_path / "p"))
    row = by_label(status)["thm:quadruple"]
    assert row["status"] == "complete" and row["adopted"] is False
    basic = (project.paths.unit(quad.id) / "Basic.lean").read_text()
    assert basic.startswith("import Tiny.Basic\n")
    builds = [c for c in fake_lake.calls() if c["argv"][:1] == ["lean"] and "-R" in c["argv"] and ".fyan/gate" in c["cwd"]]
    assert builds, "the gate built the unit"


def test_the_gate_still_refuses_sorry_in_a_unit_importing_adopted_modules(fake_lake, tmp_path, package, capsys):
    project, quad = _adopted_project_and_quadruple(tmp_path, package, capsys)
    with pytest.raises(AssertionError, match="gate"):
        _close_by_gate(project, quad.id, "quadruple_eq", QUAD + "  sorry", QUAD + "  sorry")
    code, status = run(capsys, "status", str(tmp_path / "p"))
    assert by_label(status)["thm:quadruple"]["status"] != "complete"


def test_export_patch_writes_back_proofs_and_blueprint_marks(fake_lake, tmp_path, package, capsys):
    if shutil.which("git") is None:
        pytest.skip("git is needed to apply the patch")
    import subprocess

    shutil.copytree(DATA / "blueprint", package / "blueprint")  # the usual layout: blueprint/src in the package
    subprocess.run(["git", "init", "-q"], cwd=package, check=True)
    assert main(["init", str(tmp_path / "p"), "--source", str(package / "blueprint/src/content.tex"),
                 "--lean-project", str(package), "--json"]) == 0
    capsys.readouterr()
    project = Project.open(tmp_path / "p")
    store = Store(project.paths.db)
    quad = next(u for u in store.units() if u.label == "thm:quadruple")
    from fyan.lakepackage.package import unit_namespace

    store.close()
    _close_by_gate(project, quad.id, "quadruple_eq", QUAD + "  sorry", QUAD + "  simp [Tiny.double]\n  omega")
    # a candidate (its declaration existed with `sorry`) closed by the gate is proved in place
    store = Store(project.paths.db)
    selfu = next(u for u in store.units() if u.label == "lem:double-self")
    store.close()
    same = "theorem double_self (n : Nat) : Tiny.double n = n + n := "
    _close_by_gate(project, selfu.id, "double_self", same + "by\n  sorry", same + "rfl")
    before = tree_digest(package)

    code, out = run(capsys, "export", "patch", str(tmp_path / "p"))
    assert code == 0, out
    assert out["new_modules"] == [f"Tiny.Fyan.{selfu.module}", f"Tiny.Fyan.{quad.module}"]
    assert out["proved_in_place"] == ["Tiny.double_self"] and out["not_proved_in_place"] == []
    assert out["blueprint_files"] == ["blueprint/src/content.tex"]
    assert tree_digest(package) == before  # exporting changes nothing in the package
    applied = subprocess.run(["git", "apply", out["out"]], cwd=package, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert (package / "Tiny" / "Fyan" / f"{quad.module}.lean").read_text().startswith("import Tiny.Basic")
    assert f"import Tiny.Fyan.{quad.module}" in (package / "Tiny.lean").read_text()
    more = (package / "Tiny" / "More.lean").read_text()
    assert more.startswith(f"import Tiny.Basic\nimport Tiny.Fyan.{selfu.module}\n")
    assert f"| exact {unit_namespace(project, selfu)}.double_self" in more
    assert "theorem Tiny.double_even (n : Nat) : ∃ k, Tiny.double n = 2 * k := by\n  sorry" in more  # untouched

    # the patched package and blueprint agree: a fresh adoption finds only the \uses drift left
    assert main(["init", str(tmp_path / "q"), "--source", str(package / "blueprint/src/content.tex"),
                 "--lean-project", str(package), "--json"]) == 0
    capsys.readouterr()
    code, drift = run(capsys, "drift", str(tmp_path / "q"))
    assert {(d["label"], d["kind"]) for d in drift["drift"]} == {("lem:double-even", "uses-missing")}
    code, out = run(capsys, "adopt", str(tmp_path / "q"))
    assert out["counts"] == {"adopted": 5, "candidate": 2, "pipeline": 1}


def test_export_patch_needs_an_adopted_package(tmp_path, capsys):
    assert main(["init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"), "--json"]) == 0
    capsys.readouterr()
    code, out = run(capsys, "export", "patch", str(tmp_path / "p"))
    assert code == 4 and "adopts no Lake package" in out["error"] and "fyan adopt" in out["hint"]


def test_agents_see_adopted_upstream_declarations_and_the_candidate_statement(fake_lake, tmp_path, package, capsys):
    """What reaches the model: a dependent's upstream lists the adopted declarations (name, type,
    module) instead of a Fyan namespace; a candidate unit's plan request carries the existing
    statement it must state exactly."""
    from fyan.agents.stages import UnitContext, plan
    from fyan.state.models import RunStatus, Stage, StageRun

    assert main(["init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                 "--lean-project", str(package), "--json"]) == 0
    capsys.readouterr()
    project = Project.open(tmp_path / "p")
    store = Store(project.paths.db)
    units = {u.label: u for u in store.units()}
    run = StageRun(id=1, unit="x", stage=Stage.PLAN, attempt=1, status=RunStatus.RUNNING, started_at=0.0,
                   attempt_dir=".fyan/attempts/x")
    up = UnitContext(project, store, units["thm:quadruple"], run).upstream()
    assert "Tiny.double_eq : " in up and "(module Tiny.Basic)" in up and "proved in the adopted Lake package" in up

    class Capture(Exception):
        pass

    class Session:
        def ask_json(self, name, values, *a, **k):
            self.values = values
            raise Capture

    s = Session()
    with pytest.raises(Capture):
        plan(s, UnitContext(project, store, units["lem:double-self"], run))
    assert "Tiny.double_self : " in s.values["problem"] and "uses sorry" in s.values["problem"]
    with pytest.raises(Capture):
        plan(s, UnitContext(project, store, units["cor:even-plus"], run))
    assert "adopted Lake package" not in s.values["problem"]
    store.close()


def test_pfr_adoption_counts_script():
    """The script's outcomes partition PFR's units, and only units with a \\lean name can be
    adopted or candidates (the figures themselves are printed, not asserted)."""
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, str(root / "scripts/pfr_adoption_counts.py")], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    units = int(re.search(r"theorem units: (\d+)", proc.stdout)[1])
    with_lean = int(re.search(r"units with a \\lean name: (\d+)", proc.stdout)[1])
    got = {o: int(re.search(rf"^\s+{o}\s+(\d+)$", proc.stdout, re.M)[1]) for o in ("adopted", "candidate", "pipeline")}
    assert sum(got.values()) == units > 200
    assert got["adopted"] + got["candidate"] <= with_lean < units


def test_adopt_later_writes_the_package_into_fyan_toml(fake_lake, tmp_path, package, capsys):
    assert main(["init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"), "--json"]) == 0
    capsys.readouterr()
    code, out = run(capsys, "adopt", str(tmp_path / "p"), "--lean-project", str(package))
    assert code == 0, out
    assert out["counts"] == {"adopted": 3, "candidate": 3, "pipeline": 2}
    project = Project.open(tmp_path / "p")
    assert Path(project.config.adopt.package) == package.resolve() and project.config.adopt.package_name == "tiny"
    assert f'path = "{package.resolve()}"' in (project.paths.lean / "lakefile.toml").read_text()
    # confined Lean builds read the adopted package (the sandbox hides the home folder it lives in)
    assert str(package.resolve()) in project.config.lean.sandbox_readable
    from fyan.sandbox.runner import project_confinement
    from fyan.lean.toolchain import discover

    tc = discover(project.config.lean).toolchain
    assert package.resolve() in project_confinement(project.paths.root, [tmp_path / "ws"], toolchain=tc).read_only


@pytest.mark.parametrize("lakefile, name, libs", [
    ('import Lake\nopen Lake DSL\n\npackage «pfr» where\n  leanOptions := #[]\n\n@[default_target]\nlean_lib «PFR» where\n',
     "pfr", ["PFR"]),
    ("import Lake\nopen Lake DSL\npackage tiny\nlean_lib Tiny\nlean_lib Extra -- more\n", "tiny", ["Tiny", "Extra"]),
])
def test_lakefile_lean_is_read_without_running_it(tmp_path, lakefile, name, libs):
    from fyan.adopt.package import read_package

    (tmp_path / "lakefile.lean").write_text(lakefile)
    (tmp_path / "lean-toolchain").write_text("leanprover/lean4:v4.34.1\n")
    for lib in libs:
        (tmp_path / lib).mkdir()
        (tmp_path / lib / "A.lean").write_text("")
    (tmp_path / f"{libs[0]}.lean").write_text("")
    pkg = read_package(tmp_path)
    assert (pkg.name, pkg.libs) == (name, libs)
    # Lake's default glob of a library is its root module alone (and what it imports): the files
    # below it that no target module imports are outside every target
    assert pkg.modules == [libs[0]]
    assert pkg.outside == sorted(f"{lib}/A.lean" for lib in libs)


def test_a_candidate_freezes_only_the_existing_statement(fake_lake, tmp_path, package, capsys):
    """The freeze of a candidate unit must have the existing declaration's elaborated type. The
    inspector double's type covers the declaration's name too (the real one reports the type
    only), so the scenario gives both declarations their types, as the real inspector would for
    the same type (and for another)."""
    from fyan.adopt.candidate import candidate_mismatch
    from fyan.lean import declarations
    from fyan.lakepackage.package import render_unit_file, unit_namespace
    from fyan.lakepackage.signatures import freeze_specs

    fake_lake.scenario({"inspect": {"Tiny.double_self": {"type_repr": "T"}}})
    assert main(["init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                 "--lean-project", str(package), "--json"]) == 0
    capsys.readouterr()
    project = Project.open(tmp_path / "p")
    store = Store(project.paths.db)
    units = {u.label: u for u in store.units()}
    unit = units["lem:double-self"]
    assert store.adoptions()[unit.id].outcome == "candidate"
    ns = unit_namespace(project, unit)
    stmt = render_unit_file(project, store, unit, "theorem double_self (n : Nat) : Tiny.double n = n + n := by\n"
                            "  sorry", "Statement")
    decls = {f"{ns}.double_self": declarations.find(declarations.scan(stmt), f"{ns}.double_self")}
    for mine, verdict in (("T", None), ("U", "elaborated types differ")):
        fake_lake.scenario({"inspect": {"Tiny.double_self": {"type_repr": "T"},
                                        f"{ns}.double_self": {"type_repr": mine}}})
        specs, note, _ = freeze_specs(project, store, unit, stmt, decls, tmp_path / f"log-{mine}")
        assert [s.type_hash for s in specs] == [digest(mine)], note
        problem = candidate_mismatch(store, unit.id, specs)
        assert problem is None if verdict is None else verdict in problem and "Tiny.double_self" in problem
    untyped = [s.model_copy(update={"type_hash": None}) for s in specs]
    assert "install Lean" in candidate_mismatch(store, unit.id, untyped)
    assert candidate_mismatch(store, units["cor:even-plus"].id, untyped) is None  # not a candidate
    assert candidate_mismatch(store, units["thm:quadruple"].id, untyped) is None  # pipeline
    store.close()


def test_verify_reinspects_adopted_units(fake_lake, tmp_path, package, capsys):
    assert main(["init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                 "--lean-project", str(package), "--json"]) == 0
    capsys.readouterr()
    code, out = run(capsys, "verify", str(tmp_path / "p"))
    assert code == 0 and len(out["units"]) == 3 and all(u["reproduced"] for u in out["units"])
    basic = package / "Tiny" / "Basic.lean"
    basic.write_text(basic.read_text()
                     .replace("theorem Tiny.add_zero' (n : Nat) : n + 0 = n := rfl",
                              "theorem Tiny.add_zero' (n : Nat) : n + 0 = n := by\n  sorry")
                     .replace("Tiny.double n = 2 * n := by", "Tiny.double n = n * 2 := by"))
    code, out = run(capsys, "verify", str(tmp_path / "p"))
    assert code == 3
    status = {u["unit"]: u for u in out["units"]}
    labels = {u.id: u.label for u in Store(Project.open(tmp_path / "p").paths.db).units()}
    by = {labels[k]: v for k, v in status.items()}
    assert by["def:double"]["reproduced"] is True
    assert by["lem:add-zero"]["reproduced"] is False and "uses sorry" in by["lem:add-zero"]["reason"]
    assert by["lem:double-eq"]["reproduced"] is False and "statement changed" in by["lem:double-eq"]["reason"]


def test_a_unit_complete_by_adoption_reaches_executor_nodes_as_an_interface(tmp_path):
    """The run loop through the executor's boundary (local backend; model stages and checks are
    the doubles of tests/test_orchestrator.py): def-a is recorded as adopted through the gateway
    (the decision itself is tested above), never runs, and its dependents run on a node whose
    copy of the state knows it is complete."""
    from fyan.executor import Executor
    from fyan.executor.core import LocalBackend
    from fyan.executor.worker import Runtime
    from fyan.orchestrator.engine import Engine
    from fyan.state.gateway import AdoptionSpec, FreezeSpec
    from tests.helpers import ingested
    from tests.test_orchestrator import AGENTS, PASS, no_model

    project, gw = ingested(tmp_path / "p", checks=PASS, extra_toml="[agents]\npost_completion = false\n")
    gw.record_adoptions([AdoptionSpec(
        unit="def-a", outcome="adopted", package=str(tmp_path / "pkg"), reason="test",
        decls=[{"name": "Pkg.nice", "found": True, "module": "Pkg.Basic", "type_pp": "Int → Prop"}],
        freezes=[FreezeSpec(decl="Pkg.nice", normalized_signature="Int → Prop", signature_hash="sha256:n",
                            bound_inputs={})])], evidence={"inspector_sha256": "x"})
    backend = LocalBackend(project, Runtime(agents=AGENTS, providers=no_model))
    summary = Engine(project, gw, agents=AGENTS, providers=no_model, executor=Executor(project, gw, backend)).run()
    assert summary.counts == {"complete": 3}
    assert gw.store.runs("def-a") == [] and gw.store.runs("lem-b")
    views = gw.store.views(3)
    assert views["def-a"].adopted and not views["lem-b"].adopted
    mirror = project.paths.state / "executor" / "projects" / gw.project_id
    assert (mirror / "units" / "def-a" / "adoption.json").is_file()
    replica = Store(mirror / ".fyan" / "state.db")
    assert replica.adopted() == {"def-a"}
    replica.close()
    gw.close()


def test_init_without_ingest_says_when_to_adopt(tmp_path, package, capsys):
    code, out = run(capsys, "init", str(tmp_path / "p"), "--source", str(DATA / "blueprint/src/content.tex"),
                    "--lean-project", str(package), "--no-ingest")
    assert code == 0 and out["adoption"] == {"adopted": False, "problem": "not ingested yet"}
    assert Project.open(tmp_path / "p").config.adopt.package == str(package.resolve())
    code, out = run(capsys, "adopt", str(tmp_path / "p"))
    assert code == 4 and "not been ingested" in out["error"]
