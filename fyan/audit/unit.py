"""A unit's audit inputs, read from the project (used by the stage agent, the gateway's check
and ``fyan audit``), and the staleness of a frozen statement.

``unit_inputs`` raises ``FileNotFoundError`` when the unit has no ``problem.tex`` or no
scaffold yet (``lemma_dag.json``, ``Statement.lean``).
"""

from __future__ import annotations

from pathlib import Path

from fyan.models.replies import LemmaDag
from fyan.audit.decide import AuditInputs
from fyan.lean import declarations
from fyan.lakepackage.package import unit_namespace, upstream
from fyan.project import Project
from fyan.specifier.problem import BEGIN, END
from fyan.state.models import FreezeRecord, UnitRecord
from fyan.state.store import Store


def without_provenance(text: str) -> str:
    """``problem.tex`` without Fyan's provenance block (the statement the audit compares)."""
    start, end = text.find(BEGIN), text.find(END)
    if start >= 0 and end > start:
        text = text[:start] + text[end + len(END):]
    return text.strip()


def unit_inputs(project: Project, store: Store, unit: UnitRecord, *, statement: str | None = None,
                folder: Path | None = None) -> AuditInputs:
    """The inputs of ``unit``'s audit; ``folder`` (default ``units/<unit>``) holds
    ``lemma_dag.json`` and ``Statement.lean``."""
    unit_dir = project.paths.unit(unit.id)
    folder = folder or unit_dir
    problem = without_provenance((unit_dir / "problem.tex").read_text(encoding="utf-8"))
    dag = LemmaDag.model_validate_json((folder / "lemma_dag.json").read_text(encoding="utf-8"))
    if statement is None:
        statement = (folder / "Statement.lean").read_text(encoding="utf-8")
    signatures: list[str] = []
    parts: list[str] = []
    for dep in upstream(store, unit.id):
        frozen = store.freezes(dep.id)
        signatures += [f.normalized_signature for f in frozen]
        path = project.paths.unit(dep.id) / "problem.tex"
        text = without_provenance(path.read_text(encoding="utf-8")) if path.is_file() else ""
        lean = "".join(f"\n  Lean (frozen): {f.normalized_signature}" for f in frozen)
        parts.append(f"- `{dep.id}` ({dep.kind}): " + " ".join(text.split()) + lean)
    from fyan.audit.library import redefinitions
    from fyan.audit.citations import checked_dag, read

    dag = checked_dag(dag, read(folder))  # a library name the plan check dropped is no redefinition

    blueprint_path = folder / "blueprint.md"
    blueprint = blueprint_path.read_text(encoding="utf-8") if blueprint_path.is_file() else ""
    cfg = project.config.audit
    return AuditInputs(
        unit=unit.id, kind=unit.kind, problem=problem, statement=statement, namespace=unit_namespace(project, unit),
        roots=list(dag.roots), upstream_signatures=signatures, upstream_text="\n".join(parts) or "(none)",
        threshold=cfg.threshold, policy=cfg.grade1_policy, redefinitions=redefinitions(dag, statement, blueprint),
    )


def staleness(project: Project, store: Store, unit: UnitRecord, freezes: list[FreezeRecord] | None = None) -> list[str]:
    """Why the unit's frozen statements are stale (empty: current). A frozen statement is stale
    when a bound file (``problem.tex``, an upstream unit's ``Basic.lean``) changed since the
    freeze (elaborated bindings — local definitions, toolchain — need Lean and are compared by
    the completion gate), or when the unit's current Lean text (``Basic.lean`` if written, else
    ``Statement.lean``) no longer declares it with the frozen signature."""

    from fyan.lakepackage.signatures import bound_file_changes, signature_change

    freezes = store.freezes(unit.id) if freezes is None else freezes
    reasons: list[str] = [c for f in freezes for c in bound_file_changes(f, project.paths.root)]
    unit_dir = project.paths.unit(unit.id)
    for name in ("Basic.lean", "Statement.lean"):
        path = unit_dir / name
        if not path.is_file():
            continue
        decls = declarations.scan(path.read_text(encoding="utf-8"))
        for f in freezes:
            if f.role == "bridge" and name == "Statement.lean":
                continue  # S0 lives in audit/bridge.lean until the Formalizer writes Basic.lean
            change = signature_change(f, decls, f"units/{unit.id}/{name}")
            if change:
                reasons.append(change)
        break
    return reasons
