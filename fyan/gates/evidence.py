"""The completion gate's collection phase: everything the checks decide from, gathered once into
one immutable ``GateEvidence``.

Collection is the gate's only part that touches the world: it reads the recorded files against
their SHA-256 (``fyan.lakepackage.trusted``), the state store (freezes, imports, upstream audits), the
configuration, prepares the gate-owned workspace, builds with plain ``lean``, runs the trusted
inspector, the kernel checker and comparator, and hashes the files the decision rests on again
at the end. The checks (``fyan.gates.completion``) then only read the evidence. A step that
cannot run leaves its reason in the evidence (``no_lean``, ``environment``, ...), never an
exception: the checks turn it into a failed check.

``GateEvidence`` is a frozen dataclass; the checks get deep copies of the fields they declare
(``fyan.gates.completion.decide``), so no check can change what another check or the verdict
sees. What outlives the decision (the workspace, the compiled outputs a passing gate hands over,
the inspector build the shadow checks reuse) stays with the ``Collector``, outside the evidence.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fyan.lean import declarations
from fyan.lakepackage import trusted
from fyan.lean.compile import CompileResult
from fyan.lean.declarations import Declaration
from fyan.lean.inspector import Inspection, InspectorBuild, ensure_inspector
from fyan.lakepackage.package import model_part, render_unit_file, unit_imports, unit_module
from fyan.sandbox.runner import SANDBOX_REMEDY, ProcessResult, bwrap_status
from fyan.lakepackage.signatures import Comparison, compare_source, unaudited_dependencies
from fyan.lean.toolchain import Discovery, check_pin, discover, find_kernel_checker
from fyan.project import Project
from fyan.trust.record import toolchain_trust
from fyan.state.models import FreezeRecord, UnitRecord
from fyan.state.store import Store


class FrozenMap(Mapping[str, Any]):
    """A read-only mapping of evidence (no item can be set or removed); deep copies copy the
    values."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._data = dict(data or {})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenMap:
        return FrozenMap(copy.deepcopy(self._data, memo))


def _frozen_map(value: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return FrozenMap(value)


@dataclass(frozen=True)
class KernelReplayRun:
    """What the collection found and ran for ``kernel_replay``: the checker (None: not found,
    ``looked_in`` says where it looked) and its process (None: not run)."""

    checker: str | None = None
    looked_in: Any = None
    process: ProcessResult | None = None
    log: str | None = None


@dataclass(frozen=True)
class ComparatorRun:
    """What the collection found and ran for ``comparator``: the executable (None: not found),
    the programs it needs that are missing, why its Lake package could not be prepared, its
    configuration file, the nanoda kernel it was told to use, and its process (None: not run)."""

    comparator: str | None = None
    missing: tuple[str, ...] = ()
    package_problem: str | None = None
    config: str | None = None
    nanoda: str | None = None
    process: ProcessResult | None = None
    log: str | None = None


@dataclass(frozen=True)
class GateEvidence:
    """Everything the completion checks read, collected once (module docstring). Fields:

    - the unit: ``unit_id``, ``module`` (its Lean module), ``freezes`` (the active freezes, in
      the store's order), the configuration the checks apply (``axiom_allowlist``,
      ``extension_allowlist``, ``kernel_allow``, ``audit_threshold``, ``comparator_configured``);
    - the recorded source: ``source`` (``Basic.lean`` as text, None when it cannot be used),
      ``source_problem`` (why not, or that nothing is frozen), ``declarations`` (its scan),
      ``rendered_source`` (Fyan's rendering of the unit file around its model-written part),
      ``source_comparisons`` (``compare_source`` of each freeze: signature and bound files; None
      when the source cannot be used), ``audit_result`` / ``audit_problem`` (the recorded
      ``audit/result.json``), ``declared_registrations`` (instances the audited plan declares),
      ``expected_imports`` (the modules Fyan makes the unit import);
    - the Lean side: ``toolchain_found``, ``toolchain_version``, ``lean_version``, ``pin``,
      ``trust``, ``no_lean`` (why there is no compiled evidence), ``lean_failure`` (the evidence
      of a build that could not be attempted), ``environment`` / ``environment_transient`` (a
      problem of the machine, not the candidate), ``build`` (the candidate's ``CompileResult``)
      with ``build_evidence``, ``module_file``, ``inspection`` (the trusted inspector's report of
      the module) with ``inspector_evidence``, ``reference`` / ``reference_problem`` (the audited
      ``Statement.lean`` elaborated now, for freezes without a statement hash), ``unaudited``
      (per freeze: its statement's dependencies no audit certified), ``changed_during_gate``
      (recorded files whose hash changed by the end of the collection);
    - the independent checkers: ``kernel_replay``, ``comparator``.
    """

    unit_id: str
    module: str
    freezes: tuple[FreezeRecord, ...]
    axiom_allowlist: tuple[str, ...]
    extension_allowlist: frozenset[str]
    kernel_allow: frozenset[str]
    audit_threshold: int
    comparator_configured: str | None
    source: str | None
    source_problem: str | None
    declarations: tuple[Declaration, ...]
    rendered_source: str | None
    source_comparisons: tuple[Comparison, ...] | None
    audit_result: bytes | None
    audit_problem: str | None
    declared_registrations: frozenset[str]
    expected_imports: tuple[str, ...]
    toolchain_found: bool
    toolchain_version: str | None
    lean_version: str | None
    pin: str | None = None
    trust: str | None = None
    no_lean: str | None = None
    lean_failure: Mapping[str, Any] = field(default_factory=_frozen_map)
    environment: str | None = None
    environment_transient: bool = False
    build: CompileResult | None = None
    build_evidence: Mapping[str, Any] = field(default_factory=_frozen_map)
    module_file: str | None = None
    inspection: Inspection | None = None
    inspector_evidence: Mapping[str, Any] = field(default_factory=_frozen_map)
    reference: Inspection | None = None
    reference_problem: str | None = None
    unaudited: tuple[tuple[str, ...], ...] = ()
    changed_during_gate: tuple[str, ...] = ()
    kernel_replay: KernelReplayRun = field(default_factory=KernelReplayRun)
    comparator: ComparatorRun = field(default_factory=ComparatorRun)

    @property
    def roots(self) -> list[str]:
        """The completion roots: frozen declarations with role ``root``."""
        return [f.decl for f in self.freezes if f.role == "root"]


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


def transient_process(proc) -> bool:
    """A process (``ProcessResult``) that failed as the machine can make any process fail, so that
    another run may succeed: killed by a signal without a timeout (a crash; the kernel's
    out-of-memory killer sends SIGKILL; inside bubblewrap, exit code 128 + N), or its executable not found (exit 127, or it never
    started) — not a sandbox refusal or a timeout."""
    if proc is None or proc.refused or proc.timed_out:
        return False
    return proc.exit_code is None or proc.crashed or proc.exit_code == 127


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
    if proc.refused or proc.exit_code is None or proc.memory_exceeded or proc.exit_code == 127 or proc.crashed:
        return proc.describe()
    return None


class Collector:
    """One collection for one unit (``collect``). Holds, besides the evidence it builds, what
    outlives the decision: ``ws`` (the gate workspace; the caller removes it), ``inspector``,
    ``outputs`` (the candidate module's compiled output read right after its build)."""

    def __init__(self, project: Project, store: Store, unit: UnitRecord, log_dir: Path,
                 discovery: Discovery | None) -> None:
        self.project = project
        self.store = store
        self.unit = unit
        self.log_dir = log_dir
        self.discovery = discovery or discover(project.config.lean, cwd=project.paths.lean)
        self.module = unit_module(project, unit)
        self.ws: trusted.GateWorkspace | None = None
        self.inspector: InspectorBuild | None = None
        self.outputs: dict[str, bytes] = {}
        # the Lean side while it is collected; frozen into the evidence at the end
        self._lean: dict[str, Any] = {}

    def rel(self, path: Path | str | None) -> str | None:
        if path is None:
            return None
        try:
            return self.project.paths.rel(Path(path))
        except ValueError:
            return str(path)

    def _recorded(self, name: str) -> tuple[bytes | None, str | None]:
        """(bytes, problem) of ``units/<unit>/<name>``, which must match its recorded sha256."""
        try:
            return trusted.recorded_bytes(self.project, self.store, self.unit.id, name), None
        except trusted.RecordedInputError as e:
            return None, str(e)

    def collect(self) -> GateEvidence:
        """The evidence for this unit (class docstring). Never raises for bad Lean input."""
        cfg = self.project.config
        freezes = self.store.freezes(self.unit.id)
        roots = [f.decl for f in freezes if f.role == "root"]
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
        rendered = (render_unit_file(self.project, self.store, self.unit, model_part(source), "Basic")
                    if source is not None else None)
        comparisons = (tuple(compare_source(f, decls, self.project.paths.root) for f in freezes)
                       if problem is None else None)
        audit, audit_problem = self._recorded("audit/result.json")
        tc = self.discovery.toolchain
        self._lean = {"no_lean": None, "environment": None, "environment_transient": False, "pin": None,
                      "trust": None, "lean_failure": {}}
        self._collect_lean(data if problem is None else None, problem, freezes)
        lean = self._lean
        inspection: Inspection | None = lean.get("inspection")
        unaudited: tuple[tuple[str, ...], ...] = ()
        if lean["no_lean"] is None and inspection is not None and inspection.ok:
            assert inspection.report is not None
            found = []
            for f in freezes:
                rec = inspection.report.lookup(f.decl)
                found.append(tuple(unaudited_dependencies(self.project, self.store, self.unit, rec,
                                                          f.normalized_signature))
                             if rec is not None and rec.found else ())
            unaudited = tuple(found)
        kernel_replay = self._kernel_replay(lean["no_lean"])
        comparator = self._comparator(freezes, lean["no_lean"])
        changed: tuple[str, ...] = ()
        build: CompileResult | None = lean.get("build")
        if self.ws is not None and build is not None and build.ok:
            changed = tuple(self.ws.recheck())
        return GateEvidence(
            unit_id=self.unit.id, module=self.module, freezes=tuple(freezes),
            axiom_allowlist=tuple(cfg.lean.axiom_allowlist),
            extension_allowlist=frozenset(cfg.lean.extension_allowlist), kernel_allow=frozenset(cfg.lean.kernel_allow),
            audit_threshold=cfg.audit.threshold, comparator_configured=cfg.lean.comparator,
            source=source, source_problem=problem, declarations=tuple(decls), rendered_source=rendered,
            source_comparisons=comparisons, audit_result=audit, audit_problem=audit_problem,
            declared_registrations=self._declared_registrations(),
            expected_imports=tuple(unit_imports(self.project, self.store, self.unit)),
            toolchain_found=tc is not None, toolchain_version=tc.version if tc else None,
            lean_version=tc.lean_version if tc else None, pin=lean["pin"], trust=lean["trust"],
            no_lean=lean["no_lean"], lean_failure=_frozen_map(lean["lean_failure"]),
            environment=lean["environment"], environment_transient=lean["environment_transient"],
            build=build, build_evidence=_frozen_map(lean.get("build_evidence")),
            module_file=(self.ws.module_file(self.module).relative_to(self.ws.src).as_posix()
                         if self.ws is not None else None),
            inspection=inspection, inspector_evidence=_frozen_map(self._inspector_evidence(inspection)),
            reference=lean.get("reference"), reference_problem=lean.get("reference_problem"),
            unaudited=unaudited, changed_during_gate=changed, kernel_replay=kernel_replay, comparator=comparator,
        )

    def _inspector_evidence(self, inspection: Inspection | None) -> dict[str, Any]:
        if inspection is None:
            return {}
        ev = inspection.evidence()
        return {k: self.rel(v) if k == "inspector_report" else v for k, v in ev.items()}

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

    # -- the Lean side -------------------------------------------------------------------------
    def _fail_lean(self, reason: str, *, environment: bool, **evidence: Any) -> None:
        self._lean["no_lean"] = reason
        if environment:
            self._lean["environment"] = reason
        self._lean["lean_failure"] = evidence

    def _collect_lean(self, source: bytes | None, problem: str | None, freezes: list[FreezeRecord]) -> None:
        """Prepare the workspace, build, inspect (module docstring of ``fyan.gates.completion``,
        ``build``); each step that cannot run records why in ``_lean`` and stops."""
        cfg = self.project.config.lean
        tc = self.discovery.toolchain
        lean = self._lean
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
        lean["pin"] = pin.pin
        if not pin.ok:
            self._fail_lean(pin.reason, environment=True, toolchain=tc.version, pin=pin.pin)
            return
        trust = toolchain_trust(tc, cfg)  # only a toolchain whose selftest passed completes units
        lean["trust"] = trust.statement
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

            learned, why = learned_now(tc, pin.pin or "", cfg, self.inspector, self.log_dir)
            if learned is None:
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
            lean["environment_transient"] = transient_process(first.process)
            self._fail_lean(f"the upstream units do not build in the gate workspace: {first.reason}",
                            environment=True, log=self.rel(first.log_file))
            return
        st_build = None
        if wants_statement:
            st_build, _ = trusted.build(self.ws, cfg, self.log_dir, trusted=[st_module], candidate=[], name="statement")
        if need_reference:
            if statement is None:
                lean["reference_problem"] = st_problem
            elif st_build is None or not st_build.ok:
                lean["reference_problem"] = (f"the audited Statement.lean does not build now: "
                                             f"{st_build.reason if st_build else 'not built'}")
            else:
                present = [d for d in need_reference if declarations.find(declarations.scan(statement.decode()), d)]
                reference = trusted.inspect(self.ws, self.inspector, cfg, self.log_dir, name="reference-inspect",
                                            modules=[st_module], names=present,
                                            local_prefix=self.project.config.lean_lib)
                lean["reference"] = reference
                if not reference.ok:
                    lean["reference_problem"] = (f"the inspector could not read the audited Statement.lean: "
                                                 f"{reference.problem}")
        # phase 2: the candidate, with every earlier output protected
        _, build = trusted.build(self.ws, cfg, self.log_dir, trusted=[], candidate=[self.module], name="build")
        assert build is not None
        lean["build"] = build
        lean["build_evidence"] = {"toolchain": tc.version, "pin": pin.pin, "workspace": self.rel(self.ws.root),
                                  **{**build.evidence(), "log": self.rel(build.log_file)},
                                  "lean": self.ws.setup.evidence()}
        if not build.ok:
            lean["no_lean"] = f"the build failed ({build.reason})"
            if build.environment_error is not None:
                lean["environment"] = f"{build.reason}; the environment, not the proof: {build.environment_error}"
                lean["environment_transient"] = transient_process(build.process)
            return
        self.outputs = trusted.module_outputs(self.ws, self.module)
        names = list(dict.fromkeys(f.decl for f in freezes))
        inspection = trusted.inspect(self.ws, self.inspector, cfg, self.log_dir, name="inspect",
                                     modules=[self.module], names=names, local_prefix=self.project.config.lean_lib)
        lean["inspection"] = inspection
        if not inspection.ok:
            lean["no_lean"] = f"the inspector gave no evidence: {inspection.problem}"
            env = inspector_environment_problem(inspection)
            if env is not None:
                lean["environment"] = f"{lean['no_lean']}; the environment, not the proof: {env}"
                lean["environment_transient"] = inspection.process is not None and \
                    (transient_process(inspection.process) or inspection.process.memory_exceeded)

    # -- the independent checkers ----------------------------------------------------------------
    def _kernel_replay(self, no_lean: str | None) -> KernelReplayRun:
        """Find the kernel checker and, when there is compiled evidence, replay the module."""
        tc = self.discovery.toolchain
        if tc is None:
            return KernelReplayRun()
        checker, looked = find_kernel_checker(tc, cwd=self.ws.root if self.ws is not None else None)
        if checker is None:
            return KernelReplayRun(looked_in=looked)
        if no_lean is not None or self.ws is None:
            return KernelReplayRun(checker=str(checker), looked_in=looked)
        proc = trusted.run_tool(self.ws, [str(checker), self.module], self.project.config.lean, self.log_dir,
                                name="kernel-replay", kind="kernel_replay", readable=[checker.parent])
        return KernelReplayRun(checker=str(checker), looked_in=looked, process=proc,
                               log=self.rel(self.log_dir / "kernel-replay.log"))

    def _comparator(self, freezes: list[FreezeRecord], no_lean: str | None) -> ComparatorRun:
        """Find comparator and what it needs and, when there is compiled evidence, run it."""
        comparator = find_comparator(self.project)
        tc = self.discovery.toolchain
        if comparator is None or tc is None:
            return ComparatorRun()
        missing = missing_comparator_prerequisites()
        if missing:  # honest absence, never a pass
            return ComparatorRun(comparator=str(comparator), missing=tuple(missing))
        if no_lean is not None or self.ws is None:
            return ComparatorRun(comparator=str(comparator))
        try:  # comparator builds both modules itself, with Lake, inside its own landrun sandbox
            package = trusted.comparator_package(self.ws, self.project, self.store, self.unit)
        except (OSError, trusted.GateEnvironmentError, trusted.RecordedInputError) as e:
            return ComparatorRun(comparator=str(comparator), package_problem=str(e))
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
        return ComparatorRun(comparator=str(comparator), config=self.rel(path), process=proc,
                             log=self.rel(self.log_dir / "comparator.log"),
                             nanoda=str(nanoda) if nanoda is not None else None)
