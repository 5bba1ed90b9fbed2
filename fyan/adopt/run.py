"""Adoption of an existing Lake package by a project, and the drift report.

``inspect_package`` builds the modules of the package's Lake targets (``lake build``, in the
package: only its ``.lake/`` build outputs are written; ``fyan.adopt.package`` says which modules:
a file outside every target is listed and ignored; a target module that does not build is
reported by name with the modules importing it, and the rest is adopted) and runs Fyan's trusted inspector
(``fyan.lean.inspector.run_inspector``: ``--import`` every module, ``--name`` every
``\\lean`` name of the blueprint) on the compiled environment. ``adopt`` turns the inspector's
report into one ``Decision`` per unit (``fyan.adopt.decide``) and records them through the
gateway (``Gateway.record_adoptions``; the gateway is the only writer of state), then the
project's Lake package requires the adopted one (``fyan.lakepackage.package.require_adopted``).
``drift_report`` compares the blueprint's marks with the same evidence (``fyan.adopt.drift``).

Nothing is decided from the blueprint's ``\\leanok``: without a toolchain, a failed build or
a failed inspection there is no decision at all (``AdoptionUnavailable``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from fyan.adopt.decide import DeclEvidence, Decision, Outcome, decide_all, evidence
from fyan.adopt.drift import Drift, blueprint_drift, counts, drift
from fyan.adopt.marks import UnitMarks, unit_marks
from fyan.adopt.package import LakePackage, read_package
from fyan.errors import ExitCode, FyanError, ProjectError
from fyan.intake.catalogue import Catalogue
from fyan.lean.inspector import (BlueprintAbsent, BlueprintPresent, LookupRecord, ensure_inspector,
                                 inspector_confinement, run_inspector)
from fyan.trust.record import toolchain_trust
from fyan.lean.lake import lake_build
from fyan.sandbox.runner import Confinement, toolchain_paths
from fyan.lean.toolchain import discover
from fyan.project import Project
from fyan.state.gateway import AdoptionSpec, FreezeSpec, Gateway
from fyan.state.store import Store


class AdoptionUnavailable(FyanError):
    """The compiled environment cannot be inspected here (no toolchain, a failed build, no
    inspector): nothing is adopted, nothing is lost; the message says what to do."""

    exit_code = ExitCode.INCOMPLETE


class PackageEvidence(BaseModel):
    """The inspector's lookups (``\\lean`` name -> record) and how they were obtained; the target
    modules that did not build (module -> why; they and their importers are not inspected) and
    the package's files outside every target (ignored)."""

    lookups: dict[str, LookupRecord]
    facts: dict[str, Any] = Field(default_factory=dict)
    unbuilt: dict[str, str] = Field(default_factory=dict)
    outside: list[str] = Field(default_factory=list)
    #: LeanArchitect's compiled ``@[blueprint]`` attributes (None: not reported)
    blueprint: BlueprintAbsent | BlueprintPresent | None = None
    #: the package modules that were inspected (the ``@[blueprint]`` entries compared are theirs)
    modules: list[str] = Field(default_factory=list)

    @property
    def references(self) -> dict[str, list[str]]:
        """The package's reference graph the lookups reached (declaration -> what it refers to)."""
        out: dict[str, list[str]] = {}
        for rec in self.lookups.values():
            for r in rec.references:
                out.setdefault(r.name, list(r.references))
        return out


class AdoptionReport(BaseModel):
    package: str
    decisions: list[Decision]
    counts: dict[str, int]
    drift: list[Drift]
    drift_counts: dict[str, int]
    unbuilt: dict[str, str] = Field(default_factory=dict, description="target module -> why it was not adopted")
    outside: list[str] = Field(default_factory=list, description="the package's .lean files outside every target")


class DriftReport(BaseModel):
    package: str
    drift: list[Drift]
    counts: dict[str, int]
    unbuilt: dict[str, str] = Field(default_factory=dict)
    outside: list[str] = Field(default_factory=list)
    isolated: list[str] = Field(default_factory=list, description="units with no dependency in or out (labels)")
    components: list[list[str]] = Field(default_factory=list,
                                        description="weakly connected components (labels), largest first")


def blueprint_connectivity(store: Store) -> tuple[list[str], list[list[str]]]:
    """The isolated units and the components of the blueprint's dependency graph (labels, or ids
    of units without one), in document order (``fyan.specifier.connectivity``)."""
    from fyan.specifier.connectivity import connectivity

    units = store.units()
    name = {u.id: u.label or u.id for u in units}
    c = connectivity([u.id for u in units], [(d.unit, d.depends_on) for d in store.deps()])
    return [name[n] for n in c.isolated], [[name[n] for n in comp] for comp in c.components]


def _unbuilt(pkg: LakePackage, failed: list[str]) -> dict[str, str]:
    """Target module -> why it is not adopted: it failed to build, or it imports (transitively)
    a module that did."""
    out = {m: "does not build" for m in failed if m in pkg.sources}
    changed = True
    while changed:
        changed = False
        for m in pkg.modules:
            if m in out:
                continue
            bad = next((i for i in pkg.imports_within(m) if i in out), None)
            if bad is not None:
                out[m] = f"imports {bad}, which " + ("does not build" if out[bad] == "does not build" else "is not built")
                changed = True
    return out


def project_marks(project: Project, store: Store) -> dict[str, UnitMarks]:
    """The blueprint marks of every unit of an ingested project (``ProjectError`` otherwise)."""
    raw = store.meta("catalogue") if store.exists else None
    if raw is None:
        raise ProjectError(f"{project.paths.root}: the project has not been ingested yet",
                           hint=f"run `fyan run {project.paths.root}` first (it ingests the source), then adopt")
    return unit_marks(store.units(), Catalogue.model_validate_json(raw))


def inspect_package(project: Project, pkg: LakePackage, names: list[str], out_dir: Path) -> PackageEvidence:
    """Build ``pkg`` and look ``names`` up in its compiled environment with the trusted inspector;
    logs and the report go to ``out_dir``. Raises ``AdoptionUnavailable`` when no toolchain is
    found, the build fails, the inspector cannot be had or gives no report."""
    cfg = project.config.lean
    out_dir.mkdir(parents=True, exist_ok=True)
    found = discover(cfg, cwd=pkg.folder)
    if found.toolchain is None:
        raise AdoptionUnavailable(f"cannot inspect {pkg.folder}: {found.problem}",
                                  hint="adoption decides from the compiled package only; install Lean, then "
                                  f"`fyan adopt {project.paths.root} --lean-project {pkg.folder}`")
    tc = found.toolchain
    trust = toolchain_trust(tc, cfg)  # adoption marks units complete: the same trust as the gate
    if not trust.trusted:
        raise AdoptionUnavailable(f"cannot adopt from {pkg.folder} with this toolchain: {trust.problem}",
                                  hint=f"run `fyan selftest --toolchain {pkg.pin}`, then `fyan adopt "
                                  f"{project.paths.root} --lean-project {pkg.folder}`")
    (pkg.folder / ".lake").mkdir(exist_ok=True)  # the build outputs: the only place adoption writes in the package
    # the package, the toolchain and [lean] sandbox_readable readable (the sandbox hides /tmp and the
    # home folder, where a package and a toolchain often lie); writes only its outputs and the log
    # Lake writes lake-manifest.json at the top of a package that has none whenever it loads it
    # (docs/lean-contract.md): such a package's folder is writable for this build, else only .lake;
    # the log folder comes first (the sandbox's temporary files go there, never into the package)
    manifest = (pkg.folder / "lake-manifest.json").exists()
    writes = (out_dir, pkg.folder / ".lake") if manifest else (out_dir, pkg.folder)
    readable = [*((pkg.folder.resolve(),) if manifest else ()), *toolchain_paths(tc.lake), *tc.readable]
    if not manifest:  # [adopt] package is also in [lean] sandbox_readable: a read-only bind would win
        readable = [r for r in readable if Path(r).resolve() != pkg.folder.resolve()]
    build = lake_build(tc, pkg.folder, list(pkg.modules), cfg, out_dir, name="build",
                       confinement=Confinement(writable=writes,
                                               read_only=tuple(dict.fromkeys(readable))))
    unbuilt: dict[str, str] = {}
    if not build.ok:
        # Lake keeps building the other targets after a failure and names the failed ones
        # (`Some required targets logged failures:`; docs/lean-contract.md, "Lake targets")
        failed = list(dict.fromkeys(build.log.failed_targets
                                    + [j.target for j in build.log.jobs if j.icon == "✖"]))
        unbuilt = _unbuilt(pkg, failed)
        if not unbuilt or len(unbuilt) == len(pkg.modules):
            raise AdoptionUnavailable(f"`lake build` of {pkg.folder} failed: {build.reason} (log {build.log_file})",
                                      hint="fix the package's build (adoption needs its .olean files), then adopt again")
    built = [m for m in pkg.modules if m not in unbuilt]
    inspector, why = ensure_inspector(tc, pkg.pin, cfg, log_dir=out_dir)
    if inspector is None:
        raise AdoptionUnavailable(f"no trusted inspector for {pkg.pin}: {why}")
    base = inspector_confinement(inspector, tc, pkg.folder, config=cfg, out_dir=out_dir)
    result = run_inspector(inspector, tc, pkg.folder, config=cfg, out_dir=out_dir, name="inspect",
                           names=names, imports=built, follow_references=True,
                           confinement=Confinement(writable=(out_dir, pkg.folder / ".lake"),
                                                   read_only=tuple(dict.fromkeys((*base.read_only,
                                                                                  pkg.folder.resolve())))))
    if not result.ok or result.report is None:
        raise AdoptionUnavailable(f"the trusted inspector gave no evidence on {pkg.folder}: {result.problem}",
                                  hint=f"see {out_dir}/inspect.log")
    facts = {"package": str(pkg.folder), "package_name": pkg.name, "pin": pkg.pin, "toolchain": tc.version,
             "toolchain_trust": trust.statement,
             "modules": len(built), "build": build.evidence(), **result.evidence(),
             "unbuilt": unbuilt, "outside": pkg.outside, "inspected_at": time.time()}
    return PackageEvidence(lookups=result.report.records, facts=facts, unbuilt=unbuilt, outside=pkg.outside,
                           blueprint=result.report.blueprint, modules=built)


def _freezes(d: Decision, toolchain: str) -> list[FreezeSpec]:
    out = []
    for e in d.decls:
        bound = {"lean:@toolchain": toolchain, **{f"lean:{k}": v for k, v in e.local_digests.items()}}
        out.append(FreezeSpec(decl=e.name, normalized_signature=e.type_pp or e.name,
                              signature_hash=e.statement_hash or e.type_hash or "", type_hash=e.type_hash,
                              bound_inputs=bound))
    return out


def adopt(project: Project, gateway: Gateway, package: Path | str | None = None) -> AdoptionReport:
    """Adopt the Lake package at ``package`` (default ``[adopt] package``) for every unit of the
    ingested project: inspect, decide, record (module docstring). Raises ``InputError`` for a
    folder that is not a Lake package, ``ProjectError`` before ingestion or when ``package`` is
    not the one in ``[adopt] package``, ``AdoptionUnavailable`` when nothing can be inspected,
    ``TransitionError`` when a unit is running."""
    folder = package or project.config.adopt.package
    if not folder:
        raise ProjectError(f"{project.paths.root}: no Lake package to adopt",
                           hint="give --lean-project <folder of the package>")
    pkg = read_package(folder)
    if project.config.adopt.package and Path(project.config.adopt.package).resolve() != pkg.folder:
        raise ProjectError(f"{project.paths.root} already adopts {project.config.adopt.package}, not {pkg.folder}",
                           hint="one project adopts one Lake package; start a new project for another")
    store = gateway.store
    marks = project_marks(project, store)
    names = sorted({n for m in marks.values() for n in m.lean_names})
    ev = inspect_package(project, pkg, names, project.paths.state / "adopt" / time.strftime("%Y%m%d-%H%M%S"))
    allow = list(project.config.lean.axiom_allowlist)
    decisions = decide_all(marks, ev.lookups, allow)
    specs = [AdoptionSpec(unit=d.unit, outcome=d.outcome.value, package=str(pkg.folder), reason=d.reason,
                          decls=[x.model_dump(mode="json") for x in d.decls],
                          freezes=_freezes(d, str(ev.facts.get("toolchain", ""))) if d.outcome is Outcome.ADOPTED else [])
             for d in decisions.values()]
    gateway.record_adoptions(specs, evidence=ev.facts)
    from fyan.lakepackage.package import require_adopted

    if project.config.adopt.package:
        require_adopted(project)
    found = drift(marks, {n: evidence(n, ev.lookups.get(n), allow) for n in names}, ev.references)
    found += blueprint_drift(marks, ev.blueprint, ev.modules)
    return AdoptionReport(package=str(pkg.folder), decisions=list(decisions.values()),
                          counts={o.value: sum(d.outcome is o for d in decisions.values()) for o in Outcome},
                          drift=found, drift_counts=counts(found), unbuilt=ev.unbuilt, outside=ev.outside)


def drift_report(project: Project, store: Store, package: Path | str | None = None) -> DriftReport:
    """The drift report of the project's blueprint against the package's compiled environment,
    inspected now (``inspect_package``; same errors as ``adopt``). Records nothing."""
    folder = package or project.config.adopt.package
    if not folder:
        raise ProjectError(f"{project.paths.root}: no Lake package to compare with",
                           hint="give --lean-project <folder of the package>")
    pkg = read_package(folder)
    marks = project_marks(project, store)
    names = sorted({n for m in marks.values() for n in m.lean_names})
    ev = inspect_package(project, pkg, names, project.paths.state / "drift" / time.strftime("%Y%m%d-%H%M%S"))
    allow = list(project.config.lean.axiom_allowlist)
    evidence_by_name: dict[str, DeclEvidence] = {n: evidence(n, ev.lookups.get(n), allow) for n in names}
    found = drift(marks, evidence_by_name, ev.references) + blueprint_drift(marks, ev.blueprint, ev.modules)
    isolated, components = blueprint_connectivity(store)
    return DriftReport(package=str(pkg.folder), drift=found, counts=counts(found), unbuilt=ev.unbuilt,
                       outside=ev.outside, isolated=isolated, components=components)


def reverify_adoptions(project: Project, store: Store, units: list[str], log_dir: Path) -> dict[str, tuple[bool, str]]:
    """For ``fyan verify``: re-inspect the adopted package now and, for each unit of ``units``
    (complete by adoption), whether its adoption still holds — every declaration still declared,
    sorry-free, with allowed axioms (``fyan.adopt.decide``), and its elaborated statement the one
    frozen at adoption (``statement_hash``). Unit id -> (holds, reason). Records nothing. When
    nothing can be inspected every unit is (False, why)."""
    if not units:
        return {}
    try:
        pkg = read_package(project.config.adopt.package)
        marks = project_marks(project, store)
        names = sorted({n for u in units for n in marks[u].lean_names})
        ev = inspect_package(project, pkg, names, log_dir)
    except FyanError as e:
        return {u: (False, f"the adopted package cannot be inspected: {e.message}") for u in units}
    allow = list(project.config.lean.axiom_allowlist)
    out: dict[str, tuple[bool, str]] = {}
    for u in units:
        d = decide_all({u: marks[u]}, ev.lookups, allow)[u]
        if d.outcome is not Outcome.ADOPTED:
            out[u] = (False, f"no longer adoptable: {d.reason}")
            continue
        frozen = {f.decl: f.signature_hash for f in store.freezes(u) if f.run_id == 0}
        changed = [e.name for e in d.decls if frozen.get(e.name) != (e.statement_hash or e.type_hash or "")]
        out[u] = (False, f"statement changed since adoption: {', '.join(changed)}") if changed else \
            (True, "the adoption holds: declared, sorry-free, axioms allowed, statement as frozen")
    return out
