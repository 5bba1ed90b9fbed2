"""The completion gate (DESIGN.md §3): deterministic, model-free, fail closed.

A unit is complete only when, for each completion root (the active frozen declarations with
role ``root``), every required check passes:

1. ``sorry_free`` — the sorry count in the unit's scope is known and zero: no probed
   declaration has ``sorryAx`` among its transitive axioms **and** the build diagnostics of
   the unit's own file show no sorry warning (either wording, or ``kind: hasSorry``). Either
   piece missing → "unknown" → fail. The warning alone is never trusted: it changed wording in
   v4.28 and ``set_option warn.sorry false`` removes it;
2. ``build`` — the workspace's ``lean-toolchain`` pins the toolchain found
   (``fyan.lean.toolchain.check_pin``) and ``lake build <unit module>`` succeeds, judged by
   ``fyan.lean.lake.lake_build`` (timeout, crash, silence or unknown output fail);
3. ``frozen_statements`` — every frozen declaration is in the source with the same normalized
   signature, its bound files are unchanged, and in the compiled environment it exists in the
   unit's module, has the frozen kind, the same elaborated statement (SHA-256 of its full term
   structure) and the same local definitions (``fyan.lean.signatures``); any difference makes
   the certification stale and the reason names what changed;
4. ``bridge_obligations`` — every required bridge (role ``bridge``) is still declared, exists in
   the compiled environment as a theorem, and is sorry-free and axiom-clean;
5. ``semantic_certification`` — the audit result freezes the root with grade ≥ threshold (or a
   discharged bridge certifies it), no root states ``True``, and nothing it was certified
   against changed (not stale);
6. ``axiom_audit`` — the probe's transitive axioms of each root are in ``[lean]
   axiom_allowlist`` (default propext, Classical.choice, Quot.sound); ``sorryAx``, user
   axioms, ``Lean.ofReduceBool``, ``Lean.trustCompiler`` and ``*._native.*`` are named, with why,
   when rejected. The root must be found in the compiled environment (defeats ``#exit``).

Two more checks: ``source_lints`` (required: the file is Fyan's rendering — imports, ``open``,
namespace — around the model-written declarations, which must not use the constructs in
``fyan.lean.lints``) and ``kernel_replay`` (``leanchecker``/``lean4checker`` on the unit's module
when the toolchain has one; required then; its absence is reported as ``unavailable``, never as
a pass, and does not block).

Evidence comes only from the compiled environment through the nonce-tagged probe
(``fyan.lean.probe``) and from parsed build diagnostics; never from text the candidate printed
while compiling. Without a toolchain, every Lean-dependent check fails with the discovery
problem (``TOOLCHAIN_MISSING``). Bad input (no recorded candidate, an edited file, a workspace
that cannot be written, a missing lakefile or pin, a toolchain that times out, crashes, prints
nothing or prints an unknown format, probe output with another nonce) is a failed check with
its reason, never an exception and never a pass.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from fyan.audit.record import AuditResult
from fyan.lean import declarations
from fyan.lean.lake import BuildResult, lake_build, lake_env
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.lean.package import model_part, render_unit_file, unit_module, upstream
from fyan.lean.probe import ProbeRecord, ProbeResult, run_probe
from fyan.lean.runner import bwrap_status
from fyan.lean.signatures import compare_compiled, compare_source
from fyan.lean.toolchain import Discovery, check_pin, discover, find_kernel_checker
from fyan.lean.workspace import Workspace, prepare_workspace
from fyan.project import Project
from fyan.state.models import FreezeRecord, UnitRecord
from fyan.state.store import Store

CHECK_ORDER = (
    "sorry_free", "build", "frozen_statements", "bridge_obligations", "semantic_certification",
    "axiom_audit", "source_lints", "kernel_replay",
)
#: Checks that must pass; ``kernel_replay`` is required only when a checker is available.
REQUIRED = frozenset(CHECK_ORDER) - {"kernel_replay"}

#: Axioms rejected by name whatever the allow-list says.
REJECT_ALWAYS = {
    "sorryAx": "sorry: an unfinished proof",
    "Lean.ofReduceBool": "native_decide/compiler evaluation: trusts the compiler",
    "Lean.trustCompiler": "native_decide/compiler evaluation: trusts the compiler",
}
#: Axioms of Lean's core library (anything else is a user axiom).
CORE_AXIOMS = {"propext", "Classical.choice", "Quot.sound", "sorryAx", "Lean.ofReduceBool", "Lean.trustCompiler"}


class CheckResult(BaseModel):
    name: str
    status: Literal["pass", "fail", "unavailable"]
    required: bool = True
    reason: str
    evidence: dict[str, Any] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == "pass"


class GateReport(BaseModel):
    """The gate's verdict with every check, its evidence and its reason.

    ``toolchain``: what ``lake --version`` said (None: no toolchain); ``toolchain_pin``: the
    workspace's ``lean-toolchain``; ``sandbox``: how builds were isolated (or why not);
    ``log_dir``: where the build and probe logs of this run are. ``environment_problem``: why
    Lean could not run here at all (no toolchain, a wrong or missing pin, a broken workspace or
    package, a sandbox refusal): no candidate can fix that, so the stage flow blocks the unit
    instead of asking the Formalizer again.
    """

    unit: str
    passed: bool
    roots: list[str]
    checks: list[CheckResult]
    toolchain: str | None = None
    toolchain_pin: str | None = None
    sandbox: str | None = None
    log_dir: str | None = None
    environment_problem: str | None = None
    created_at: float

    def check(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    @property
    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if c.required and not c.passed]

    def summary(self) -> str:
        if self.passed:
            return "all required checks passed"
        return "; ".join(f"{c.name}: {c.reason}" for c in self.failures)


def classify_axioms(axioms: list[str], allow: list[str]) -> list[str]:
    """The axioms of ``axioms`` that the allow-list does not admit, each with the reason."""
    bad = []
    for a in axioms:
        if a in REJECT_ALWAYS:
            bad.append(f"{a} (rejected by name: {REJECT_ALWAYS[a]})")
        elif "._native." in a or a.startswith("_native."):
            bad.append(f"{a} (rejected by name: native_decide/bv_decide axiom, trusts the compiler)")
        elif a in allow:
            continue
        elif a not in CORE_AXIOMS:
            bad.append(f"{a} (user axiom, not in the allow-list)")
        else:
            bad.append(f"{a} (not in the allow-list)")
    return bad


def _frozen_kind_ok(freeze: FreezeRecord, record: ProbeRecord) -> str | None:
    kind = freeze.normalized_signature.split(" ", 1)[0]
    if kind == "theorem" and record.kind != "theorem":
        return f"{freeze.decl}: frozen as a theorem, compiled as a {record.kind}"
    if kind in ("def", "abbrev", "instance") and record.kind not in ("def",):
        return f"{freeze.decl}: frozen as a {kind}, compiled as a {record.kind}"
    return None


class _Gate:
    def __init__(self, project: Project, store: Store, unit: UnitRecord, log_dir: Path, discovery: Discovery | None):
        self.project = project
        self.store = store
        self.unit = unit
        self.log_dir = log_dir
        self.discovery = discovery or discover(project.config.lean, cwd=project.paths.lean)
        self.results: dict[str, CheckResult] = {}
        self.module = unit_module(project, unit)
        # Lean evidence (filled by _lean) and why it is missing
        self.ws: Workspace | None = None
        self.build: BuildResult | None = None
        self.probe: ProbeResult | None = None
        self.reference: ProbeResult | None = None
        self.reference_problem: str | None = None
        self.no_lean: str | None = None
        self.pin: str | None = None
        self.environment: str | None = None  # why Lean could not run here (not the candidate's fault)
        self.stale: dict[str, list[str]] = {}

    def put(self, name: str, ok: bool | None, reason: str, required: bool | None = None, **evidence: Any) -> None:
        status = "pass" if ok else ("unavailable" if ok is None else "fail")
        self.results[name] = CheckResult(
            name=name, status=status, required=name in REQUIRED if required is None else required,
            reason=reason, evidence=evidence,
        )

    def rel(self, path: Path | str | None) -> str | None:
        if path is None:
            return None
        try:
            return self.project.paths.rel(Path(path))
        except ValueError:
            return str(path)

    # -- inputs ----------------------------------------------------------------------------
    def _recorded(self, name: str) -> tuple[str | None, str | None]:
        """(text, problem) of ``units/<unit>/<name>``, which must match its recorded sha256."""
        from fyan.state.gateway import sha256_file

        path = self.project.paths.unit(self.unit.id) / name
        recorded = self.store.artifact(self.unit.id, name)
        if recorded is None:
            return None, f"no {name} recorded for this unit (the stage that writes it has not passed)"
        if not path.is_file():
            return None, f"units/{self.unit.id}/{name} is missing (recorded sha256 {recorded.sha256[:12]}…)"
        try:
            if sha256_file(path) != recorded.sha256:
                return None, f"units/{self.unit.id}/{name} differs from the recorded artifact (edited after its stage)"
            return path.read_text(encoding="utf-8"), None
        except (OSError, UnicodeDecodeError) as e:
            return None, f"units/{self.unit.id}/{name} is unreadable: {e}"

    def run(self) -> GateReport:
        freezes = self.store.freezes(self.unit.id)
        roots = [f.decl for f in freezes if f.role == "root"]
        bridges = [f for f in freezes if f.role == "bridge"]
        source, problem = self._recorded("Basic.lean")
        if not roots:
            problem = problem or "no frozen root declaration: the audit has not frozen a statement"
        decls = declarations.scan(source) if source is not None else []

        if source is not None:
            findings = lint(model_part(source))
            problems = [str(f) for f in lint_errors(findings)]
            if source != render_unit_file(self.project, self.store, self.unit, model_part(source), "Basic"):
                problems.insert(0, "Basic.lean was changed outside the model-written part (the imports, `open` "
                                   "and namespace are Fyan's)")
            self.put("source_lints", not problems, "; ".join(problems) or "no forbidden construct",
                     findings=[str(f) for f in findings])
        else:
            self.put("source_lints", False, problem or "no source")

        self._lean(source, problem, freezes)
        self._sorry(roots)
        self._axioms(roots)
        self._frozen(freezes, decls, problem)
        self._bridges(bridges, decls)
        self._semantic(roots, bridges, decls)
        self._kernel_replay()

        checks = [self.results[n] for n in CHECK_ORDER]
        from fyan.shadow.gate import shadow_checks  # units with a shadow set need SA-Pass = 1 (issue 6)

        checks += shadow_checks(self.project, self.unit, source, roots, self.discovery, self.log_dir,
                                built=self.results["build"].passed)
        tc = self.discovery.toolchain
        return GateReport(
            unit=self.unit.id, passed=all(c.passed for c in checks if c.required), roots=roots, checks=checks,
            toolchain=tc.version if tc else None, toolchain_pin=self.pin, sandbox=self._sandbox_note(),
            log_dir=self.rel(self.log_dir), environment_problem=self.environment, created_at=time.time(),
        )

    def _sandbox_note(self) -> str:
        mode = self.project.config.lean.sandbox
        if mode == "off":
            return "off ([lean] sandbox = \"off\"): builds run unsandboxed"
        path, why = bwrap_status()
        if path is None:
            return f"{mode}: " + ("builds refused: " if mode == "require" else "builds run unsandboxed: ") + why
        return f"{mode}: {why}"

    # -- Lean evidence -----------------------------------------------------------------------
    def _lean(self, source: str | None, problem: str | None, freezes: list[FreezeRecord]) -> None:
        cfg = self.project.config.lean
        tc = self.discovery.toolchain
        if problem is not None:
            self.no_lean = problem
        elif tc is None:
            self.no_lean = self.environment = self.discovery.problem or "Lean toolchain not found"
        if self.no_lean is not None:
            self.put("build", False, self.no_lean)
            return
        assert tc is not None and source is not None
        statement, st_problem = self._recorded("Statement.lean")
        files = {"Basic": source}
        if statement is not None:
            files["Statement"] = statement
        try:
            self.ws = prepare_workspace(self.project, self.unit, files)
        except OSError as e:
            ws = self.project.paths.workspace(self.unit.id)
            self.no_lean = self.environment = (
                f"cannot prepare the workspace {self.rel(ws)}: {e.strerror or e} "
                f"({getattr(e, 'filename', None) or ws}); make it writable or delete it (Fyan recreates it)")
            self.put("build", False, self.no_lean)
            return
        if not self.ws.lakefile.is_file():
            self.no_lean = self.environment = (
                f"workspace {self.rel(self.ws.root)} has no lakefile.toml: the project's Lake package "
                f"{self.rel(self.project.paths.lean / 'lakefile.toml')} is missing; restore it "
                "(it is written from lake-template/ when the project is created)")
            self.put("build", False, self.no_lean)
            return
        pin = check_pin(tc, self.ws.root)
        self.pin = pin.pin
        if not pin.ok:
            self.no_lean = self.environment = pin.reason
            self.put("build", False, pin.reason, toolchain=tc.version, pin=pin.pin)
            return
        self.build = lake_build(tc, self.ws.root, [self.module], cfg, self.log_dir, "build")
        self.put("build", self.build.ok, self.build.reason, toolchain=tc.version, pin=pin.pin,
                 **{**self.build.evidence(), "log": self.rel(self.build.log_file)})
        if not self.build.ok:
            self.no_lean = f"the build failed ({self.build.reason})"
            if self.build.process.refused:
                self.environment = self.build.reason
            return
        names = list(dict.fromkeys(f.decl for f in freezes))
        lib = self.project.config.lean_lib
        self.probe = run_probe(tc, self.ws.root, [self.module], names, cfg, self.log_dir / "probe.log", local_prefix=lib)
        if not self.probe.ok:
            self.no_lean = f"the probe gave no evidence: {self.probe.problem}"
            return
        need_reference = [f.decl for f in freezes if f.type_hash is None]
        if need_reference:
            if statement is None:
                self.reference_problem = st_problem
                return
            st_module = unit_module(self.project, self.unit, "Statement")
            ref_build = lake_build(tc, self.ws.root, [st_module], cfg, self.log_dir, "reference-build")
            if not ref_build.ok:
                self.reference_problem = f"the audited Statement.lean does not build now: {ref_build.reason}"
                return
            present = [d for d in need_reference if declarations.find(declarations.scan(statement), d)]
            self.reference = run_probe(tc, self.ws.root, [st_module], present, cfg, self.log_dir / "reference-probe.log",
                                       local_prefix=lib)
            if not self.reference.ok:
                self.reference_problem = f"probe of the audited Statement.lean failed: {self.reference.problem}"

    def _probe_evidence(self) -> dict[str, Any]:
        p = self.probe
        if p is None or p.process is None:
            return {}
        return {"probe_command": " ".join(p.process.argv), "probe_exit_code": p.process.exit_code,
                "probe_duration_s": p.process.duration_s, "probe_log": self.rel(self.log_dir / "probe.log"),
                "ignored_probe_lines": p.ignored_lines}

    def _lean_missing_reason(self, prefix: str) -> str:
        if self.discovery.toolchain is None:
            return self.no_lean or "Lean toolchain not found"
        return f"{prefix}: {self.no_lean}"

    # -- individual checks -----------------------------------------------------------------
    def _sorry(self, roots: list[str]) -> None:
        if self.no_lean is not None or self.build is None or self.probe is None:
            self.put("sorry_free", False, self._lean_missing_reason("sorry count unknown"))
            return
        assert self.ws is not None
        rel = self.ws.module_file(self.module).relative_to(self.ws.root).as_posix()
        log = self.build.log
        seen = log.succeeded is True or any(j.target == self.module for j in log.jobs)
        warnings = [d for d in self.build.diagnostics_in({rel}) if d.is_sorry]
        with_sorry = sorted(n for n, r in self.probe.records.items() if "sorryAx" in r.axioms)
        evidence = {"sorry_warnings": len(warnings), "warning_lines": [d.line for d in warnings],
                    "declarations_with_sorryAx": with_sorry, "file": rel, **self._probe_evidence()}
        absent = [r for r in roots if not self.probe.records[r].found]
        if absent:
            self.put("sorry_free", False, f"sorry count unknown: {', '.join(absent)} not in the compiled environment",
                     **evidence)
        elif not seen:
            self.put("sorry_free", False, f"sorry count unknown: the build output does not show {self.module}",
                     **evidence)
        elif with_sorry and not warnings:
            self.put("sorry_free", False, f"sorryAx in the axioms of {', '.join(with_sorry)} although {rel} shows no "
                                          "sorry warning (silenced, or sorry reached without the token)", **evidence)
        elif with_sorry or warnings:
            where = f"line(s) {', '.join(str(d.line) for d in warnings)}" if warnings else "no line"
            self.put("sorry_free", False, f"sorry count {len(warnings) + len(with_sorry)}: {len(warnings)} sorry "
                                          f"warning(s) in {rel} ({where}); sorryAx in the axioms of "
                                          f"{', '.join(with_sorry) or 'no probed declaration'}", **evidence)
        else:
            self.put("sorry_free", True, "sorry count is 0 (probe axioms and build diagnostics agree)", **evidence)

    def _axioms(self, roots: list[str]) -> None:
        if self.no_lean is not None or self.probe is None:
            self.put("axiom_audit", False, self._lean_missing_reason("axiom audit did not run"))
            return
        allow = self.project.config.lean.axiom_allowlist
        bad: dict[str, list[str]] = {}
        for r in roots:
            rec = self.probe.records[r]
            if not rec.found:
                bad[r] = ["root not found in the compiled environment"]
                continue
            rejected = classify_axioms(rec.axioms, allow)
            if rejected:
                bad[r] = rejected
        axioms = {r: self.probe.records[r].axioms for r in roots if self.probe.records[r].found}
        evidence = {"axioms": axioms, "allow_list": allow, **self._probe_evidence()}
        if bad:
            self.put("axiom_audit", False, "; ".join(f"{r}: {', '.join(v)}" for r, v in bad.items()), **evidence)
        else:
            self.put("axiom_audit", True, "transitive axioms of every root within the allow-list", **evidence)

    def _frozen(self, freezes: list[FreezeRecord], decls, problem: str | None) -> None:
        if not freezes:
            self.put("frozen_statements", False, problem or "nothing frozen")
            return
        changes: list[str] = []
        compared: dict[str, list[str]] = {}
        for f in freezes:
            c = compare_source(f, decls, self.project.paths.root) if problem is None else None
            if c is not None:
                changes += c.changes
                compared[f.decl] = c.compared
                if c.changes:
                    self.stale.setdefault(f.decl, []).extend(c.changes)
        if problem is not None:
            self.put("frozen_statements", False, problem, frozen=[f.decl for f in freezes])
            return
        if self.no_lean is not None or self.probe is None:
            reason = "; ".join(changes) if changes else "frozen signatures and bound files unchanged in the source"
            self.put("frozen_statements", False,
                     reason + "; not confirmed in the compiled environment (" + (self.no_lean or "no probe") + ")",
                     frozen=[f.decl for f in freezes], compared=compared)
            return
        tc = self.discovery.toolchain
        hashes = {}
        for f in freezes:
            rec = self.probe.records.get(f.decl)
            ref = self.reference.records.get(f.decl) if self.reference is not None and self.reference.ok else None
            c = compare_compiled(f, rec, tc.version if tc else None, ref)
            if f.type_hash is None and ref is None and self.reference_problem:
                c.changes = [f"{f.decl}: no elaborated reference: frozen without a toolchain, and {self.reference_problem}"]
            if rec is not None and rec.found:
                hashes[f.decl] = rec.statement_hash
                wrong_kind = _frozen_kind_ok(f, rec)
                if wrong_kind:
                    c.changes.append(wrong_kind)
                if rec.module and rec.module != self.module:
                    c.changes.append(f"{f.decl}: declared in module {rec.module}, not in the unit's module {self.module}")
            changes += c.changes
            compared.setdefault(f.decl, []).extend(c.compared)
            if c.changes:
                self.stale.setdefault(f.decl, []).extend(c.changes)
        ok = not changes
        self.put("frozen_statements", ok,
                 "frozen signatures, bound inputs and elaborated statements unchanged" if ok
                 else "certification stale: " + "; ".join(changes),
                 frozen=[f.decl for f in freezes], statement_hashes=hashes, compared=compared,
                 **({"reference": "audited Statement.lean elaborated now"} if self.reference is not None else {}))

    def _bridges(self, bridges: list[FreezeRecord], decls) -> None:
        if not bridges:
            self.put("bridge_obligations", True, "no bridge obligation required")
            return
        names = [b.decl for b in bridges]
        deleted = [b.decl for b in bridges if declarations.find(decls, b.decl) is None] if decls else []
        if self.no_lean is not None or self.probe is None:
            lead = f"bridge declaration(s) deleted from Basic.lean: {', '.join(deleted)}; " if deleted else ""
            self.put("bridge_obligations", False,
                     lead + self._lean_missing_reason("bridge obligations not checked in the compiled environment"),
                     bridges=names, deleted=deleted)
            return
        problems = [f"{d}: deleted from Basic.lean" for d in deleted]
        for b in bridges:
            rec = self.probe.records.get(b.decl)
            if rec is None or not rec.found:
                problems.append(f"{b.decl}: missing from the compiled environment")
                continue
            if rec.kind != "theorem":
                problems.append(f"{b.decl}: is a {rec.kind}, not a proved theorem")
            rejected = classify_axioms(rec.axioms, self.project.config.lean.axiom_allowlist)
            if rejected:
                problems.append(f"{b.decl}: not discharged: {', '.join(rejected)}")
        self.put("bridge_obligations", not problems, "; ".join(problems) or "every bridge obligation discharged",
                 bridges=names, axioms={b: self.probe.records[b].axioms for b in names
                                        if b in self.probe.records and self.probe.records[b].found})

    def _semantic(self, roots: list[str], bridges: list[FreezeRecord], decls) -> None:
        path = self.project.paths.unit(self.unit.id) / "audit" / "result.json"
        if not path.is_file():
            self.put("semantic_certification", False, "no audit result for this unit")
            return
        try:
            result = AuditResult.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValueError, OSError) as e:
            self.put("semantic_certification", False, f"unreadable audit result: {str(e).splitlines()[0]}")
            return
        threshold = self.project.config.audit.threshold
        problems: list[str] = []
        if result.routing == "freeze" and result.grade is not None and result.grade >= threshold and roots:
            how = f"audit grade {result.grade} >= threshold {threshold}"
        elif bridges and result.routing == "bridge" and result.bridge is not None and result.bridge.result.valid \
                and (result.bridge.result.grade or 0) >= threshold and {b.decl for b in bridges} == {result.bridge.name}:
            how = (f"audit grade {result.grade}, certified through the bridge obligation {result.bridge.name} "
                   f"(S0 audited with grade {result.bridge.result.grade})")
            if not self.results["bridge_obligations"].passed:
                problems.append("the bridge obligation is not discharged (see bridge_obligations)")
        elif bridges:
            how = ""
            problems.append("the bridge obligation does not match an audited S0 (routing, S0 grade or name)")
        else:
            how = ""
            problems.append(f"audit grade {result.grade} below threshold {threshold}" if result.valid
                            else "audit record was rejected")
        for r in roots:
            d = declarations.find(decls, r)
            rec = self.probe.records.get(r) if self.probe is not None and self.probe.ok else None
            vacuous_text = d is not None and d.kind == "theorem" and d.type_text in ("True", "⊤")
            if vacuous_text or (rec is not None and rec.conclusion_true):
                problems.append(f"root {r} states `True`: a vacuous statement is never certified")
        stale = [c for r in roots for c in self.stale.get(r, [])] + [c for b in bridges for c in self.stale.get(b.decl, [])]
        if stale:
            problems.append("certification is stale: " + "; ".join(stale))
        self.put("semantic_certification", not problems, "; ".join(problems) if problems else how,
                 grade=result.grade, threshold=threshold, routing=result.routing)

    def _kernel_replay(self) -> None:
        tc = self.discovery.toolchain
        if tc is None:
            self.put("kernel_replay", None, "kernel replay unavailable: no Lean toolchain", required=False)
            return
        checker, looked = find_kernel_checker(tc, cwd=self.ws.root if self.ws is not None else None)
        if checker is None:
            self.put("kernel_replay", None, "kernel replay unavailable: no leanchecker/lean4checker with this toolchain",
                     required=False, looked_in=looked)
            return
        if self.no_lean is not None or self.ws is None:
            self.put("kernel_replay", False, f"kernel replay not run: {self.no_lean or 'no workspace'}",
                     required=True, checker=str(checker))
            return
        proc = lake_env(tc, self.ws.root, [str(checker), self.module], self.project.config.lean, self.log_dir,
                        "kernel-replay")
        ok = proc.ok
        out = [line.strip() for line in proc.output.splitlines() if line.strip()]
        tail = [next((line for line in out if "error" in line or "exception" in line), out[0] if out else "no output")]
        self.put("kernel_replay", ok, f"kernel replay of {self.module} passed ({checker.name})" if ok
                 else f"kernel replay of {self.module} failed ({proc.describe()}): {tail[0][:200]}",
                 required=True, checker=str(checker), command=" ".join(proc.argv), exit_code=proc.exit_code,
                 duration_s=proc.duration_s, log=self.rel(self.log_dir / "kernel-replay.log"))


def run_gate(project: Project, store: Store, unit: UnitRecord, log_dir: Path,
             discovery: Discovery | None = None) -> GateReport:
    """Run the completion gate for ``unit``; logs (build, probe, kernel replay; each ``.log``
    with a ``.log.json`` record) go to ``log_dir``. Never raises for bad Lean input."""
    log_dir.mkdir(parents=True, exist_ok=True)
    return _Gate(project, store, unit, log_dir, discovery).run()


def report_json(report: GateReport) -> bytes:
    return json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=False).encode("utf-8") + b"\n"


def report_text(report: GateReport) -> str:
    """The human form of a report (``fyan gate``): the verdict, the context, one line per check
    with its reason, and the key evidence under it."""
    lines = [f"Completion gate for {report.unit}: {'PASSED' if report.passed else 'NOT PASSED'}"]
    lines.append(f"  roots: {', '.join(report.roots) or '(none frozen)'}")
    pin = f"; lean-toolchain: {report.toolchain_pin}" if report.toolchain_pin else ""
    lines.append(f"  toolchain: {report.toolchain or 'none'}{pin}")
    if report.sandbox:
        lines.append(f"  sandbox: {report.sandbox}")
    if report.log_dir:
        lines.append(f"  logs: {report.log_dir}")
    for c in report.checks:
        mark = {"pass": "ok  ", "fail": "FAIL", "unavailable": "n/a "}[c.status]
        lines.append(f"  [{mark}] {c.name}{'' if c.required else ' (not required)'}: {c.reason}")
        ev = c.evidence
        if c.name == "build" and "command" in ev:
            lines.append(f"         $ {ev['command']}  (exit {ev['exit_code']}, {ev['duration_s']} s, "
                         f"{'sandboxed' if ev.get('sandboxed') else 'not sandboxed'}; log {ev.get('log')})")
        if c.name == "axiom_audit" and ev.get("axioms"):
            for root, axioms in ev["axioms"].items():
                lines.append(f"         {root}: [{', '.join(axioms)}]")
        if c.name == "sorry_free" and "sorry_warnings" in ev:
            lines.append(f"         sorry warnings: {ev['sorry_warnings']}; sorryAx in: "
                         f"{', '.join(ev['declarations_with_sorryAx']) or 'none'}")
        if c.name == "source_lints" and ev.get("findings"):
            lines += [f"         {f}" for f in ev["findings"][:10]]
    return "\n".join(lines)


__all__ = ["CheckResult", "GateReport", "run_gate", "classify_axioms", "report_json", "report_text", "upstream"]
