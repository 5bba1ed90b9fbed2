"""Ingest a project's source: intake → units → DAG → ``problem.tex``, registered in one go.

Everything is computed in memory first; only a fully valid result reaches the gateway, so bad
input (malformed TeX, an unknown label, a cycle) leaves the project exactly as it was. The
deterministic lints (``fyan.specifier.lints``) run on every ``problem.tex``; their findings are
reported (``IngestReport.findings``), not fatal: at ingest the text is the source's own.
"""

from __future__ import annotations

import hashlib
from collections import Counter

from pydantic import BaseModel

from fyan.errors import InputError
from fyan.intake import read_source
from fyan.intake.catalogue import Catalogue
from fyan.lean.package import init_package
from fyan.project import Project
from fyan.specifier.dag import Dag, extract_edges, validate
from fyan.specifier.lints import Finding, LintInput, lint_problems
from fyan.specifier.problem import provenance_block, render_source_proof, statement_text
from fyan.specifier.units import build_units
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
    findings: list[Finding] = []
    format: str = "tex"


def plan_ingest(project: Project, catalogue: Catalogue | None = None
                ) -> tuple[Dag, dict[str, dict[str, bytes]], dict[str, str], IngestReport]:
    """Compute units, DAG, per-unit files and metadata without writing anything.

    ``catalogue``: the source already read (``fyan init`` reads it before copying it into the
    project); its paths must be relative to the project's ``source/`` folder."""
    cfg = project.config.intake
    main = project.source_main
    if catalogue is None:
        catalogue = read_source(main, source_root=project.paths.source, max_file_mib=cfg.max_file_mib)
    else:
        catalogue = catalogue.model_copy(update={"source_root": str(project.paths.source)})
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
    dag = validate(catalogue, units, edges, cfg.unit_kinds)
    prefix = "source/"
    files: dict[str, dict[str, bytes]] = {}
    owner = {i: u.id for u in units for i in u.statements}
    lint_inputs: list[LintInput] = []
    for u in units:
        deps = [e for e in edges if e.unit == u.id]
        block = provenance_block(u, catalogue, deps, prefix)
        statement = statement_text(u, catalogue)
        problem = block + "\n" + statement + "\n"
        unit_files = {"problem.tex": problem.encode()}
        proof = render_source_proof(u, catalogue, prefix)
        if proof is not None:
            unit_files["source_proof.tex"] = proof.encode()
        files[u.id] = unit_files
        context = [owner[p] for i in u.statements if (p := catalogue.statements[i].parent) is not None and p in owner]
        lint_inputs.append(LintInput(unit=u.id, problem_tex=problem, source_tex=statement,
                                     depends_on=[e.depends_on for e in deps], context_units=context,
                                     expected_block=block))
    label_units = {label: owner[site.statement_index] for label, site in catalogue.labels.items()
                   if site.statement_index in owner}
    findings = lint_problems(lint_inputs, label_units=label_units)
    digest = hashlib.sha256()
    for rel in catalogue.files:
        digest.update(rel.encode() + b"\0" + (project.paths.source / rel).read_bytes())
    meta = {
        "source_sha256": digest.hexdigest(),
        "catalogue": catalogue.model_dump_json(),
    }
    report = IngestReport(
        source=project.config.project.source, files=catalogue.files, statements=len(catalogue.statements),
        kinds=dict(Counter(s.kind for s in catalogue.statements)), units=len(units), edges=len(edges),
        layers=dag.layer_count, warnings=catalogue.warnings, notes=notes, findings=findings,
        format=catalogue.format,
    )
    return dag, files, meta, report


def ingest(project: Project, gateway: Gateway, catalogue: Catalogue | None = None) -> IngestReport:
    """Ingest ``project``'s source and register the result (see module docstring)."""
    dag, files, meta, report = plan_ingest(project, catalogue)
    gateway.register_units(dag, files, meta)
    init_package(project)
    return report
