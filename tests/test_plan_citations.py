"""The names a plan cites (``fyan.gates.citations``): looked up with ``lean_lookup`` on the real
core Lean 4.35.0 (``tests/lean_core.py``: a prelude library, the unit's namespace and ``open``
lines around the probe), or without a toolchain among the upstream units' frozen declarations
and in the declaration index of the project's pin and manifest; what does not exist is dropped
and scrubbed from what a later prompt quotes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fyan.models.replies import LemmaDag
from fyan.audit import citations as record
from fyan.gates import citations
from fyan.prover.environment import declaration_key, dependency_digest
from fyan.prover.search import DeclarationList, DeclarationRecord, build_index, write_declarations


def dag(*nodes: dict) -> LemmaDag:
    return LemmaDag.model_validate({"roots": [nodes[0]["name"]],
                                    "nodes": [{"statement": "s", **n} for n in nodes]})


@pytest.mark.lean_core
def test_lean_lookup_on_the_real_lean_resolves_through_the_units_namespaces_and_drops_the_rest(core_lean, tmp_path):
    from fyan.lean.lsp import LeanServer
    from fyan.prover.tools import ProverTools, fixed_server
    from tests.test_prover_tools import HEADER, build_library

    out = build_library(Path(core_lean), tmp_path)
    server = LeanServer([str(core_lean), "--server", "-Dserver.reportDelayMs=0"], cwd=tmp_path,
                        uri=(tmp_path / "Unit.lean").as_uri(),
                        env={**os.environ, "LEAN_PATH": str(out), "LAKE": str(tmp_path / "no-lake")})
    server.start(60)
    try:
        tools = ProverTools(HEADER, fixed_server(server), preamble="open Lib\nnamespace T.Unit", postamble="end T.Unit")
        check, why = citations.lookup_with(tools, ["keep", "Lib.T", "_root_.Lib.keep", "nope", "Lib.nope"])
    finally:
        server.close()
    assert why == "" and check is not None and check.method == "warm"
    assert check.found == {"keep": "Lib.keep", "Lib.T": "Lib.T", "_root_.Lib.keep": "Lib.keep"}
    assert check.signatures["Lib.keep"] == "Lib.keep (p : Prop) (h : p) : p"
    assert check.dropped == {"nope": "not found in the unit's environment (Unknown identifier `nope`)",
                             "Lib.nope": "not found in the unit's environment (Unknown identifier `Lib.nope`)"}


def test_a_lookup_lean_did_not_answer_counts_for_nothing():
    from fyan.prover.models import LookupResult

    class Down:
        def lean_lookup(self, args):
            return LookupResult(name=args.name, status="timeout", note="Lean did not answer in time")

    assert citations.lookup_with(Down(), ["Nat.add_comm"]) == (None, "timeout: Lean did not answer in time")


@pytest.mark.parametrize("signature,name,full", [
    ("Lib.keep (p : Prop) (h : p) : p", "keep", "Lib.keep"),
    ("Nat.rec.{u} {motive : Nat → Sort u} : motive 0", "Nat.rec", "Nat.rec"),
    ("Lib.keep (p : Prop) (h : p) : p", "_root_.Lib.keep", "Lib.keep"),
    ("Other.keep : p", "_root_.keep", None),           # `_root_.` is absolute: no namespace may qualify it
    ("x.1 : Lib.T", "x.fst", None),                    # a term, not a declaration
    ("Lib.keeper : Prop", "keep", None),               # a longer name is another name
    (None, "keep", None),
])
def test_only_a_signature_naming_the_cited_declaration_counts(signature, name, full):
    assert citations.full_name(signature, name) == full


def test_form_problems_refuse_while_missing_names_are_dropped():
    assert "gives `library` for theorem node(s) ['t']" in citations.form_problem(
        dag({"name": "t", "kind": "theorem", "library": "Group"}))
    assert "cites its own node(s) ['u']" in citations.form_problem(
        dag({"name": "t", "uses": ["u"], "cites": ["u"]}, {"name": "u"}))
    assert citations.form_problem(dag({"name": "t", "cites": ["Nat.made_up"]})) is None


def test_only_found_names_reach_a_prompt():
    plan = dag({"name": "IsGroupLike", "kind": "def", "library": "Grp.Made"},
               {"name": "t", "cites": ["Lib.keep", "Nat.made_up"]})
    check = record.CitationCheck(method="warm", found={"Lib.keep": "Lib.keep"},
                                    signatures={"Lib.keep": "Lib.keep (p : Prop) (h : p) : p"},
                                    missing=["Grp.Made", "Nat.made_up"],
                                    dropped={"Grp.Made": "not found", "Nat.made_up": "not found"})
    kept = record.checked_dag(plan, check)
    assert [n.cites for n in kept.nodes] == [[], ["Lib.keep"]] and kept.nodes[0].library is None
    assert record.prompt_lines(plan, check) == ["- `Lib.keep`: `Lib.keep (p : Prop) (h : p) : p`"]
    assert record.prompt_lines(plan, None) == [] and record.checked_dag(plan, None).nodes[1].cites == []
    text = "Use `Nat.made_up`, then Nat.made_up, not Nat.made_up_more nor My.Nat.made_up; map to Grp.Made."
    scrubbed = record.scrub(text, check)
    assert "Nat.made_up`" not in scrubbed and "Grp.Made" not in scrubbed
    assert scrubbed.count("(a name that does not exist, removed by Fyan)") == 3
    assert "Nat.made_up_more" in scrubbed and "My.Nat.made_up" in scrubbed  # other names are left alone


def test_the_declaration_key_is_the_pin_and_the_manifests_packages(tmp_path):
    lean = tmp_path / "lean"
    lean.mkdir()
    assert dependency_digest(lean / "lake-manifest.json") == "none"
    pkgs = [{"name": "mathlib", "type": "git", "url": "https://github.com/leanprover-community/mathlib4", "rev": "a" * 40,
             "inputRev": "v4.35.0", "scope": "leanprover-community", "configFile": "lakefile.lean"},
            {"name": "batteries", "type": "git", "url": "https://github.com/leanprover-community/batteries",
             "rev": "b" * 40, "inputRev": "main"}]
    (lean / "lake-manifest.json").write_text(json.dumps({"version": "1.1.0", "packages": pkgs}))
    first = dependency_digest(lean / "lake-manifest.json")
    (lean / "lake-manifest.json").write_text(json.dumps({"version": "1.1.0", "packages": pkgs[::-1]}))
    assert dependency_digest(lean / "lake-manifest.json") == first and first.startswith("sha256:")
    pkgs[0]["rev"] = "c" * 40
    (lean / "lake-manifest.json").write_text(json.dumps({"packages": pkgs}))
    assert dependency_digest(lean / "lake-manifest.json") != first  # another revision is another set
    (lean / "lake-manifest.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a Lake manifest"):
        dependency_digest(lean / "lake-manifest.json")

    class P:
        class paths:
            pass
    P.paths.lean = lean
    with pytest.raises(ValueError, match="pins no toolchain"):
        declaration_key(P)


def test_without_a_toolchain_the_index_of_the_projects_key_and_the_frozen_upstream_answer(tmp_path, fake_lake,
                                                                                           monkeypatch):
    from types import SimpleNamespace

    from tests.gate_harness import HONEST, setup

    s = setup(tmp_path / "p", HONEST)  # built with the Lake double; then the toolchain is gone
    monkeypatch.setattr("fyan.lean.toolchain.discover", lambda *a, **k: SimpleNamespace(toolchain=None, problem="none"))
    project, store = s.project, s.store
    unit = store.unit("thm-root")
    records = [DeclarationRecord(name="Nat.add_comm", kind="theorem", module="Init.Data.Nat.Basic",
                                 signature="Nat.add_comm (n m : Nat) : n + m = m + n")]
    key = declaration_key(project)
    write_declarations(tmp_path / "d.jsonl", DeclarationList(toolchain=key[0], dependencies=key[1], count=1), records)
    build_index(tmp_path / "d.jsonl", project.paths.state / "declarations.sqlite")
    check = citations.look_up(project, store, unit, ["Nat.add_comm", "Nat.add_made_up"], log_dir=tmp_path / "logs")
    assert check.method == "index" and check.found == {"Nat.add_comm": "Nat.add_comm"}
    assert check.signatures["Nat.add_comm"] == "Nat.add_comm (n m : Nat) : n + m = m + n"
    assert list(check.dropped) == ["Nat.add_made_up"] and "declaration index" in check.dropped["Nat.add_made_up"]
    # an index of another toolchain is never read as this one's: library names cannot be confirmed
    write_declarations(tmp_path / "d.jsonl", DeclarationList(toolchain="leanprover/lean4:v4.9.0", dependencies=key[1],
                                                             count=1), records)
    build_index(tmp_path / "d.jsonl", project.paths.state / "declarations.sqlite")
    other = citations.look_up(project, store, unit, ["Nat.add_comm"], log_dir=tmp_path / "logs")
    assert other.method == "upstream" and other.dropped and "was built for leanprover/lean4:v4.9.0" in other.problem
    # the upstream unit's frozen declaration, by its short name through the namespace the unit opens
    ups = [f.decl for d in store.deps(unit.id) for f in store.freezes(d.depends_on)]
    assert ups, "the harness's upstream unit is frozen"
    short = ups[0].rsplit(".", 1)[-1]
    found = citations.look_up(project, store, unit, [short], log_dir=tmp_path / "logs")
    assert found.found == {short: ups[0]} and not found.dropped
