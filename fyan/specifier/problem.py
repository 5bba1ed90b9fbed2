"""``problem.tex``: a unit's statement with a provenance block written by code.

The provenance block is a run of TeX comment lines between fixed markers; models never write
it (DESIGN.md §1.2). The statement text below it is the verbatim environment from the source.
"""

from __future__ import annotations

from fyan.intake.catalogue import Catalogue
from fyan.specifier.dag import Edge
from fyan.specifier.units import UnitSpec

BEGIN = "% --- fyan provenance (written by Fyan from the source; do not edit) ---"
END = "% --- end provenance ---"


def render_problem(unit: UnitSpec, catalogue: Catalogue, deps: list[Edge], source_prefix: str) -> str:
    """The text of ``units/<unit>/problem.tex``.

    ``source_prefix`` is prepended to catalogue paths so the block names files relative to
    the project folder (for example ``source/``).
    """
    lines = [BEGIN, f"% unit: {unit.id}", f"% kind: {unit.kind}"]
    for i in unit.statements:
        s = catalogue.statements[i]
        p = s.provenance
        lines.append(f"% source: {source_prefix}{p.file}, lines {p.line_start}-{p.line_end}")
        if s.label:
            lines.append(f"% label: {s.label}")
        if s.title:
            lines.append(f"% title: {' '.join(s.title.split())}")
        if s.lean_names:
            lines.append(f"% lean (from the source): {', '.join(s.lean_names)}")
    if deps:
        for e in sorted(deps, key=lambda e: (e.depends_on, e.origin)):
            scope = "proof" if e.in_proof else "statement"
            lines.append(f"% depends on: {e.depends_on} ({e.origin}, {scope}; {e.evidence})")
    else:
        lines.append("% depends on: nothing")
    lines.append(END)
    body = "\n\n".join(catalogue.statements[i].body for i in unit.statements)
    return "\n".join(lines) + "\n" + body + "\n"


def render_source_proof(unit: UnitSpec, catalogue: Catalogue, source_prefix: str) -> str | None:
    """The document's own proof of the unit (``source_proof.tex``), if it has one."""
    parts = []
    for i in unit.statements:
        proof = catalogue.statements[i].proof
        if proof is not None:
            p = proof.provenance
            parts.append(f"% source: {source_prefix}{p.file}, lines {p.line_start}-{p.line_end}\n{proof.body}")
    return "\n\n".join(parts) + "\n" if parts else None
