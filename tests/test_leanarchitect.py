"""LeanArchitect blueprints: the generated files read as LaTeX reads them (docs/lean-contract.md,
"LeanArchitect"). The fixtures (tests/data/leanarchitect/, written for these tests) are Lake
packages whose generated files the Lake double's facets write (tests/fakes/fake_architect.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fyan.cli import main
from fyan.config import IntakeSection
from fyan.errors import InputError
from fyan.intake import read_source
from fyan.intake.leanarchitect import GeneratedFilesMissing
from fyan.state.store import Store
from tests.conftest import FakeLake

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "leanarchitect"


def package(tmp_path: Path, name: str = "arch", facets: tuple[str, ...] = (":blueprint",)) -> Path:
    """A copy of a fixture package with the generated files of ``facets`` written by the double."""
    pkg = tmp_path / name
    shutil.copytree(DATA / name, pkg)
    if facets:
        done = subprocess.run([sys.executable, str(ROOT / "tests/fakes/fake_lake.py"), "build", *facets], cwd=pkg,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout
    return pkg


def shape(catalogue) -> list[tuple]:
    return [(s.kind, s.label, s.lean_names, s.leanok, s.proof.leanok if s.proof else None,
             sorted({(r.label, r.in_proof) for r in s.references if r.macro == "uses"}), s.lean_node)
            for s in catalogue.statements]


EXPECTED_NODES = [
    ("definition", "def:double", ["Arch.double"], True, None, [], "def:double"),
    ("theorem", "lem:double-even", ["Arch.double_even"], True, True, [("def:double", False), ("def:double", True)],
     "lem:double-even"),
    ("lemma", "lem:informal", [], False, False, [("def:double", False)], None),
    ("theorem", "lem:double-pos", ["Arch.double_pos"], True, False, [("def:double", False)], "lem:double-pos"),
    ("theorem", "thm:main", ["Arch.double_inj", "Arch.double_inj'"], True, False,
     [("def:double", False), ("def:double", True), ("lem:double-even", True), ("lem:informal", False)], "thm:main"),
]


@pytest.mark.parametrize("facets", [(":blueprint",), (":blueprint", ":blueprintJson")])
def test_nodes_one_by_one_with_an_informal_node_between(tmp_path, facets):
    pkg = package(tmp_path, facets=facets)
    cat = read_source(pkg / "blueprint/src/content.tex")
    assert shape(cat) == EXPECTED_NODES
    main_node = cat.by_label("thm:main")
    lines = [(p.name, p.line_start, p.line_end) for p in main_node.lean_positions]
    if ":blueprintJson" in facets:  # every name's position, from the JSON
        assert lines == [("Arch.double_inj", 6, 12), ("Arch.double_inj'", 14, 16)]
        assert "../../.lake/build/blueprint/module/Arch/Main.json" in cat.files
    else:  # the artifact's `% at` comment: the position of the declaration it was written from
        assert lines == [("Arch.double_inj", 14, 16), ("Arch.double_inj'", 14, 16)]
        assert not any(f.endswith(".json") for f in cat.files)
    assert main_node.provenance.file == "../../.lake/build/blueprint/module/Arch/Main.artifacts/thm:main.tex"
    assert cat.by_label("lem:informal").provenance.file == "content.tex"
    assert not [w for w in cat.warnings if w.code in ("duplicate-label", "leanarchitect", "leanarchitect-stale")]


def test_whole_modules_expand_in_source_order_and_a_shared_label_is_one_node(tmp_path):
    pkg = package(tmp_path, facets=(":blueprint", ":blueprintJson"))
    cat = read_source(pkg / "blueprint/src/modules.tex")
    got = shape(cat)
    assert [g[1] for g in got] == ["def:double", "lem:double-even", "lem:double-pos", "lem:informal", "thm:main"]
    assert got[-1] == EXPECTED_NODES[-1]
    assert [s.section for s in cat.statements] == [["Basic"]] * 4 + [["Main"]]


def test_one_module_with_title_and_environment(tmp_path):
    pkg = package(tmp_path, "single")
    cat = read_source(pkg / "blueprint/src/content.tex")
    assert [(s.kind, s.label, s.title, s.lean_names) for s in cat.statements] == [
        ("definition", "def:one", "One", ["one"]), ("lemma", "lem:one-pos", None, ["one_pos"])]
    assert [(r.label, r.in_proof) for r in cat.by_label("lem:one-pos").references if r.macro == "uses"] == [
        ("def:one", False)]


def test_the_json_is_the_source_of_truth_and_stale_tex_is_reported(tmp_path):
    pkg = package(tmp_path, facets=(":blueprint", ":blueprintJson"))
    artifact = pkg / ".lake/build/blueprint/module/Arch/Basic.artifacts/lem:double-pos.tex"
    artifact.write_text(artifact.read_text().replace("\\uses{def:double}\n", "").replace("\\leanok\n", ""))
    cat = read_source(pkg / "blueprint/src/content.tex")
    node = cat.by_label("lem:double-pos")
    assert node.leanok is True and [r.label for r in node.references if r.macro == "uses"] == ["def:double"]
    stale = [w for w in cat.warnings if w.code == "leanarchitect-stale"]
    assert len(stale) == 1 and "lem:double-pos" in stale[0].message
    # a control: without the JSON the TeX as written is what is read
    for f in (pkg / ".lake/build/blueprint/module").rglob("*.json"):
        f.unlink()
    node = read_source(pkg / "blueprint/src/content.tex").by_label("lem:double-pos")
    assert node.leanok is False and not [r for r in node.references if r.macro == "uses"]


def test_the_json_schema_is_read_strictly(tmp_path):
    pkg = package(tmp_path, facets=(":blueprint", ":blueprintJson"))
    path = pkg / ".lake/build/blueprint/module/Arch/Basic.json"
    items = json.loads(path.read_text())
    items[0]["data"]["statement"]["leanOK"] = items[0]["data"]["statement"].pop("leanOk")
    path.write_text(json.dumps(items))
    with pytest.raises(InputError, match=r"Basic\.json: item 0: .*leanOk"):
        read_source(pkg / "blueprint/src/content.tex")


def test_an_undefined_node_is_a_warning_and_listed(tmp_path):
    pkg = package(tmp_path)
    content = pkg / "blueprint/src/content.tex"
    content.write_text(content.read_text().replace("\\inputleannode{thm:main}", "\\inputleannode{thm:gone}"))
    cat = read_source(content)
    assert cat.by_label("thm:main") is None
    assert [w.code for w in cat.warnings] == ["leanarchitect"]
    assert any("thm:gone" in u for u in cat.unfollowed_includes)


def test_missing_generated_files_name_the_facets_and_the_package(tmp_path, capsys):
    pkg = package(tmp_path, facets=())
    with pytest.raises(GeneratedFilesMissing) as e:
        read_source(pkg / "blueprint/src/content.tex")
    assert e.value.package == pkg.resolve()
    assert "lake build :blueprint :blueprintJson" in e.value.hint and str(pkg.resolve()) in e.value.hint
    code = main(["init", str(tmp_path / "proj"), "--source", str(pkg / "blueprint/src/content.tex"), "--json"])
    assert code == 4 and not (tmp_path / "proj").exists()
    assert "lake build :blueprint" in json.loads(capsys.readouterr().out)["hint"]


def test_init_runs_the_facets_as_a_trusted_step_and_copies_what_it_read(tmp_path, monkeypatch, capsys):
    (tmp_path / "toolchain").mkdir()
    fake = FakeLake(tmp_path / "toolchain")
    monkeypatch.setenv("FYAN_LEAN__LAKE", str(fake.path))
    monkeypatch.setenv("FYAN_FAKE_LOG", str(fake.log))
    pkg = package(tmp_path, facets=())
    proj = tmp_path / "proj"
    code = main(["init", str(proj), "--source", str(pkg / "blueprint/src/content.tex"), "--no-ingest",
                 "--lean-project", str(pkg), "--core"])
    out = capsys.readouterr()
    assert code == 0, out
    assert [c["argv"] for c in fake.calls() if c["argv"][1:2] == ["build"]] == [
        ["--keep-toolchain", "build", ":blueprint", ":blueprintJson"]]
    assert "LeanArchitect blueprint" in out.err + out.out  # the progress line
    # the files read, copied at their place below the package folder
    assert (proj / "source/blueprint/src/content.tex").is_file()
    assert (proj / "source/.lake/build/blueprint/module/Arch/Main.json").is_file()
    toml = (proj / "fyan.toml").read_text()
    assert 'source = "source/blueprint/src/content.tex"' in toml and str(pkg.resolve()) in toml
    # the first run reads the copy: the generated files' absolute paths lead into source/, not the package
    shutil.rmtree(pkg / ".lake/build/blueprint")
    from fyan.project import Project
    from fyan.specifier.ingest import plan_ingest

    _, _, meta, report = plan_ingest(Project.open(proj))
    assert report.statements == 5 and all(not f.startswith("..") for f in report.files)
    assert "blueprint/src/content.tex" in report.files


def test_init_refuses_a_facet_failure_with_what_lake_said(tmp_path, monkeypatch):
    (tmp_path / "toolchain").mkdir()
    fake = FakeLake(tmp_path / "toolchain")
    monkeypatch.setenv("FYAN_LEAN__LAKE", str(fake.path))
    fake.scenario_file.write_text(json.dumps({"architect": {"exit": 1, "output": "error: unknown package facet 'blueprint'"}}))
    monkeypatch.setenv("FYAN_FAKE_SCENARIO", str(fake.scenario_file))
    pkg = package(tmp_path, facets=())
    code = main(["init", str(tmp_path / "proj"), "--source", str(pkg / "blueprint/src/content.tex"),
                 "--lean-project", str(pkg), "--core", "--no-ingest"])
    assert code == 4 and not (tmp_path / "proj").exists()


def test_an_include_outside_the_package_is_refused(tmp_path):
    pkg = package(tmp_path)
    (tmp_path / "elsewhere.tex").write_text("\\begin{lemma}x\\end{lemma}\n")
    content = pkg / "blueprint/src/content.tex"
    content.write_text(content.read_text().replace("\\end{document}", "\\input{../../../elsewhere}\n\\end{document}"))
    with pytest.raises(InputError, match="outside"):
        read_source(content)


def test_relative_includes_above_the_main_folder_resolve_as_latex_resolves_them(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "blueprint/src").mkdir(parents=True)
    (pkg / "lakefile.toml").write_text('name = "p"\n')
    (pkg / "shared.tex").write_text("\\begin{lemma}\\label{lem:up}Up.\\end{lemma}\n")
    (pkg / "blueprint/src/content.tex").write_text(
        "\\documentclass{article}\\newtheorem{lemma}{Lemma}\\begin{document}\\input{../../shared}\\end{document}\n")
    cat = read_source(pkg / "blueprint/src/content.tex")
    assert cat.files == ["content.tex", "../../shared.tex"] and cat.statements[0].label == "lem:up"


def test_export_leanarchitect_applies_with_git_and_round_trips_through_intake(example, fake_lake, capsys, tmp_path):
    """The completed example exported as a LeanArchitect project: the patch applies to a copy of
    its Lake package with the real ``git apply``, the double's facets generate the nodes from the
    attributes the patch added, and intake reads back the same units and dependency edges."""
    from fyan.intake.tex import read_tex
    from fyan.specifier.dag import extract_edges
    from fyan.specifier.units import build_units
    from fyan.state.store import Store

    assert main(["run", str(example), "--json"]) == 0
    capsys.readouterr()
    assert main(["export", "leanarchitect", str(example), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["nodes"]) == 11 and report["informal"] == [] and report["skipped"] == []
    assert main(["export", "leanarchitect", str(example), "--out", str(tmp_path / "again.patch")]) == 0
    text = capsys.readouterr().out
    assert "11 complete unit(s)" in text and "git apply" in text
    assert (tmp_path / "again.patch").read_text() == Path(report["out"]).read_text()  # the same patch each time
    copy = tmp_path / "arch"
    shutil.copytree(example / "lean", copy, ignore=shutil.ignore_patterns(".lake"))
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    applied = subprocess.run(["git", "apply", report["out"]], cwd=copy, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert 'name = "LeanArchitect"' in (copy / "lakefile.toml").read_text()
    unit_file = next(copy.rglob("Basic.lean")).read_text()
    assert "import Architect" in unit_file and '@[blueprint "' in unit_file
    built = subprocess.run([sys.executable, str(ROOT / "tests/fakes/fake_lake.py"), "build", ":blueprint",
                            ":blueprintJson"], cwd=copy, capture_output=True, text=True)
    assert built.returncode == 0, built.stdout
    cat = read_tex(copy / "blueprint" / "src" / "web.tex")
    assert not [w for w in cat.warnings if w.code.startswith("leanarchitect")]
    store = Store(example / ".fyan" / "state.db")
    try:
        units = build_units(cat, IntakeSection().unit_kinds)
        before = [(u.id, u.kind) for u in store.units()]
        stored = {(d.unit, d.depends_on) for d in store.deps()}
        roots = {u.id: [f.decl for f in store.freezes(u.id) if f.role == "root"] for u in store.units()}
    finally:
        store.close()
    assert [(u.id, u.kind) for u in units] == before
    edges = {(e.unit, e.depends_on) for e in extract_edges(cat, units).edges}
    assert stored <= edges  # every DAG edge comes back: inferred from Lean, or given as uses :=
    for u in units:
        stmt = cat.statements[u.statements[0]]
        assert stmt.lean_node and stmt.lean_names == roots[u.id] and stmt.leanok
        assert stmt.proof.leanok if stmt.proof is not None else stmt.kind == "definition"


def test_init_adopts_a_leanarchitect_package_and_drift_reads_its_nodes(fake_lake, tmp_path, capsys):
    """``fyan init --lean-project`` on a LeanArchitect blueprint whose files were never generated:
    the facets run, the nodes are read, and adoption looks every node's Lean names up with the
    (double of the) trusted inspector, as it does for ``\\lean`` names."""
    pkg = package(tmp_path, facets=())
    code = main(["init", str(tmp_path / "p"), "--source", str(pkg / "blueprint/src/content.tex"),
                 "--lean-project", str(pkg), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    decisions = {d["unit"]: d["outcome"] for d in out["adoption"]["decisions"]}
    labels = {u.id: u.label for u in Store(tmp_path / "p/.fyan/state.db").units()}
    assert {labels[u]: o for u, o in decisions.items()} == {
        "def:double": "adopted", "lem:double-even": "adopted",  # proved
        "lem:double-pos": "candidate", "thm:main": "candidate",  # sorry (in one of thm:main's two declarations)
        "lem:informal": "pipeline",  # an informal node: no Lean
    }
    code = main(["drift", str(tmp_path / "p"), "--json"])
    drift = json.loads(capsys.readouterr().out)
    assert not [d for d in drift["drift"] if d["kind"] == "unknown-name"]  # every node's names are declared
    assert code == (3 if drift["drift"] else 0) and drift["isolated"] == []
    # the compiled @[blueprint] attributes agree with the generated files they were written from
    assert not [d for d in drift["drift"] if d["kind"].startswith("blueprint-")]
    assert set(drift["counts"]) >= {"blueprint-label", "blueprint-uses", "blueprint-unlisted", "blueprint-unread"}


def test_drift_reports_compiled_attributes_that_disagree_with_the_generated_files(fake_lake, tmp_path, capsys):
    """The generated files were written before the Lean changed: the compiled environment (the
    inspector double's ``blueprint_edit``: one attribute's label, another's uses) wins, and drift
    names both sides."""
    pkg = package(tmp_path, facets=())
    assert main(["init", str(tmp_path / "p"), "--source", str(pkg / "blueprint/src/content.tex"),
                 "--lean-project", str(pkg), "--json"]) == 0
    capsys.readouterr()
    fake_lake.scenario({"blueprint_edit": {"Arch.double_pos": {"label": "lem:double-positive"},
                                           "Arch.double_even": {"proof_uses": ["lem:informal"]}}})
    code = main(["drift", str(tmp_path / "p"), "--json"])
    drift = json.loads(capsys.readouterr().out)
    found = {(d["label"], d["kind"]): d["detail"] for d in drift["drift"] if d["kind"].startswith("blueprint-")}
    assert code == 3 and set(found) == {("lem:double-pos", "blueprint-label"), ("lem:double-even", "blueprint-uses")}
    assert "'lem:double-positive'" in found["lem:double-pos", "blueprint-label"]
    assert "compiled environment wins" in found["lem:double-pos", "blueprint-label"]
    uses = found["lem:double-even", "blueprint-uses"]
    assert "use lem:informal but the node has no \\uses" in uses and "the node \\uses def:double" not in uses


def _marks():
    from fyan.adopt.marks import UnitMarks

    return {"u1": UnitMarks(unit="u1", label="def:d", lean_names=["M.d"]),
            "u2": UnitMarks(unit="u2", label="thm:t", lean_names=["M.t", "M.t'"], uses={"u1": False, "u3": True}),
            "u3": UnitMarks(unit="u3", label="lem:i")}  # an informal node


def _entries(**edits):
    """Entries as the inspector reports them (``BlueprintEntry``), agreeing with ``_marks`` unless edited."""
    base = {"M.d": {"label": "def:d", "statement_uses": [], "proof_uses": None},
            "M.t": {"label": "thm:t", "statement_uses": ["def:d"], "proof_uses": ["lem:i"]},
            "M.t'": {"label": "thm:t", "statement_uses": [], "proof_uses": []}}
    return [{"name": n, "module": "M", "not_ready": False, **e, **edits.get(n, {})} for n, e in base.items()]


def _blueprint(entries, problem=None):
    from fyan.lean.inspector import BlueprintPresent

    return BlueprintPresent.model_validate({"present": True, "extension": "Architect.blueprintExt",
                                            "layout_problem": problem, "entries": entries})


def test_blueprint_drift_agreement_and_a_package_without_leanarchitect():
    from fyan.adopt.drift import blueprint_drift
    from fyan.lean.inspector import BlueprintAbsent

    assert blueprint_drift(_marks(), _blueprint(_entries())) == []
    assert blueprint_drift(_marks(), BlueprintAbsent(present=False)) == []
    assert blueprint_drift(_marks(), None) == []


def test_blueprint_drift_label_mismatch():
    from fyan.adopt.drift import blueprint_drift

    got = blueprint_drift(_marks(), _blueprint(_entries(**{"M.t'": {"label": "thm:t2"}})))
    assert [(d.unit, d.kind) for d in got] == [("u2", "blueprint-label")]
    assert "M.t'" in got[0].detail and "'thm:t'" in got[0].detail and "'thm:t2'" in got[0].detail


def test_blueprint_drift_uses_mismatch_both_ways():
    from fyan.adopt.drift import blueprint_drift

    got = blueprint_drift(_marks(), _blueprint(_entries(**{"M.t": {"proof_uses": ["lem:other"]}})))
    assert [(d.unit, d.kind) for d in got] == [("u2", "blueprint-uses")]
    assert "use lem:other but the node has no" in got[0].detail and "the node \\uses lem:i but" in got[0].detail


def test_blueprint_drift_unlisted_unread_and_other_modules():
    from fyan.adopt.drift import blueprint_drift

    extra = {"name": "M.x", "module": "M", "label": "lem:x", "statement_uses": [], "proof_uses": [], "not_ready": True}
    foreign = {**extra, "name": "Dep.y", "module": "Dep", "label": "lem:y"}
    got = blueprint_drift(_marks(), _blueprint([*_entries(), extra, foreign]), modules=["M"])
    assert [(d.label, d.kind) for d in got] == [("lem:x", "blueprint-unlisted")]  # Dep is not the package's
    got = blueprint_drift(_marks(), _blueprint([], problem="Architect.Node.mk has the fields #[...]"))
    assert [d.kind for d in got] == ["blueprint-unread"] and "Architect.Node.mk" in got[0].detail


def test_the_attribute_joins_an_existing_attribute_list_and_escapes_text():
    from fyan.lean import declarations
    from fyan.adopt.leanarchitect_export import attribute, with_attribute

    text = ("namespace N\n\n/-- doc -/\n@[simp]\ntheorem a : True := trivial\n\n@[simp] theorem b : True := trivial\n\n"
            "theorem c : True := trivial\n\nend N\n")
    attr = attribute("lem:a", "A $x$ with -/ and /- inside.", None, 'T "q"', "lemma", ["def:x"], [])
    assert attr == ('blueprint "lem:a"\n  (statement := /-- A $x$ with - / and / - inside. -/)\n  (title := "T \\"q\\"")\n'
                    '  (latexEnv := "lemma")\n  (uses := ["def:x"])')
    for name in ("N.a", "N.b", "N.c"):
        text = with_attribute(text, declarations.find(declarations.scan(text), name), f'blueprint "{name}"')
    assert '/-- doc -/\n@[simp, blueprint "N.a"]\ntheorem a' in text  # the list above: one list
    assert '@[simp, blueprint "N.b"] theorem b' in text  # the list on the line
    assert '\n@[blueprint "N.c"]\ntheorem c' in text  # none: a new one
