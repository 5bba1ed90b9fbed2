"""The shadow gate: an extra completion-gate check for units that come with a shadow set.

A unit ``<unit>`` of a project has a shadow set when ``shadows/<unit>/shadowset.toml`` (or
``.json``) exists in the project folder — a reference formalization the user vouches for (a
benchmark's statement, an earlier version, a statement a mathematician vetted). The completion
gate (``fyan.gates.completion``) then adds the required check ``shadow_alignment``, beside the
semantic certification: the unit's frozen root, in the unit's built Lake workspace, must reach
SA-Pass = 1 (it compiles, every forward check and the backward check pass; docs/design.md).

Deterministic and model-free: names are adapted by rules only (never a model-drafted adapter),
and sorry is left to the gate's own ``sorry_free`` check (the statement is what is compared).
Fails closed: an unreadable shadow set, no toolchain, a failed build, a root the shadow set
cannot be mapped to, or any compile that does not finish is a failed check with its reason.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from fyan.models.gate_report import CheckResult
from fyan.sandbox import safefile
from fyan.lean.inspector import InspectorBuild
from fyan.lakepackage.trusted import GateWorkspace
from fyan.lean.toolchain import Discovery
from fyan.project import Project
from fyan.shadow.adapt import name_rule
from fyan.shadow.compiler import Compiler, LeanCompiler
from fyan.shadow.evaluate import evaluate_submission
from fyan.shadow.extract import NoCandidate, candidate_named
from fyan.shadow.shadowset import ShadowSet, find_file, load_shadow_set
from fyan.state.models import UnitRecord

CHECK = "shadow_alignment"
SHADOWS_FOLDER = "shadows"


def shadow_set_path(project: Project, unit: UnitRecord) -> Path | None:
    """The unit's shadow-set file, or None when the unit has none."""
    folder = project.paths.root / SHADOWS_FOLDER / unit.id
    return find_file(folder) if folder.is_dir() else None


def _root_for(shadow_set: ShadowSet, roots: list[str]) -> str | None:
    named = [r for r in roots if name_rule(shadow_set.target, r)]
    if len(named) == 1:
        return named[0]
    return roots[0] if len(roots) == 1 else None


def shadow_checks(
    project: Project,
    unit: UnitRecord,
    source: str | None,
    roots: list[str],
    discovery: Discovery,
    log_dir: Path,
    *,
    built: bool,
    workspace: GateWorkspace | None = None,
    inspector: InspectorBuild | None = None,
    compiler: Compiler | None = None,
) -> list[CheckResult]:
    """``[]`` when the unit has no shadow set, else ``[CheckResult("shadow_alignment", ...)]``.

    ``source`` is the unit's ``Basic.lean`` (None when unreadable), ``roots`` its frozen roots,
    ``built`` whether the unit compiled in the gate workspace ``workspace`` (whose ``lib/`` holds
    the upstream units), ``inspector`` the trusted inspector the gate used. ``compiler`` replaces
    the real plain-``lean`` adapter (tests). Never raises for bad evidence: it fails the check.
    """
    path = shadow_set_path(project, unit)
    if path is None:
        return []

    def result(ok: bool, reason: str, **evidence) -> list:
        rel = project.paths.rel(path)
        return [CheckResult(name=CHECK, status="pass" if ok else "fail", required=True, reason=reason,
                            evidence={"shadow_set": rel, **evidence})]

    try:
        digest = hashlib.sha256(safefile.read_bytes(path)).hexdigest()
        shadow_set = load_shadow_set(path)
    except Exception as e:  # noqa: BLE001 - any unreadable evidence fails closed
        return result(False, f"unreadable shadow set: {getattr(e, 'message', e)}")
    if source is None:
        return result(False, "no Basic.lean to check", sha256=digest)
    toolchain = discovery.toolchain
    if compiler is None and toolchain is None:
        return result(False, discovery.problem or "Lean toolchain not found", sha256=digest)
    if not built:
        return result(False, "not run: the build failed", sha256=digest)
    root = _root_for(shadow_set, roots)
    if root is None:
        return result(False, f"cannot map the shadow target {shadow_set.target} to one of the roots {roots}", sha256=digest)
    try:
        candidate = candidate_named(source, root)
    except NoCandidate as e:
        return result(False, f"root {root}: {e}", sha256=digest)
    owned = compiler is None
    if compiler is None:
        if workspace is None or inspector is None:
            return result(False, "not run: no gate workspace or trusted inspector", sha256=digest)
        cfg = project.config.lean
        (log_dir / "shadow").mkdir(parents=True, exist_ok=True)
        compiler = LeanCompiler(toolchain, workspace.setup, workspace.root, cfg, timeout_s=cfg.build_timeout,
                                inspector=inspector, search_path=workspace.search_path(), log_dir=log_dir / "shadow",
                                project_root=project.paths.root)
    try:
        report = evaluate_submission(
            shadow_set, source, submission=unit.id, compiler=compiler, candidate=candidate, allow_sorry_proofs=True,
            allowed_axioms=tuple(project.config.lean.axiom_allowlist), files_dir=log_dir / "shadow",
            report_root=log_dir,
        )
    finally:
        if owned:
            compiler.close()
    s = report.scores
    failing = [c for c in [report.compile, *report.forward, *([report.backward] if report.backward else [])] if not c.passed]
    reason = (f"SA-Pass = 1: {s.forward_passed}/{s.forward_total} forward checks and the backward check pass"
              if s.sa_pass == 1 else "SA-Pass = 0: " + "; ".join(f"{c.check}: {c.reason}" for c in failing))
    return result(s.sa_pass == 1, reason, sha256=digest, root=root, scores=s.model_dump(mode="json"),
                  adaptation=report.adaptation.model_dump(mode="json") if report.adaptation else None,
                  checks={c.check: c.reason for c in [report.compile, *report.forward]
                          + ([report.backward] if report.backward else [])})
