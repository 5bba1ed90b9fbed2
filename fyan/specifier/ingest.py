"""Ingest a project's source: intake → units → DAG → ``problem.tex``, registered in one go.

Everything is computed in memory first; only a fully valid result reaches the gateway, so bad
input (malformed TeX, an unknown label, a cycle) leaves the project exactly as it was.

With ``[intake] specifier = "model"`` the Specifier's model part (``fyan.agents.specify``) runs
between the deterministic units/edges and the final validation: it may group statements and
propose edges (each checked by the DAG validator), and a validation pass compares each
``problem.tex`` with its source statements.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel

from fyan.errors import InputError
from fyan.intake import read_source
from fyan.lean.package import init_package
from fyan.project import Project
from fyan.specifier.dag import Dag, Edge, extract_edges, validate
from fyan.specifier.problem import render_problem, render_source_proof
from fyan.specifier.units import UnitSpec, build_units
from fyan.state.gateway import Gateway


class IngestReport(BaseModel):
    source: str
    files: list[str]
    statements: int
    kinds: dict[str, int]
    units: int
    edges: int
    layers: int
    warnings: list[str]
    notes: list[str]


def render_files(catalogue, units: list[UnitSpec], edges: list[Edge]) -> dict[str, dict[str, bytes]]:
    """Per-unit intake files (``problem.tex``, ``source_proof.tex``) rendered by code."""
    prefix = "source/"
    files: dict[str, dict[str, bytes]] = {}
    for u in units:
        deps = [e for e in edges if e.unit == u.id]
        unit_files = {"problem.tex": render_problem(u, catalogue, deps, prefix).encode()}
        proof = render_source_proof(u, catalogue, prefix)
        if proof is not None:
            unit_files["source_proof.tex"] = proof.encode()
        files[u.id] = unit_files
    return files


def plan_ingest(
    project: Project, specifier: Callable | None = None
) -> tuple[Dag, dict[str, dict[str, bytes]], dict[str, str], IngestReport]:
    """Compute units, DAG, per-unit files and metadata without writing anything.

    ``specifier(catalogue, units, edges) -> (units, edges, notes, meta)`` is the Specifier's
    model part, when configured; its result is validated like the deterministic one.
    """
    cfg = project.config.intake
    main = project.source_main
    catalogue = read_source(main, source_root=project.paths.source)
    units = build_units(catalogue, cfg.unit_kinds)
    for u in units:  # provenance relative to the project folder
        u.provenance = u.provenance.model_copy(update={"file": f"source/{u.provenance.file}"})
    if not units:
        found = Counter(s.kind for s in catalogue.statements)
        raise InputError(
            f"{project.config.project.source}: no statement of a unit kind ({', '.join(cfg.unit_kinds)}) found"
            + (f"; found {dict(found)}" if found else ""),
            hint="check [intake] unit_kinds in fyan.toml, or the document's environment names",
        )
    edges, notes = extract_edges(
        catalogue, units, unknown_references=cfg.unknown_references, term_edges=cfg.term_edges
    )
    extra_meta: dict[str, str] = {}
    if specifier is not None:
        validate(catalogue, units, edges, cfg.unit_kinds)  # the deterministic part must hold first
        units, edges, more_notes, extra_meta = specifier(catalogue, units, edges)
        notes = notes + more_notes
    dag = validate(catalogue, units, edges, cfg.unit_kinds)
    files = render_files(catalogue, units, edges)
    digest = hashlib.sha256()
    for rel in catalogue.files:
        digest.update(rel.encode() + b"\0" + (project.paths.source / rel).read_bytes())
    meta = {
        "source_sha256": digest.hexdigest(),
        "catalogue": catalogue.model_dump_json(),
        **extra_meta,
    }
    report = IngestReport(
        source=project.config.project.source, files=catalogue.files, statements=len(catalogue.statements),
        kinds=dict(Counter(s.kind for s in catalogue.statements)), units=len(units), edges=len(edges),
        layers=dag.layer_count, warnings=catalogue.warnings, notes=notes,
    )
    return dag, files, meta, report


def ingest(project: Project, gateway: Gateway, providers: Callable | None = None) -> IngestReport:
    """Ingest ``project``'s source and register the result (see module docstring).

    ``providers(stage) -> Provider`` serves the Specifier's model part (default: the project's
    configured providers)."""
    specifier = None
    if project.config.intake.specifier == "model":
        from fyan.agents.specify import ModelSpecifier

        specifier = ModelSpecifier(project, gateway, providers)
    dag, files, meta, report = plan_ingest(project, specifier)
    gateway.register_units(dag, files, meta)
    init_package(project)
    return report
