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
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import IO, Any

from fyan.audit.record import AuditResult
from fyan.models.gate_report import CheckResult, GateReport, report_json, report_text
from fyan.lean import declarations
from fyan.lakepackage import trusted
from fyan.lean.inspector import InspectedDeclaration, InspectedLookup, InspectedModule, Inspection, MissingDeclaration, InspectorBuild, ensure_inspector, module_findings
from fyan.lean.compile import CompileResult
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.lakepackage.package import model_part, render_unit_file, unit_imports, unit_module, upstream
from fyan.lean.policy import classify_axioms, extension_admissions
from fyan.sandbox.runner import SANDBOX_REMEDY, bwrap_status
from fyan.lakepackage.signatures import compare_compiled, compare_source, unaudited_dependencies
from fyan.lean.toolchain import Discovery, check_pin, discover, find_kernel_checker
from fyan.project import Project
from fyan.trust.record import toolchain_trust
from fyan.shadow.gate import shadow_checks
from fyan.state.models import FreezeRecord, UnitRecord
from fyan.state.store import Store

CHECK_ORDER = (
    "sorry_free", "build", "frozen_statements", "bridge_obligations", "semantic_certification",
    "axiom_audit", "environment_policy", "source_lints", "kernel_replay", "comparator",
)
#: Checks that must pass; the independent checkers are required only when installed.
REQUIRED = frozenset(CHECK_ORDER) - {"kernel_replay", "comparator"}


def _frozen_kind_ok(freeze: FreezeRecord, record: InspectedDeclaration) -> str | None:
    kind = freeze.normalized_signature.split(" ", 1)[0]
    if kind == "theorem" and record.kind != "theorem":
        return f"{freeze.decl}: frozen as a theorem, compiled as a {record.kind}"
    if kind in ("def", "abbrev", "instance") and record.kind not in ("def",):
        return f"{freeze.decl}: frozen as a {kind}, compiled as a {record.kind}"
    if kind in ("structure", "class", "inductive") and record.kind != "inductive":
        return f"{freeze.decl}: frozen as a {kind}, compiled as a {record.kind}"
    return None


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


def sandbox_statement(project: Project) -> str:
    """How model-written code is confined in this project, for reports and ``fyan status``."""
    mode = project.config.lean.sandbox
    if mode == "off":
        return 'off ([lean] sandbox = "off"): model-written code runs UNCONFINED'
    path, why = bwrap_status()
    if path is None:
        return f"{mode}: " + ("model-written code is refused: " if mode == "require" else
                              "model-written code runs UNCONFINED: ") + why
    return f"{mode}: bubblewrap (writes only in the gate workspace; project and home hidden; no network)"


def find_comparator(project: Project) -> Path | None:
    """``[lean] comparator`` when set (it must exist), else ``comparator`` on ``PATH``."""
    configured = project.config.lean.comparator
    if configured:
        path = Path(configured).expanduser()
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which("comparator")
    return Path(found) if found else None


#: what comparator runs besides itself, and the variable that may name each (its README)
COMPARATOR_PREREQUISITES = (("landrun", "COMPARATOR_LANDRUN"), ("lean4export", "COMPARATOR_LEAN4EXPORT"))


def missing_comparator_prerequisites(env: dict[str, str] | None = None) -> list[str]:
    """The programs comparator needs that cannot be found (``COMPARATOR_PREREQUISITES``: each on
    ``PATH`` or named by its variable); docs/lean-contract.md, "Kernel replay and comparator"."""
    env = dict(os.environ) if env is None else env
    missing = []
    for program, variable in COMPARATOR_PREREQUISITES:
        named = env.get(variable)
        if named and Path(named).is_file() and os.access(named, os.X_OK):
            continue
        if shutil.which(program, path=env.get("PATH")) is None:
            missing.append(f"{program} (on PATH or ${variable})")
    return missing


def find_nanoda(env: dict[str, str] | None = None) -> Path | None:
    """The nanoda kernel comparator runs when its configuration says ``enable_nanoda``:
    ``$COMPARATOR_NANODA`` when it names an executable, else ``nanoda_bin`` on ``PATH``
    (comparator README, "Checking with Additional Kernels"); None when neither."""
    env = dict(os.environ) if env is None else env
    named = env.get("COMPARATOR_NANODA")
    if named and Path(named).is_file() and os.access(named, os.X_OK):
        return Path(named)
    found = shutil.which("nanoda_bin", path=env.get("PATH"))
    return Path(found) if found else None


class _Gate:
    def __init__(self, project: Project, store: Store, unit: UnitRecord, log_dir: Path, discovery: Discovery | None):
        self.project = project
        self.store = store
        self.unit = unit
        self.log_dir = log_dir
        self.discovery = discovery or discover(project.config.lean, cwd=project.paths.lean)
        self.results: dict[str, CheckResult] = {}
        self.module = unit_module(project, unit)
        self.ws: trusted.GateWorkspace | None = None
        #: the candidate module's compiled output right after its build
        self.outputs: dict[str, bytes] = {}
        self.build: CompileResult | None = None
        self.inspector: InspectorBuild | None = None
        self.inspection: Inspection | None = None
        self.reference: Inspection | None = None
        self.reference_problem: str | None = None
        self.no_lean: str | None = None
        self.pin: str | None = None
        self.environment: str | None = None  # why Lean could not run here (not the candidate's fault)
        #: the environment problem is a process that crashed, was killed or did not start (another run
        #: may not meet it: retried), not a configuration problem
        self.environment_transient = False
        self.trust: str | None = None  # whether the toolchain passed its selftest (fyan.trust.record)
        #: the extensions Fyan's honest controls wrote, checked now when the toolchain is trusted
        #: unproven (the controls must pass the policy there); None otherwise
        self.learned: frozenset[str] | None = None
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
    def _recorded(self, name: str) -> tuple[bytes | None, str | None]:
        """(bytes, problem) of ``units/<unit>/<name>``, which must match its recorded sha256."""
        try:
            return trusted.recorded_bytes(self.project, self.store, self.unit.id, name), None
        except trusted.RecordedInputError as e:
            return None, str(e)

    @property
    def module_report(self) -> InspectedModule | None:
        if self.inspection is None or not self.inspection.ok:
            return None
        return self.inspection.report.module(self.module)

    def record(self, name: str) -> InspectedLookup | MissingDeclaration | None:
        if self.inspection is None or not self.inspection.ok:
            return None
        return self.inspection.report.lookup(name)

    def run(self) -> GateReport:
        freezes = self.store.freezes(self.unit.id)
        roots = [f.decl for f in freezes if f.role == "root"]
        bridges = [f for f in freezes if f.role == "bridge"]
        data, problem = self._recorded("Basic.lean")
        source = None
        if data is not None:
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError:
                problem = f"units/{self.unit.id}/Basic.lean is not UTF-8 text"
        if not roots:
            problem = problem or "no frozen root declaration: the audit has not frozen a statement"
        decls = declarations.scan(source) if source is not None else []

        if source is not None:
            # a kernel-evaluated constant the project admits ([lean] kernel_allow) is decided by the
            # environment rule alone; the lint would otherwise refuse what the configuration allows
            findings = lint(model_part(source), allow=frozenset({"kernel-evaluated"})
                            if self.project.config.lean.kernel_allow else frozenset())
            problems = [str(f) for f in lint_errors(findings)]
            if source != render_unit_file(self.project, self.store, self.unit, model_part(source), "Basic"):
                problems.insert(0, "Basic.lean was changed outside the model-written part (the imports, `open` "
                                   "and namespace are Fyan's)")
            self.put("source_lints", not problems, "; ".join(problems) or "no forbidden construct",
                     findings=[str(f) for f in findings])
        else:
            self.put("source_lints", False, problem or "no source")

        try:
            self._lean(data if problem is None else None, problem, freezes)
            self._sorry(roots)
            self._axioms(roots)
            self._policy()
            self._frozen(freezes, decls, problem)
            self._bridges(bridges, decls)
            self._semantic(roots, bridges, decls)
            self._kernel_replay()
            self._comparator(freezes)
            self._kernel_soundness()
            self._recheck()
            checks = [self.results[n] for n in CHECK_ORDER]
            checks += shadow_checks(self.project, self.unit, source, roots, self.discovery, self.log_dir,
                                    built=self.results["build"].passed,
                                    workspace=self.ws, inspector=self.inspector)
            passed = all(c.passed for c in checks if c.required)
            olean = self._checked_output() if passed else {}
        finally:
            if self.ws is not None:
                self.ws.remove()
        tc = self.discovery.toolchain
        return GateReport(
            unit=self.unit.id, passed=passed, roots=roots, checks=checks, **olean,
            toolchain=tc.version if tc else None, toolchain_pin=self.pin, toolchain_trust=self.trust,
            sandbox=sandbox_statement(self.project),
            inspector=(f"{self.inspector.executable} (sha256 {self.inspector.sha256[:16]}…; {self.inspector.note})"
                       if self.inspector is not None else None),
            workspace=self.rel(self.ws.root) if self.ws is not None else None,
            log_dir=self.rel(self.log_dir), environment_problem=self.environment,
            environment_transient=self.environment is not None and self.environment_transient, created_at=time.time(),
        )

    def _recheck(self) -> None:
        """Every file the decision rests on, hashed again now: the recorded
        inputs placed in the workspace and the checked outputs the inspector read."""
        if self.ws is None or "build" not in self.results or not self.results["build"].passed:
            return
        changed = self.ws.recheck()
        if changed:
            old = self.results["build"]
            self.put("build", False, "files the decision rests on changed during the gate: " + "; ".join(changed[:5]),
                     **old.evidence)

    def _checked_output(self) -> dict[str, Any]:
        """The compiled module a passing gate hands over (``GateReport.module_outputs_b64``):
        what ``trusted.module_outputs`` read right after the build, only when it is still what
        the inspector and the kernel replay read (``checked/``)."""
        if not self.outputs or self.ws is None or trusted.module_outputs(self.ws, self.module) != self.outputs:
            return {}
        return {"module_outputs_b64": {k: base64.b64encode(v).decode("ascii") for k, v in self.outputs.items()},
                "module_olean_sha256": hashlib.sha256(self.outputs["Basic.olean"]).hexdigest()}

    # -- Lean evidence -----------------------------------------------------------------------
    def _fail_lean(self, reason: str, *, environment: bool, **evidence: Any) -> None:
        self.no_lean = reason
        if environment:
            self.environment = reason
        self.put("build", False, reason, **evidence)

    def _lean(self, source: bytes | None, problem: str | None, freezes: list[FreezeRecord]) -> None:
        cfg = self.project.config.lean
        tc = self.discovery.toolchain
        if problem is not None:
            self._fail_lean(problem, environment=False)
            return
        if tc is None:
            self._fail_lean(self.discovery.problem or "Lean toolchain not found", environment=True)
            return
        assert source is not None
        statement, st_problem = self._recorded("Statement.lean")
        files = {"Basic": source}
        if statement is not None:
            files["Statement"] = statement
        try:
            trusted.check_package(self.project)
        except trusted.GateEnvironmentError as e:
            self._fail_lean(str(e), environment=True)
            return
        pin = check_pin(tc, self.project.paths.lean)
        self.pin = pin.pin
        if not pin.ok:
            self._fail_lean(pin.reason, environment=True, toolchain=tc.version, pin=pin.pin)
            return
        trust = toolchain_trust(tc, cfg)  # only a toolchain whose selftest passed completes units
        self.trust = trust.statement
        if not trust.trusted:
            self._fail_lean(trust.problem or trust.statement, environment=True, toolchain=tc.version, pin=pin.pin)
            return
        if cfg.sandbox == "require":
            bwrap, why = bwrap_status()
            if bwrap is None:
                self._fail_lean(f'model-written code is not built: [lean] sandbox = "require" but {why}; {SANDBOX_REMEDY}',
                                environment=True, toolchain=tc.version, pin=pin.pin)
                return
        try:
            self.ws = trusted.prepare(self.project, self.store, self.unit, files, purpose="gate", toolchain=tc,
                                      log_dir=self.log_dir)
        except trusted.RecordedInputError as e:
            self._fail_lean(f"an upstream unit's recorded file cannot be used: {e}", environment=True)
            return
        except trusted.GateEnvironmentError as e:
            self._fail_lean(str(e), environment=True, toolchain=tc.version, pin=pin.pin)
            return
        self.inspector, why = ensure_inspector(tc, pin.pin or "", cfg, self.log_dir)
        if self.inspector is None:
            self._fail_lean(f"no trusted inspector: {why}", environment=True, toolchain=tc.version, pin=pin.pin)
            return
        if not trust.proven:
            # trusted unproven: Fyan's honest controls must compile and pass the policy on this
            # toolchain first (an extension of it no row classifies is named then, not per unit)
            from fyan.trust.learn import learned_now

            self.learned, why = learned_now(tc, pin.pin or "", cfg, self.inspector, self.log_dir)
            if self.learned is None:
                self._fail_lean(f"the extensions honest modules write could not be learned: {why}",
                                environment=True, toolchain=tc.version, pin=pin.pin)
                return
        st_module = unit_module(self.project, self.unit, "Statement")
        need_reference = [f.decl for f in freezes if f.type_hash is None]
        wants_statement = statement is not None and (need_reference or find_comparator(self.project) is not None)
        # phase 1: what the gate trusts (upstream units without a reusable output), then the
        # audited statement; each phase's outputs are read-only for the next
        first, _ = trusted.build(self.ws, cfg, self.log_dir, trusted=self.ws.upstream_modules, candidate=[],
                                 name="upstream")
        if first is not None and not first.ok:
            # the upstream units passed their own gates: failing to build them now is not this
            # candidate's doing (a broken package, a refused sandbox, a toolchain change)
            self.environment_transient = transient_process(first.process)
            self._fail_lean(f"the upstream units do not build in the gate workspace: {first.reason}",
                            environment=True, log=self.rel(first.log_file))
            return
        st_build = None
        if wants_statement:
            st_build, _ = trusted.build(self.ws, cfg, self.log_dir, trusted=[st_module], candidate=[], name="statement")
        if need_reference:
            if statement is None:
                self.reference_problem = st_problem
            elif st_build is None or not st_build.ok:
                self.reference_problem = (f"the audited Statement.lean does not build now: "
                                          f"{st_build.reason if st_build else 'not built'}")
            else:
                present = [d for d in need_reference if declarations.find(declarations.scan(statement.decode()), d)]
                self.reference = trusted.inspect(self.ws, self.inspector, cfg, self.log_dir, name="reference-inspect",
                                                 modules=[st_module], names=present,
                                                 local_prefix=self.project.config.lean_lib)
                if not self.reference.ok:
                    self.reference_problem = f"the inspector could not read the audited Statement.lean: {self.reference.problem}"
        # phase 2: the candidate, with every earlier output protected
        _, self.build = trusted.build(self.ws, cfg, self.log_dir, trusted=[], candidate=[self.module], name="build")
        assert self.build is not None
        self.put("build", self.build.ok, self.build.reason, toolchain=tc.version, pin=pin.pin,
                 workspace=self.rel(self.ws.root), **{**self.build.evidence(), "log": self.rel(self.build.log_file)},
                 lean=self.ws.setup.evidence())
        if not self.build.ok:
            self.no_lean = f"the build failed ({self.build.reason})"
            if self.build.environment_error is not None:
                self.environment = f"{self.build.reason}; the environment, not the proof: {self.build.environment_error}"
                self.environment_transient = transient_process(self.build.process)
            return
        self.outputs = trusted.module_outputs(self.ws, self.module)
        names = list(dict.fromkeys(f.decl for f in freezes))
        self.inspection = trusted.inspect(self.ws, self.inspector, cfg, self.log_dir, name="inspect",
                                          modules=[self.module], names=names, local_prefix=self.project.config.lean_lib)
        if not self.inspection.ok:
            self.no_lean = f"the inspector gave no evidence: {self.inspection.problem}"
            env = inspector_environment_problem(self.inspection)
            if env is not None:
                self.environment = f"{self.no_lean}; the environment, not the proof: {env}"
                self.environment_transient = self.inspection.process is not None and \
                    (transient_process(self.inspection.process) or self.inspection.process.memory_exceeded)

    def _inspector_evidence(self) -> dict[str, Any]:
        if self.inspection is None:
            return {}
        ev = self.inspection.evidence()
        return {k: self.rel(v) if k == "inspector_report" else v for k, v in ev.items()}

    def _lean_missing_reason(self, prefix: str) -> str:
        if self.discovery.toolchain is None:
            return self.no_lean or "Lean toolchain not found"
        return f"{prefix}: {self.no_lean}"

    # -- individual checks -----------------------------------------------------------------
    def _sorry(self, roots: list[str]) -> None:
        module = self.module_report
        if self.no_lean is not None or self.build is None or module is None:
            self.put("sorry_free", False, self._lean_missing_reason("sorry count unknown"))
            return
        assert self.ws is not None
        rel = self.ws.module_file(self.module).relative_to(self.ws.src).as_posix()
        warnings = self.build.sorry_warnings
        with_sorry = sorted(d.name for d in module.declarations if d.uses_sorry)
        evidence = {"sorry_warnings": len(warnings), "warning_lines": [d.line for d in warnings],
                    "declarations_with_sorryAx": with_sorry, "declarations": len(module.declarations), "file": rel,
                    **self._inspector_evidence()}
        absent = [r for r in roots if (rec := self.record(r)) is None or not rec.found]
        if absent:
            self.put("sorry_free", False, f"sorry count unknown: {', '.join(absent)} not in the compiled environment",
                     **evidence)
        elif with_sorry and not warnings:
            self.put("sorry_free", False, f"sorryAx in the axioms of {', '.join(with_sorry)} although {rel} shows no "
                                          "sorry warning (silenced, or sorry reached without the token)", **evidence)
        elif with_sorry or warnings:
            where = f"line(s) {', '.join(str(d.line) for d in warnings)}" if warnings else "no line"
            self.put("sorry_free", False, f"sorry count {len(warnings) + len(with_sorry)}: {len(warnings)} sorry "
                                          f"warning(s) in {rel} ({where}); sorryAx in the axioms of "
                                          f"{', '.join(with_sorry) or 'no declaration'}", **evidence)
        else:
            self.put("sorry_free", True, f"sorry count is 0: none of the module's {len(module.declarations)} "
                                         "declarations uses sorryAx, and the build shows no sorry warning", **evidence)

    def _axioms(self, roots: list[str]) -> None:
        module = self.module_report
        if self.no_lean is not None or module is None:
            self.put("axiom_audit", False, self._lean_missing_reason("axiom audit did not run"))
            return
        allow = self.project.config.lean.axiom_allowlist
        bad: dict[str, list[str]] = {}
        for r in roots:
            rec = self.record(r)
            if rec is None or not rec.found:
                bad[r] = ["root not found in the compiled environment"]
        for d in module.declarations:
            rejected = classify_axioms(d.axioms, allow)
            if rejected:
                bad.setdefault(d.name, []).extend(rejected)
        axioms = {r: rec.axioms for r in roots if (rec := self.record(r)) is not None and rec.found}
        evidence = {"axioms": axioms, "allow_list": allow, "declarations": len(module.declarations),
                    **self._inspector_evidence()}
        if bad:
            order = roots + sorted(n for n in bad if n not in roots)
            self.put("axiom_audit", False, "; ".join(f"{r}: {', '.join(bad[r])}" for r in order if r in bad), **evidence)
        else:
            self.put("axiom_audit", True, f"transitive axioms of all {len(module.declarations)} declarations within "
                                          "the allow-list", **evidence)

    def _policy(self) -> None:
        module = self.module_report
        if self.no_lean is not None or module is None:
            self.put("environment_policy", False, self._lean_missing_reason("the compiled module was not inspected"))
            return
        declared = self._declared_registrations()
        findings = module_findings(module, expected_imports=unit_imports(self.project, self.store, self.unit),
                                   extra_allow=frozenset(self.project.config.lean.extension_allowlist),
                                   kernel_allow=frozenset(self.project.config.lean.kernel_allow), declared=declared)
        allowlisted = extension_admissions([(e.name, e.entries) for e in module.extensions],
                                           frozenset(self.project.config.lean.extension_allowlist))
        evidence = {"findings": findings, "extensions": {e.name: e.entries for e in module.extensions},
                    "admitted_by_allowlist": allowlisted,
                    "declared_registrations": sorted(declared),
                    "imports": module.imports, **self._inspector_evidence()}
        self.put("environment_policy", not findings, "; ".join(findings) or
                 f"no axiom, unsafe, partial, opaque, implemented_by, extern or init declaration; "
                 f"{len(module.extensions)} extension(s) with entries, all admitted by Fyan's policy by effect"
                 + (f" ({'; '.join(allowlisted)})" if allowlisted else "") + "; imports as written by Fyan",
                 **evidence)

    def _declared_registrations(self) -> frozenset[str]:
        """Full names of the instances the audited plan declares (``lemma_dag.json`` nodes of kind
        ``instance``, recorded and hash-checked): the only registrations about types the unit does not
        own that ``environment_policy`` admits. An unreadable plan declares nothing."""
        from fyan.models.replies import LemmaDag
        from fyan.lakepackage.package import unit_namespace

        data, _ = self._recorded("lemma_dag.json")
        if data is None:
            return frozenset()
        try:
            dag = LemmaDag.model_validate_json(data)
        except ValueError:
            return frozenset()
        ns = unit_namespace(self.project, self.unit)
        return frozenset(f"{ns}.{n.name}" for n in dag.nodes if n.kind == "instance")

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
        if self.no_lean is not None or self.inspection is None or not self.inspection.ok:
            reason = "; ".join(changes) if changes else "frozen signatures and bound files unchanged in the source"
            self.put("frozen_statements", False,
                     reason + "; not confirmed in the compiled environment (" + (self.no_lean or "not inspected") + ")",
                     frozen=[f.decl for f in freezes], compared=compared)
            return
        tc = self.discovery.toolchain
        hashes = {}
        for f in freezes:
            rec = self.record(f.decl)
            ref = self.reference.report.lookup(f.decl) if self.reference is not None and self.reference.ok else None
            c = compare_compiled(f, rec, tc.version if tc else None, ref)
            if f.type_hash is None and ref is None and self.reference_problem:
                c.changes = [f"{f.decl}: no elaborated reference: frozen without a toolchain, and {self.reference_problem}"]
            if rec is not None and rec.found:
                hashes[f.decl] = rec.statement_hash
                wrong_kind = _frozen_kind_ok(f, rec)
                if wrong_kind:
                    c.changes.append(wrong_kind)
                if rec.module != self.module:
                    c.changes.append(f"{f.decl}: declared in module {rec.module or '(unknown)'}, not in the unit's "
                                     f"module {self.module}")
                c.changes += unaudited_dependencies(self.project, self.store, self.unit, rec, f.normalized_signature)
            changes += c.changes
            compared.setdefault(f.decl, []).extend(c.compared)
            if c.changes:
                self.stale.setdefault(f.decl, []).extend(c.changes)
        ok = not changes
        self.put("frozen_statements", ok,
                 "frozen signatures, bound inputs and elaborated statements unchanged" if ok
                 else "certification stale: " + "; ".join(changes),
                 frozen=[f.decl for f in freezes], statement_hashes=hashes, compared=compared,
                 **({"reference": "audited Statement.lean elaborated now"} if self.reference is not None else {}))  # type: ignore[arg-type]

    def _bridges(self, bridges: list[FreezeRecord], decls) -> None:
        if not bridges:
            self.put("bridge_obligations", True, "no bridge obligation required")
            return
        names = [b.decl for b in bridges]
        deleted = [b.decl for b in bridges if declarations.find(decls, b.decl) is None] if decls else []
        if self.no_lean is not None or self.inspection is None or not self.inspection.ok:
            lead = f"bridge declaration(s) deleted from Basic.lean: {', '.join(deleted)}; " if deleted else ""
            self.put("bridge_obligations", False,
                     lead + self._lean_missing_reason("bridge obligations not checked in the compiled environment"),
                     bridges=names, deleted=deleted)
            return
        problems = [f"{d}: deleted from Basic.lean" for d in deleted]
        axioms = {}
        for b in bridges:
            rec = self.record(b.decl)
            if rec is None or not rec.found:
                problems.append(f"{b.decl}: missing from the compiled environment")
                continue
            axioms[b.decl] = rec.axioms
            if rec.kind != "theorem":
                problems.append(f"{b.decl}: is a {rec.kind}, not a proved theorem")
            if rec.module != self.module:
                problems.append(f"{b.decl}: declared in module {rec.module}, not in the unit's module {self.module}")
            rejected = classify_axioms(rec.axioms, self.project.config.lean.axiom_allowlist)
            if rejected or rec.sorry_direct:
                problems.append(f"{b.decl}: not discharged: {', '.join(rejected) or 'uses sorryAx'}")
        self.put("bridge_obligations", not problems, "; ".join(problems) or "every bridge obligation discharged",
                 bridges=names, axioms=axioms)

    def _semantic(self, roots: list[str], bridges: list[FreezeRecord], decls) -> None:
        data, problem = self._recorded("audit/result.json")
        if data is None:
            self.put("semantic_certification", False, problem or "no audit result for this unit")
            return
        try:
            result = AuditResult.model_validate_json(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            self.put("semantic_certification", False, f"unreadable audit result: {str(e).splitlines()[0]}")
            return
        threshold = self.project.config.audit.threshold
        problems: list[str] = []
        if result.routing == "freeze" and result.grade is not None and result.grade >= threshold and roots:
            how = f"audit grade {result.grade} >= threshold {threshold}"
        elif bridges and result.routing == "bridge" and result.bridge is not None and result.bridge.result.valid \
                and (result.bridge.result.grade or 0) >= threshold \
                and {b.decl for b in bridges} == {result.bridge.name} \
                and self._bridge_signature_matches(bridges, result.bridge.lean):
            how = (f"audit grade {result.grade}, certified through the bridge obligation {result.bridge.name} "
                   f"(S0 audited with grade {result.bridge.result.grade})")
            if not self.results["bridge_obligations"].passed:
                problems.append("the bridge obligation is not discharged (see bridge_obligations)")
        elif bridges:
            how = ""
            problems.append("the bridge obligation does not match an audited S0 (routing, S0 grade, name or signature)")
        else:
            how = ""
            problems.append(f"audit grade {result.grade} below threshold {threshold}" if result.valid
                            else "audit record was rejected")
        for r in roots:
            d = declarations.find(decls, r)
            rec = self.record(r)
            vacuous_text = d is not None and d.kind == "theorem" and d.type_text in ("True", "⊤")
            if vacuous_text or (rec is not None and rec.found and rec.conclusion_true):
                problems.append(f"root {r} states `True`: a vacuous statement is never certified")
        stale = [c for r in roots for c in self.stale.get(r, [])] + [c for b in bridges for c in self.stale.get(b.decl, [])]
        if stale:
            problems.append("certification is stale: " + "; ".join(stale))
        self.put("semantic_certification", not problems, "; ".join(problems) if problems else how,
                 grade=result.grade, threshold=threshold, routing=result.routing)

    @staticmethod
    def _bridge_signature_matches(bridges: list[FreezeRecord], audited_lean: str) -> bool:
        """Whether every frozen bridge obligation states exactly the S0 the audit graded: the same
        normalized signature as the audited declaration of that name, not only the same name."""
        audited = declarations.scan(audited_lean)
        for b in bridges:
            d = declarations.find(audited, b.decl) or next((x for x in audited if b.decl.endswith("." + x.name)), None)
            if d is None or d.frozen_signature != b.normalized_signature:
                return False
        return True

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
        proc = trusted.run_tool(self.ws, [str(checker), self.module], self.project.config.lean, self.log_dir,
                                name="kernel-replay", kind="kernel_replay", readable=[checker.parent])
        ok = proc.ok
        out = [line.strip() for line in proc.output.splitlines() if line.strip()]
        tail = [next((line for line in out if "error" in line or "exception" in line), out[0] if out else "no output")]
        self.put("kernel_replay", ok, f"kernel replay of {self.module} passed ({checker.name})" if ok
                 else f"kernel replay of {self.module} failed ({proc.describe()}): {tail[0][:200]}",
                 required=True, checker=str(checker), command=" ".join(proc.argv), exit_code=proc.exit_code,
                 duration_s=proc.duration_s, log=self.rel(self.log_dir / "kernel-replay.log"))

    def _comparator(self, freezes: list[FreezeRecord]) -> None:
        comparator = find_comparator(self.project)
        tc = self.discovery.toolchain
        if comparator is None or tc is None:
            where = self.project.config.lean.comparator or "`comparator` on PATH"
            self.put("comparator", None, f"comparator unavailable: not found ({where})", required=False)
            return
        missing = missing_comparator_prerequisites()
        if missing:  # honest absence, never a pass
            self.put("comparator", None, f"comparator unavailable: {comparator} is installed but it needs "
                     f"{', '.join(missing)}", required=False, comparator=str(comparator))
            return
        if self.no_lean is not None or self.ws is None:
            self.put("comparator", False, f"comparator not run: {self.no_lean or 'no workspace'}", required=True,
                     comparator=str(comparator))
            return
        try:  # comparator builds both modules itself, with Lake, inside its own landrun sandbox
            package = trusted.comparator_package(self.ws, self.project, self.store, self.unit)
        except (OSError, trusted.GateEnvironmentError, trusted.RecordedInputError) as e:
            self.put("comparator", False, f"comparator not run: its Lake package cannot be prepared: {e}",
                     required=True, comparator=str(comparator))
            return
        theorems = [f.decl for f in freezes if f.normalized_signature.startswith("theorem ")]
        definitions = [f.decl for f in freezes if not f.normalized_signature.startswith("theorem ")]
        nanoda = find_nanoda()
        config = {"challenge_module": unit_module(self.project, self.unit, "Statement"), "solution_module": self.module,
                  "theorem_names": theorems, "definition_names": definitions,
                  "permitted_axioms": list(self.project.config.lean.axiom_allowlist),
                  "enable_nanoda": nanoda is not None}
        path = self.log_dir / "comparator.json"
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        proc = trusted.run_tool(self.ws, [str(tc.lake), "env", str(comparator), str(path.resolve())],
                                self.project.config.lean, self.log_dir, name="comparator", kind="comparator",
                                readable=[comparator.parent], writable=[self.log_dir, package], cwd=package)
        out = [line.strip() for line in proc.output.splitlines() if line.strip()]
        self.put("comparator", proc.ok, f"comparator accepts {self.module} against the audited statement" if proc.ok
                 else f"comparator rejects {self.module} ({proc.describe()}): {(out[-1] if out else 'no output')[:200]}",
                 required=True, comparator=str(comparator), config=self.rel(path), command=" ".join(proc.argv),
                 exit_code=proc.exit_code, log=self.rel(self.log_dir / "comparator.log"),
                 nanoda=str(nanoda) if nanoda is not None else None)

    def _kernel_soundness(self) -> None:
        """On a toolchain with known kernel soundness bugs (``fyan.lean.mathlib.KERNEL_BUGS``) the
        Lean kernel's acceptance is not enough: the unit completes only when comparator accepted
        it with the nanoda kernel as well (its ``enable_nanoda``). Otherwise ``comparator`` fails
        as an environment problem (no candidate can fix it: the toolchain or the checkers must
        change), naming each bug and its fix."""
        from fyan.lean.mathlib import affected_by, bug_text

        tc = self.discovery.toolchain
        if tc is None or self.no_lean is not None:
            return
        bugs = affected_by(tc.lean_version)
        if not bugs:
            return
        comparator = self.results.get("comparator")
        if comparator is not None and comparator.passed and comparator.evidence.get("nanoda"):
            return
        why = (comparator.reason if comparator is not None else "comparator not run")
        reason = (f"Lean {tc.lean_version or tc.version} has known kernel soundness bugs: {bug_text(bugs)}; on it a "
                  "unit completes only when an independent kernel re-checked it (comparator with nanoda: install "
                  f"comparator, landrun, lean4export and nanoda_bin), and that did not happen ({why}); or move the "
                  "project to a fixed toolchain (`fyan upgrade --mathlib TAG`)")
        self.environment = self.environment or reason
        self.put("comparator", False, reason, required=True, kernel_bugs=[b.issue for b in bugs],
                 **(comparator.evidence if comparator is not None else {}))


def transient_process(proc) -> bool:
    """A process (``ProcessResult``) that failed as the machine can make any process fail, so that
    another run may succeed: killed by a signal without a timeout (a crash; the kernel's
    out-of-memory killer sends SIGKILL), or its executable not found (exit 127, or it never
    started) — not a sandbox refusal or a timeout."""
    if proc is None or proc.refused or proc.timed_out:
        return False
    return proc.exit_code is None or proc.exit_code < 0 or proc.exit_code == 127


def inspector_environment_problem(inspection) -> str | None:
    """Why an inspection failed for the environment's reasons, or None when
    the failure may be the candidate's (a report that does not follow the schema, a lookup it
    refused, a timeout): the inspector could not be started or read, was killed by a signal
    (crashed), ran out of memory, or its executable or the program it runs is missing (exit 127)."""
    proc = inspection.process
    if proc is None:
        return inspection.problem  # never started: the build of Fyan's own program is unreadable
    if proc.timed_out:
        return None
    if proc.refused or proc.exit_code is None or proc.memory_exceeded or proc.exit_code == 127 or proc.exit_code < 0:
        return proc.describe()
    return None


def run_gate(project: Project, store: Store, unit: UnitRecord, log_dir: Path,
             discovery: Discovery | None = None) -> GateReport:
    """Run the completion gate for ``unit`` under its ``GateLock``; logs (builds, inspector,
    kernel replay, comparator; each ``.log`` with a ``.log.json`` record) and the inspector's
    reports go to ``log_dir``. Never raises for bad Lean input."""
    log_dir.mkdir(parents=True, exist_ok=True)
    with GateLock(project, unit.id):
        return _Gate(project, store, unit, log_dir, discovery).run()


__all__ = ["CheckResult", "GateReport", "GateLock", "run_gate", "classify_axioms", "report_json", "report_text",
           "upstream", "sandbox_statement"]
