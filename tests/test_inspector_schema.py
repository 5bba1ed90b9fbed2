"""The trusted inspector's answer read strictly (an answer in an unknown shape is no evidence), the
rules applied to it (kernel-evaluated constants, missing constants, ``module`` files, foreign
instances) and the environment policy by effect (``fyan.lean.extensions``: refusals name the effect, the rule
and what to do; the allow-list is validated).

``read_report`` is the real reader ``run_inspector`` uses; the answers here are written by the test
(lying, partial, with extra fields, for another run) as a compromised or broken inspector could.
"""

from __future__ import annotations

import json

import pytest

from fyan.lean import policy
from fyan.lean.inspector import InspectedModule, InspectorReport, module_findings, read_report
from tests import inspector_records as records

NONCE = "0123456789abcdef0123456789abcdef"


def _read(tmp_path, data, nonce=NONCE, modules=("M",)):
    out = tmp_path / "inspect.json"
    out.write_text(data if isinstance(data, str) else json.dumps(data))
    return read_report(out, None, "sha", nonce=nonce, modules=list(modules), lean_version="4.34.1")


def _good():
    return records.report(NONCE, modules=[records.module("M", declarations=[records.declaration("M.t", module="M")])],
                          lookups=[records.lookup("M.t", module="M")])


def test_a_complete_answer_echoing_the_nonce_is_evidence(tmp_path):
    got = _read(tmp_path, _good())
    assert got.ok and got.raw_output is None and got.report.lookup("M.t").kind == "theorem"


@pytest.mark.parametrize("lie, expected", [
    # an answer with only a name used to read as found, safe, without axioms
    (lambda r: {**r, "lookups": [{"name": "M.t"}]}, "does not follow fyan-inspector/3"),
    (lambda r: {**r, "lookups": [{"name": "M.t", "found": True}]}, "does not follow fyan-inspector/3"),
    (lambda r: {**r, "lookups": [{"name": "M.t", "found": False, "axioms": []}]}, "does not follow fyan-inspector/3"),
    # unknown fields are refused, not ignored
    (lambda r: {**r, "trusted": True}, "does not follow fyan-inspector/3"),
    (lambda r: {**r, "modules": [{**r["modules"][0], "verdict": "clean"}]}, "does not follow fyan-inspector/3"),
    # no field defaults to "safe": a declaration without its axioms is no evidence
    (lambda r: {**r, "modules": [{**r["modules"][0], "declarations": [
        {k: v for k, v in r["modules"][0]["declarations"][0].items() if k != "axioms"}]}]},
     "does not follow fyan-inspector/3"),
    (lambda r: {**r, "modules": [{**r["modules"][0], "declarations": [
        {k: v for k, v in r["modules"][0]["declarations"][0].items() if k != "kernel_evaluated"}]}]},
     "does not follow fyan-inspector/3"),
    # an unknown constant kind or safety fails closed
    (lambda r: {**r, "lookups": [{**r["lookups"][0], "kind": "mutual_def"}]}, "does not follow fyan-inspector/3"),
    (lambda r: {**r, "lookups": [{**r["lookups"][0], "safety": "trusted"}]}, "does not follow fyan-inspector/3"),
    # a report of another run (replayed, or written by the candidate)
    (lambda r: {**r, "nonce": "f" * 32}, "does not echo this run's nonce"),
    (lambda r: {k: v for k, v in r.items() if k != "nonce"}, "does not follow fyan-inspector/3"),
    # the previous format, or another level than the one that shows every body
    (lambda r: {**r, "format": "fyan-inspector/1"}, "has format 'fyan-inspector/1'"),
    (lambda r: {**r, "import_level": "exported"}, "does not follow fyan-inspector/3"),
    # a module the environment lacks, an import that could not be loaded
    (lambda r: {**r, "modules": [{"name": "M", "found": False}]}, "module(s) M not in the inspected environment"),
    (lambda r: {**r, "modules": [], "error": "object file ./M.olean of module M does not exist"},
     "could not load the modules: object file ./M.olean"),
])
def test_a_lying_partial_or_foreign_answer_is_no_evidence_and_is_kept(tmp_path, lie, expected):
    got = _read(tmp_path, lie(_good()))
    assert not got.ok and expected in got.problem, got.problem
    assert got.raw_output and json.loads(got.raw_output)  # the raw answer stays in the report
    assert got.evidence()["inspector_raw_output"] == got.raw_output


def test_a_missing_lookup_is_exactly_name_and_found_and_reads_as_nothing_known():
    report = InspectorReport.model_validate(records.report(lookups=[{"name": "M.gone", "found": False}]))
    gone = report.lookup("M.gone")
    assert gone.found is False and gone.kind is None and gone.type_hash is None and not gone.uses_sorry


# -- the rules -----------------------------------------------------------------------------------

def _module(**fields) -> InspectedModule:
    return InspectorReport.model_validate(records.report(modules=[records.module("L.U.Basic", **fields)])).module(
        "L.U.Basic")


@pytest.mark.parametrize("reached", [["Lean.reduceBool"], ["Lean.reduceNat"], ["Lean.reduceBool", "Lean.reduceNat"]])
def test_reaching_a_kernel_evaluated_constant_is_refused_like_of_reduce_bool(reached):
    m = _module(declarations=[records.declaration("L.U.t", kernel_evaluated=reached)])
    found = module_findings(m)
    for name in reached:
        assert any(f.startswith(f"L.U.t: reaches {name}: the kernel runs compiled code") for f in found), found
    assert policy.declaration_findings("theorem", "safe", None, False, False, kernel_evaluated=reached,
                                       kernel_allow=set(reached)) == []
    assert "Lean.ofReduceNat (rejected by name" in policy.classify_axioms(["Lean.ofReduceNat"], ["Lean.ofReduceNat"])[0]


def test_a_constant_missing_from_the_environment_fails_closed():
    m = _module(declarations=[records.declaration("L.U.t", missing_constants=["L.D.gone"])])
    assert any("refers to L.D.gone, not in the inspected environment" in f for f in module_findings(m))


def test_a_module_file_is_named_and_refused():
    assert any("is a `module` file" in f for f in module_findings(_module(is_module=True)))
    assert not any("`module` file" in f for f in module_findings(_module(is_module=False)))


# -- the extension policy by effect (fyan.lean.extensions) ---------------------------------------

HONEST_4_35 = ["_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt", "_private.Lean.Namespace.0.Lean.namespacesExt",
               "reducibilityCore", "Lean.projectionFnInfoExt", "Lean.Linter.lintLogExt",
               "_private.Lean.Util.CollectAxioms.0.Lean.exportedAxiomsExt", "Lean.noncomputableExt",
               "Lean.aliasExtension", "Lean.Compiler.LCNF.specExtension", "Lean.matchPatternAttr",
               "Lean.Elab.Term.elabAsElim", "_private.Lean.AuxRecursor.0.Lean.sparseCasesOnExt",
               "Lean.Meta.Ext.extExtension", "Lean.Elab.WF.eqnInfoExt"]


def test_bookkeeping_extensions_are_admitted_by_effect_without_anything_learned():
    m = _module(extensions=[{"name": n, "entries": 1} for n in HONEST_4_35])
    assert module_findings(m) == []


def test_the_policy_matches_names_across_the_private_prefix_of_another_version():
    older = _module(extensions=[{"name": "Lean.modPkgExt", "entries": 1}, {"name": "Lean.namespacesExt", "entries": 2},
                                {"name": "_private.Lean.Other.0.Lean.noncomputableExt", "entries": 1}])
    assert module_findings(older) == []
    assert policy.normalize_extension_name("_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt") == "Lean.modPkgExt"


@pytest.mark.parametrize("name, effect", [
    ("Lean.Elab.macroAttribute", "new syntax, notation or macros"),
    ("Lean.Parser.parserExtension", "new syntax, notation or macros"),
    ("Lean.Elab.Term.termElabAttribute", "meta-code"),
    ("Lean.Compiler.CSimp.ext", "trusts compiled or foreign code"),
    ("Lean.Compiler.implementedByAttr", "trusts compiled or foreign code"),
    ("Lean.regularInitAttr", "trusts compiled or foreign code"),
    ("Lean.Meta.defaultInstanceExtension", "changes how later statements elaborate"),
    ("reducibilityExtra", "changes how later statements elaborate"),
    ("Lean.Meta.customEliminatorExt", "changes how later statements elaborate"),
])
def test_a_refusal_names_the_effect_the_rule_and_what_to_do(name, effect):
    found = module_findings(_module(extensions=[{"name": name, "entries": 2}]))
    assert len(found) == 1 and found[0].startswith(f"L.U.Basic registers {name} (2 entries): effect: ")
    assert effect in found[0] and "; rule: refused by Fyan's policy by effect (leanprover/lean4" in found[0]
    assert "; to do: " in found[0]
    # the allow-list cannot admit what the table refuses
    assert module_findings(_module(extensions=[{"name": name, "entries": 2}]), extra_allow={name}) == found


def test_an_unclassified_extension_is_refused_naming_its_module_and_how_to_admit_it():
    private = "_private.Mathlib.Tactic.Foo.0.Mathlib.Tactic.fooExt"
    m = _module(extensions=[{"name": private, "entries": 1}, {"name": "Batteries.Bar.barExt", "entries": 3}])
    found = module_findings(m)
    assert len(found) == 2 and all("rule: an extension no row of Fyan's policy classifies is refused" in f
                                   and "[lean] extension_allowlist" in f for f in found)
    assert "registered in module Mathlib.Tactic.Foo" in found[0]
    assert "registered in the module declaring `Batteries.Bar.barExt`" in found[1]
    assert module_findings(m, extra_allow={"Mathlib.Tactic.fooExt", "Batteries.Bar.barExt"}) == []
    assert policy.extension_admissions([(private, 1), ("Lean.docStringExt", 1)], {"Mathlib.Tactic.fooExt"}) == [
        f"{private} (1 entry): admitted by [lean] extension_allowlist"]


def test_an_unclassified_dangerous_name_says_what_it_looks_like():
    found = module_findings(_module(extensions=[{"name": "Mathlib.Tactic.myMacroExt", "entries": 1}]))
    assert "effect: unknown (its name suggests a macro" in found[0]


def test_the_allowlist_is_validated():
    bad = policy.refused_extension_allowlist_entries(
        ["Lean.Elab.macroAttribute", "Lean.Compiler.CSimp.ext", "*", "Mathlib.fooSimprocExt", "", "a b",
         "Mathlib.Tactic.fooExt", "Lean.docStringExt"])
    assert [b.split(" (")[0] for b in bad] == ["Lean.Elab.macroAttribute", "Lean.Compiler.CSimp.ext", "'*'",
                                               "Mathlib.fooSimprocExt", "''", "'a b'"]
    from pydantic import ValidationError

    from fyan.config import LeanSection

    with pytest.raises(ValidationError, match="can never be admitted"):
        LeanSection(extension_allowlist=["Lean.Parser.parserExtension"])
    assert LeanSection(extension_allowlist=["Mathlib.Tactic.fooExt"]).extension_allowlist == ["Mathlib.Tactic.fooExt"]


def test_an_instance_extension_is_still_refused_in_an_sapass_candidate():
    m = _module(extensions=[{"name": "Lean.Meta.instanceExtension", "entries": 1}])
    assert module_findings(m) == []
    assert "effect: an instance, which changes how checkers elaborate" in module_findings(m, strict=True)[0]


def test_the_double_selftest_learns_what_its_controls_write_and_classifies_all_of_it(double_selftest):
    learned = set(double_selftest.learned_extensions)
    assert {"_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt", "Lean.Meta.instanceExtension",
            "Lean.Meta.simpExtension", "Lean.Linter.lintLogExt"} <= learned
    assert not any("macro" in n.lower() or "parser" in n.lower() for n in learned)  # notation is no control
    assert double_selftest.unclassified_extensions == [] and double_selftest.registry_problem is None
    m = _module(extensions=[{"name": n, "entries": 1} for n in sorted(learned)]
                + [{"name": "Lean.Elab.macroAttribute", "entries": 1}])
    assert [f.split(" (")[0] for f in module_findings(m)] == ["L.U.Basic registers Lean.Elab.macroAttribute"]


# -- meaning changed from another unit ----------------------------------------------

OWN = "Lib.ThmRoot.Basic"


def _k(name, arity=0, module=None):
    """A stored ``const`` key (a library constant is in ``Init`` unless it is own)."""
    return {"kind": "const", "name": name, "module": module or (OWN if name.startswith("Lib.ThmRoot.") else
                                                                 "Lib.DefDouble.Basic" if name.startswith("Lib.DefDouble.")
                                                                 else "Init.Prelude"), "arity": arity}


STAR = {"kind": "star", "name": "", "module": "", "arity": 0}
ARROW = {"kind": "arrow", "name": "", "module": "", "arity": 1}


def _reg(kind, decl, keys, out_params=(), scoped=False, about=()):
    return {"kind": kind, "declaration": decl, "module": OWN, "scoped": scoped,
            "about": [{"name": n, "module": m} for n, m in about], "keys": keys, "out_params": list(out_params)}


@pytest.mark.parametrize("regs, refused", [
    # the erased-ownership family: Lean stored each under `LE Int` (reduceDT erased the own
    # constant: beta, let, optParam, a projection of an own constructor, a match on it, an own
    # reducible def dropping its argument, an own alias `Ignore Int Tag`): keys as real Lean 4.35.0
    # stored them (tests/test_instance_keys.py)
    ([_reg("instance", "Lib.ThmRoot.erased", [_k("LE", 1), _k("Int")],
           about=[("LE", "Init.Prelude"), ("Lib.ThmRoot.Tag", OWN), ("Int", "Init")])],
     ["Lib.ThmRoot.erased: an instance about Int"]),
    ([_reg("instance", "Lib.ThmRoot.ignoreAdd", [_k("Add", 1), _k("Int")])], ["Lib.ThmRoot.ignoreAdd: an instance about Int"]),
    # the own type only in the outParam (`HAdd Int Int Tag`): instance search replaces it by a metavariable
    ([_reg("instance", "Lib.ThmRoot.intAddTag", [_k("HAdd", 3), _k("Int"), _k("Int"), _k("Lib.ThmRoot.Tag")], [2])],
     ["Lib.ThmRoot.intAddTag: an instance about Int"]),
    # ... while an own type in an input position keeps it the unit's
    ([_reg("instance", "Lib.ThmRoot.tagAddInt", [_k("HAdd", 3), _k("Lib.ThmRoot.Tag"), _k("Int"), _k("Int")], [2])], []),
    # honest: an own alias of a product with an own component (`abbrev Pair := S × Int`), stored as Prod S Int
    ([_reg("instance", "Lib.ThmRoot.pairLE", [_k("LE", 1), _k("Prod", 2), _k("Lib.ThmRoot.S"), _k("Int")])], []),
    ([_reg("instance", "Lib.ThmRoot.addProd", [_k("Add", 1), _k("Prod", 2), STAR, _k("Lib.ThmRoot.Tag")])], []),
    # an instance of a library class on a library type: changes how every importer elaborates
    ([_reg("instance", "Lib.ThmRoot.instLEInt", [_k("LE", 1), _k("Int")])], ["Lib.ThmRoot.instLEInt: an instance about Int"]),
    ([_reg("instance", "Lib.ThmRoot.allLE", [_k("LE", 1), STAR])], ["Lib.ThmRoot.allLE: an instance about (no constant)"]),
    # a non-dependent arrow is keyed by its domain alone (real 4.35.0)
    ([_reg("instance", "Lib.ThmRoot.fnLE", [_k("LE", 1), ARROW, _k("Int")])], ["Lib.ThmRoot.fnLE: an instance about Int"]),
    # on a type another unit owns
    ([_reg("instance", "Lib.ThmRoot.instLEDouble", [_k("LE", 1), _k("Lib.DefDouble.D")], scoped=True)],
     ["Lib.ThmRoot.instLEDouble: an instance (scoped) about Lib.DefDouble.D"]),
    ([_reg("unification_hint", "Lib.ThmRoot.hint", [_k("Int")])], ["Lib.ThmRoot.hint: a unification hint about Int"]),
    ([_reg("unification_hint", "Lib.ThmRoot.ownHint", [_k("Lib.ThmRoot.Tag")])], []),
    # honest: an instance on the unit's own structure, of its own class (an own alias of a class
    # is stored as the class: Lean keys after unfolding)
    ([_reg("instance", "Lib.ThmRoot.instInhPt", [_k("Inhabited", 1), _k("Lib.ThmRoot.Pt")])], []),
    ([_reg("instance", "Lib.ThmRoot.instSizeInt", [_k("Lib.ThmRoot.HasSize", 1), _k("Int")])], []),
    ([_reg("reducible", "Lib.ThmRoot.Coord", [], about=[("Int", "Init.Data.Int.Basic")])], []),
    # keys that do not read as one tree rooted at a constant: refused (fail closed)
    ([_reg("instance", "Lib.ThmRoot.broken", [_k("LE", 2), _k("Lib.ThmRoot.Pt")])],
     ["Lib.ThmRoot.broken: an instance whose stored keys cannot be read (2 keys): refused (fail closed); declare it "
      "in the plan if intended"]),
    ([_reg("instance", "Lib.ThmRoot.none", [])],
     ["Lib.ThmRoot.none: an instance whose stored keys cannot be read (0 keys): refused (fail closed); declare it in "
      "the plan if intended"]),
])
def test_instances_and_hints_the_unit_does_not_own_by_their_stored_keys_are_refused(regs, refused):
    m = _module(registrations=regs)
    found = policy.foreign_meaning_findings(m, "Lib.ThmRoot")
    assert [f.split(", which")[0] for f in found] == refused
    for f in found:
        assert "fail closed" in f or ("rule: the unit must own a constant Lean keeps in the stored keys" in f
                                      and "to do: " in f)
    # unless the plan declared them
    assert policy.foreign_meaning_findings(m, "Lib.ThmRoot", declared={r["declaration"] for r in regs}) == []


# -- mutation survivors: each test fails when the line it names is changed ---------------------------------------------------------------

@pytest.mark.parametrize("safety, kind, why", [
    ("partial", "def", "partial (its logical value is opaque)"),
    ("unsafe", "def", "unsafe (not checked by the kernel)"),
    ("safe", "opaque", "an opaque constant (hides its value from the kernel)"),
])
def test_partial_unsafe_and_opaque_declarations_are_refused(safety, kind, why):
    """policy.py `declaration_findings`: `if safety == "partial"` (and its neighbours) — a `partial`
    definition's logical value is an opaque constant the kernel cannot unfold."""
    m = _module(declarations=[records.declaration("L.U.loop", kind=kind, safety=safety)])
    assert [f for f in module_findings(m) if f.startswith("L.U.loop: ")] == [f"L.U.loop: {why}"]
    safe = _module(declarations=[records.declaration("L.U.loop", kind="def", safety="safe")])
    assert module_findings(safe) == []


def test_missing_and_extra_imports_are_both_refused():
    """inspector.py `module_findings`: imports Fyan wrote but the module lacks are named, not only
    extra ones (a candidate that drops `import Mathlib` and re-declares its names)."""
    lacking = _module(imports=["Init", "L.Up.Basic"])
    assert module_findings(lacking, expected_imports=["L.Up.Basic", "Mathlib"]) == [
        "L.U.Basic does not import Mathlib (Fyan's imports were changed)"]
    extra = _module(imports=["Init", "L.Up.Basic", "L.Evil"])
    assert module_findings(extra, expected_imports=["L.Up.Basic"]) == [
        "L.U.Basic imports L.Evil, which Fyan did not write"]
    exact = _module(imports=["Init", "L.Up.Basic"])
    assert module_findings(exact, expected_imports=["L.Up.Basic"]) == []


def _entry(**fields):
    """A ``blueprint`` entry as the inspector writes it (``FyanInspector.lean`` ``blueprintJson``)."""
    return {"name": "M.t", "module": "M", "label": "thm:t", "statement_uses": ["def:d"], "proof_uses": None,
            "not_ready": False, **fields}


def _present(*entries, problem=None):
    return {"present": True, "extension": "Architect.blueprintExt", "layout_problem": problem, "entries": list(entries)}


def test_blueprint_entries_absent_present_empty_and_present_are_told_apart(tmp_path):
    absent = _read(tmp_path, _good()).report.blueprint
    assert absent.present is False and not hasattr(absent, "entries")
    empty = _read(tmp_path, {**_good(), "blueprint": _present()}).report.blueprint
    assert empty.present is True and empty.entries == [] and empty.layout_problem is None
    got = _read(tmp_path, {**_good(), "blueprint": _present(_entry(proof_uses=["lem:l"]))}).report.blueprint
    assert [(e.name, e.label, e.uses) for e in got.entries] == [("M.t", "thm:t", {"def:d", "lem:l"})]


@pytest.mark.parametrize("blueprint", [
    {"present": True},  # present but without its fields
    {"present": False, "entries": []},  # absent with entries
    _present(_entry(verdict="ok")),  # an unknown field of an entry
    _present({k: v for k, v in _entry().items() if k != "label"}),  # a missing one
    _present(_entry(statement_uses="def:d")),  # uses not a list
    {**_present(_entry()), "extension": "Mine.blueprintExt"},  # another extension
    _present(_entry(), problem="Architect.Node.mk has other fields"),  # entries read despite a refused layout
])
def test_malformed_blueprint_entries_are_no_evidence(tmp_path, blueprint):
    got = _read(tmp_path, {**_good(), "blueprint": blueprint})
    assert not got.ok and "does not follow fyan-inspector/3" in got.problem


def test_a_report_without_the_blueprint_field_is_no_evidence(tmp_path):
    got = _read(tmp_path, {k: v for k, v in _good().items() if k != "blueprint"})
    assert not got.ok and "does not follow fyan-inspector/3" in got.problem
