"""The completion gate: deterministic, model-free, fail closed.

Every file the gate reads is a recorded artifact checked against its SHA-256 (``Basic.lean``,
``Statement.lean``, ``audit/result.json``, every upstream unit's ``Basic.lean``); it builds in a
fresh gate-owned workspace under ``.fyan/gate/`` (``fyan.lakepackage.trusted``: upstream units first,
then the candidate with their outputs read-only), confined by ``[lean] sandbox``; and it decides
from the **trusted inspector**'s report of the compiled module (``fyan.lean.inspector``), a
program of Fyan's own that reads the environment without elaborating anything or running any
code of the candidate. A unit is complete only when, for each completion root (the active
frozen declarations with role ``root``), every required check passes:

1. ``sorry_free`` — no declaration of the unit's module (every one, not only the roots: an
   unused ``sorry`` lemma counts) has ``sorryAx`` in it or among its transitive axioms, and the
   build shows no sorry warning for the unit's file (either wording). Unknown = fail;
2. ``build`` — the workspace's ``lean-toolchain`` pins the toolchain found, in any spelling
   (``fyan.lean.toolchain.check_pin``), that toolchain passed ``fyan selftest`` for this Fyan and
   inspector (``fyan.trust.record.toolchain_trust``; else an environment problem naming the
   command, unless ``[lean] trust_without_selftest`` opts out, which every report states), and
   the unit's module compiles with plain ``lean`` in the gate workspace
   (``fyan.lean.compile.compile_module``: exit code 0, no error message, nothing but Lean's JSON
   messages, an ``.olean`` written; a timeout or crash fails), nothing but its own output files
   appear, and every recorded file is unchanged when the decision is made;
3. ``frozen_statements`` — every frozen declaration is in the source with the same normalized
   signature, its bound files are unchanged, and in the compiled environment it exists in the
   unit's module, has the frozen kind, the same elaborated statement and the same local
   definitions (``fyan.lakepackage.signatures``), and depends on no declaration that no audit certified
   — of an upstream unit, or of its own unit without naming it, like an instance
   (``unaudited_dependencies``); any difference makes the certification stale;
4. ``bridge_obligations`` — every required bridge (role ``bridge``) is still declared, exists in
   the compiled environment as a theorem, and is sorry-free and axiom-clean;
5. ``semantic_certification`` — the recorded audit result freezes the root with grade ≥
   threshold (or a discharged bridge certifies it), no root states ``True`` (in the source or,
   after its binders, in the elaborated type), and nothing it was certified against changed;
6. ``axiom_audit`` — the transitive axioms of every declaration of the unit's module are in
   ``[lean] axiom_allowlist``; ``sorryAx``, user axioms, ``Lean.ofReduceBool``,
   ``Lean.trustCompiler`` and ``*._native.*`` are named, with why, when rejected. The roots must
   be found in the compiled environment (defeats ``#exit``);
7. ``environment_policy`` — the module declares no axiom, nothing ``unsafe``, ``partial`` or
   ``opaque``, nothing ``implemented_by``/``extern``/``init``, registers no extension entry
   outside the allow-list of harmless ones (macros, syntax, elaborators, tactics, ``csimp``, ...
   and anything unknown are refused: ``fyan.lean.policy``), registers no instance or unification
   hint about types the unit does not own (seen through its own ``@[reducible]`` aliases) unless
   the audited plan (``lemma_dag.json``) declares it, and imports exactly what Fyan wrote;
8. ``source_lints`` — the file is Fyan's rendering (imports, ``open``, namespace) around the
   model-written declarations, which use none of the constructs of ``fyan.lean.lints`` (a second
   line, and the only one for compile-time code such as ``#eval`` that leaves no trace).

Independent checkers, required when installed and reported ``unavailable`` (never a pass, not
blocking) when not: ``kernel_replay`` (``leanchecker``/``lean4checker`` replays the module in the
kernel) and ``comparator`` (leanprover/comparator: the audited ``Statement.lean`` as the
challenge, the unit's module as the solution, the allow-list as permitted axioms; with the nanoda
kernel too when ``nanoda_bin`` is installed). On a toolchain with a known kernel soundness bug
(``fyan.lean.mathlib.KERNEL_BUGS``: Lean before 4.32.1/4.32.2/4.33.0) ``comparator`` is required
and must have run with nanoda: the Lean kernel alone is not believed there.

Without a toolchain, every Lean-dependent check fails with the discovery problem
(``TOOLCHAIN_MISSING``). Bad input (no recorded candidate, an edited file, a broken package, a
missing pin, a toolchain that times out, crashes, prints nothing or an unknown format, an
inspector that cannot run) is a failed check with its reason, never an exception and never a
pass. Gate runs of one unit are serialized by a lock (``GateLock``), so ``fyan gate`` and
``fyan verify`` never race a daemon's gate of the same unit.

How the code is laid out: **collect, then check**. ``fyan.gates.evidence.Collector`` does
everything that touches the world (recorded files, the store, the build, the inspector, the
independent checkers) and returns one immutable ``GateEvidence``. Each check below is a pure
function of that evidence that names the fields it reads (``Check.reads``) and returns a
``Finding``; ``CHECKS`` lists them in the report's order, and ``decide`` folds them into the
verdict, giving each check deep copies of only its declared fields (any other field reads as
``UNDECLARED``, which raises on use). A check that raises fails with the error as its reason.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any

from fyan.audit.record import AuditResult
from fyan.gates.evidence import (
    COMPARATOR_PREREQUISITES,
    Collector,
    GateEvidence,
    find_comparator,
    find_nanoda,
    inspector_environment_problem,
    missing_comparator_prerequisites,
    sandbox_statement,
    transient_process,
)
from fyan.models.gate_report import CheckResult, GateReport, report_json, report_text
from fyan.lean import declarations
from fyan.lakepackage import trusted
from fyan.lean.inspector import InspectedDeclaration, InspectedLookup, InspectedModule, MissingDeclaration, module_findings
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.lakepackage.package import model_part, upstream
from fyan.lean.policy import classify_axioms, extension_admissions
from fyan.lakepackage.signatures import compare_compiled
from fyan.lean.toolchain import Discovery
from fyan.project import Project
from fyan.shadow.gate import shadow_checks
from fyan.state.models import FreezeRecord, UnitRecord
from fyan.state.store import Store


@dataclass(frozen=True)
class Finding:
    """What one check found: ``ok`` True (pass), False (fail) or None (unavailable: an independent
    checker that is not installed), the reason, whether it is required (None: as ``REQUIRED``
    says), the evidence shown in the report, and ``environment`` when the failure is the
    machine's and no candidate can fix it (the report's ``environment_problem``)."""

    ok: bool | None
    reason: str
    required: bool | None = None
    evidence: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    environment: str | None = None

    @property
    def passed(self) -> bool:
        return bool(self.ok)


def finding(ok: bool | None, reason: str, required: bool | None = None, environment: str | None = None,
            **evidence: Any) -> Finding:
    return Finding(ok, reason, required, MappingProxyType(evidence), environment)


@dataclass(frozen=True)
class Check:
    """One check of the completion gate: its name in the report, the ``GateEvidence`` fields it
    reads (``reads``; the helpers it calls included) and the pure function deciding it."""

    name: str
    reads: frozenset[str]
    decide: Callable[[GateEvidence], Finding]


# -- helpers the checks share (each with the evidence fields it reads) -----------------------------

_LEAN_MISSING = frozenset({"toolchain_found", "no_lean"})
_MODULE = frozenset({"inspection", "module"})


def _lean_missing_reason(ev: GateEvidence, prefix: str) -> str:
    if not ev.toolchain_found:
        return ev.no_lean or "Lean toolchain not found"
    return f"{prefix}: {ev.no_lean}"


def _module_report(ev: GateEvidence) -> InspectedModule | None:
    if ev.inspection is None or not ev.inspection.ok or ev.inspection.report is None:
        return None
    return ev.inspection.report.module(ev.module)


def _record(ev: GateEvidence, name: str) -> InspectedLookup | MissingDeclaration | None:
    if ev.inspection is None or not ev.inspection.ok or ev.inspection.report is None:
        return None
    return ev.inspection.report.lookup(name)


def _frozen_kind_ok(freeze: FreezeRecord, record: InspectedDeclaration) -> str | None:
    kind = freeze.normalized_signature.split(" ", 1)[0]
    if kind == "theorem" and record.kind != "theorem":
        return f"{freeze.decl}: frozen as a theorem, compiled as a {record.kind}"
    if kind in ("def", "abbrev", "instance") and record.kind not in ("def",):
        return f"{freeze.decl}: frozen as a {kind}, compiled as a {record.kind}"
    if kind in ("structure", "class", "inductive") and record.kind != "inductive":
        return f"{freeze.decl}: frozen as a {kind}, compiled as a {record.kind}"
    return None


_STALENESS = frozenset({"freezes", "source_problem", "source_comparisons", "no_lean", "inspection", "module",
                        "reference", "reference_problem", "toolchain_version", "unaudited"})


@dataclass(frozen=True)
class _Staleness:
    """The frozen declarations compared with the source and the compiled environment:
    ``source`` the source comparisons' changes and ``compiled`` the compiled ones (each in
    freeze order, None when not compared), ``compared`` what was compared per declaration,
    ``hashes`` the compiled statement hashes, ``by_decl`` every change per declaration."""

    source_changes: list[str]
    compiled_changes: list[str] | None
    compared: dict[str, list[str]]
    hashes: dict[str, str | None]
    by_decl: dict[str, list[str]]


def _staleness(ev: GateEvidence) -> _Staleness:
    """What makes the certification of each frozen declaration stale (``frozen_statements``)."""
    changes: list[str] = []
    compared: dict[str, list[str]] = {}
    by_decl: dict[str, list[str]] = {}
    for c in ev.source_comparisons or ():
        changes += c.changes
        compared[c.decl] = list(c.compared)
        if c.changes:
            by_decl.setdefault(c.decl, []).extend(c.changes)
    if ev.source_problem is not None or ev.no_lean is not None or ev.inspection is None or not ev.inspection.ok:
        return _Staleness(changes, None, compared, {}, by_decl)
    compiled: list[str] = []
    hashes: dict[str, str | None] = {}
    reference = ev.reference.report if ev.reference is not None and ev.reference.ok else None
    for i, f in enumerate(ev.freezes):
        rec = _record(ev, f.decl)
        ref = reference.lookup(f.decl) if reference is not None else None
        c = compare_compiled(f, rec, ev.toolchain_version, ref)
        if f.type_hash is None and ref is None and ev.reference_problem:
            c.changes = [f"{f.decl}: no elaborated reference: frozen without a toolchain, and {ev.reference_problem}"]
        if rec is not None and rec.found:
            hashes[f.decl] = rec.statement_hash
            wrong_kind = _frozen_kind_ok(f, rec)
            if wrong_kind:
                c.changes.append(wrong_kind)
            if rec.module != ev.module:
                c.changes.append(f"{f.decl}: declared in module {rec.module or '(unknown)'}, not in the unit's "
                                 f"module {ev.module}")
            c.changes += list(ev.unaudited[i]) if i < len(ev.unaudited) else []
        compiled += c.changes
        compared.setdefault(f.decl, []).extend(c.compared)
        if c.changes:
            by_decl.setdefault(f.decl, []).extend(c.changes)
    return _Staleness(changes, compiled, compared, hashes, by_decl)


_BRIDGES = frozenset({"freezes", "declarations", "axiom_allowlist", "module"}) | _LEAN_MISSING | _MODULE


def _bridge_obligations(ev: GateEvidence) -> Finding:
    """Every required bridge (role ``bridge``) is still declared, exists in the compiled
    environment as a theorem of the unit's module, and is sorry-free and axiom-clean."""
    bridges = [f for f in ev.freezes if f.role == "bridge"]
    if not bridges:
        return finding(True, "no bridge obligation required")
    names = [b.decl for b in bridges]
    decls = list(ev.declarations)
    deleted = [b.decl for b in bridges if declarations.find(decls, b.decl) is None] if decls else []
    if ev.no_lean is not None or ev.inspection is None or not ev.inspection.ok:
        lead = f"bridge declaration(s) deleted from Basic.lean: {', '.join(deleted)}; " if deleted else ""
        return finding(False, lead + _lean_missing_reason(ev, "bridge obligations not checked in the compiled "
                                                              "environment"), bridges=names, deleted=deleted)
    problems = [f"{d}: deleted from Basic.lean" for d in deleted]
    axioms = {}
    for b in bridges:
        rec = _record(ev, b.decl)
        if rec is None or not rec.found:
            problems.append(f"{b.decl}: missing from the compiled environment")
            continue
        axioms[b.decl] = rec.axioms
        if rec.kind != "theorem":
            problems.append(f"{b.decl}: is a {rec.kind}, not a proved theorem")
        if rec.module != ev.module:
            problems.append(f"{b.decl}: declared in module {rec.module}, not in the unit's module {ev.module}")
        rejected = classify_axioms(rec.axioms, list(ev.axiom_allowlist))
        if rejected or rec.sorry_direct:
            problems.append(f"{b.decl}: not discharged: {', '.join(rejected) or 'uses sorryAx'}")
    return finding(not problems, "; ".join(problems) or "every bridge obligation discharged", bridges=names,
                   axioms=axioms)


# -- the checks --------------------------------------------------------------------------------------

def check_sorry_free(ev: GateEvidence) -> Finding:
    module = _module_report(ev)
    if ev.no_lean is not None or ev.build is None or module is None:
        return finding(False, _lean_missing_reason(ev, "sorry count unknown"))
    rel = ev.module_file
    warnings = ev.build.sorry_warnings
    with_sorry = sorted(d.name for d in module.declarations if d.uses_sorry)
    evidence = {"sorry_warnings": len(warnings), "warning_lines": [d.line for d in warnings],
                "declarations_with_sorryAx": with_sorry, "declarations": len(module.declarations), "file": rel,
                **ev.inspector_evidence}
    absent = [r for r in ev.roots if (rec := _record(ev, r)) is None or not rec.found]
    if absent:
        return finding(False, f"sorry count unknown: {', '.join(absent)} not in the compiled environment", **evidence)
    if with_sorry and not warnings:
        return finding(False, f"sorryAx in the axioms of {', '.join(with_sorry)} although {rel} shows no "
                              "sorry warning (silenced, or sorry reached without the token)", **evidence)
    if with_sorry or warnings:
        where = f"line(s) {', '.join(str(d.line) for d in warnings)}" if warnings else "no line"
        return finding(False, f"sorry count {len(warnings) + len(with_sorry)}: {len(warnings)} sorry "
                              f"warning(s) in {rel} ({where}); sorryAx in the axioms of "
                              f"{', '.join(with_sorry) or 'no declaration'}", **evidence)
    return finding(True, f"sorry count is 0: none of the module's {len(module.declarations)} "
                         "declarations uses sorryAx, and the build shows no sorry warning", **evidence)


def check_build(ev: GateEvidence) -> Finding:
    if ev.build is None:
        return finding(False, ev.no_lean or "not built", **ev.lean_failure)
    evidence = dict(ev.build_evidence)
    if ev.build.ok and ev.changed_during_gate:
        return finding(False, "files the decision rests on changed during the gate: "
                       + "; ".join(ev.changed_during_gate[:5]), **evidence)
    return finding(ev.build.ok, ev.build.reason, **evidence)


def check_frozen_statements(ev: GateEvidence) -> Finding:
    if not ev.freezes:
        return finding(False, ev.source_problem or "nothing frozen")
    frozen = [f.decl for f in ev.freezes]
    if ev.source_problem is not None:
        return finding(False, ev.source_problem, frozen=frozen)
    s = _staleness(ev)
    if s.compiled_changes is None:
        reason = "; ".join(s.source_changes) if s.source_changes else \
            "frozen signatures and bound files unchanged in the source"
        return finding(False, reason + "; not confirmed in the compiled environment ("
                       + (ev.no_lean or "not inspected") + ")", frozen=frozen, compared=s.compared)
    changes = s.source_changes + s.compiled_changes
    ok = not changes
    evidence: dict[str, Any] = {"frozen": frozen, "statement_hashes": s.hashes, "compared": s.compared}
    if ev.reference is not None:
        evidence["reference"] = "audited Statement.lean elaborated now"
    return finding(ok, "frozen signatures, bound inputs and elaborated statements unchanged" if ok
                   else "certification stale: " + "; ".join(changes), **evidence)


def check_bridge_obligations(ev: GateEvidence) -> Finding:
    return _bridge_obligations(ev)


def _bridge_signature_matches(bridges: list[FreezeRecord], audited_lean: str) -> bool:
    """Whether every frozen bridge obligation states exactly the S0 the audit graded: the same
    normalized signature as the audited declaration of that name, not only the same name."""
    audited = declarations.scan(audited_lean)
    for b in bridges:
        d = declarations.find(audited, b.decl) or next((x for x in audited if b.decl.endswith("." + x.name)), None)
        if d is None or d.frozen_signature != b.normalized_signature:
            return False
    return True


def check_semantic_certification(ev: GateEvidence) -> Finding:
    if ev.audit_result is None:
        return finding(False, ev.audit_problem or "no audit result for this unit")
    try:
        result = AuditResult.model_validate_json(ev.audit_result.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        return finding(False, f"unreadable audit result: {str(e).splitlines()[0]}")
    roots = ev.roots
    bridges = [f for f in ev.freezes if f.role == "bridge"]
    threshold = ev.audit_threshold
    problems: list[str] = []
    if result.routing == "freeze" and result.grade is not None and result.grade >= threshold and roots:
        how = f"audit grade {result.grade} >= threshold {threshold}"
    elif bridges and result.routing == "bridge" and result.bridge is not None and result.bridge.result.valid \
            and (result.bridge.result.grade or 0) >= threshold \
            and {b.decl for b in bridges} == {result.bridge.name} \
            and _bridge_signature_matches(bridges, result.bridge.lean):
        how = (f"audit grade {result.grade}, certified through the bridge obligation {result.bridge.name} "
               f"(S0 audited with grade {result.bridge.result.grade})")
        if not _bridge_obligations(ev).passed:
            problems.append("the bridge obligation is not discharged (see bridge_obligations)")
    elif bridges:
        how = ""
        problems.append("the bridge obligation does not match an audited S0 (routing, S0 grade, name or signature)")
    else:
        how = ""
        problems.append(f"audit grade {result.grade} below threshold {threshold}" if result.valid
                        else "audit record was rejected")
    decls = list(ev.declarations)
    for r in roots:
        d = declarations.find(decls, r)
        rec = _record(ev, r)
        vacuous_text = d is not None and d.kind == "theorem" and d.type_text in ("True", "⊤")
        if vacuous_text or (rec is not None and rec.found and rec.conclusion_true):
            problems.append(f"root {r} states `True`: a vacuous statement is never certified")
    stale_by = _staleness(ev).by_decl
    stale = [c for r in roots for c in stale_by.get(r, [])] + [c for b in bridges for c in stale_by.get(b.decl, [])]
    if stale:
        problems.append("certification is stale: " + "; ".join(stale))
    return finding(not problems, "; ".join(problems) if problems else how,
                   grade=result.grade, threshold=threshold, routing=result.routing)


def check_axiom_audit(ev: GateEvidence) -> Finding:
    module = _module_report(ev)
    if ev.no_lean is not None or module is None:
        return finding(False, _lean_missing_reason(ev, "axiom audit did not run"))
    allow = list(ev.axiom_allowlist)
    roots = ev.roots
    bad: dict[str, list[str]] = {}
    for r in roots:
        rec = _record(ev, r)
        if rec is None or not rec.found:
            bad[r] = ["root not found in the compiled environment"]
    for d in module.declarations:
        rejected = classify_axioms(d.axioms, allow)
        if rejected:
            bad.setdefault(d.name, []).extend(rejected)
    axioms = {r: rec.axioms for r in roots if (rec := _record(ev, r)) is not None and rec.found}
    evidence = {"axioms": axioms, "allow_list": allow, "declarations": len(module.declarations),
                **ev.inspector_evidence}
    if bad:
        order = roots + sorted(n for n in bad if n not in roots)
        return finding(False, "; ".join(f"{r}: {', '.join(bad[r])}" for r in order if r in bad), **evidence)
    return finding(True, f"transitive axioms of all {len(module.declarations)} declarations within "
                         "the allow-list", **evidence)


def check_environment_policy(ev: GateEvidence) -> Finding:
    module = _module_report(ev)
    if ev.no_lean is not None or module is None:
        return finding(False, _lean_missing_reason(ev, "the compiled module was not inspected"))
    declared = ev.declared_registrations
    findings = module_findings(module, expected_imports=list(ev.expected_imports),
                               extra_allow=ev.extension_allowlist, kernel_allow=ev.kernel_allow, declared=declared)
    allowlisted = extension_admissions([(e.name, e.entries) for e in module.extensions], ev.extension_allowlist)
    evidence = {"findings": findings, "extensions": {e.name: e.entries for e in module.extensions},
                "admitted_by_allowlist": allowlisted, "declared_registrations": sorted(declared),
                "imports": module.imports, **ev.inspector_evidence}
    return finding(not findings, "; ".join(findings) or
                   f"no axiom, unsafe, partial, opaque, implemented_by, extern or init declaration; "
                   f"{len(module.extensions)} extension(s) with entries, all admitted by Fyan's policy by effect"
                   + (f" ({'; '.join(allowlisted)})" if allowlisted else "") + "; imports as written by Fyan",
                   **evidence)


def check_source_lints(ev: GateEvidence) -> Finding:
    if ev.source is None:
        return finding(False, ev.source_problem or "no source")
    # a kernel-evaluated constant the project admits ([lean] kernel_allow) is decided by the
    # environment rule alone; the lint would otherwise refuse what the configuration allows
    findings = lint(model_part(ev.source), allow=frozenset({"kernel-evaluated"}) if ev.kernel_allow else frozenset())
    problems = [str(f) for f in lint_errors(findings)]
    if ev.source != ev.rendered_source:
        problems.insert(0, "Basic.lean was changed outside the model-written part (the imports, `open` "
                           "and namespace are Fyan's)")
    return finding(not problems, "; ".join(problems) or "no forbidden construct", findings=[str(f) for f in findings])


def check_kernel_replay(ev: GateEvidence) -> Finding:
    run = ev.kernel_replay
    if not ev.toolchain_found:
        return finding(None, "kernel replay unavailable: no Lean toolchain", required=False)
    if run.checker is None:
        return finding(None, "kernel replay unavailable: no leanchecker/lean4checker with this toolchain",
                       required=False, looked_in=run.looked_in)
    proc = run.process
    if ev.no_lean is not None or proc is None:
        return finding(False, f"kernel replay not run: {ev.no_lean or 'no workspace'}", required=True,
                       checker=run.checker)
    out = [line.strip() for line in proc.output.splitlines() if line.strip()]
    tail = next((line for line in out if "error" in line or "exception" in line), out[0] if out else "no output")
    name = Path(run.checker).name
    return finding(proc.ok, f"kernel replay of {ev.module} passed ({name})" if proc.ok
                   else f"kernel replay of {ev.module} failed ({proc.describe()}): {tail[:200]}",
                   required=True, checker=run.checker, command=" ".join(proc.argv), exit_code=proc.exit_code,
                   duration_s=proc.duration_s, log=run.log)


def _comparator_run(ev: GateEvidence) -> Finding:
    run = ev.comparator
    if run.comparator is None:
        where = ev.comparator_configured or "`comparator` on PATH"
        return finding(None, f"comparator unavailable: not found ({where})", required=False)
    if run.missing:  # honest absence, never a pass
        return finding(None, f"comparator unavailable: {run.comparator} is installed but it needs "
                             f"{', '.join(run.missing)}", required=False, comparator=run.comparator)
    if ev.no_lean is not None:
        return finding(False, f"comparator not run: {ev.no_lean}", required=True, comparator=run.comparator)
    if run.package_problem is not None:
        return finding(False, f"comparator not run: its Lake package cannot be prepared: {run.package_problem}",
                       required=True, comparator=run.comparator)
    proc = run.process
    if proc is None:
        return finding(False, "comparator not run: no workspace", required=True, comparator=run.comparator)
    out = [line.strip() for line in proc.output.splitlines() if line.strip()]
    return finding(proc.ok, f"comparator accepts {ev.module} against the audited statement" if proc.ok
                   else f"comparator rejects {ev.module} ({proc.describe()}): {(out[-1] if out else 'no output')[:200]}",
                   required=True, comparator=run.comparator, config=run.config, command=" ".join(proc.argv),
                   exit_code=proc.exit_code, log=run.log, nanoda=run.nanoda)


def check_comparator(ev: GateEvidence) -> Finding:
    """Comparator's verdict; and on a toolchain with known kernel soundness bugs
    (``fyan.lean.mathlib.KERNEL_BUGS``) the Lean kernel's acceptance is not enough: the unit
    completes only when comparator accepted it with the nanoda kernel as well (its
    ``enable_nanoda``). Otherwise ``comparator`` fails as an environment problem (no candidate
    can fix it: the toolchain or the checkers must change), naming each bug and its fix."""
    from fyan.lean.mathlib import affected_by, bug_text

    found = _comparator_run(ev)
    if not ev.toolchain_found or ev.no_lean is not None:
        return found
    bugs = affected_by(ev.lean_version)
    if not bugs or (found.passed and found.evidence.get("nanoda")):
        return found
    reason = (f"Lean {ev.lean_version or ev.toolchain_version} has known kernel soundness bugs: {bug_text(bugs)}; "
              "on it a unit completes only when an independent kernel re-checked it (comparator with nanoda: "
              "install comparator, landrun, lean4export and nanoda_bin), and that did not happen "
              f"({found.reason}); or move the project to a fixed toolchain (`fyan upgrade --mathlib TAG`)")
    return finding(False, reason, required=True, environment=reason,
                   **{"kernel_bugs": [b.issue for b in bugs], **found.evidence})


_PROCESS = frozenset({"toolchain_found", "no_lean", "module"})

#: The checks of the completion gate, in the report's order: each one's name, the evidence fields
#: it reads (with the helpers it calls) and its function. ``CHECK_ORDER`` and ``REQUIRED`` follow.
CHECKS: tuple[Check, ...] = (
    Check("sorry_free", frozenset({"no_lean", "build", "module_file", "inspector_evidence", "freezes"})
          | _LEAN_MISSING | _MODULE, check_sorry_free),
    Check("build", frozenset({"build", "no_lean", "lean_failure", "build_evidence", "changed_during_gate"}),
          check_build),
    Check("frozen_statements", _STALENESS, check_frozen_statements),
    Check("bridge_obligations", _BRIDGES, check_bridge_obligations),
    Check("semantic_certification", frozenset({"audit_result", "audit_problem", "audit_threshold"})
          | _BRIDGES | _STALENESS, check_semantic_certification),
    Check("axiom_audit", frozenset({"axiom_allowlist", "freezes", "inspector_evidence"}) | _LEAN_MISSING | _MODULE,
          check_axiom_audit),
    Check("environment_policy", frozenset({"declared_registrations", "expected_imports", "extension_allowlist",
                                           "kernel_allow", "inspector_evidence"}) | _LEAN_MISSING | _MODULE,
          check_environment_policy),
    Check("source_lints", frozenset({"source", "source_problem", "rendered_source", "kernel_allow"}),
          check_source_lints),
    Check("kernel_replay", frozenset({"kernel_replay"}) | _PROCESS, check_kernel_replay),
    Check("comparator", frozenset({"comparator", "comparator_configured", "lean_version", "toolchain_version"})
          | _PROCESS, check_comparator),
)

CHECK_ORDER = tuple(c.name for c in CHECKS)
#: Checks that must pass; the independent checkers are required only when installed.
REQUIRED = frozenset(CHECK_ORDER) - {"kernel_replay", "comparator"}


class _Undeclared:
    """What a check sees in a field it did not declare (``Check.reads``): any use raises."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"the check read the evidence field {object.__getattribute__(self, '_name')!r} "
                        "without declaring it in Check.reads")

    __getattr__ = __setattr__ = __bool__ = __iter__ = __len__ = __eq__ = __hash__ = __contains__ = _refuse
    __getitem__ = __str__ = __format__ = __lt__ = __gt__ = __le__ = __ge__ = __call__ = _refuse


FIELDS = frozenset(f.name for f in dataclasses.fields(GateEvidence))


def view(ev: GateEvidence, reads: frozenset[str]) -> GateEvidence:
    """``ev`` as a check declaring ``reads`` may see it: deep copies of those fields (so that no
    check changes what another check or the verdict sees), every other field ``_Undeclared``."""
    fields: dict[str, Any] = {name: copy.deepcopy(getattr(ev, name)) if name in reads else _Undeclared(name)
                              for name in FIELDS}
    return dataclasses.replace(ev, **fields)


def run_check(check: Check, ev: GateEvidence) -> Finding:
    """One check on its view of ``ev`` (``view``); a check that raises fails with the error as
    its reason (never a pass)."""
    try:
        return check.decide(view(ev, check.reads))
    except Exception as e:
        return finding(False, f"internal error in the check {check.name}: {type(e).__name__}: {e}")


def result_of(name: str, found: Finding) -> CheckResult:
    """``found`` as the report's ``CheckResult`` of check ``name``."""
    return CheckResult(name=name, status="pass" if found.ok else ("unavailable" if found.ok is None else "fail"),
                       required=name in REQUIRED if found.required is None else found.required,
                       reason=found.reason, evidence=dict(found.evidence))


@dataclass(frozen=True)
class Verdict:
    """The fold of ``CHECKS`` over one evidence: every check's result in ``CHECK_ORDER``, and the
    environment problem (the collection's, else the first a check found)."""

    checks: tuple[CheckResult, ...]
    environment: str | None


def decide(ev: GateEvidence, checks: tuple[Check, ...] = CHECKS) -> Verdict:
    """Every check of ``checks`` on ``ev``; pure (``GateEvidence`` is never changed)."""
    results = []
    environment = ev.environment
    for check in checks:
        found = run_check(check, ev)
        results.append(result_of(check.name, found))
        environment = environment or found.environment
    return Verdict(tuple(results), environment)


class GateLock:
    """Serializes gate runs of one unit across processes (``.fyan/locks/gate-<unit>.lock``,
    ``flock``: released by the kernel when a holder dies). ``waited_s`` says how long the
    holder made this run wait."""

    def __init__(self, project: Project, unit_id: str) -> None:
        self.path = project.paths.state / "locks" / f"gate-{unit_id}.lock"
        self.waited_s = 0.0
        self._fh: IO[str] | None = None

    def __enter__(self) -> GateLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "a+", encoding="utf-8")
        start = time.monotonic()
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX)
        self.waited_s = round(time.monotonic() - start, 3)
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        self._fh.flush()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None


def _checked_output(collector: Collector) -> dict[str, Any]:
    """The compiled module a passing gate hands over (``GateReport.module_outputs_b64``):
    what ``trusted.module_outputs`` read right after the build, only when it is still what
    the inspector and the kernel replay read (``checked/``)."""
    ws, outputs = collector.ws, collector.outputs
    if not outputs or ws is None or trusted.module_outputs(ws, collector.module) != outputs:
        return {}
    return {"module_outputs_b64": {k: base64.b64encode(v).decode("ascii") for k, v in outputs.items()},
            "module_olean_sha256": hashlib.sha256(outputs["Basic.olean"]).hexdigest()}


def _gate(project: Project, store: Store, unit: UnitRecord, log_dir: Path, discovery: Discovery | None) -> GateReport:
    collector = Collector(project, store, unit, log_dir, discovery)
    try:
        ev = collector.collect()
        verdict = decide(ev)
        checks = list(verdict.checks)
        build = next(c for c in checks if c.name == "build")
        checks += shadow_checks(project, unit, ev.source, ev.roots, collector.discovery, log_dir,
                                built=build.passed, workspace=collector.ws, inspector=collector.inspector)
        passed = all(c.passed for c in checks if c.required)
        olean = _checked_output(collector) if passed else {}
    finally:
        if collector.ws is not None:
            collector.ws.remove()
    inspector = collector.inspector
    return GateReport(
        unit=unit.id, passed=passed, roots=ev.roots, checks=checks, **olean,
        toolchain=ev.toolchain_version, toolchain_pin=ev.pin, toolchain_trust=ev.trust,
        sandbox=sandbox_statement(project),
        inspector=(f"{inspector.executable} (sha256 {inspector.sha256[:16]}…; {inspector.note})"
                   if inspector is not None else None),
        workspace=collector.rel(collector.ws.root) if collector.ws is not None else None,
        log_dir=collector.rel(log_dir), environment_problem=verdict.environment,
        environment_transient=ev.environment is not None and ev.environment_transient, created_at=time.time(),
    )


def run_gate(project: Project, store: Store, unit: UnitRecord, log_dir: Path,
             discovery: Discovery | None = None) -> GateReport:
    """Run the completion gate for ``unit`` under its ``GateLock``; logs (builds, inspector,
    kernel replay, comparator; each ``.log`` with a ``.log.json`` record) and the inspector's
    reports go to ``log_dir``. Never raises for bad Lean input."""
    log_dir.mkdir(parents=True, exist_ok=True)
    with GateLock(project, unit.id):
        return _gate(project, store, unit, log_dir, discovery)


__all__ = ["CHECKS", "CHECK_ORDER", "COMPARATOR_PREREQUISITES", "REQUIRED", "Check", "CheckResult", "Finding",
           "GateEvidence", "GateLock", "GateReport", "Verdict", "classify_axioms", "decide", "find_comparator",
           "find_nanoda", "inspector_environment_problem", "missing_comparator_prerequisites", "report_json",
           "report_text", "run_gate", "sandbox_statement", "transient_process", "upstream"]
