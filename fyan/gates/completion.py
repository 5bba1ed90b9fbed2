"""The completion gate (DESIGN.md §3): deterministic, model-free, fail closed.

A unit is complete only when, for each completion root (the active frozen declarations with
role ``root``), all required checks pass:

1. ``sorry_free`` — the sorry count in the unit's scope is known and zero: the probe found no
   ``sorryAx`` among the root's transitive axioms **and** the build diagnostics of the unit's
   own file show no sorry warning. Either piece missing → "unknown" → fail;
2. ``build`` — ``lake build`` of the unit's module succeeds with the configured toolchain;
3. ``frozen_statements`` — every frozen declaration is in the source with the same normalized
   signature, exists in the compiled environment with the frozen type hash (when one was
   recorded), and its bound inputs (``problem.tex``, upstream unit files) are unchanged;
4. ``bridge_obligations`` — every required bridge (``<root>_faithful``) exists, is sorry-free
   and axiom-clean;
5. ``semantic_certification`` — the audit result freezes the root with grade ≥ threshold;
6. ``axiom_audit`` — the probe's transitive axioms of each root are in the allow-list
   (default propext, Classical.choice, Quot.sound); ``sorryAx``, user axioms,
   ``Lean.ofReduceBool``, ``Lean.trustCompiler`` and ``*._native.*`` are named when rejected.

Two more checks are reported: ``source_lints`` (required: model-written Lean must not use the
constructs in ``fyan.lean.lints``) and ``kernel_replay`` (lean4checker/leanchecker when the
toolchain has it; its absence is reported as "unavailable", never as a pass; not required).

Without a toolchain, every Lean-dependent check fails with ``TOOLCHAIN_MISSING``.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from fyan.audit.record import AuditResult
from fyan.lean import declarations
from fyan.lean.diagnostics import parse_lake_output
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.lean.package import model_part, unit_module, upstream
from fyan.lean.probe import ProbeResult, run_probe
from fyan.lean.runner import run_process
from fyan.lean.toolchain import Discovery, discover
from fyan.lean.workspace import prepare_workspace
from fyan.project import Project
from fyan.state.models import FreezeRecord, UnitRecord
from fyan.state.store import Store

CHECK_ORDER = (
    "sorry_free", "build", "frozen_statements", "bridge_obligations", "semantic_certification",
    "axiom_audit", "source_lints", "kernel_replay",
)
REQUIRED = frozenset(CHECK_ORDER) - {"kernel_replay"}


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
    """The gate's verdict with every check, its evidence and its reason."""

    unit: str
    passed: bool
    roots: list[str]
    checks: list[CheckResult]
    toolchain: str | None = None
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


REJECT_ALWAYS = ("sorryAx", "Lean.ofReduceBool", "Lean.trustCompiler")


def classify_axioms(axioms: list[str], allow: list[str]) -> list[str]:
    """The axioms of ``axioms`` that the allow-list does not admit (with the reason)."""
    bad = []
    for a in axioms:
        if a in REJECT_ALWAYS:
            bad.append(f"{a} (rejected by name)")
        elif "._native." in a or a.startswith("_native."):
            bad.append(f"{a} (native_decide/bv_decide axiom)")
        elif a not in allow:
            bad.append(f"{a} (not in the allow-list)")
    return bad


class _Gate:
    def __init__(self, project: Project, store: Store, unit: UnitRecord, log_dir: Path, discovery: Discovery | None):
        self.project = project
        self.store = store
        self.unit = unit
        self.log_dir = log_dir
        self.discovery = discovery or discover(project.config.lean)
        self.results: dict[str, CheckResult] = {}

    def put(self, name: str, ok: bool | None, reason: str, **evidence: Any) -> None:
        status = "pass" if ok else ("unavailable" if ok is None else "fail")
        self.results[name] = CheckResult(
            name=name, status=status, required=name in REQUIRED, reason=reason, evidence=evidence
        )

    def run(self) -> GateReport:
        cfg = self.project.config
        unit_dir = self.project.paths.unit(self.unit.id)
        freezes = self.store.freezes(self.unit.id)
        roots = [f.decl for f in freezes if f.role == "root"]
        bridges = [f for f in freezes if f.role == "bridge"]
        basic_path = unit_dir / "Basic.lean"
        recorded = self.store.artifact(self.unit.id, "Basic.lean")
        source: str | None = None
        if recorded is None or not basic_path.is_file():
            problem = "no Basic.lean recorded for this unit"
        else:
            from fyan.state.gateway import sha256_file

            if sha256_file(basic_path) != recorded.sha256:
                problem = "units/{}/Basic.lean differs from the recorded artifact (edited after the prove stage)".format(self.unit.id)
            else:
                problem = None
                source = basic_path.read_text(encoding="utf-8")
        if not roots:
            problem = problem or "no frozen root declaration: the audit has not frozen a statement"

        # source_lints (model-written part only)
        if source is not None:
            findings = lint(model_part(source))
            errs = lint_errors(findings)
            self.put("source_lints", not errs, "no forbidden construct" if not errs else "; ".join(map(str, errs)),
                     findings=[str(f) for f in findings])
        else:
            self.put("source_lints", False, problem or "no source")

        decls = declarations.scan(source) if source is not None else []
        self._frozen_source(freezes, decls, problem)
        self._semantic(roots, bridges, freezes)

        probe: ProbeResult | None = None
        build_log = None
        tc = self.discovery.toolchain
        if problem is not None:
            for name in ("build", "sorry_free", "axiom_audit"):
                self.put(name, False, problem)
        elif tc is None:
            for name in ("build", "sorry_free", "axiom_audit"):
                self.put(name, False, self.discovery.problem or "Lean toolchain not found")
        else:
            ws = prepare_workspace(self.project, self.unit, {"Basic": source})
            module = unit_module(self.project, self.unit)
            if not ws.lakefile.is_file():
                for name in ("build", "sorry_free", "axiom_audit"):
                    self.put(name, False, f"workspace {ws.root} has no lakefile.toml")
            else:
                proc = run_process(
                    [str(tc.lake), "build", module], cwd=ws.root, timeout_s=cfg.lean.build_timeout,
                    memory_mb=cfg.lean.memory_limit_mb, sandbox=cfg.lean.sandbox, writable=[ws.root],
                    log_path=self.log_dir / "build.log",
                )
                build_log = parse_lake_output(proc.output)
                ok = proc.ok
                reason = "lake build succeeded" if ok else (proc.note or f"lake build exited with {proc.exit_code}")
                if not ok and build_log.diagnostics:
                    first = next((d for d in build_log.diagnostics if d.severity == "error"), None)
                    if first is not None:
                        reason += f"; first error: {first.file}:{first.line}: {first.text.splitlines()[0]}"
                self.put("build", ok, reason, command=" ".join(proc.argv), exit_code=proc.exit_code,
                         duration_s=proc.duration_s, sandboxed=proc.sandboxed, note=proc.note,
                         log=self.project.paths.rel(self.log_dir / "build.log"),
                         unrecognized_lines=len(build_log.unrecognized))
                if ok:
                    probe = run_probe(tc, ws.root, [module], roots + [b.decl for b in bridges], cfg.lean,
                                      self.log_dir / "probe.log")
                self._sorry(probe, build_log, ws.module_file(module), ws.root, ok)
                self._axioms(probe, roots, ok)
        self._frozen_compiled(freezes, probe)
        self._bridges(bridges, probe)
        self._kernel_replay(tc is not None and probe is not None and probe.ok)

        checks = [self.results[n] for n in CHECK_ORDER]
        from fyan.shadow.gate import shadow_checks  # issue 6: units with a shadow set need SA-Pass = 1

        checks += shadow_checks(self.project, self.unit, source, roots, self.discovery, self.log_dir,
                                built=self.results["build"].passed)
        passed = all(c.passed for c in checks if c.required)
        return GateReport(
            unit=self.unit.id, passed=passed, roots=roots, checks=checks,
            toolchain=tc.version if tc else None, created_at=time.time(),
        )

    # -- individual checks -----------------------------------------------------------------
    def _frozen_source(self, freezes: list[FreezeRecord], decls, problem: str | None) -> None:
        if problem is not None and not freezes:
            self.put("frozen_statements", False, problem)
            return
        if problem is not None and not decls:
            self.put("frozen_statements", False, problem)
            return
        changed = []
        for f in freezes:
            d = declarations.find(decls, f.decl)
            if d is None:
                changed.append(f"{f.decl}: not declared in Basic.lean")
                continue
            sig = d.frozen_signature
            if sig != f.normalized_signature:
                changed.append(f"{f.decl}: signature changed: frozen `{f.normalized_signature}`, now `{sig}`")
            for path, digest in f.bound_inputs.items():
                current = self._current_hash(path)
                if current != digest:
                    changed.append(f"{f.decl}: bound input {path} changed since the freeze")
        ok = not changed and bool(freezes)
        self.put("frozen_statements", ok, "frozen signatures and bound inputs unchanged" if ok else "; ".join(changed) or "nothing frozen",
                 frozen=[f.decl for f in freezes])

    def _current_hash(self, rel: str) -> str | None:
        from fyan.state.gateway import sha256_file

        path = self.project.paths.root / rel
        return sha256_file(path) if path.is_file() else None

    def _frozen_compiled(self, freezes: list[FreezeRecord], probe: ProbeResult | None) -> None:
        current = self.results["frozen_statements"]
        if not current.passed or probe is None:
            if probe is None and current.passed:
                current.status = "fail"
                current.reason += "; not confirmed in the compiled environment (" + (
                    self.results["build"].reason if not self.results["build"].passed else "probe did not run") + ")"
            return
        problems = []
        for f in freezes:
            rec = probe.records.get(f.decl)
            if rec is None or not rec.found:
                problems.append(f"{f.decl}: not in the compiled environment")
            elif f.type_hash is not None and rec.type_hash != f.type_hash:
                problems.append(f"{f.decl}: elaborated type changed (hash {rec.type_hash} != frozen {f.type_hash})")
        if problems:
            current.status = "fail"
            current.reason = "; ".join(problems)
        else:
            current.reason += "; found in the compiled environment"
            current.evidence["type_hashes"] = {f.decl: probe.records[f.decl].type_hash for f in freezes}

    def _semantic(self, roots: list[str], bridges: list[FreezeRecord], freezes: list[FreezeRecord]) -> None:
        path = self.project.paths.unit(self.unit.id) / "audit" / "result.json"
        if not path.is_file():
            self.put("semantic_certification", False, "no audit result for this unit")
            return
        try:
            result = AuditResult.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError as e:
            self.put("semantic_certification", False, f"unreadable audit result: {e}")
            return
        threshold = self.project.config.audit.threshold
        if result.routing == "freeze" and result.grade is not None and result.grade >= threshold and roots:
            self.put("semantic_certification", True, f"audit grade {result.grade} >= threshold {threshold}",
                     grade=result.grade)
        elif bridges and result.routing == "bridge" and result.bridge is not None and result.bridge.result.valid \
                and (result.bridge.result.grade or 0) >= threshold and {b.decl for b in bridges} == {result.bridge.name}:
            self.put("semantic_certification", True,
                     f"audit grade {result.grade}, certified through the bridge obligation {result.bridge.name} "
                     f"(S0 audited with grade {result.bridge.result.grade}; discharge checked below)",
                     grade=result.grade, bridge=result.bridge.name, s0_grade=result.bridge.result.grade)
        else:
            self.put("semantic_certification", False,
                     f"audit grade {result.grade} below threshold {threshold}" if result.valid else "audit record was rejected",
                     grade=result.grade)

    def _sorry(self, probe: ProbeResult | None, build_log, unit_file: Path, ws_root: Path, built: bool) -> None:
        if not built:
            self.put("sorry_free", False, "sorry count unknown: the build failed")
            return
        if probe is None or not probe.ok:
            self.put("sorry_free", False, f"sorry count unknown: {probe.problem if probe else 'no probe'}")
            return
        rel = unit_file.relative_to(ws_root).as_posix()
        warnings = [d for d in build_log.in_files({rel}) if d.is_sorry]
        with_sorry = [n for n, r in probe.records.items() if "sorryAx" in r.axioms]
        count = len(warnings)
        if with_sorry and count == 0:
            self.put("sorry_free", False, f"sorryAx in the axioms of {', '.join(with_sorry)} (sorry warnings were silenced)",
                     sorry_warnings=0, roots_with_sorryAx=with_sorry)
        elif count or with_sorry:
            self.put("sorry_free", False, f"{count} sorry warning(s) in {rel}; sorryAx in {with_sorry or 'no root'}",
                     sorry_warnings=count, roots_with_sorryAx=with_sorry,
                     lines=[d.line for d in warnings])
        else:
            self.put("sorry_free", True, "sorry count is 0 (probe axioms and build diagnostics agree)",
                     sorry_warnings=0, roots_with_sorryAx=[])

    def _axioms(self, probe: ProbeResult | None, roots: list[str], built: bool) -> None:
        if not built or probe is None:
            self.put("axiom_audit", False, "axiom audit did not run: " + ("the build failed" if not built else "no probe"))
            return
        if not probe.ok:
            self.put("axiom_audit", False, f"axiom audit failed: {probe.problem}")
            return
        allow = self.project.config.lean.axiom_allowlist
        bad: dict[str, list[str]] = {}
        for r in roots:
            rec = probe.records[r]
            if not rec.found:
                bad[r] = ["root not found in the compiled environment"]
                continue
            rejected = classify_axioms(rec.axioms, allow)
            if rejected:
                bad[r] = rejected
        axioms = {r: probe.records[r].axioms for r in roots if r in probe.records}
        if bad:
            self.put("axiom_audit", False, "; ".join(f"{r}: {', '.join(v)}" for r, v in bad.items()), axioms=axioms,
                     ignored_probe_lines=probe.ignored_lines)
        else:
            self.put("axiom_audit", True, "transitive axioms within the allow-list", axioms=axioms,
                     allow_list=allow, ignored_probe_lines=probe.ignored_lines)

    def _bridges(self, bridges: list[FreezeRecord], probe: ProbeResult | None) -> None:
        if not bridges:
            self.put("bridge_obligations", True, "no bridge obligation required")
            return
        if probe is None or not probe.ok:
            self.put("bridge_obligations", False, "bridge obligations not checked: no probe evidence")
            return
        problems = []
        for b in bridges:
            rec = probe.records.get(b.decl)
            if rec is None or not rec.found:
                problems.append(f"{b.decl}: missing from the compiled environment")
                continue
            rejected = classify_axioms(rec.axioms, self.project.config.lean.axiom_allowlist)
            if rejected:
                problems.append(f"{b.decl}: {', '.join(rejected)}")
        self.put("bridge_obligations", not problems, "; ".join(problems) or "every bridge obligation discharged",
                 bridges=[b.decl for b in bridges])

    def _kernel_replay(self, ready: bool) -> None:
        tc = self.discovery.toolchain
        checker = None
        if tc is not None:
            for name in ("lean4checker", "leanchecker"):
                found = shutil.which(name) or (str(tc.lake.parent / name) if (tc.lake.parent / name).exists() else None)
                if found:
                    checker = found
                    break
        if checker is None:
            self.put("kernel_replay", None, "kernel replay unavailable: no lean4checker/leanchecker with this toolchain")
            return
        if not ready:
            self.put("kernel_replay", False, "kernel replay not run: the build or the probe failed")
            return
        ws = self.project.paths.workspace(self.unit.id)
        module = unit_module(self.project, self.unit)
        proc = run_process([str(tc.lake), "env", checker, module], cwd=ws, timeout_s=self.project.config.lean.build_timeout,
                           memory_mb=self.project.config.lean.memory_limit_mb, sandbox=self.project.config.lean.sandbox,
                           writable=[ws], log_path=self.log_dir / "kernel_replay.log")
        self.put("kernel_replay", proc.ok, "kernel replay passed" if proc.ok else f"kernel replay failed (exit {proc.exit_code})",
                 checker=checker)


def run_gate(project: Project, store: Store, unit: UnitRecord, log_dir: Path, discovery: Discovery | None = None) -> GateReport:
    """Run the completion gate for ``unit``; logs (build, probe) go to ``log_dir``."""
    log_dir.mkdir(parents=True, exist_ok=True)
    return _Gate(project, store, unit, log_dir, discovery).run()


def report_json(report: GateReport) -> bytes:
    return json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=False).encode("utf-8") + b"\n"


__all__ = ["CheckResult", "GateReport", "run_gate", "classify_axioms", "report_json", "upstream"]
