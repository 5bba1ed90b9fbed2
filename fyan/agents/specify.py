"""The Specifier's model part (docs/design.md; ``[intake] specifier = "model"``).

Runs inside ingest, after the deterministic units and edges and before anything is registered:

1. **Proposal** (prompt ``specify``): the model may group statements into one unit and propose
   dependency edges beyond the explicit references. Code applies it: a group merges the units
   of its statements (id and kind of the first); each proposed edge is checked by the DAG
   validator one by one — an edge to an unknown statement or inside one unit is refused, an edge
   that would close a cycle is refused **with the cycle named**; accepted edges have origin
   ``proposed``. Malformed proposals (unknown index, a statement in two groups) get form repairs.
2. **Validation pass** (prompt ``specify_check``, one call per unit): the model compares the
   ``problem.tex`` code rendered with the unit's source statements (coverage, hypotheses, added
   assumptions, conclusions) and reports findings with a severity.
3. **Deterministic lints** on the ``problem.tex`` texts (``problem_lints``, running
   ``fyan.specifier.lints``: lost "if and only if", strict → non-strict inequality, new
   asymptotic term, malformed provenance, undeclared cross-unit dependency).
4. **Bounded regeneration**: critical findings (from 2 or 3) go back to step 1 as feedback, at
   most ``[agents] specify_rounds`` times; units whose ``problem.tex`` did not change keep their
   findings. Critical findings that remain fail the ingest (``InputError``, nothing registered):
   fail closed.

Every call is persisted through the gateway (stage ``specify``; unit set for the per-unit
checks); prompts, replies and ``specification.json`` (proposals, accepted and refused edges,
findings per round) are kept in ``.fyan/attempts/_specify/<time>/`` and the final report in the
state's metadata (``specification``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import networkx as nx
from pydantic import BaseModel, Field

from fyan.agents.providers.factory import ProviderFactory
from fyan.agents.schemas import SpecFinding, SpecifyCheck, SpecifyReply
from fyan.agents.session import StageSession
from fyan.errors import InputError
from fyan.intake.catalogue import Catalogue
from fyan.project import Project
from fyan.specifier.dag import Edge, build_graph
from fyan.specifier.lints import lint_units
from fyan.specifier.problem import SOURCE_PREFIX, render_files
from fyan.specifier.units import UnitSpec
from fyan.state.gateway import Gateway

NONE = "(none)"


class UnitFinding(BaseModel):
    unit: str
    source: str = Field(description="validation (the model's pass) or lint (deterministic)")
    finding: SpecFinding


_LINT_ASPECT = {
    "lost-iff": "conclusions",
    "strict-to-nonstrict": "other",
    "new-asymptotic": "added_assumptions",
    "malformed-provenance": "provenance",
    "undeclared-dependency": "dependencies",
}


def problem_lints(catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge],
                  files: dict[str, dict[str, bytes]], mentions: list[Edge] | None = None) -> list[UnitFinding]:
    """The deterministic ``problem.tex`` lints (``fyan.specifier.lints.lint_units``) as Specifier
    findings (``source="lint"``): an ``error`` finding is ``critical`` and triggers
    regeneration, a ``warning`` is ``minor``."""
    return [
        UnitFinding(unit=f.unit, source="lint", finding=SpecFinding(
            aspect=_LINT_ASPECT.get(f.rule, "other"), severity="critical" if f.severity == "error" else "minor",
            detail=f"{f.rule}: {f.message}" + (f" (problem.tex line {f.line})" if f.line else "")))
        for f in lint_units(catalogue, units, edges, files, SOURCE_PREFIX, mentions)
    ]


class RefusedEdge(BaseModel):
    unit: str | None
    depends_on: str | None
    reason: str


def model_specifier(project: Project, gateway: Gateway, providers: Callable | None = None) -> ModelSpecifier | None:
    """The Specifier's model part for ``fyan.specifier.ingest.ingest`` when the project asks
    for it (``[intake] specifier = "model"``), else None. ``providers(stage) -> Provider``
    (default: the project's configured providers)."""
    if project.config.intake.specifier != "model":
        return None
    return ModelSpecifier(project, gateway, providers)


class ModelSpecifier:
    """A ``fyan.specifier.ingest.Specifier``: ``(catalogue, units, edges, mentions) -> (units,
    edges, notes, meta)``."""

    def __init__(self, project: Project, gateway: Gateway, providers: Callable | None = None,
                 lints: Callable[..., list[UnitFinding]] | None = None) -> None:
        self.project = project
        self.gateway = gateway
        self.providers = providers or ProviderFactory(project).for_stage
        self.lints = lints or problem_lints
        self.attempt_dir = project.paths.attempts / "_specify" / time.strftime("%Y%m%d-%H%M%S")

    def __call__(self, catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge],
                 mentions: list[Edge] | None = None):
        agents = self.project.config.agents
        session = StageSession(gateway=self.gateway, run=None, provider=self.providers("specify"),
                               agent=agents.for_stage("specify"), form_repairs=agents.form_repairs,
                               attempt_dir=self.attempt_dir, stage="specify")
        report: dict = {"rounds": []}
        findings: dict[str, list[UnitFinding]] = {}
        checked: dict[str, str] = {}
        feedback = NONE
        for round_ in range(agents.specify_rounds + 1):
            reply = session.ask_json("specify", self._values(catalogue, units, edges, feedback), SpecifyReply,
                                     check=lambda r: proposal_errors(catalogue, units, r))
            new_units, new_edges, accepted, refused = apply_proposal(catalogue, units, edges, reply)
            known = {u.id for u in new_units}
            said = [m for m in mentions or [] if m.unit in known and m.depends_on in known]
            files, _ = render_files(catalogue, new_units, new_edges, SOURCE_PREFIX,
                                    self.project.config.intake.unit_kinds, said)
            problems = {uid: f["problem.tex"].decode() for uid, f in files.items()}
            for u in new_units:
                if checked.get(u.id) == problems[u.id]:
                    continue  # unchanged since it was checked: its findings stand
                check = session.ask_json("specify_check", {
                    "unit": u.id, "kind": u.kind, "problem": problems[u.id], "source": source_text(self.project, catalogue, u),
                }, SpecifyCheck, unit=u.id)
                findings[u.id] = [UnitFinding(unit=u.id, source="validation", finding=f) for f in check.findings]
                checked[u.id] = problems[u.id]
            current = [f for u in new_units for f in findings.get(u.id, [])] + self.lints(
                catalogue, new_units, new_edges, files, said)
            critical = [f for f in current if f.finding.severity == "critical"]
            report["rounds"].append({
                "round": round_ + 1, "proposal": reply.model_dump(), "accepted_edges": [e.model_dump() for e in accepted],
                "refused_edges": [r.model_dump() for r in refused], "findings": [f.model_dump() for f in current],
            })
            self._save(report)
            if not critical:
                notes = [f"specifier: edge {e.unit} -> {e.depends_on} proposed and accepted ({e.evidence})" for e in accepted]
                notes += [f"specifier: edge refused: {r.reason}" for r in refused]
                notes += [f"specifier: {f.unit}: {f.finding.aspect} ({f.finding.severity}): {f.finding.detail}" for f in current]
                return new_units, new_edges, notes, {"specification": json.dumps(report, sort_keys=True)}
            feedback = "Critical findings on the problem.tex files of your previous proposal:\n" + "\n".join(
                f"- {f.unit} ({f.source}, {f.finding.aspect}): {f.finding.detail}" for f in critical)
        raise InputError(
            f"the Specifier's validation found critical problems after {agents.specify_rounds} regeneration(s):\n  "
            + "\n  ".join(f"{f.unit}: {f.finding.aspect}: {f.finding.detail}" for f in critical[:10]),
            hint='fix the source statements, or set [intake] specifier = "deterministic" in fyan.toml '
            "(every round's proposal and findings: .fyan/attempts/_specify/<time>/specification.json)",
        )

    def _values(self, catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge], feedback: str) -> dict[str, str]:
        owner = {i: u.id for u in units for i in u.statements}
        statements = []
        for s in catalogue.statements:
            if s.index not in owner:
                continue
            body = " ".join(s.body.split())
            statements.append(f"- [{s.index}] {s.kind}" + (f" `{s.label}`" if s.label else "")
                              + f" (unit `{owner[s.index]}`, {s.provenance}): {body[:400]}")
        edge_lines = [f"- `{e.unit}` depends on `{e.depends_on}` ({e.origin}: {e.evidence})" for e in edges]
        return {"statements": "\n".join(statements), "edges": "\n".join(edge_lines) or NONE, "findings": feedback}

    def _save(self, report: dict) -> None:
        self.attempt_dir.mkdir(parents=True, exist_ok=True)
        (self.attempt_dir / "specification.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")


def source_text(project: Project, catalogue: Catalogue, unit: UnitSpec) -> str:
    """The unit's statements as they stand in the source files (verbatim lines)."""
    parts = []
    for i in unit.statements:
        p = catalogue.statements[i].provenance
        path = project.paths.source / p.file
        lines = path.read_text(encoding="utf-8").splitlines()[p.line_start - 1 : p.line_end]
        parts.append(f"% {p.file}, lines {p.line_start}-{p.line_end}\n" + "\n".join(lines))
    return "\n\n".join(parts)


def proposal_errors(catalogue: Catalogue, units: list[UnitSpec], reply: SpecifyReply) -> list[str]:
    """Form errors of a proposal: indices that are not unit statements, a statement in two groups."""
    owner = {i for u in units for i in u.statements}
    errors = []
    seen: dict[int, int] = {}
    for g, group in enumerate(reply.groups):
        for i in group.statements:
            if i not in owner:
                errors.append(f"groups.{g}: statement [{i}] is not a statement of a unit kind")
            elif i in seen:
                errors.append(f"groups.{g}: statement [{i}] is already in group {seen[i]}")
            seen.setdefault(i, g)
    for n, e in enumerate(reply.edges):
        for end in (e.unit, e.depends_on):
            if end not in owner:
                errors.append(f"edges.{n}: statement [{end}] is not a statement of a unit kind")
    return errors


def apply_proposal(
    catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge], reply: SpecifyReply
) -> tuple[list[UnitSpec], list[Edge], list[Edge], list[RefusedEdge]]:
    """Merge the proposed groups and add the proposed edges that the DAG validator admits.

    Returns (units, edges, accepted proposed edges, refused edges with the reason). An edge
    that would close a cycle is refused naming the cycle."""
    by_stmt = {i: u for u in units for i in u.statements}
    rename: dict[str, str] = {}
    merged: dict[str, UnitSpec] = {}
    for group in reply.groups:
        members = sorted({by_stmt[i].id: by_stmt[i] for i in group.statements if i in by_stmt}.values(), key=lambda u: u.order)
        if len(members) < 2:
            continue
        head = members[0]
        stmts = sorted({i for m in members for i in m.statements})
        merged[head.id] = head.model_copy(update={"statements": stmts})
        for m in members:
            rename[m.id] = head.id
    new_units = [merged.get(u.id, u) for u in units if rename.get(u.id, u.id) == u.id]
    new_edges: dict[tuple[str, str, str], Edge] = {}
    for e in edges:
        a, b = rename.get(e.unit, e.unit), rename.get(e.depends_on, e.depends_on)
        if a != b:
            new_edges.setdefault((a, b, e.origin), e.model_copy(update={"unit": a, "depends_on": b}))
    graph = build_graph(new_units, list(new_edges.values()))
    accepted: list[Edge] = []
    refused: list[RefusedEdge] = []
    for p in reply.edges:
        a = rename.get(by_stmt[p.unit].id, by_stmt[p.unit].id) if p.unit in by_stmt else None
        b = rename.get(by_stmt[p.depends_on].id, by_stmt[p.depends_on].id) if p.depends_on in by_stmt else None
        if a is None or b is None:
            refused.append(RefusedEdge(unit=a, depends_on=b, reason=f"[{p.unit}] -> [{p.depends_on}]: unknown statement"))
            continue
        if a == b:
            refused.append(RefusedEdge(unit=a, depends_on=b, reason=f"{a} -> {b}: both statements are in one unit"))
            continue
        if graph.has_edge(a, b):
            continue  # already known from the document
        graph.add_edge(a, b)
        try:
            cycle = nx.find_cycle(graph, source=a)
        except nx.NetworkXNoCycle:
            cycle = None
        if cycle:
            graph.remove_edge(a, b)
            path = " -> ".join([x for x, _ in cycle] + [cycle[0][0]])
            refused.append(RefusedEdge(unit=a, depends_on=b, reason=f"{a} -> {b} would close the dependency cycle {path}"))
            continue
        edge = Edge(unit=a, depends_on=b, origin="proposed", in_proof=p.in_proof,
                    evidence=f"proposed by the Specifier: {' '.join(p.reason.split())[:200]}")
        new_edges[(a, b, "proposed")] = edge
        accepted.append(edge)
    return new_units, list(new_edges.values()), accepted, refused
