"""The trusted inspector's answer read strictly, the rules applied to it (kernel-
evaluated constants, missing constants, ``module`` files, foreign instances) and the extension allow-list learned, not hard-coded.

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
    return read_report(out, None, "sha", nonce=nonce, modules=list(modules), lean_version="4.31.0")


def _good():
    return records.report(NONCE, modules=[records.module("M", declarations=[records.declaration("M.t", module="M")])],
                          lookups=[records.lookup("M.t", module="M")])


def test_a_complete_answer_echoing_the_nonce_is_evidence(tmp_path):
    got = _read(tmp_path, _good())
    assert got.ok and got.raw_output is None and got.report.lookup("M.t").kind == "theorem"


@pytest.mark.parametrize("lie, expected", [
    # an answer with only a name used to read as found, safe, without axioms
    (lambda r: {**r, "lookups": [{"name": "M.t"}]}, "does not follow fyan-inspector/2"),
    (lambda r: {**r, "lookups": [{"name": "M.t", "found": True}]}, "does not follow fyan-inspector/2"),
    (lambda r: {**r, "lookups": [{"name": "M.t", "found": False, "axioms": []}]}, "does not follow fyan-inspector/2"),
    # unknown fields are refused, not ignored
    (lambda r: {**r, "trusted": True}, "does not follow fyan-inspector/2"),
    (lambda r: {**r, "modules": [{**r["modules"][0], "verdict": "clean"}]}, "does not follow fyan-inspector/2"),
    # no field defaults to "safe": a declaration without its axioms is no evidence
    (lambda r: {**r, "modules": [{**r["modules"][0], "declarations": [
        {k: v for k, v in r["modules"][0]["declarations"][0].items() if k != "axioms"}]}]},
     "does not follow fyan-inspector/2"),
    (lambda r: {**r, "modules": [{**r["modules"][0], "declarations": [
        {k: v for k, v in r["modules"][0]["declarations"][0].items() if k != "kernel_evaluated"}]}]},
     "does not follow fyan-inspector/2"),
    # an unknown constant kind or safety fails closed
    (lambda r: {**r, "lookups": [{**r["lookups"][0], "kind": "mutual_def"}]}, "does not follow fyan-inspector/2"),
    (lambda r: {**r, "lookups": [{**r["lookups"][0], "safety": "trusted"}]}, "does not follow fyan-inspector/2"),
    # a report of another run (replayed, or written by the candidate)
    (lambda r: {**r, "nonce": "f" * 32}, "does not echo this run's nonce"),
    (lambda r: {k: v for k, v in r.items() if k != "nonce"}, "does not follow fyan-inspector/2"),
    # the previous format, or another level than the one that shows every body
    (lambda r: {**r, "format": "fyan-inspector/1"}, "has format 'fyan-inspector/1'"),
    (lambda r: {**r, "import_level": "exported"}, "does not follow fyan-inspector/2"),
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
    found = module_findings(m, learned=frozenset())
    for name in reached:
        assert any(f.startswith(f"L.U.t: reaches {name}: the kernel runs compiled code") for f in found), found
    assert policy.declaration_findings("theorem", "safe", None, False, False, kernel_evaluated=reached,
                                       kernel_allow=set(reached)) == []
    assert "Lean.ofReduceNat (rejected by name" in policy.classify_axioms(["Lean.ofReduceNat"], ["Lean.ofReduceNat"])[0]


def test_a_constant_missing_from_the_environment_fails_closed():
    m = _module(declarations=[records.declaration("L.U.t", missing_constants=["L.D.gone"])])
    assert any("refers to L.D.gone, not in the inspected environment" in f for f in module_findings(m, learned=set()))


def test_a_module_file_is_named_and_refused():
    assert any("is a `module` file" in f for f in module_findings(_module(is_module=True), learned=set()))
    assert not any("`module` file" in f for f in module_findings(_module(is_module=False), learned=set()))


# -- the extension allow-list: learned, normalised, before the danger patterns --------------------

HONEST_4_35 = ["_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt", "_private.Lean.Namespace.0.Lean.namespacesExt",
               "reducibilityCore", "Lean.projectionFnInfoExt", "Lean.Linter.lintLogExt",
               "_private.Lean.Util.CollectAxioms.0.Lean.exportedAxiomsExt"]


def test_every_extension_no_honest_control_writes_is_refused_named():
    m = _module(extensions=[{"name": n, "entries": 1} for n in HONEST_4_35])
    found = module_findings(m, learned=frozenset())
    assert len(found) == len(HONEST_4_35) and all("no honest control writes on this toolchain" in f for f in found)
    # newest Lean's exportedAxiomsExt looks like @[export] to the danger patterns ...
    assert any("exportedAxiomsExt (1 entry): @[export]" in f for f in found)
    # ... but a learned name is admitted before they are consulted
    assert module_findings(m, learned=frozenset(HONEST_4_35)) == []


def test_learned_names_match_across_the_private_prefix_of_another_version():
    older = _module(extensions=[{"name": "Lean.modPkgExt", "entries": 1}, {"name": "Lean.namespacesExt", "entries": 2}])
    assert module_findings(older, learned=frozenset(HONEST_4_35)) == []
    assert policy.normalize_extension_name("_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt") == "Lean.modPkgExt"


def test_a_learned_or_configured_instance_extension_is_still_refused_in_an_sapass_candidate():
    m = _module(extensions=[{"name": "Lean.Meta.instanceExtension", "entries": 1}])
    assert module_findings(m, learned={"Lean.Meta.instanceExtension"}) == []
    assert "an instance (changes how checkers elaborate)" in module_findings(
        m, learned={"Lean.Meta.instanceExtension"}, strict=True)[0]


def test_the_gate_reads_the_learned_names_of_the_reports_lean_version(double_selftest):
    learned = set(double_selftest.learned_extensions)
    assert {"_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt", "Lean.Meta.instanceExtension",
            "Lean.Meta.simpExtension", "Lean.Linter.lintLogExt"} <= learned
    assert not any("macro" in n.lower() or "parser" in n.lower() for n in learned)  # notation is no control
    m = _module(extensions=[{"name": n, "entries": 1} for n in sorted(learned)]
                + [{"name": "Lean.Elab.macroAttribute", "entries": 1}])
    assert [f.split(" (")[0] for f in module_findings(m)] == ["L.U.Basic registers Lean.Elab.macroAttribute"]


# -- meaning changed from another unit ----------------------------------------------

def _reg(kind, decl, about, module="Lib.ThmRoot.Basic", scoped=False):
    return {"kind": kind, "declaration": decl, "module": module, "scoped": scoped,
            "about": [{"name": n, "module": m} for n, m in about]}


def _alias_chain(n):
    """``abbrev A0 := Int``, ``abbrev A<i> := A<i-1>`` up to ``A<n-1>``, and an ``LE`` instance on the last."""
    return ([_reg("reducible", "Lib.ThmRoot.A0", [("Int", "Init.Data.Int.Basic")])]
            + [_reg("reducible", f"Lib.ThmRoot.A{i}", [(f"Lib.ThmRoot.A{i - 1}", "Lib.ThmRoot.Basic")])
               for i in range(1, n)]
            + [_reg("instance", "Lib.ThmRoot.instLEA",
                    [("LE", "Init.Prelude"), (f"Lib.ThmRoot.A{n - 1}", "Lib.ThmRoot.Basic")])])


@pytest.mark.parametrize("regs, refused", [
    # an own type that an own alias erases (`abbrev Ignore (α _ : Type) := α`, `Add (Ignore Int Tag)`):
    # Lean keys it after unfolding, as `Add Int`; through an alias only a wholly own instance stays own
    ([_reg("reducible", "Lib.ThmRoot.Ignore", []),
      _reg("instance", "Lib.ThmRoot.ignoreAdd", [("Add", "Init.Prelude"), ("Lib.ThmRoot.Ignore", "Lib.ThmRoot.Basic"),
                                                  ("Int", "Init.Data.Int.Basic"), ("Lib.ThmRoot.Tag", "Lib.ThmRoot.Basic")])],
     ["Lib.ThmRoot.ignoreAdd: an instance about Int"]),
    # controls: an own alias of an own type, and an own type beside a library one with no alias
    ([_reg("reducible", "Lib.ThmRoot.T", [("Lib.ThmRoot.S", "Lib.ThmRoot.Basic")]),
      _reg("instance", "Lib.ThmRoot.addT", [("Add", "Init.Prelude"), ("Lib.ThmRoot.T", "Lib.ThmRoot.Basic")])], []),
    ([_reg("instance", "Lib.ThmRoot.addSInt", [("Add", "Init.Prelude"), ("Prod", "Init.Prelude"),
                                                ("Lib.ThmRoot.S", "Lib.ThmRoot.Basic"), ("Int", "Init.Data.Int.Basic")])],
     []),
    # an instance of a library class on a library type: changes how every importer elaborates
    ([_reg("instance", "Lib.ThmRoot.instLEInt", [("LE", "Init.Prelude"), ("Int", "Init.Data.Int.Basic")])],
     ["Lib.ThmRoot.instLEInt: an instance about Int"]),
    # on a type another unit owns
    ([_reg("instance", "Lib.ThmRoot.instLEDouble", [("LE", "Init.Prelude"), ("Lib.DefDouble.D", "Lib.DefDouble.Basic")],
           scoped=True)], ["Lib.ThmRoot.instLEDouble: an instance (scoped) about Lib.DefDouble.D"]),
    # through an own reducible alias of a library type
    ([_reg("reducible", "Lib.ThmRoot.MyInt", [("Int", "Init.Data.Int.Basic")]),
      _reg("instance", "Lib.ThmRoot.instLEMyInt", [("LE", "Init.Prelude"), ("Lib.ThmRoot.MyInt", "Lib.ThmRoot.Basic")])],
     ["Lib.ThmRoot.instLEMyInt: an instance about Int"]),
    ([_reg("unification_hint", "Lib.ThmRoot.hint", [("Int", "Init.Data.Int.Basic")])],
     ["Lib.ThmRoot.hint: a unification hint about Int"]),
    # through a chain of own aliases of any length (the policy once stopped after 8 and took the
    # ninth alias for an own type)
    *[(_alias_chain(n), ["Lib.ThmRoot.instLEA: an instance about Int"]) for n in (2, 8, 9, 10, 40)],
    # of an own alias of a foreign class (`abbrev MyLE := LE`: an instance of LE), through a chain too
    ([_reg("reducible", "Lib.ThmRoot.MyLE", [("LE", "Init.Prelude")]),
      _reg("instance", "Lib.ThmRoot.instMyLEInt", [("Lib.ThmRoot.MyLE", "Lib.ThmRoot.Basic"), ("Int", "Init")])],
     ["Lib.ThmRoot.instMyLEInt: an instance about Int"]),
    ([_reg("reducible", "Lib.ThmRoot.L0", [("LE", "Init.Prelude")]),
      _reg("reducible", "Lib.ThmRoot.L1", [("Lib.ThmRoot.L0", "Lib.ThmRoot.Basic")]),
      _reg("instance", "Lib.ThmRoot.instL1Int", [("Lib.ThmRoot.L1", "Lib.ThmRoot.Basic"), ("Int", "Init")])],
     ["Lib.ThmRoot.instL1Int: an instance about Int"]),
    # a cycle of aliases (no Lean environment has one; a forged report): ends, unfolds to nothing own
    ([_reg("reducible", "Lib.ThmRoot.B", [("Lib.ThmRoot.C", "Lib.ThmRoot.Basic")]),
      _reg("reducible", "Lib.ThmRoot.C", [("Lib.ThmRoot.B", "Lib.ThmRoot.Basic"), ("Int", "Init.Data.Int.Basic")]),
      _reg("instance", "Lib.ThmRoot.instLEB", [("LE", "Init.Prelude"), ("Lib.ThmRoot.B", "Lib.ThmRoot.Basic")])],
     ["Lib.ThmRoot.instLEB: an instance about Int"]),
    # honest: an instance on the unit's own structure, or of its own class
    ([_reg("instance", "Lib.ThmRoot.instInhPt", [("Inhabited", "Init.Prelude"), ("Lib.ThmRoot.Pt", "Lib.ThmRoot.Basic")])],
     []),
    ([_reg("instance", "Lib.ThmRoot.instSizeInt", [("Lib.ThmRoot.HasSize", "Lib.ThmRoot.Basic"), ("Int", "Init")])], []),
    ([_reg("reducible", "Lib.ThmRoot.Coord", [("Int", "Init.Data.Int.Basic")])], []),
    # an own alias of the unit's own class is that class
    ([_reg("reducible", "Lib.ThmRoot.Sized", [("Lib.ThmRoot.HasSize", "Lib.ThmRoot.Basic")]),
      _reg("instance", "Lib.ThmRoot.instSizedInt", [("Lib.ThmRoot.Sized", "Lib.ThmRoot.Basic"), ("Int", "Init")])], []),
])
def test_instances_and_hints_on_types_the_unit_does_not_own_are_refused(regs, refused):
    m = _module(registrations=regs)
    found = policy.foreign_meaning_findings(m, "Lib.ThmRoot")
    assert [f.split(", which")[0] for f in found] == refused
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
    assert [f for f in module_findings(m, learned=set()) if f.startswith("L.U.loop: ")] == [f"L.U.loop: {why}"]
    safe = _module(declarations=[records.declaration("L.U.loop", kind="def", safety="safe")])
    assert module_findings(safe, learned=set()) == []


def test_missing_and_extra_imports_are_both_refused():
    """inspector.py `module_findings`: imports Fyan wrote but the module lacks are named, not only
    extra ones (a candidate that drops `import Mathlib` and re-declares its names)."""
    lacking = _module(imports=["Init", "L.Up.Basic"])
    assert module_findings(lacking, expected_imports=["L.Up.Basic", "Mathlib"], learned=set()) == [
        "L.U.Basic does not import Mathlib (Fyan's imports were changed)"]
    extra = _module(imports=["Init", "L.Up.Basic", "L.Evil"])
    assert module_findings(extra, expected_imports=["L.Up.Basic"], learned=set()) == [
        "L.U.Basic imports L.Evil, which Fyan did not write"]
    exact = _module(imports=["Init", "L.Up.Basic"])
    assert module_findings(exact, expected_imports=["L.Up.Basic"], learned=set()) == []
