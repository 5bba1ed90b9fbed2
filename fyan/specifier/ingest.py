"""Ingest a project's source: intake → units → DAG → ``problem.tex``, registered in one go.

Everything is computed in memory first; only a fully valid result reaches the gateway, so bad
input (malformed TeX, an unknown label, a cycle) leaves the project exactly as it was. The
deterministic lints (``fyan.specifier.lints``) run on every ``problem.tex``; their findings are
reported (``IngestReport.findings``), not fatal: at ingest the text is the source's own.

With ``[intake] specifier = "model"`` the Specifier's model part (``fyan.agents.specify``) runs
between the deterministic units/edges and the final validation: it may group statements and
propose edges (each checked by the DAG validator), and a validation pass compares each
``problem.tex`` with its source statements; critical lint findings on the regenerated texts
send it back (bounded).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel

from fyan.errors import InputError
from fyan.intake import read_source
from fyan.intake.catalogue import Catalogue
from fyan.lean.package import init_package
from fyan.project import Project
from fyan.specifier.dag import Dag, Edge, extract_edges, validate
from fyan.specifier.lints import Finding, LintInput, lint_problems
from fyan.specifier.problem import provenance_block, render_source_proof, statement_text
from fyan.specifier.units import UnitSpec, build_units
from fyan.state.gateway import Gateway

SOURCE_PREFIX = "source/"


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
    findings: list[Finding] = []
    format: str = "tex"


def render_files(catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge]) -> dict[str, dict[str, bytes]]:
    """Per-unit intake files rendered by code: ``problem.tex`` (provenance block, then the
    statement as in the source) and ``source_proof.tex`` when the document has a proof."""
    files: dict[str, dict[str, bytes]] = {}
    for u in units:
        deps = [e for e in edges if e.unit == u.id]
        problem = provenance_block(u, catalogue, deps, SOURCE_PREFIX) + "\n" + statement_text(u, catalogue) + "\n"
        unit_files = {"problem.tex": problem.encode()}
        proof = render_source_proof(u, catalogue, SOURCE_PREFIX)
        if proof is not None:
            unit_files["source_proof.tex"] = proof.encode()
        files[u.id] = unit_files
    return files


def lint_units(catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge],
               files: dict[str, dict[str, bytes]]) -> list[Finding]:
    """The deterministic lints on every unit's ``problem.tex`` (``files`` from ``render_files``
    or a regeneration), each compared with its source statement and declared dependencies."""
    owner = {i: u.id for u in units for i in u.statements}
    inputs: list[LintInput] = []
    for u in units:
        deps = [e for e in edges if e.unit == u.id]
        context = [owner[p] for i in u.statements if (p := catalogue.statements[i].parent) is not None and p in owner]
        inputs.append(LintInput(unit=u.id, problem_tex=files[u.id]["problem.tex"].decode("utf-8"),
                                source_tex=statement_text(u, catalogue), depends_on=[e.depends_on for e in deps],
                                context_units=context, expected_block=provenance_block(u, catalogue, deps, SOURCE_PREFIX)))
    label_units = {label: owner[site.statement_index] for label, site in catalogue.labels.items()
                   if site.statement_index in owner}
    return lint_problems(inputs, label_units=label_units)


def plan_ingest(
    project: Project, specifier: Callable | None = None, catalogue: Catalogue | None = None
) -> tuple[Dag, dict[str, dict[str, bytes]], dict[str, str], IngestReport]:
    """Compute units, DAG, per-unit files and metadata without writing anything.

    ``specifier(catalogue, units, edges) -> (units, edges, notes, meta)`` is the Specifier's
    model part, when configured; its result is validated like the deterministic one.
    ``catalogue``: the source already read (``fyan init`` reads it before copying it into the
    project); its paths must be relative to the project's ``source/`` folder.
    """
    cfg = project.config.intake
    if catalogue is None:
        catalogue = read_source(project.source_main, source_root=project.paths.source, max_file_mib=cfg.max_file_mib)
    else:
        catalogue = catalogue.model_copy(update={"source_root": str(project.paths.source)})
    units = build_units(catalogue, cfg.unit_kinds)
    for u in units:  # provenance relative to the project folder
        u.provenance = u.provenance.model_copy(update={"file": f"{SOURCE_PREFIX}{u.provenance.file}"})
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
    findings = lint_units(catalogue, units, edges, files)
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
        layers=dag.layer_count, warnings=catalogue.warnings, notes=notes, findings=findings,
        format=catalogue.format,
    )
    return dag, files, meta, report


def ingest(project: Project, gateway: Gateway, catalogue: Catalogue | None = None,
           providers: Callable | None = None) -> IngestReport:
    """Ingest ``project``'s source and register the result (see module docstring).

    ``catalogue``: the source as already read (``fyan init``); ``providers(stage) -> Provider``
    serves the Specifier's model part (default: the project's configured providers)."""
    specifier = None
    if project.config.intake.specifier == "model":
        from fyan.agents.specify import ModelSpecifier

        specifier = ModelSpecifier(project, gateway, providers)
    dag, files, meta, report = plan_ingest(project, specifier, catalogue)
    gateway.register_units(dag, files, meta)
    init_package(project)
    return report
