"""Ingest a project's source: intake → units → DAG → ``problem.tex``, registered in one go.

Everything is computed in memory first; only a fully valid result reaches the gateway, so bad
input (malformed TeX, an unknown label, a cycle) leaves the project exactly as it was. The
deterministic lints (``fyan.specifier.lints``) run on every ``problem.tex``; their findings are
reported (``IngestReport.findings``), not fatal: at ingest the text is the source's own.

With ``[intake] specifier = "model"`` the caller passes the Specifier's model part (a
``Specifier``, e.g. ``fyan.agents.specify.ModelSpecifier``); it runs between the deterministic
units/edges and the final validation: it may group statements and propose edges (each checked
by the DAG validator), and a validation pass compares each ``problem.tex`` with its source.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from fyan.errors import DagError, InputError
from fyan.intake import read_as, read_source
from fyan.intake.catalogue import Catalogue, IntakeWarning
from fyan.intake.texscan import paused_gc
from fyan.lakepackage.package import init_package
from fyan.project import Project
from fyan.specifier.connectivity import connectivity
from fyan.specifier.dag import Dag, Edge, ReferenceCounts, extract_edges, validate
from fyan.specifier.lints import Finding, lint_units
from fyan.specifier.problem import SOURCE_PREFIX, context_block, context_items, render_files
from fyan.specifier.units import UnitSpec, build_units
from fyan.state.gateway import Gateway

__all__ = ["SOURCE_PREFIX", "IngestReport", "Specifier", "ingest", "plan_ingest"]


class Specifier(Protocol):
    """The Specifier's model part: given the catalogue and the deterministic
    units, dependency edges and mentions (references that are not dependencies), returns (units, edges, notes, metadata to record); its result is
    validated like the deterministic one. ``fyan.agents.specify.ModelSpecifier`` is one."""

    def __call__(self, catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge], mentions: list[Edge]
                 ) -> tuple[list[UnitSpec], list[Edge], list[str], dict[str, str]]: ...


class IngestReport(BaseModel):
    source: str
    files: list[str]
    statements: int
    kinds: dict[str, int]
    units: int
    edges: int
    layers: int
    #: pairs of units the edges join (an edge per kind of evidence: ``\uses``, a reference, ...;
    #: a pair is one arrow of the dashboard's graph)
    pairs: int = 0
    warnings: list[IntakeWarning]
    notes: list[str]
    mentions: list[Edge] = []
    findings: list[Finding] = []
    format: str = "tex"
    # the intake report
    unclassified_envs: dict[str, int] = {}
    layout_envs: int = 0
    references: ReferenceCounts = ReferenceCounts()
    edges_by_kind: dict[str, int] = {}
    isolated: list[str] = []
    components: list[int] = []
    empty_labels: list[str] = []
    empty_references: list[str] = []
    #: files the document includes that intake could not find or did not follow ("file:line
    #: \\macro{...}: why")
    unfollowed_includes: list[str] = []


def _by_unit(warnings: list[IntakeWarning], catalogue: Catalogue, units: list[UnitSpec]) -> list[IntakeWarning]:
    """Warnings that name a statement by kind and position (``theorem #356``, what the reader
    knows before units exist) name its unit id instead."""
    owner = {i: u.id for u in units for i in u.statements}

    def name(m: re.Match) -> str:
        index = int(m.group(2)) - 1
        if 0 <= index < len(catalogue.statements) and catalogue.statements[index].kind == m.group(1):
            return owner.get(index, m.group(0))
        return m.group(0)

    pattern = re.compile(r"\b([a-z]+) #(\d+)\b")
    return [w.model_copy(update={"message": pattern.sub(name, w.message)}) if "#" in w.message else w
            for w in warnings]


def _unfollowed_note(catalogue: Catalogue) -> str:
    """The files the document includes that intake could not find or did not follow, as the
    end of a refusal they may explain ('' when there are none)."""
    missed = catalogue.unfollowed_includes
    if not missed:
        return ""
    shown = "\n  ".join(missed[:10]) + (f"\n  ... and {len(missed) - 10} more" if len(missed) > 10 else "")
    return f"\nfiles the document includes that were not read ({len(missed)}):\n  {shown}"


def plan_ingest(
    project: Project, specifier: Specifier | None = None, catalogue: Catalogue | None = None
) -> tuple[Dag, dict[str, dict[str, bytes]], dict[str, str], IngestReport]:
    """Compute units, DAG, per-unit files and metadata without writing anything.

    ``specifier``: the Specifier's model part, when configured; ``catalogue``: the source already
    read (``fyan init`` reads it before copying it into the project); its paths must be relative
    to the project's ``source/`` folder. Raises ``InputError``/``DagError`` for bad input.
    The cyclic garbage collector is paused meanwhile (``fyan.intake.texscan.paused_gc``).
    """
    with paused_gc():
        return _plan_ingest(project, specifier, catalogue)


def _plan_ingest(project: Project, specifier: Specifier | None, catalogue: Catalogue | None
                 ) -> tuple[Dag, dict[str, dict[str, bytes]], dict[str, str], IngestReport]:
    cfg = project.config.intake
    if catalogue is None:
        catalogue = read_source(project.source_main, source_root=project.paths.source, max_file_mib=cfg.max_file_mib,
                                tolerant=cfg.tolerant, origin=Path(cfg.source_origin) if cfg.source_origin else None)
    else:
        catalogue = catalogue.model_copy(update={"source_root": str(project.paths.source)})
    units = build_units(catalogue, cfg.unit_kinds)
    for u in units:  # provenance relative to the project folder
        u.provenance = u.provenance.model_copy(update={"file": f"{SOURCE_PREFIX}{u.provenance.file}"})
    if not units:
        found = Counter(s.kind for s in catalogue.statements)
        raise InputError(
            f"{project.config.project.source}: no statement of a unit kind ({', '.join(cfg.unit_kinds)}) found"
            + (f"; found {dict(found)}" if found else "") + _unfollowed_note(catalogue),
            hint=(read_as(project.source_main) or "check the document's environment names")
            + "; the unit kinds are [intake] unit_kinds in fyan.toml",
        )
    try:
        found = extract_edges(catalogue, units, unknown_references=cfg.unknown_references, term_edges=cfg.term_edges,
                              notation_edges=cfg.notation_edges, cycles=cfg.cycles)
    except DagError as e:
        if catalogue.unfollowed_includes and "defined nowhere" in e.message:  # may be why
            e.message += _unfollowed_note(catalogue)
            e.args = (e.message,)
        raise
    edges, notes, mentions = found.edges, list(found.notes), found.mentions
    extra_meta: dict[str, str] = {}
    if specifier is not None:
        validate(catalogue, units, edges, cfg.unit_kinds)  # the deterministic part must hold first
        units, edges, more_notes, extra_meta = specifier(catalogue, units, edges, mentions)
        notes += more_notes
        known = {u.id for u in units}
        mentions = [m for m in mentions if m.unit in known and m.depends_on in known]
    dag = validate(catalogue, units, edges, cfg.unit_kinds)
    dag.mentions = mentions
    files, context_warnings = render_files(catalogue, units, edges, SOURCE_PREFIX, cfg.unit_kinds, mentions)
    contexts = {u.id: context_block(context_items(u, catalogue, cfg.unit_kinds, SOURCE_PREFIX)[0]) for u in units}
    findings = lint_units(catalogue, units, edges, files, SOURCE_PREFIX, mentions, contexts)
    known = {u.id for u in units}
    findings += [Finding(unit=f.unit, rule=f.rule, severity="warning", message=f.message)
                 for f in found.flags if f.unit in known]
    shape = connectivity([u.id for u in units], [(e.unit, e.depends_on) for e in edges])
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
        pairs=len({(e.unit, e.depends_on) for e in edges}),
        layers=dag.layer_count, notes=notes, mentions=mentions, findings=findings, format=catalogue.format,
        warnings=_by_unit(catalogue.warnings + found.warnings + context_warnings, catalogue, units),
        unclassified_envs=catalogue.unclassified_envs, layout_envs=sum(catalogue.layout_envs.values()),
        references=found.references, edges_by_kind=dict(Counter(e.origin for e in edges).most_common()),
        isolated=list(shape.isolated), components=[len(c) for c in shape.components],
        empty_labels=catalogue.empty_labels, empty_references=catalogue.empty_references,
        unfollowed_includes=catalogue.unfollowed_includes,
    )
    return dag, files, meta, report


def ingest(project: Project, gateway: Gateway, catalogue: Catalogue | None = None,
           specifier: Specifier | None = None) -> IngestReport:
    """Ingest ``project``'s source and register the result (see module docstring).

    ``catalogue``: the source as already read (``fyan init``); ``specifier``: the Specifier's
    model part, required when ``[intake] specifier = "model"`` (build it with
    ``fyan.agents.specify.model_specifier``). Raises ``InputError``/``DagError`` for bad input
    (nothing is registered then) and ``ValueError`` when a model Specifier is configured but
    not given."""
    if project.config.intake.specifier == "model" and specifier is None:
        raise ValueError('[intake] specifier = "model" needs the model Specifier: pass specifier= '
                         "(fyan.agents.specify.model_specifier)")
    gateway.begin_ingest(project.config.project.source)
    try:
        dag, files, meta, report = plan_ingest(project, specifier, catalogue)
        gateway.register_units(dag, files, meta)
    except Exception as e:  # bad input, a refused model: not an interrupted ingest (a kill is one)
        gateway.abandon_ingest(f"{type(e).__name__}: {e}")
        raise
    init_package(project)
    return report
